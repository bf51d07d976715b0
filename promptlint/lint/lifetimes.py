"""Lifetimes the call graph shows: a function that every caller runs once (issue 14).

The analysis freezes what is computed at import time, in ``__init__`` and in set-up functions
named for it. Real agents build much of their prompt once in other ways: in ``main()``, in a
factory that ``main()`` calls before its loop, in a helper that only ``__init__`` calls. After
the analysis, a finding whose source is computed in such a function, outside any loop in it, is
dropped: the value is computed once and reused unchanged (docs/field.md, "What counts").

A function runs once when its name says so (``main``, ``__init__``, set-up verbs) or when every
reference to its name in the linted tree is a call made outside loops, from module-level code or
from a function that runs once itself. Anything else keeps the finding: a name passed as a
callback, a decorated function (a route, a tool, an event handler), a call in a loop, a name that
too many files mention to prove anything, a file that does not parse.
"""

from __future__ import annotations

import ast
import bisect
import re
from dataclasses import dataclass, replace

from promptlint.lint.diagnostic import EVERY_CALL
from promptlint.lint.guards import converses, descendants, first_of_loop, first_pass, returns_when_set
from promptlint.lint.source import parse_python

#: Methods that run once per object: what they compute is frozen for the object's life.
INIT_METHODS = frozenset({"__init__", "__post_init__", "setup", "model_post_init", "__new__"})
#: Verbs that name a one-time set-up path (``initialize_message_sequence``, ``setup_agent``,
#: ``_init_tools``; and the suffix of a deferred ``_complete_init``): what it computes is stored
#: and reused. ``create_``/``build_``/``make_`` are not here: real agents rebuild their agent and
#: prompt per request in ``create_agent``.
SETUP_VERBS = ("init_", "initialize_", "initialise_", "setup_", "set_up_", "bootstrap_")
#: Functions that open a conversation (``create_conversation``, ``start_session``,
#: ``new_chat_thread``, ``new_chat``, ``reset`` of a chat object, ``reload_with_initial_messages``,
#: an MCP client's ``connect_to_server``):
#: what they compute is stored with it and reused by each of its turns. Pipecat's runner calls
#: ``bot()`` once per session (its examples build the pipeline and its context in ``run_bot``);
#: a LiveKit worker runs its ``entrypoint`` once per job, a room's session (``WorkerOptions(
#: entrypoint_fnc=entrypoint)``; docs.livekit.io/agents/server/job "Entrypoint", read 2026-11-27).
SESSION_START = re.compile(r"(?:create|new|start|open|begin)_(?:\w+_)?(?:session|conversation|thread|chat|dialog|dialogue)s?"
                           r"|reset(?:_(?:\w+_)?(?:session|conversation|chat|history|dialog|dialogue))?|reload(?:_\w+)?|(?:run_)?bot|entrypoint"
                           r"|a?connect(?:_to)?(?:_\w+)?")


def graph_node(func) -> bool:
    """``def retrieve(state, config)``: a graph node (LangGraph's convention), run on each step of
    each turn, whatever its name (a node named ``setup``); it reads what other nodes wrote and
    returns the fields it updates."""
    args = [a.arg for a in func.args.args if a.arg not in ("self", "cls")] if hasattr(func, "args") else []
    return bool(args) and args[0] == "state"


_STREAMLIT = re.compile(r"^[ \t]*(?:import[ \t]+streamlit\b|from[ \t]+streamlit\b)", re.M)


def streamlit_script(text: str | None) -> bool:
    """A Streamlit script: Streamlit runs the whole script again on every interaction, so its
    module-level code runs per turn, not once at import."""
    return _STREAMLIT.search(text or "") is not None


def runs_once(name: str) -> bool:
    """True for a function whose name says it runs once per object, session or process."""
    return name in INIT_METHODS or set_up_path(name)


def set_up_path(name: str) -> bool:
    """A named set-up function (not a constructor): it runs once whoever calls it, so what its
    callers pass it lands once too. (A constructor's arguments are the caller's: an object may
    be built per request.)"""
    bare = name.lstrip("_").lower()
    return name not in INIT_METHODS and (bare in ("init", "initialize", "initialise", "bootstrap") or bare.startswith(SETUP_VERBS)
                                         or bare.endswith("_init") or SESSION_START.fullmatch(bare) is not None)


#: Entry points: a process runs them once (when they take no required argument).
ONCE_ROOTS = frozenset({"main", "_main", "async_main", "amain"})
#: Families whose values vary per call (orderings and framework options are not about lifetime).
_VOLATILE_FAMILIES = ("PC1", "PC2", "PC3", "PC4")
#: Trace notes of a step where a value enters or leaves a function.
_CROSSINGS = ("returned by ", "via ", "passed to ")
#: A name mentioned in more files than this is too common to prove it runs once.
MAX_FILES = 12
MAX_DEPTH = 5
_PLAIN_DECORATORS = frozenset({"staticmethod", "classmethod"})


@dataclass(frozen=True)
class _Def:
    name: str | None  # None: a lambda (called whenever its holder calls it)
    decorated: bool
    required: int  # parameters without a default (besides self/cls): an entry point takes none
    method: bool = False  # defined in a class: referred to as an attribute (`self.context.system(...)`)
    node: bool = False  # a graph node: run on each step whatever its name says
    rerun: bool = False  # in a Streamlit script: its `main()` runs again on every interaction


@dataclass(frozen=True)
class _Ref:
    caller: _Def | None  # None: module-level code
    in_loop: bool
    guarded: bool = False  # in a branch that runs once per object (`if self._chat is None:`)
    opens: bool = False  # made before the loop that reads the user's next message: once per conversation


def _def_of(node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda, method: bool = False) -> _Def:
    decorators = getattr(node, "decorator_list", [])
    plain = all(isinstance(d, ast.Name) and d.id in _PLAIN_DECORATORS for d in decorators)
    args = node.args
    positional = [a.arg for a in [*args.posonlyargs, *args.args]][:len(args.posonlyargs) + len(args.args) - len(args.defaults)]
    required = len([a for a in positional if a not in ("self", "cls")]) + sum(d is None for d in args.kw_defaults)
    return _Def(getattr(node, "name", None), not plain, required, method, graph_node(node))


def _locate(tree: ast.AST, line: int, talks: bool = False) -> tuple[_Def | None, bool, bool, bool]:
    """The innermost function holding ``line``, whether ``line`` is in a loop of that function
    (or of module code), whether it is in a branch of it that runs once per object
    (``guards.first_pass``), and (when ``talks`` asks) whether a loop after it in that function
    reads the user's next message (``guards.converses``). Descends only along the nodes that span
    the line."""
    node, func, loop, guarded, holder, looping = tree, None, False, False, None, None
    while True:
        for child in ast.iter_child_nodes(node):
            first = getattr(child, "lineno", None)
            if first is not None and first <= line <= (getattr(child, "end_lineno", None) or first):
                break
        else:
            return func, loop, guarded, talks and holder is not None and not loop and _talks_after(holder, line)
        if isinstance(child, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            func, loop, guarded, holder, looping = _def_of(child, isinstance(node, ast.ClassDef)), False, False, child, None
        elif isinstance(child, (ast.ListComp, ast.SetComp, ast.DictComp, ast.GeneratorExp, ast.While)) or (
                isinstance(child, (ast.For, ast.AsyncFor)) and line > child.lineno):
            loop, looping = True, child if isinstance(child, (ast.For, ast.AsyncFor, ast.While)) else None
        elif (isinstance(child, ast.If) and child.body and child.body[0].lineno <= line <= child.body[-1].end_lineno
              and (first_pass(child) or first_of_loop(child, looping))):
            guarded = True
        body = getattr(node, "body", None)
        if isinstance(body, list) and child in body and any(returns_when_set(s) for s in body[:body.index(child)]):
            guarded = True  # after `if self._cached is not None: return self._cached`: while it is unset
        node = child


def _talks_after(func: ast.AST, line: int) -> bool:
    """A loop of ``func`` that starts after ``line`` and waits for the user's next message (the
    lines of such loops are read once per function)."""
    starts = func.__dict__.get("_promptlint_talks")
    if starts is None:
        starts = func._promptlint_talks = [n.lineno for n in descendants(func)
                                           if isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and converses(n.body)]
    return any(start > line for start in starts)


def _mentions_in(text: str, name: str, method: bool = False, modules: frozenset[str] = frozenset()):
    """(line, is a call) of each mention of ``name`` that is not its definition or an import; of a
    method, each mention as an attribute of something other than one of the ``modules`` the file
    imports (`platform.system()` is not `Context.system`)."""
    for match in re.finditer(rf"(?<!\w){re.escape(name)}(?!\w)", text):
        line_start = text.rfind("\n", 0, match.start()) + 1
        head = text[line_start:match.start()].lstrip()
        if method and not (head.endswith(".") and not _module_attribute(head, modules)):
            continue
        if head.startswith(("def ", "async def ", "from ", "import ", "#")) or head.endswith(("def ", "class ")):
            continue  # its definition, an import, a comment
        after = text[match.end():match.end() + 40].lstrip(" \t")
        if after.startswith("=") and not after.startswith("=="):
            continue  # a variable of the same name being set (`system = platform.system()`)
        call = after.startswith("(")
        if not call and (head.count('"') % 2 or head.count("'") % 2):
            continue  # a word in a string (a call in an f-string still counts)
        if (text.count('"""', 0, match.start()) % 2 or text.count("'''", 0, match.start()) % 2) and '"""' not in head:
            continue  # in a docstring or another long string (`backend.inject(messages)` in prose)
        yield text.count("\n", 0, match.start()) + 1, call


def _module_attribute(head: str, modules: frozenset[str]) -> bool:
    """Whether ``head`` (a line up to a mention) ends with one of ``modules`` and a dot."""
    receiver = re.search(r"(?<![\w.])(\w+)\.$", head)
    return receiver is not None and receiver.group(1) in modules


_IMPORT = re.compile(r"^[ \t]*import[ \t]+(?:[\w.]+[ \t]+as[ \t]+)?(\w+)[ \t]*(?:#.*)?$", re.M)


class Lifetimes:
    """Answers "is this finding's source computed once?" for one run, parsing files on demand."""

    def __init__(self, files: list[str], read):
        self.files = files
        self._read = read  # path -> text or None
        self._texts: dict[str, str] | None = None
        self._trees: dict[str, ast.AST | None] = {}
        self._once: dict[tuple[str, bool], bool] = {}
        self._modules: dict[str, frozenset[str]] = {}  # path -> the module names its `import` lines bind
        self._streamlit: dict[str, bool] = {}  # path -> whether it is a Streamlit script

    def computed_once(self, d) -> bool:
        """True when ``d``'s source runs in a function every caller runs once, outside its loops."""
        if not d.code.startswith(_VOLATILE_FAMILIES) or len(d.trace) < 2 or d.trace[0].note.endswith(EVERY_CALL):
            return False  # (a framework option is its own source: the framework adds the value per run)
        # The source, and each step where the value crosses into another function (the steps
        # between are in the same function as their neighbours: nothing new to ask of them).
        crossings = [d.trace[0], *(s for s in d.trace[1:-1] if s.note.startswith(_CROSSINGS))]
        if not any(self._made_once(step) for step in crossings):
            return False
        if not d.sent:
            return True  # a layer built once (an agent, a stored system message) and reused
        # A request sent right there with it: a one-shot run keeps its finding, a request sent
        # again and again (in a loop, or from a function called per request) reuses the value.
        sink = d.trace[-1]
        tree = self._tree(sink.path)
        if tree is None:
            return False
        where, in_loop, _, _ = self._in_file(sink.path, _locate(tree, sink.line))
        if where is None:
            return in_loop or self._reruns(sink.path)
        return in_loop or where.name is None or not self._runs_once(where, 0)

    def _made_once(self, step) -> bool:
        """A step of the trace (its source, or a function it passes through on the way to the
        sink) in a function that runs once, outside its loops: what flows on from there is the
        value made then (``get_current_date()`` is called per request elsewhere, but the prompt
        that ``init_prompt()`` builds with it once keeps the date it was built with)."""
        if not step.path.endswith(".py"):
            return False  # (a template file's placeholder)
        tree = self._tree(step.path)
        func, in_loop, _, _ = self._in_file(step.path, _locate(tree, step.line)) if tree is not None else (None, False, False, False)
        return func is not None and func.name is not None and not in_loop and self._runs_once(func, 0)

    def _reruns(self, path: str) -> bool:
        """Whether ``path`` is a Streamlit script (asked once per file)."""
        if path not in self._streamlit:
            self._streamlit[path] = streamlit_script(self._read(path))
        return self._streamlit[path]

    def _in_file(self, path: str, located: tuple) -> tuple:
        """``_locate``'s answer for a line of ``path``: a function of a Streamlit script reruns."""
        func = located[0]
        if func is not None and self._reruns(path):
            return (replace(func, rerun=True), *located[1:])
        return located

    def _runs_once(self, func: _Def, depth: int) -> bool:
        name = func.name
        if name in ONCE_ROOTS and not func.required and not func.rerun or runs_once(name) and not func.node:
            return True  # an entry point, even wrapped (`@click.command()`, `@trace()`)
        if func.decorated:
            return False  # registered with a framework: a route, a tool, a handler
        key = (name, func.method, func.rerun)
        if key in self._once:
            return self._once[key]  # (references are looked up by name: every def of it shares them)
        if depth >= MAX_DEPTH:
            return False
        self._once[key] = False  # a cycle proves nothing
        # (A call from inside a function of the same name, its own recursion or a namesake such
        # as `platform.system()` inside `def system`, adds no caller from outside it.)
        refs = [r for r in self._references(name, func.method) or () if r.caller is None or r.caller.name != name]
        once = bool(refs) and all(
            r.guarded or r.opens or not r.in_loop and (r.caller is None or (r.caller.name is not None and self._runs_once(r.caller, depth + 1)))
            for r in refs)
        self._once[key] = once
        return once

    def _references(self, name: str, method: bool = False) -> list[_Ref] | None:
        """Every reference to ``name`` in the linted tree, or None when it cannot be known."""
        paths = self._mentions(name, method)
        if paths is None:
            return None
        mentions = {path: list(_mentions_in(self._texts[path], name, method, self._modules_of(path))) for path in paths}
        if any(not call for found in mentions.values() for _, call in found):
            return None  # a mention that is no call (a callback, a registration): no need to parse
        refs: list[_Ref] = []
        for path, found in mentions.items():
            tree = self._tree(path)
            if tree is None:
                return None
            located = [_Ref(*self._in_file(path, _locate(tree, line, talks=True))) for line, _ in found]
            # (a Streamlit script's module-level code runs again on every interaction)
            refs += [replace(r, in_loop=True) if r.caller is None and self._reruns(path) else r for r in located]
        return refs

    def _mentions(self, name: str, method: bool = False) -> list[str] | None:
        """The files that mention ``name`` as a word; None when more than MAX_FILES do.

        All texts are read once into one string: `str.find` over it runs at memory speed, where a
        search file by file would cost a Python loop per file and name."""
        if self._texts is None:
            self._texts, starts, parts, offset = {}, [], [], 0
            for path in self.files:
                text = self._read(path)
                if text is not None:
                    self._texts[path] = text
                    starts.append(offset)
                    parts.append(text)
                    offset += len(text) + 1
            self._blob, self._starts, self._paths = "\0".join(parts), starts, list(self._texts)
        blob, found = self._blob, []
        word = re.compile(rf"{re.escape(name)}(?!\w)")  # a literal first: the engine's fast scan
        match = word.search(blob)
        while match is not None:
            before = blob[match.start() - 1] if match.start() else " "
            if before.isalnum() or before == "_":
                match = word.search(blob, match.end())
                continue
            file = bisect.bisect_right(self._starts, match.start()) - 1
            if method and (before != "." or _module_attribute(
                    blob[blob.rfind("\n", 0, match.start()) + 1:match.start()], self._modules_of(self._paths[file]))):
                match = word.search(blob, match.end())  # (not the method: a word, or a module's function)
                continue
            found.append(file)
            if len(found) > MAX_FILES:
                return None
            if file + 1 >= len(self._starts):
                break
            match = word.search(blob, self._starts[file + 1])  # the next file
        return [self._paths[f] for f in found]

    def _modules_of(self, path: str) -> frozenset[str]:
        if path not in self._modules:
            self._modules[path] = frozenset(_IMPORT.findall(self._texts[path]))
        return self._modules[path]

    def _tree(self, path: str) -> ast.AST | None:
        if path not in self._trees:
            text = self._texts.get(path) if self._texts is not None else None
            text = text if text is not None else self._read(path)
            try:
                self._trees[path] = parse_python(text, path) if text is not None else None
            except (SyntaxError, ValueError, RecursionError, MemoryError):
                self._trees[path] = None
        return self._trees[path]

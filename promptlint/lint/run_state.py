"""Run state written while a conversation runs: the project-wide half of conditional findings.

Frameworks call an instructions function on every model call and hand it the run's context
(openai-agents ``Agent(instructions=fn)``, pydantic-ai ``@agent.instructions``, LangGraph
``create_agent(system_prompt=fn)``, ADK ``instruction="... {key} ..."``). What it reads from that
context changes the instructions only if something writes the field while the conversation runs:
a tool (``ctx.context.state.seat_number = seat``), a callback (``callback_context.state["_time"] =
now()``). A customer name set when the context is built does not.

The analysis marks such a flow with the field it needs (``Diagnostic.needs``). Each file's text is
scanned here for writes through a context or state receiver, whether or not the file is analysed
(tools often live in files with no prompt in them). A marked flow is kept only when its field is
written somewhere in the linted tree, and its trace then starts at that write.
"""

from __future__ import annotations

import ast
import re
from dataclasses import replace

from promptlint.lint.diagnostic import Diagnostic, TraceStep
from promptlint.lint.lifetimes import runs_once

#: Receivers that hold a run's state: the object a framework carries from turn to turn.
_STATE_WORDS = re.compile(r"state|context|ctx|deps|session", re.IGNORECASE)
#: The same words as plain substrings: `str.find` finds the few lines worth a regex (every file
#: of a tree is scanned, so a regex over whole texts would cost more than admission itself).
_WORDS = ("state", "State", "STATE", "context", "Context", "CONTEXT", "ctx", "Ctx", "CTX",
          "deps", "Deps", "session", "Session", "SESSION")
_MUTATORS = r"(?:append|extend|insert|add|update|pop|remove|clear|setdefault|discard)"
_WRITES = tuple(re.compile(p) for p in (
    # ctx.context.state.seat_number = seat / ctx.counter += 1
    r"[ \t]*((?:[A-Za-z_]\w*\.)+)([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?[-+|]?=(?!=)",
    # callback_context.state["_time"] = now()
    r"[ \t]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\[[ \t]*[\"'](\w+)[\"'][ \t]*\][ \t]*[-+|]?=(?!=)",
    # ctx.deps.notes.append(x) / state["sources"].append(x)
    rf"[ \t]*((?:[A-Za-z_]\w*\.)+)(\w+)\.{_MUTATORS}\(",
    rf"[ \t]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\[[ \t]*[\"'](\w+)[\"'][ \t]*\]\.{_MUTATORS}\(",
))


def state_key(node: ast.AST) -> str | None:
    """The field `state["messages"]`, `state.messages` or `state.get("messages")` reads."""
    if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get" and node.args:
        node = ast.Subscript(node.func.value, node.args[0])
    if not isinstance(getattr(node, "value", None), ast.Name) or node.value.id != "state":
        return None
    if isinstance(node, ast.Attribute):
        return node.attr
    key = node.slice if isinstance(node, ast.Subscript) else None
    return key.value if isinstance(key, ast.Constant) and isinstance(key.value, str) else None


def state_object(receiver: ast.AST) -> bool:
    """``self.state`` / ``self.shared_state``: an object an agent keeps its run's state in."""
    return (isinstance(receiver, ast.Attribute) and isinstance(receiver.value, ast.Name)
            and receiver.value.id == "self" and receiver.attr.lower().endswith("state"))


def state_receiver(text: str) -> bool:
    """Whether a receiver's text names a run's state or context."""
    return _STATE_WORDS.search(text) is not None


def _candidate_lines(text: str) -> list[tuple[int, int]]:
    """(start, end) of each line that mentions a state word."""
    spans = set()
    for word in _WORDS:
        i = text.find(word)
        while i != -1:
            start = text.rfind("\n", 0, i) + 1
            end = text.find("\n", i)
            end = len(text) if end == -1 else end
            spans.add((start, end))
            i = text.find(word, end)
    return sorted(spans)


def _writes(text: str):
    """(receiver, field, offset) of each write through a state or context receiver, outside the
    functions that run once (`__init__`, set-up paths): a field set when the state is made is
    the same on every turn."""
    for start, end in _candidate_lines(text):
        for pattern in _WRITES:
            match = pattern.match(text, start, end)
            if match is not None and _STATE_WORDS.search(match.group(1)):
                if not _sets_up(_enclosing_def(text, start)):
                    yield match.group(1), match.group(2), match.start(1)
                break


#: Functions that fill a state afresh (a saved scene loaded, a run started): what they write is
#: there from the first turn on, like what ``__init__`` writes.
_FILLS = re.compile(r"_*(?:load|restore|start|from|reset)(?:_|$)")


def _sets_up(name: str) -> bool:
    return runs_once(name) or _FILLS.match(name) is not None


_DEF = re.compile(r"[ \t]*(?:async[ \t]+)?def[ \t]+(\w+)")


def _enclosing_def(text: str, start: int) -> str:
    """The name of the function whose body holds the line at ``start`` ("" at module level)."""
    indent = len(text[start:]) - len(text[start:].lstrip(" \t"))
    while start > 0 and indent > 0:
        start = text.rfind("\n", 0, start - 1) + 1
        line = text[start:text.find("\n", start)]
        stripped = line.lstrip(" \t")
        if not stripped or stripped.startswith("#"):
            continue
        own = len(line) - len(stripped)
        if own < indent:
            found = _DEF.match(line)
            if found is not None:
                return found.group(1)
            indent = own
    return ""


def writes_state(text: str) -> bool:
    """Whether a piece of code writes through a state or context receiver."""
    return next(_writes(text), None) is not None


def written_fields(text: str) -> dict[str, list]:
    """Fields written through a state or context receiver: name -> [line, column] of the first.
    (The analysis adds the rule code of a real source written there: [line, column, code].)"""
    found: dict[str, list] = {}
    for receiver, name, offset in _writes(text):
        holder = receiver.rstrip(".").split(".")
        # A state object's field also by its holder (`shared_state.app_card`): what its reader needs.
        keys = [key for key in (name, *([f"{holder[1]}.{name}"] if len(holder) == 2 and holder[0] == "self" else ()))
                if key not in found]
        if keys:  # (where a write is: counted only for a field's first)
            line_start = text.rfind("\n", 0, offset) + 1
            for key in keys:
                found[key] = [text.count("\n", 0, offset) + 1, offset - line_start + 1]
    return found


def resolve(diagnostics, writes: dict[str, dict[str, list]], docs: dict) -> list[Diagnostic]:
    """Keep a flow that needs a field only when the tree writes it; its trace starts at the write.

    A write that stores a real source gives the finding that source's family (a clock written
    into the state is a clock); other writes (a tool storing the model's argument) are per-turn
    content. One finding per family; for each, the write in the reading file if there is one,
    else the first by path and line."""
    by_name: dict[str, list[tuple]] = {}
    for path in sorted(writes):
        for name, at in writes[path].items():
            by_name.setdefault(name, []).append((path, *at))
    kept = []
    for d in diagnostics:
        if not d.needs:
            kept.append(d)
            continue
        by_code: dict[str, list[tuple]] = {}
        for path, line, column, *code in by_name.get(d.needs, ()):
            if not code and "." in d.needs:  # (the family the analysis found for the plain field there)
                code = next((c for p, ln, _, *c in by_name.get(d.needs.rsplit(".", 1)[1], ()) if (p, ln) == (path, line)), [])
            by_code.setdefault(code[0] if code and code[0] in docs else d.code, []).append((path, line, column, *code[1:4]))
        for code, found in sorted(by_code.items()):
            path, line, column, *source = min(found, key=lambda w: (w[0] != d.path, w[:3]))
            source = TraceStep(path, *source) if len(source) == 3 else None
            kept.append(_from_write(d, code, TraceStep(path, line, column, ""), docs, source))
    return kept


def _from_write(d: Diagnostic, code: str, write: TraceStep, docs: dict, source: TraceStep | None = None) -> Diagnostic:
    """``d`` (a read of run state) starting at a write of the field, reported as ``code``; at the
    source the write stores, when the analysis saw it (``memories = get_relevant_memories(q)``)."""
    what = f" ({docs[code].summary.split(' reaches ')[0].lower()})" if code != d.code else ""
    write = TraceStep(write.path, write.line, write.column, f"written while the conversation runs: `{d.needs}`{what}")
    where = f"line {write.line}" if write.path == d.path else f"{write.path}:{write.line}"
    message = f"{d.message}; written while the conversation runs ({where})"
    if code != d.code:
        layer = d.trace[-1].note.removeprefix("reaches ") if d.trace else ""
        old, new = (docs[c].summary.format(sink=layer, detail="") for c in (d.code, code))
        message = new + message[len(old):] if message.startswith(old) else message
    return replace(d, code=code, name=docs[code].name if code in docs else d.name,
                   trace=(*([source] if source else []), write, *d.trace), needs="", message=message)

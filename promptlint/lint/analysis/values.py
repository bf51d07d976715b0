"""The abstract values of the taint analysis: labelled taints, values, summaries, class facts.

Every expression evaluates to a ``Val``: the taints it carries plus what is statically known
about it (qualified name, string constant, the items of a list or the keys of a dict display,
the function it names). A ``Taint`` is Semgrep-style: a rule code, a label (``volatile`` or
``unordered``) and the trace of steps from its source.
"""

from __future__ import annotations

import ast
import functools
from dataclasses import dataclass, field
from typing import NamedTuple

from promptlint.lint.diagnostic import CHOOSES, PARAMETER, Fix, TraceStep

#: The origin of a framework's run context inside an instructions function (run_state.py).
RUN_STATE = "~run-state"
#: The origin of an element of a list named for a conversation's history (`for m in messages:`).
HISTORY = "~history"
#: An element of a conversation searched from its newest end (`for m in reversed(messages): ...
#: return m["content"]`): its text is this turn's.
NEWEST = "~history:newest"
#: The field of a mapping filled under a key computed at run time (`self.sessions[session_id] = chain`):
#: what a read under such a key (`self.sessions[session_id]`) gets back.
ANY_KEY = "[]"
MAX_TAINTS = 16  # sources a value keeps, and apart from them, parameters (their cost grows fast with it)
MAX_STEPS = 14


class Taint(NamedTuple):
    """A labelled fact about a value: where it came from and how it travelled."""

    code: str  # rule code, or "" for a symbolic parameter taint inside a summary
    label: str  # "volatile" | "unordered"
    steps: tuple[TraceStep, ...]
    param: int = -1  # >= 0: stands for the taint of parameter ``param`` (summaries)
    dumped: bool = False  # a parameter taint that went through an unsorted serializer
    fix: Fix | None = None
    report_at: TraceStep | None = None  # template line: report there instead of at the sink
    per_render: bool = False  # a template expression or callable evaluated each time the template renders
    role_only: bool = False  # a parameter taint picked out by a role dispatch (`if m["role"] == "system"`)
    other_role: bool = False  # came in a message of another role (a reply appended to a history): not a system message
    system_role: bool = False  # came in a system message added to a log of unknown items (`chat_log.append(SystemContent(...))`)
    reply: bool = False  # the model's reply: per turn only in the loop that received it (calls.py `_reply`)
    unread: bool = False  # a file's name, not yet its content: what varies is read later, when it is used
    needs: str = ""  # a run-state field: a leak only if the conversation writes it (run_state.py)
    appended: bool = False  # added at the end of a list of unknown items: not what `xs[0]` reads
    index: tuple = ()  # a parameter taint read at `p[0]` / `p["system"]`: the caller's item there
    fallback: int = -1  # a default used only when the caller leaves parameter ``fallback`` out (`now or datetime.now()`)

    def key(self) -> tuple:
        first = self.steps[0] if self.steps else None
        return (self.code, self.label, self.param, self.dumped, first and (first.path, first.line, first.column), self.needs,
                self.index, self.fallback, self.unread)

    def then(self, step: TraceStep) -> "Taint":
        if len(self.steps) >= MAX_STEPS or (self.steps and self.steps[-1] == step):
            return self
        return self._replace(steps=self.steps + (step,))


def clip(steps: tuple[TraceStep, ...]) -> tuple[TraceStep, ...]:
    """A trace bounded to MAX_STEPS that still starts at its source."""
    return steps if len(steps) <= MAX_STEPS else steps[:1] + steps[len(steps) - MAX_STEPS + 1:]


def merge(*groups) -> tuple[Taint, ...]:
    """Union of taint tuples, deduplicated, bounded, shortest trace kept (one that carries the
    value itself before one where it only chose the text).

    Concrete taints (a real source) and symbolic parameter taints are bounded apart: a clock is
    never crowded out by the parameters of a function with many arguments, nor a parameter by
    the sources a function reads itself (a summary that loses its parameter loses every caller's
    flow through it). Past the bound of sources, a shorter trace takes the place of the longest
    one kept: a clock read next to the prompt is not crowded out by stamps that came a long way.
    Parameters keep the first ones met (a short trace says nothing of a parameter's worth)."""
    concrete: dict[tuple, Taint] = {}
    symbolic: dict[tuple, Taint] = {}
    for t in (t for group in groups for t in group):
        seen = symbolic if t.param >= 0 else concrete
        k = t.key()
        old = seen.get(k)
        if old is None:
            if len(seen) < MAX_TAINTS:
                seen[k] = t
            elif seen is concrete:
                longest = max(seen, key=lambda key: len(seen[key].steps))
                if len(seen[longest].steps) > len(t.steps):
                    del seen[longest]
                    seen[k] = t
        elif t.steps is not old.steps and (len(t.steps) < len(old.steps) or chosen(old)) and not chosen(t):
            seen[k] = t  # (the value itself over a choice it made: `now` in the text, not `if now < end`)
    return (*concrete.values(), *symbolic.values())


def chosen(t: "Taint") -> bool:
    """A taint that reached its value through a test's choice, not as data."""
    return any(s.note.startswith(CHOOSES) for s in t.steps)


def user_words(t: "Taint") -> bool:
    """This turn's words themselves: a per-turn parameter (`user_message`) or the newest message."""
    return t.code == "PC401" and t.param < 0 and bool(t.steps) and (
        PARAMETER in t.steps[0].note or "newest message" in t.steps[0].note)


class Val:
    """What the analysis knows about a value."""

    __slots__ = ("taints", "origin", "const", "items", "keys", "func", "node", "template", "sink_layer")

    def __init__(self, taints=(), origin=None, const=None, items=None, keys=None, func=None, node=None, template=None,
                 sink_layer=None):
        self.taints: tuple[Taint, ...] = taints
        self.origin: str | None = origin  # qualified name or call chain: "anthropic.Anthropic().messages"
        self.const = const  # str/int/bool/None constant, when known
        self.items: list[Val] | None = items  # list/tuple display
        self.keys: dict[str, Val] | None = keys  # dict display with constant keys
        self.func = func  # FunctionRef for a function object
        self.node: ast.AST | None = node  # the expression, for ranges
        self.template: TraceStep | None = template  # a template text's location (file or constant)
        self.sink_layer: str | None = sink_layer  # a stable template: what its substitutions reach

    def keep(self, predicate) -> "Val":
        """The same value with only the taints that satisfy ``predicate``."""
        return self.with_taints(tuple(t for t in self.taints if predicate(t)))

    def keep_deep(self, predicate, depth: int = 0) -> "Val":
        """``keep`` through the value's structure too: its items and its fields."""
        if depth > 4 or (self.items is None and self.keys is None):
            return self.keep(predicate)
        return Val(tuple(t for t in self.taints if predicate(t)), self.origin, self.const,
                   _like(self.items, [v.keep_deep(predicate, depth + 1) for v in self.items]) if self.items is not None else None,
                   {k: v.keep_deep(predicate, depth + 1) for k, v in self.keys.items()} if self.keys is not None else None,
                   self.func, self.node, self.template, self.sink_layer)

    def with_taints(self, taints) -> "Val":
        return Val(taints, self.origin, self.const, self.items, self.keys, self.func, self.node, self.template, self.sink_layer)

    def at(self, node: ast.AST) -> "Val":
        """The same value, read at ``node`` (a finding at its use is reported there)."""
        return Val(self.taints, self.origin, self.const, self.items, self.keys, self.func, node, self.template, self.sink_layer)


EMPTY = Val()


def join(a: Val | None, b: Val | None) -> Val:
    """Either value (branches): taints merged, structure kept only when it agrees."""
    if a is None:
        return b or EMPTY
    if b is None:
        return a
    return Val(merge(a.taints, b.taints), a.origin if a.origin == b.origin else (a.origin or b.origin),
               a.const if a.const == b.const else None, _join_items(a.items, b.items),
               _join_keys(a.keys, b.keys), a.func or b.func, a.node or b.node, a.template or b.template)


class Items(list):
    """A list display's items after branches that add to it on some paths only: ``maybe`` are
    the places that may be empty (`if summary: messages.append(...)`), which a message appended
    later does not necessarily follow. A history (messages added in a loop, or an unknown list
    extended in) is never such a place: where there is one, it comes first."""

    maybe: frozenset[int] = frozenset()
    history: frozenset[int] = frozenset()


def _join_items(a: list | None, b: list | None) -> list | None:
    if a is b or a is None or b is None:
        return a if b is None else b
    short, long = (a, b) if len(a) <= len(b) else (b, a)
    if not all(x is y for x, y in zip(short, long)):
        if len(a) == len(b):  # one shape, two fillings (`return _EMPTY` / `return text, n`): either, place by place
            return _items([join(x, y) for x, y in zip(a, b)], _places(a, "maybe") | _places(b, "maybe"),
                          _places(a, "history") | _places(b, "history"))
        return b or a  # two different lists: the structure of either
    history = _places(long, "history")
    maybe = (frozenset(range(len(short), len(long))) - history) | _places(short, "maybe") | _places(long, "maybe")
    return _items(long, maybe, history)


def _places(items: list, kind: str) -> frozenset[int]:
    return getattr(items, kind, frozenset())


def _items(new: list, maybe: frozenset[int], history: frozenset[int]) -> list:
    out = Items(new)
    out.maybe, out.history = maybe, history
    return out


def _like(items: list, new: list) -> list:
    """``new``, item for item in place of ``items``, with what is known of its places."""
    return _items(new, items.maybe, items.history) if isinstance(items, Items) else new


def appended(items: list, new: list, history: bool = False) -> list:
    """``items`` with ``new`` added at its end, keeping which places may be empty."""
    added = frozenset(range(len(items), len(items) + len(new))) if history else frozenset()
    return _items(items + new, _places(items, "maybe"), _places(items, "history") | added)


def certain(items: list) -> list:
    """The items that are there on every path."""
    maybe = _places(items, "maybe")
    return [item for place, item in enumerate(items) if place not in maybe] if maybe else items


def _join_keys(a: dict | None, b: dict | None) -> dict | None:
    """The fields of either object, field by field: ``return Result(result=x, duration=t)`` on
    one path and ``Result(error=e)`` on another still give ``.result`` only what ``x`` carries."""
    if a is b or b is None:
        return a
    if a is None:
        return b
    return {k: join(a.get(k), b.get(k)) for k in {**a, **b}}


def system_only(taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
    """Taints picked out by a test for the system role: a parameter's stand for its system
    messages only (``Taint.role_only``), a concrete one stays what it is."""
    return tuple(t._replace(role_only=True) if t.param >= 0 else t for t in taints if not t.other_role)


def holds_template(val: Val, depth: int = 0) -> bool:
    """A stable template, or a list or dict of them (a registry of prompts by name)."""
    if val.sink_layer is not None:
        return True
    if depth > 2:
        return False
    return any(holds_template(v, depth + 1) for v in [*(val.items or ()), *(val.keys or {}).values()])


def fixed(val: Val, depth: int = 0) -> bool:
    """A constant, or a list of constants: the same text on every call."""
    return val.const is not None or depth < 3 and val.items is not None and all(fixed(v, depth + 1) for v in val.items)


def as_fallback(val: Val, param: int) -> Val:
    """``val`` as the default of parameter ``param``: what it carries reaches a caller only when
    that caller leaves the parameter out (``now = now or datetime.now()``)."""
    return val.with_taints(tuple(t._replace(fallback=param) if t.param < 0 and t.fallback < 0 else t for t in val.taints))


def default_used(t: Taint, given: Val | None) -> Taint | None:
    """A callee's default (``now or datetime.now()``) at a call: a source when the parameter is left
    out or None, the caller's own default when it passes its parameter on, else nothing."""
    if given is None or isinstance(given.node, ast.Constant) and given.node.value is None:
        return t._replace(fallback=-1)
    passed = [a.param for a in given.taints if a.param >= 0]
    if passed and len(passed) == len(given.taints):
        return t._replace(fallback=passed[0])
    return None


def read_at(taints: tuple[Taint, ...], keys: tuple) -> tuple[Taint, ...]:
    """``taints`` read at ``p[k1][k2]``: a parameter's stands for the caller's item there
    (``Taint.index``, three keys deep at most); a concrete one stays what it is."""
    return tuple(t._replace(index=(t.index + keys)[:3]) if t.param >= 0 else t for t in taints)


def key_of(node: ast.AST, val: Val):
    """The key a subscript or a dict display names: a constant, or an enum member spelt the
    same way at each use (``prompts[Name.ZENDESK]``, ``{Name.ZENDESK: t}``: by its spelling,
    which reads the same in the module that defines the enum and in one that imports it)."""
    if isinstance(node, ast.Attribute) and node.attr[:1].isupper() and isinstance(node.value, (ast.Name, ast.Attribute)):
        return ast.unparse(node)
    if isinstance(val.const, (str, int)) and not isinstance(val.const, bool):
        return val.const
    return None


def narrowed(val: Val, index: tuple) -> tuple[Val, tuple]:
    """``val[k1][k2]...`` as far as its structure is known (a list display's items, a dict
    display's or record's keys), and what of ``index`` is left where it is not."""
    for i, k in enumerate(index):
        if isinstance(k, int) and val.items is not None and -len(val.items) <= k < len(val.items):
            val = val.items[k]
        elif k == ANY_KEY and val.items:  # any element (`for e in events`): what each may be
            val = functools.reduce(join, val.items)
        elif isinstance(k, str) and val.keys is not None and k in val.keys:
            val = val.keys[k]
        else:
            return val, index[i:]
    return val, ()


def common_fields(items: list[Val] | None) -> dict[str, Val] | None:
    """The fields of a list's elements when each is a known record or dict display
    (``for f in files: f.content``): each field joined over the elements."""
    if not items or any(i.keys is None for i in items):
        return None
    fields: dict[str, Val] = {}
    for item in items:
        for name, val in item.keys.items():
            fields[name] = join(fields.get(name), val)
    return fields


@dataclass
class FunctionRef:
    """A function the analysis can summarise: in this module or another project module."""

    module: "ModuleAnalysis"
    node: ast.FunctionDef | ast.AsyncFunctionDef | ast.Lambda
    qualname: str
    cls: "ClassInfo | None" = None
    closure: dict | None = None  # a nested function: the enclosing function's names it can read


@dataclass
class ParamSink:
    """Parameter ``param`` reaches a sink inside the function (label-specific)."""

    param: int
    label: str
    dumped: bool
    steps: tuple[TraceStep, ...]
    layer: str
    arg_kind: str
    only: str = ""  # LOCATED / MATCHED: the parameter only located a file or selected rows that reach the sink
    index: tuple = ()  # what of the parameter reaches it: `prompt[0]` is (0,) (Taint.index)
    system_only: bool = False  # reached under a test for the system role: only the caller's system messages


@dataclass
class Summary:
    """What a call of a function does to taint."""

    ret: Val = field(default_factory=Val)
    param_sinks: list[ParamSink] = field(default_factory=list)
    #: What the function writes into a parameter's object (``context["now"] = now()``): index -> taints.
    writes: dict[int, tuple[Taint, ...]] = field(default_factory=dict)
    #: The function asks a model (``client.chat.completions.create(...)``): what it returns is the
    #: reply, which carries none of the request its arguments made.
    replies: bool = False


@dataclass
class ClassInfo:
    """A class of the module: its methods and what its attributes hold."""

    name: str
    qualname: str
    node: ast.ClassDef
    methods: dict[str, FunctionRef] = field(default_factory=dict)
    attrs: dict[str, Val] = field(default_factory=dict)
    bases: list[str] = field(default_factory=list)
    ready: bool = False
    module: "ModuleAnalysis | None" = None
    next_turn: "NextTurn | None" = None  # a method's next call, being analysed (module.summary)


class NextTurn(NamedTuple):
    """A method analysed again as its next call: the replies it kept in its object are the last
    turn's until the line that keeps one (module.summary)."""

    method: ast.AST
    until: int  # the first line that keeps one of this call's replies
    replies: frozenset  # where the kept replies were received (loops.origin)


#: The code of a symbolic parameter taint that went through a file read: the parameter located
#: the file, so a host or environment fact passed for it does not reach the content (docs/field.md).
LOCATED = "located"
#: The code of a symbolic parameter taint that selected a query's rows (``WHERE embedding MATCH ?``,
#: arguments.sql_query): only this turn's words passed for it make the rows this turn's matches.
MATCHED = "matched"
#: Source codes that only locate a file or select rows (time, identity, host): not their content.
LOCATORS = ("PC1", "PC2", "PC3")


def passes_mark(marker: str, t: Taint) -> bool:
    """Whether a caller's taint passes a parameter the callee marked ``LOCATED`` or ``MATCHED``
    (any taint passes an unmarked one; a caller's own parameters pass and take the mark)."""
    if marker == LOCATED:
        return not t.code.startswith(LOCATORS)
    if marker == MATCHED:
        return t.param >= 0 or t.code == "PC401"
    return True


def frozen_ok(t: Taint) -> bool:
    """Taints that survive being computed once (import time, ``__init__``): orderings, symbolic
    parameters, and template expressions that are evaluated each time the template renders."""
    return t.label == "unordered" or t.param >= 0 or t.per_render or t.unread


def _const_str(val: Val | None) -> str | None:
    return val.const if val is not None and isinstance(val.const, str) else None


MAX_SUMMARY_DEPTH = 6
_DEPTH = [0]  # current nesting of summary computations (one analysis runs at a time per process)


def parameters(node: ast.AST) -> list[ast.arg]:
    """A function's parameters in the order its summaries number them (``*args`` after the
    positional ones, ``**kwargs`` last)."""
    a = node.args
    return [*a.posonlyargs, *a.args, *([a.vararg] if a.vararg else []), *a.kwonlyargs, *([a.kwarg] if a.kwarg else [])]


def param_names(node: ast.AST) -> list[str]:
    return [a.arg for a in parameters(node)]


def _opaque(ref: FunctionRef) -> Summary:
    n = len(parameters(ref.node))
    taints = tuple(Taint("", label, (), param=i) for i in range(n) for label in ("volatile", "unordered"))
    return Summary(Val(taints[: MAX_TAINTS]))


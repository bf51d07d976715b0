"""What a loop carries from one pass to the next (issue 14).

A retry loop that appends each failed attempt to ``previous_attempts``, a ReAct loop that renders
its growing ``function_call_history`` into the system message, a tool loop that counts down
``remaining_turns`` in the system prompt: the request the loop sends on each pass carries a
different stable layer. A name bound before the loop and grown inside it (``x += ...``,
``x.append(...)``, ``x = x - 1``) is given a per-turn taint at the growing statement. The loop's
second pass takes it to the sink; when the loop ends the taint is taken away again, because
after the loop the value is simply what the loop built (``for s in sections: prompt += s``).

The calls of a method are passes too: a list the object keeps and the method appends to before
sending it (``tools = self.tools; tools.append(kb_tool)``) is one longer on each call (``per_call``).
"""

from __future__ import annotations

import ast
from collections import Counter
from dataclasses import dataclass, field
from typing import NamedTuple

from promptlint.lint.analysis.values import Taint, Val
from promptlint.lint.guards import GROWERS, callee_name, converses, descendants, self_attribute, written_role

#: The per-turn family: a value that differs between the requests a loop sends.
CODE = "PC401"


@dataclass
class Pass:
    """One loop being evaluated: the names bound before it, those its body binds afresh."""

    node: ast.AST
    before: frozenset[str]
    reset: frozenset[str]
    sends: bool  # the body calls a request method itself (`completion(...)`, `.create(...)`)
    leaving: frozenset[int]  # ids of the nodes in a block that ends the loop (`...; break`)
    converses: bool  # the body reads the user's next message (`input()`, `ws.receive_text()`)
    runs: int  # how often the analysis evaluates the body: twice, once when it always leaves
    sources: set = field(default_factory=set)  # (path, line, column) of the taints given out
    replies: set = field(default_factory=set)  # and of the model's replies received in it (calls.py)
    broken: list = field(default_factory=list)  # the environments of the branches that `break` out of it
    continued: list = field(default_factory=list)  # and of those that go on to its next pass (`continue`)


def enter(node: ast.AST, body: list[ast.stmt], env: dict[str, Val], request_methods) -> Pass:
    found = getattr(node, "_promptlint_loop", None)  # read from the syntax once per loop
    if found is None:
        sends = any(isinstance(n, ast.Call) and callee_name(n.func) in request_methods
                    for stmt in body for n in ast.walk(stmt))
        found = node._promptlint_loop = (_bound_afresh(node, body), sends, _leaving(body), converses(body), _runs(body))
    return Pass(node, frozenset(env), *found)


def before_conversation(passes: list[Pass], taint: Taint, path: str, func: ast.AST | None) -> bool:
    """Whether ``taint`` was computed in this function before a loop that holds a conversation
    (and is not carried or grown by the loop): it is the same for every turn of it."""
    if func is None or taint.param >= 0 or mine(passes, taint):
        return False
    # A step here before the loop (the source, or `system = build()` that received it): the value
    # was bound before the first turn; a source read in the loop has all its steps here in it.
    return any(p.converses and any(s.path == path and func.lineno <= s.line < p.node.lineno for s in taint.steps)
               for p in passes)


_LOOPS = (ast.For, ast.AsyncFor, ast.While)


def _leaving(body: list[ast.stmt]) -> frozenset[int]:
    """The nodes of the blocks in a loop's body that end the loop (``ctx.update(result); break``,
    or a ``return``/``raise``), and of the blocks nested in them, unless those go on to the next
    pass (``continue``): what they grow never reaches another pass. A ``break`` of an inner loop
    ends only that loop."""
    out: set[int] = set()

    def visit(block: list[ast.stmt], inner: bool, leaving: bool) -> None:
        last = block[-1] if block else None
        if isinstance(last, (ast.Return, ast.Raise)) or (isinstance(last, ast.Break) and not inner):
            leaving = True
        elif isinstance(last, ast.Continue) and not inner:
            leaving = False
        for stmt in block:
            nested = inner or isinstance(stmt, _LOOPS)
            subs = statement_blocks(stmt)
            if not subs and leaving:
                out.update(id(n) for n in ast.walk(stmt))
            for sub in subs:
                visit(sub, nested, leaving)

    visit(body, False, False)
    return frozenset(out)


def statement_blocks(stmt: ast.stmt) -> list[list[ast.stmt]]:
    """The statement lists a compound statement holds: its body, ``else``, ``finally``, handlers, cases."""
    subs = [sub for name in ("body", "orelse", "finalbody")
            if isinstance(sub := getattr(stmt, name, None), list) and sub and isinstance(sub[0], ast.stmt)]
    return subs + [part.body for part in (*getattr(stmt, "handlers", ()), *getattr(stmt, "cases", ()))]


def _runs(body: list[ast.stmt]) -> int:
    """How often a loop's body is evaluated: twice (what a pass binds late reaches the next pass's
    start), or once when it always leaves after its first pass (``...; break`` with no
    ``continue`` of its own): nothing it binds reaches another pass."""
    if not body or not isinstance(body[-1], (ast.Break, ast.Return, ast.Raise)):
        return 2
    return 2 if _continues(body) else 1


def _continues(block: list[ast.stmt]) -> bool:
    """Whether a loop's body goes on to its next pass somewhere (``continue``), not counting the
    loops, functions and classes nested in it."""
    return any(isinstance(stmt, ast.Continue) or not isinstance(stmt, (*_LOOPS, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef))
               and any(_continues(sub) for sub in statement_blocks(stmt)) for stmt in block)


def carried(passes: list[Pass], name: str | None, node: ast.AST, module) -> tuple[Taint, ...]:
    """The taint of a name grown at ``node``: from the outermost loop that carries it (bound
    before that loop, never bound afresh in its body), or none."""
    if not name:
        return ()
    for frame in passes:
        if name in frame.before and name.split(".")[0] not in frame.reset and id(node) not in frame.leaving:
            step = module.step(node, f"changes on each pass of the loop at line {frame.node.lineno}: "
                                     f"`{module.snippet(node, 50)}`")
            taint = Taint(CODE, "volatile", (step,))
            frame.sources.add(origin(taint))
            return (taint,)
    return ()


def mine(passes: list[Pass], taint: Taint) -> bool:
    """Whether a taint was given out by one of these loops."""
    return _giver(passes, taint) is not None


def sends(passes: list[Pass], taint: Taint) -> bool:
    """Whether the loop that gave out a taint sends a request in its own body. (Reached through a
    call in the loop, a grown value is sent per pass too; reached at a message display or an
    in-place edit, it is sent per pass only when the loop itself sends: not in a message merger.)"""
    giver = _giver(passes, taint)
    return giver is not None and giver.sends


def origin(taint: Taint) -> tuple | None:
    """Where a taint was given out: (path, line, column) of its first step."""
    first = taint.steps[0] if taint.steps else None
    return None if first is None else (first.path, first.line, first.column)


def _giver(passes: list[Pass], taint: Taint) -> Pass | None:
    where = origin(taint)
    return None if where is None else next((f for f in passes if where in f.sources), None)


def given(passes: list[Pass], taint: Taint) -> bool:
    """Whether a taint was given out by one of these loops, or is a reply one of them received:
    what the loop returns or leaves behind goes out once."""
    where = origin(taint)
    return where is not None and any(where in f.sources or where in f.replies for f in passes)


def received(passes: list[Pass], taints: tuple[Taint, ...]) -> tuple[Taint, ...]:
    """``taints``, whose model replies the innermost loop being evaluated has now received."""
    for t in taints:
        if t.reply and passes:
            passes[-1].replies.add(origin(t))
    return taints


def leave(frame: Pass, values: dict, replies_stay: bool = False) -> None:
    """After the loop, what it carried is what it built: drop its taints from ``values``. (With
    ``replies_stay``, an object's attributes keep the replies: the next call reads them there.)"""
    if not frame.sources and not frame.replies:
        return
    for name, val in list(values.items()):
        if any(given([frame], t) for t in val.taints):
            values[name] = val.keep_deep(lambda t: not given([frame], t) or replies_stay and t.reply)


def history(*vals: Val) -> bool:
    """Whether a value added is a conversation's message (a role-keyed dict, a ``*Message``
    object) or goes into a list of them: the history grows by design, after the prefix."""
    for val in vals:
        for v in [val, *(val.items or [])]:
            name = (v.origin or "").lstrip("@").rsplit(".", 1)[-1].removesuffix("()")
            if (v.keys is not None and "role" in v.keys) or "Message" in name:
                return True
    return False


def bare_grower(node: ast.AST) -> bool:
    """``tools.append(t)`` as a statement: it adds to ``tools`` in place."""
    return isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in GROWERS


def grown_params(func: ast.AST, params: list[str]) -> frozenset[int]:
    """The parameters a function adds to (``tools.append(t)``, ``notes[k] = v``): its caller's
    argument is larger after each call. Read from the syntax once (cached on the node)."""
    found = getattr(func, "_promptlint_grown", None)
    if found is None:
        index = {name: i for i, name in enumerate(params)}
        found = set()
        copied = {t.id for n in descendants(func) if isinstance(n, ast.Assign) and len(n.targets) == 1
                  and isinstance(t := n.targets[0], ast.Name) and t.id in index and _copy_of(n.value, t.id)}
        for n in descendants(func):
            target = None
            # A statement of its own (`log = log.append(m)` returns a new log, leaving the argument be).
            if isinstance(n, ast.Expr) and bare_grower(n.value):
                target = n.value.func.value
            elif isinstance(n, (ast.Assign, ast.AugAssign)):
                # (`notes[k] = v` adds a key, `log["lines"] += [x]` a line; `prompt["Main
                # Instructions"] = {}` sets a key it names, `|=` merges the same keys again)
                grows = isinstance(n.op, ast.Add) if isinstance(n, ast.AugAssign) else None
                target = next((t.value for t in getattr(n, "targets", [getattr(n, "target", None)])
                               if isinstance(t, ast.Subscript) and (grows or grows is None
                                                                    and not isinstance(t.slice, ast.Constant))), None)
            if isinstance(target, ast.Name) and target.id in index and target.id not in copied:
                found.add(index[target.id])
        func._promptlint_grown = found = frozenset(found)
    return found


def _copy_of(value: ast.AST, name: str) -> bool:
    """``x = copy.copy(x)``, ``dict(x)``, ``x.copy()``, ``[*x]``, ``{**x}``, ``x[:]``: a new object
    made from the argument, so what the function adds to ``x`` afterwards stays with it.
    (``x = x or []`` keeps the caller's object.)"""
    if isinstance(value, ast.Call):
        called = value.func.attr if isinstance(value.func, ast.Attribute) else getattr(value.func, "id", "")
        return called in _COPIES and mentions(value, name)
    return (isinstance(value, (ast.List, ast.Dict, ast.Set, ast.ListComp, ast.DictComp, ast.SetComp))
            or isinstance(value, ast.Subscript) and isinstance(value.slice, ast.Slice)) and mentions(value, name)


_COPIES = frozenset({"copy", "deepcopy", "dict", "list", "set", "tuple", "sorted", "model_copy"})


def mentions(node: ast.AST, name: str) -> bool:
    """Whether an expression reads ``name`` at all (``buf = ""`` starts afresh; ``x = f(x)`` may)."""
    return any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(node))


def grows(value: ast.AST, name: str) -> bool:
    """``x = x - 1``, ``history = history + [turn]``, ``log = f"{log}\n{step}"``: the new value is
    the old one added to. (``run = handle(run)`` hands the old value on; it does not grow it.)"""
    if isinstance(value, ast.BinOp):
        return any(isinstance(side, ast.Name) and side.id == name or grows(side, name)
                   for side in (value.left, value.right))
    if isinstance(value, ast.JoinedStr):
        return any(isinstance(part, ast.FormattedValue) and isinstance(part.value, ast.Name) and part.value.id == name
                   for part in value.values)
    return False


def _bound_afresh(loop: ast.AST, body: list[ast.stmt]) -> frozenset[str]:
    """Names the loop rebinds from scratch on a pass (``buf = ""``, an inner loop's target, ``with
    ... as x``): those do not carry a value from one pass to the next."""
    out = set()
    target = getattr(loop, "target", None)
    for stmt in [*([target] if target is not None else []), *body]:
        for n in ast.walk(stmt):
            if isinstance(n, ast.Assign):
                out.update(t.id for t in n.targets if isinstance(t, ast.Name) and not mentions(n.value, t.id))
            elif isinstance(n, ast.AnnAssign) and isinstance(n.target, ast.Name) and n.value is not None:
                if not mentions(n.value, n.target.id):
                    out.add(n.target.id)
            elif isinstance(n, (ast.For, ast.AsyncFor, ast.comprehension)):
                out.update(t.id for t in ast.walk(n.target) if isinstance(t, ast.Name))
            elif isinstance(n, ast.withitem) and n.optional_vars is not None:
                out.update(t.id for t in ast.walk(n.optional_vars) if isinstance(t, ast.Name))
            elif isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store) and stmt is target:
                out.add(n.id)
    return frozenset(out)


def per_call(ref, name: str | None, node: ast.AST, module, given: set) -> tuple[Taint, ...]:
    """``tools = self.tools; tools.append(kb_tool)`` in a function run per request: the object
    keeps what was added, so each call's list is one longer. The taint is followed within this
    call only (``given`` keeps it out of the object's attribute): a method that registers a tool
    once is set-up. Not when the call resets the attribute (``self.parts = []``) or tests
    membership first (``if tool.name in names: continue``)."""
    if not name:
        return ()
    facts = bindings(ref.node)
    base, _, attr = facts.aliases.get(name, (None, 0, None))
    attr = name[5:] if name.startswith("self.") and name.count(".") == 1 else attr if base == "self" else None
    if attr is None or f"self.{attr}" in facts.self_attrs or facts.tests_membership:
        return ()
    taint = Taint(CODE, "volatile", (module.step(
        node, f"grows on each call of {ref.qualname.rsplit('.', 1)[-1]}(): `{module.snippet(node, 50)}`"),))
    given.add(origin(taint))
    return (taint,)


class Bindings(NamedTuple):
    """What a function's syntax binds, read once per function (cached on its node)."""

    rebound: frozenset[str]  # every name it stores to
    #: names bound once to a part of another name's object (``x = p.setdefault(k, {})``,
    #: ``x = p[k]``, ``x = p.get(k)``, ``x = p.attr``) -> (that name, the line, ``attr`` or None)
    aliases: dict[str, tuple[str, int, str | None]]
    empty_lists: frozenset[str]  # names bound to ``[]``, to be filled here
    self_attrs: frozenset[str]  # ``self.x`` names it assigns
    tests_membership: bool  # it tests ``in`` / ``not in`` somewhere
    #: ids of message dicts that are a request's only message (``messages=[{"role": "system",
    #: "content": task}]``, or a list bound once to a name that is only ever passed to calls)
    lone_messages: frozenset[int] = frozenset()
    #: ids of message dicts bound once to a name that is only ever appended somewhere
    #: (``msg = {"role": "system", ...}; history.append(msg)``): where it lands is the append's
    appended_later: frozenset[int] = frozenset()
    #: ids of system messages put into a list before the loop that holds this function's
    #: conversation with its user: made once for it (``_heads_before_turns``)
    run_heads: frozenset[int] = frozenset()


def bindings(func: ast.AST) -> Bindings:
    found = getattr(func, "_promptlint_bindings", None)
    if found is not None:
        return found
    stores: Counter = Counter()
    singles, empty, attrs, tests = [], set(), set(), False
    for n in descendants(func):
        if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store):
            stores[n.id] += 1
        elif isinstance(n, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops):
            tests = True
        if isinstance(n, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
            targets = n.targets if isinstance(n, ast.Assign) else [n.target]
            if isinstance(n, ast.Assign) and len(targets) == 1 and isinstance(targets[0], ast.Name):
                singles.append(n)
            if not isinstance(n, ast.AugAssign) and isinstance(n.value, ast.List) and not n.value.elts:
                empty.update(t.id for t in targets if isinstance(t, ast.Name))
            attrs.update(a for t in targets if (a := self_attribute(t)))
    aliases = {}
    for stmt in singles:
        value, attr = stmt.value, None
        if stores[stmt.targets[0].id] != 1:
            continue
        if isinstance(value, ast.Call) and isinstance(value.func, ast.Attribute) and value.func.attr in ("setdefault", "get"):
            value = value.func.value
        elif isinstance(value, (ast.Subscript, ast.Attribute)):
            attr, value = getattr(value, "attr", None), value.value
        else:
            continue
        if isinstance(value, ast.Name):
            aliases[stmt.targets[0].id] = (value.id, stmt.lineno, attr)
    func._promptlint_bindings = found = Bindings(frozenset(stores), aliases, frozenset(empty), frozenset(attrs), tests,
                                                 _lone_messages(func, stores), _appended_later(func, singles, stores),
                                                 _heads_before_turns(func))
    return found


def grown_fields(func: ast.AST, name: str) -> frozenset[str]:
    """The lists held in fields of ``name`` that ``func`` grows (``chat_log.content.append(x)``).
    Read from the syntax once for every name (cached on the node)."""
    found = getattr(func, "_promptlint_grown_fields", None)
    if found is None:
        fields: dict[str, set[str]] = {}
        for n in descendants(func):
            if (isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in GROWERS
                    and isinstance(n.func.value, ast.Attribute) and isinstance(n.func.value.value, ast.Name)):
                fields.setdefault(n.func.value.value.id, set()).add(n.func.value.attr)
        found = func._promptlint_grown_fields = {holder: frozenset(attrs) for holder, attrs in fields.items()}
    return found.get(name, frozenset())


def free_names(func: ast.AST) -> frozenset[str]:
    """The names a nested function reads from the scopes around it: loaded, never bound in it."""
    found = getattr(func, "_promptlint_free", None)
    if found is None:
        bound = {a.arg for a in ast.walk(func.args) if isinstance(a, ast.arg)} | bindings(func).rebound
        found = func._promptlint_free = frozenset(n.id for n in descendants(func)
                                                  if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)) - bound
    return found


def _appended_later(func: ast.AST, singles: list, stores: Counter) -> frozenset[int]:
    """Messages (a dict display, or a call given a ``role=``) bound once to a name that is only
    ever appended or inserted somewhere (``chat_ctx.messages.insert(-1, rag_msg)``)."""
    dicts = {stmt.targets[0].id: id(stmt.value) for stmt in singles
             if (isinstance(stmt.value, ast.Dict) or isinstance(stmt.value, ast.Call) and any(
                 k.arg == "role" for k in stmt.value.keywords)) and stores[stmt.targets[0].id] == 1}
    if not dicts:
        return frozenset()
    appended = {id(n.args[-1]) for n in descendants(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                and (n.func.attr == "append" and len(n.args) == 1 or n.func.attr == "insert" and len(n.args) == 2)
                and isinstance(n.args[-1], ast.Name)}
    return frozenset(dicts[name] for name, ids in _reads(func, dicts).items() if all(i in appended for i in ids))


def _reads(func: ast.AST, names) -> dict[str, list[int]]:
    """The ids of the places ``func`` reads each of ``names``."""
    reads: dict[str, list[int]] = {}
    for n in descendants(func):
        if isinstance(n, ast.Name) and n.id in names and isinstance(n.ctx, ast.Load):
            reads.setdefault(n.id, []).append(id(n))
    return reads


def _lone_messages(func: ast.AST, stores: Counter) -> frozenset[int]:
    """A request that starts its own conversation: a message list display of one dict or system
    message, given as a call's keyword or a chat model's first argument, or bound once to a name
    whose every read is a call's argument (nothing is added to it); a system message bound once
    to a name read only as such a list's one item (`llm.invoke([system_message])`); or a run's
    fresh ``[system, user]`` list that only this function's agent loop sends and grows (its
    system message is the run's, made once for it). Also a fresh request's tail
    (``_tail_messages``)."""
    def single(value) -> int | None:
        return id(value.elts[0]) if isinstance(value, ast.List) and len(value.elts) == 1 and (isinstance(
            value.elts[0], ast.Dict) or _system_message(value.elts[0])) else None

    lone, named, runs, made, sole = set(), {}, {}, {}, set()
    # Messages bound once to a name, read once, to make a list of them (`system_prompt = {...}`).
    displays = {t.id: n.value for n in descendants(func) if isinstance(t := _bound_name(n), ast.Name)
                and stores[t.id] == 1 and isinstance(n.value, ast.Dict)}
    displays = {name: d for name, ids in _reads(func, displays).items() if len(ids) == 1 for d in [displays[name]]}
    for n in descendants(func):
        if isinstance(n, ast.keyword) and n.arg == "messages" and (only := single(n.value)):
            lone.add(only)
        elif isinstance(n, ast.Call) and callee_name(n.func) in _ASKS_WITH_MESSAGES and n.args and isinstance(n.args[0], ast.List):
            # `llm.invoke([SystemMessage(task)])`, `llm.invoke([system_message])`: the request's only message
            if only := single(n.args[0]):
                lone.add(only)
            elif len(n.args[0].elts) == 1 and isinstance(n.args[0].elts[0], ast.Name):
                sole.add(id(n.args[0].elts[0]))
        elif isinstance(target := _bound_name(n), ast.Name) and stores[target.id] == 1:
            if single(n.value):
                named[target.id] = single(n.value)
            elif elts := _fresh_run(n.value, displays):
                runs[target.id] = (id(elts[0]), id(n))
            elif _system_message(n.value):
                made[target.id] = id(n.value)
    if made:
        lone.update(made[name] for name, ids in _reads(func, made.keys()).items() if all(i in sole for i in ids))
    if named or runs:
        passed = {id(a) for n in descendants(func) if isinstance(n, ast.Call)
                  for a in [*n.args, *(k.value for k in n.keywords)] if isinstance(a, ast.Name)}
        grown = {id(n.func.value) for n in descendants(func) if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute)
                 and n.func.attr in ("append", "extend") and isinstance(n.func.value, ast.Name)}
        grown |= {id(n.value) for n in descendants(func) if isinstance(n, ast.Subscript)}  # (`messages[-1]` reads one)
        loop_bodies = [{id(sub) for stmt in n.body for sub in descendants(stmt)}
                       for n in descendants(func) if isinstance(n, (ast.For, ast.AsyncFor, ast.While))]
        reads = _reads(func, named.keys() | runs.keys())
        lone.update(named[name] for name, ids in reads.items() if name in named and all(i in passed for i in ids))
        # (sent or grown in a loop that does not make it afresh: an agent loop, not a loop over
        # tasks; what it sends may be text rendered from it, `tokenizer.apply_chat_template`)
        # (and not kept on an object, `self.messages = messages`: another call may go on with it)
        kept = {id(n.value) for n in descendants(func) if isinstance(n, ast.Assign)
                and not all(isinstance(t, ast.Name) for t in n.targets)}
        lone.update(runs[name][0] for name, ids in reads.items() if name in runs and not any(i in kept for i in ids)
                    and any((i in passed or i in grown) and i in body and runs[name][1] not in body
                            for i in ids for body in loop_bodies))
    return frozenset(lone | _tail_messages(func, stores))


def _heads_before_turns(func: ast.AST) -> frozenset[int]:
    """``messages = [{"role": "system", ...}]`` (or ``.insert(0, ...)``, ``.append(...)``) outside
    any loop, then ``while True: text = input(); messages.append(...)``: the system message heads
    the conversation this function holds with its user, made once before its first turn."""
    loops = [n for n in descendants(func) if isinstance(n, _LOOPS)]
    turns = [n for n in loops if converses(n.body)]
    if not turns:
        return frozenset()
    in_loops = {id(sub) for n in loops for sub in descendants(n)}
    heads: dict[str, list[ast.AST]] = {}
    for n in descendants(func):
        if id(n) in in_loops:
            continue
        if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) \
                and isinstance(n.value, ast.List):
            heads.setdefault(n.targets[0].id, []).extend(e for e in n.value.elts if _system_display(e))
        elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "insert") \
                and isinstance(n.func.value, ast.Name) and n.args and _system_display(n.args[-1]):
            heads.setdefault(n.func.value.id, []).append(n.args[-1])
    found = set()
    for name, messages in heads.items():
        for turn in turns:
            grown = any(isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in ("append", "extend")
                        and isinstance(n.func.value, ast.Name) and n.func.value.id == name for n in descendants(turn))
            # (bound there again to a list made afresh, it starts over; to what a helper handed
            # back, `context = converse(context)`, it goes on)
            afresh = any(isinstance(n, ast.Assign) and isinstance(n.value, (ast.List, ast.ListComp)) and any(
                isinstance(t, ast.Name) and t.id == name for t in n.targets) for n in descendants(turn))
            if grown and not afresh:
                found.update(id(m) for m in messages if m.lineno < turn.lineno)
    return frozenset(found)


def _system_display(e: ast.AST) -> bool:
    return written_role(e) == "system" or _system_message(e)


def _tail_messages(func: ast.AST, stores: Counter) -> set[int]:
    """``messages = [system]; messages.append({"role": "system", "content": memories});
    messages.append({"role": "user", ...}); create(messages=messages)``: a request made afresh,
    sent as it is (no loop, nothing else added), whose later system message comes right before the
    user's. Only the user's message follows it: what it holds changes no prefix a later request
    shares (FIELD.md), as ``sinks.last_system`` says of a list display."""
    starts = {target.id for n in descendants(func) if isinstance(target := _bound_name(n), ast.Name)
              and stores[target.id] == 1 and isinstance(n.value, ast.List) and n.value.elts
              and all(written_role(e) == "system" for e in n.value.elts)}
    if not starts or any(isinstance(n, (ast.For, ast.AsyncFor, ast.While)) and starts & _names_in(n)
                         for n in descendants(func)):
        return set()
    appends = {id(n.func.value): n.args[0] for n in descendants(func) if isinstance(n, ast.Call)
               and isinstance(n.func, ast.Attribute) and n.func.attr == "append" and len(n.args) == 1
               and isinstance(n.args[0], ast.Dict)}
    passed = {id(a): a.lineno for n in descendants(func) if isinstance(n, ast.Call)
              for a in [*n.args, *(k.value for k in n.keywords)]}
    tail = set()
    for name, ids in _reads(func, starts).items():
        added = sorted((appends[i] for i in ids if i in appends), key=lambda e: (e.lineno, e.col_offset))
        sent = [passed[i] for i in ids if i in passed]
        roles = [written_role(e) for e in added]
        if len(added) + len(sent) == len(ids) and sent and roles[-2:] == ["system", "user"] and added[-1].lineno < min(sent):
            tail.add(id(added[-2]))
    return tail


def _names_in(node: ast.AST) -> set[str]:
    return {n.id for n in descendants(node) if isinstance(n, ast.Name)}


#: Calls that send a model a list of messages as their first argument (a LangChain chat model's).
_ASKS_WITH_MESSAGES = frozenset({"invoke", "ainvoke", "stream", "astream"})


def _system_message(value: ast.AST) -> bool:
    """``SystemMessage(content=task)``: a system message made by its class."""
    return isinstance(value, ast.Call) and callee_name(value.func) in ("SystemMessage", "SystemChatMessage")


def _bound_name(n: ast.AST) -> ast.AST | None:
    """The one name ``x = ...`` or ``x: T = ...`` binds."""
    if isinstance(n, ast.Assign) and len(n.targets) == 1:
        return n.targets[0]
    return n.target if isinstance(n, ast.AnnAssign) and n.value is not None else None


def _fresh_run(value: ast.AST, displays: dict[str, ast.Dict]) -> list[ast.Dict] | None:
    """``[{"role": "system", ...}, {"role": "user", ...}]`` (or names bound to them): a conversation
    that starts here. Its two message displays."""
    if not (isinstance(value, ast.List) and len(value.elts) == 2):
        return None
    elts = [displays.get(e.id) if isinstance(e, ast.Name) else e for e in value.elts]
    if not all(isinstance(e, ast.Dict) for e in elts):
        return None
    return elts if [written_role(e) for e in elts] == ["system", "user"] else None

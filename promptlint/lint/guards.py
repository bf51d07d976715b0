"""What the syntax of a test or a loop says about how often code runs and which message it handles.

Branches that run once per object: ``if self.client is None:`` (get-or-create), ``if
self.turn_count == 0:`` (a first turn), ``if not self.messages: self.messages.append(...)``, ``if
channel not in self.histories:`` (a conversation's first message); what such a branch builds is
set once and reused unchanged (docs/field.md: not a leak). Loops that read the user's next
message hold a conversation (``converses``). Tests that single out the system role
(``m["role"] == "system"``, ``isinstance(m, SystemMessage)``) pick the system messages of a list."""

from __future__ import annotations

import ast
import re
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from promptlint.lint.analysis.values import Val

#: Decorators that compute a function's result once (per process, per arguments, per object) and
#: hand the same value back afterwards: `@functools.lru_cache def system_prompt(): ...`.
_MEMOIZERS = frozenset({"cache", "lru_cache", "cached_property", "cache_resource"})
#: Methods that add to their receiver in place.
GROWERS = frozenset({"append", "extend", "insert", "add", "update", "appendleft", "extendleft", "setdefault"})


def descendants(node: ast.AST) -> tuple[ast.AST, ...]:
    """``ast.walk(node)`` as a tuple, computed once per node: a function's syntax is read for
    many facts (its bindings, counters, grown parameters, stores), each a walk of its own."""
    found = node.__dict__.get("_promptlint_nodes")
    if found is None:
        found = node._promptlint_nodes = tuple(ast.walk(node))
    return found


def set_test(test: ast.AST) -> tuple[ast.AST, bool]:
    """What a test checks is set, and whether it checks that it is unset: ``x``, ``x is not
    None`` (set); ``not x``, ``x is None`` (unset)."""
    if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not):
        return test.operand, True
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Is, ast.IsNot))
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value is None):
        return test.left, isinstance(test.ops[0], ast.Is)
    return test, False


def written_role(e: ast.expr) -> str | None:
    """The role a message display spells out (``{"role": "user"}``, ``SystemMessage(...)``)."""
    if isinstance(e, ast.Dict):
        role = next((v for k, v in zip(e.keys, e.values) if isinstance(k, ast.Constant) and k.value == "role"), None)
        return role.value if isinstance(role, ast.Constant) and isinstance(role.value, str) else None
    name = callee_name(e.func) if isinstance(e, ast.Call) else ""
    return {"SystemMessage": "system", "HumanMessage": "user", "UserMessage": "user"}.get(name)


#: Calls that only measure a prompt: a message list built for them is never sent (``/tokens``).
COUNTING_CALLS = re.compile(r"^(len|tokenize|encode|count_\w*tokens\w*|num_tokens\w*|"
                            r"(?:get|calc|calculate|compute|estimate|measure)_(?:num_)?(?:\w+_)?(?:tokens?|size|length)(?:_count|_len)?"
                            r"|\w*tokens?_count\w*)$")


#: Names of records that describe something (a plugin's `info["usage"]`, a command's help): their
#: fields are fixed text, not a response's per-request fields of the same name.
_DESCRIPTIONS = re.compile(r"(?i)(?:^|_)(?:info|meta|metadata|manifest|spec|schema|config|cfg|settings|help|doc|docs"
                           r"|plugin|command|cmd|tool|card)s?$")


def describes(name: str | None) -> bool:
    return bool(name) and _DESCRIPTIONS.search(name) is not None


def unset_test(test: ast.AST) -> str | None:
    """The attribute a get-or-create test checks (``self.x is None``, ``not self.x``; also as one
    condition of several, ``self.x is None and self.config``), else None."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return next((found for value in test.values if (found := unset_test(value)) is not None), None)
    test, unset = set_test(test)
    if not unset:
        return None
    parts = []
    while isinstance(test, ast.Attribute):
        parts.append(test.attr)
        test = test.value
    # An object's attribute lives with the object; a local checked for None is set again per call.
    return ".".join([test.id, *reversed(parts)]) if isinstance(test, ast.Name) and test.id in ("self", "cls") and parts else None


def returns_when_set(stmt: ast.stmt) -> str | None:
    """``if self._cached is not None: return self._cached`` (or ``if self._cached: return
    self._cached``): the attribute it checks and hands back, set once by the code after it; else
    None. (``if self.use_sop: return self.plan()`` is a switch, not a cache.)"""
    if not (isinstance(stmt, ast.If) and not stmt.orelse and isinstance(stmt.body[-1], ast.Return)
            and stmt.body[-1].value is not None):
        return None
    tested, unset = set_test(stmt.test)
    if unset or ast.dump(tested) != ast.dump(stmt.body[-1].value):
        return None
    return unset_test(ast.UnaryOp(op=ast.Not(), operand=tested))


def first_pass(node: ast.If) -> int:
    """1 for a branch that runs on an object's first call only: a counter of its own at zero
    (``if self.turn_count == 0:``), or a test of an attribute the branch itself sets or fills
    (``if not self.memory_called: ...; self.memory_called = True``,
    ``if not self.messages: self.messages.append(system)``). What it builds is set once per
    object (a task, a session) and reused unchanged (docs/field.md). Read once per node."""
    found = getattr(node, "_promptlint_first_pass", None)
    if found is None:
        found = node._promptlint_first_pass = _first_pass(node)
    return found


def cached_on(node: ast.AST, name: str, key, compute):
    """``compute()`` cached on ``node`` under ``name`` for ``key``: a test is read on each pass of
    its loop and each summary of its function, a class or module for each of its reads, and its
    syntax is the same every time."""
    cache = node.__dict__.setdefault(name, {})
    if key not in cache:
        cache[key] = compute()
    return cache[key]


def first_of_loop(node: ast.If, loop: ast.AST | None) -> bool:
    """``if messages is None: messages = build(...)`` in ``loop``, where the loop binds the name
    nowhere else: the branch runs on the loop's first pass only (a conversation's first turn)."""
    return cached_on(node, "_promptlint_first_of_loop", id(loop), lambda: _first_of_loop(node, loop))


def _first_of_loop(node: ast.If, loop: ast.AST | None) -> bool:
    tested, unset = set_test(node.test)
    if loop is None or not unset or not isinstance(tested, ast.Name):
        return False
    inside = {id(n) for stmt in node.body for n in ast.walk(stmt)}
    stores = [n for stmt in loop.body for n in ast.walk(stmt)
              if isinstance(n, ast.Name) and n.id == tested.id and isinstance(n.ctx, ast.Store)]
    return bool(stores) and all(id(n) in inside for n in stores)


def _first_pass(node: ast.If) -> int:
    test = node.test
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], (ast.Eq, ast.Lt, ast.LtE))
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value in (0, 1)
            and not isinstance(test.comparators[0].value, bool)):
        if isinstance(test.ops[0], ast.Lt) != (test.comparators[0].value == 1):
            return 0
        counter = test.left
        return int(self_attribute(counter) is not None)
    if _fills_missing_key(node):
        return 1
    attr = unset_test(test) or self_attribute(_len_zero(test))
    if attr is None:
        return 0
    for n in (n for stmt in node.body for n in ast.walk(stmt)):
        targets = n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AugAssign) else []
        if any(self_attribute(t) == attr for t in targets):
            return 1
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in GROWERS \
                and self_attribute(n.func.value) == attr:
            return 1
    return 0


def heads_given_conversation(node: ast.If, params: list[str]) -> bool:
    """``if not messages: messages = [system]``, ``if not any(m["role"] == "system" for m in
    messages): messages.insert(0, system)``: a system message put at the head of the conversation
    a caller passed in, only while it has none. The caller sends the same list back on the next
    turn, system message included: what the branch builds is made once per conversation."""
    return cached_on(node, "_promptlint_heads", tuple(params), lambda: _heads_given_conversation(node, params))


def _heads_given_conversation(node: ast.If, params: list[str]) -> bool:
    test = node.test

    def empty_test(value: ast.AST) -> ast.AST | None:  # `not x`, `x is None`, `len(x) == 0`
        checked, unset = set_test(value)
        return checked if unset else _len_zero(value)

    tested = [t for value in (test.values if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.Or) else [test])
              if isinstance(t := empty_test(value), ast.Name)]
    if not tested and role_test(test):  # (`not any(m["role"] == "system" for m in messages)`, `messages[0]["role"] != "system"`)
        tested = [n for n in ast.walk(test) if isinstance(n, ast.Name) and n.id in params]
    names = {t.id for t in tested if t.id in params}
    for n in (n for stmt in node.body for n in ast.walk(stmt)):
        if isinstance(n, ast.Assign) and any(isinstance(t, ast.Name) and t.id in names for t in n.targets) \
                and isinstance(n.value, ast.List) and n.value.elts:
            return True
        if isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "insert" and n.args \
                and isinstance(n.func.value, ast.Name) and n.func.value.id in names \
                and isinstance(n.args[0], ast.Constant) and n.args[0].value == 0:
            return True
    return False


def _fills_missing_key(node: ast.If) -> bool:
    """``if channel not in self.histories: self.histories[channel] = [system, ...]``, or
    Streamlit's ``if "messages" not in st.session_state: st.session_state.messages = [...]``:
    what the branch stores under the key of an object's container is made once per key (a
    conversation) and reused."""
    test = node.test
    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.NotIn)
            and isinstance(test.comparators[0], ast.Attribute)):
        return False  # (a local dict filled per call, `if url not in seen: seen[url] = r`, is not kept)
    key, container = ast.dump(test.left), ast.dump(test.comparators[0])
    name = test.left.value if isinstance(test.left, ast.Constant) and isinstance(test.left.value, str) else None
    for n in (n for stmt in node.body for n in ast.walk(stmt)):
        for t in n.targets if isinstance(n, ast.Assign) else [n.target] if isinstance(n, ast.AnnAssign) else []:
            if isinstance(t, ast.Subscript) and ast.dump(t.value) == container and ast.dump(t.slice) == key:
                return True
            if isinstance(t, ast.Attribute) and t.attr == name and ast.dump(t.value) == container:
                return True
    return False


def self_attribute(node: ast.AST | None) -> str | None:
    """``self.turn_count`` as "self.turn_count"; None for anything else."""
    if isinstance(node, ast.Attribute) and isinstance(node.value, ast.Name) and node.value.id == "self":
        return f"self.{node.attr}"
    return None


def _len_zero(test: ast.AST) -> ast.AST | None:
    """``x`` of ``len(x) == 0``."""
    if (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)
            and isinstance(test.comparators[0], ast.Constant) and test.comparators[0].value == 0
            and isinstance(test.left, ast.Call) and getattr(test.left.func, "id", None) == "len" and len(test.left.args) == 1):
        return test.left.args[0]
    return None


_ROLE_WORDS = {"system", "developer", "SYSTEM", "DEVELOPER"}
#: Message classes of the system role (`isinstance(m, SystemMessage)` dispatches on the role).
_SYSTEM_TYPES = re.compile(r"System\w*(?:Message|Content|Prompt)\w*|Developer\w*Message")


def role_test(node: ast.AST) -> int:
    """1 when a test or match pattern singles out the system/developer role (cached on the node:
    a test is evaluated on each pass of its loop and each summary of its function)."""
    found = getattr(node, "_promptlint_role", None)
    if found is None:
        found = node._promptlint_role = int(any(
            isinstance(sub, ast.Constant) and sub.value in _ROLE_WORDS
            or isinstance(sub, ast.Attribute) and sub.attr in _ROLE_WORDS
            or isinstance(sub, ast.Name) and sub.id in _ROLE_WORDS  # `msg[ROLE] == SYSTEM`
            or _system_type_test(sub)  # `isinstance(message, SystemMessage)`
            for sub in ast.walk(node)))
    return found


def _system_type_test(node: ast.AST) -> bool:
    """``isinstance(m, SystemMessage)``, ``isinstance(m, (SystemMessage, messages.SystemContent))``."""
    if not (isinstance(node, ast.Call) and getattr(node.func, "id", None) == "isinstance" and len(node.args) == 2):
        return False
    kinds = node.args[1].elts if isinstance(node.args[1], ast.Tuple) else [node.args[1]]
    return any(_SYSTEM_TYPES.fullmatch(getattr(k, "id", getattr(k, "attr", "")) or "") for k in kinds)


def picks_system(test: ast.AST, name: str) -> bool:
    """A test that keeps only the system/developer messages among the values of ``name``:
    ``m["role"] == "system"``, ``m.get("role") in ("system", "developer")``, ``m.role is
    Role.SYSTEM`` (alone or in an ``and``). ``!=`` and ``not`` keep the others."""
    if isinstance(test, ast.BoolOp) and isinstance(test.op, ast.And):
        return any(picks_system(value, name) for value in test.values)
    if _system_type_test(test):
        return isinstance(test.args[0], ast.Name) and test.args[0].id == name
    return (isinstance(test, ast.Compare) and bool(role_test(test))
            and all(isinstance(op, (ast.Eq, ast.Is, ast.In)) for op in test.ops)
            and any(isinstance(n, ast.Name) and n.id == name for n in ast.walk(test)))


def role_names(loop: ast.AST, name: str) -> frozenset[str]:
    """``name`` and the names a loop's body binds to its role (``role = m.get("role")``,
    ``role = m["role"]``, ``role = m.role``): a test of either picks the message by its role
    (cached on the loop)."""
    cache = loop.__dict__.setdefault("_promptlint_roles", {})
    found = cache.get(name)
    if found is None:
        found = {name}
        for n in descendants(loop):
            if isinstance(n, ast.Assign) and len(n.targets) == 1 and isinstance(n.targets[0], ast.Name) and _reads_role(n.value, name):
                found.add(n.targets[0].id)
        found = cache[name] = frozenset(found)
    return found


def _reads_role(value: ast.AST, name: str) -> bool:
    if isinstance(value, ast.Call) and value.args:  # `m.get("role", "")`, `getattr(m, "role", None)`
        if isinstance(value.func, ast.Attribute) and value.func.attr == "get":
            holder, key = value.func.value, value.args[0]
        elif getattr(value.func, "id", None) == "getattr" and len(value.args) >= 2:
            holder, key = value.args[0], value.args[1]
        else:
            return False
        return isinstance(holder, ast.Name) and holder.id == name and isinstance(key, ast.Constant) and key.value == "role"
    if isinstance(value, ast.Subscript):
        return (isinstance(value.value, ast.Name) and value.value.id == name
                and isinstance(value.slice, ast.Constant) and value.slice.value == "role")
    return isinstance(value, ast.Attribute) and value.attr == "role" and isinstance(value.value, ast.Name) and value.value.id == name


def ends_pass(body: list[ast.stmt]) -> bool:
    """A branch that ends the loop's pass (``...; continue``): what follows it in the loop body
    runs for the other values only."""
    return bool(body) and isinstance(body[-1], ast.Continue)


#: Calls that wait for the user's next message: a loop that makes them holds a conversation.
_READS_INPUT = frozenset({"input", "ainput", "raw_input", "receive_text", "receive_json", "receive_bytes", "receive",
                          "recv", "readline", "prompt_async", "get_user_input", "wait_for_message"})


def converses(body: list[ast.stmt]) -> bool:
    """A loop whose body waits for the user's next message (`while True: text = input()`, a
    websocket's `receive_text()`, prompt_toolkit's `session.prompt()`): one pass per turn of
    one conversation, so what the function computed before it is the same for every turn."""
    for n in (n for stmt in body for n in ast.walk(stmt)):
        if isinstance(n, ast.Call):
            name = callee_name(n.func)
            if name in _READS_INPUT or (name == "prompt" and isinstance(n.func, ast.Attribute)
                                        and getattr(n.func.value, "id", getattr(n.func.value, "attr", "")).endswith("session")):
                return True
    return False


def callee_name(func: ast.AST) -> str:
    """The name a call is made by: ``input`` of ``input()``, ``receive_text`` of ``ws.receive_text()``."""
    return func.attr if isinstance(func, ast.Attribute) else getattr(func, "id", "")


def decorator_names(func: ast.AST) -> set[str]:
    """The last word of each decorator's name: ``lru_cache`` of ``@functools.lru_cache(maxsize=1)``."""
    return {callee_name(d.func if isinstance(d, ast.Call) else d) for d in getattr(func, "decorator_list", ())}


def memoized(func: ast.AST) -> bool:
    """A function whose result is computed once and handed back afterwards: by a decorator
    (``@lru_cache``), or by hand in a cache it keeps (``if name in _cache: return _cache[name]``,
    then ``_cache[name] = text``), once per key."""
    if not decorator_names(func).isdisjoint(_MEMOIZERS):
        return True
    body = getattr(func, "body", None)
    for stmt in body if isinstance(body, list) else ():
        test = getattr(stmt, "test", None)
        if not (isinstance(stmt, ast.If) and isinstance(test, ast.Compare) and len(test.ops) == 1
                and isinstance(test.ops[0], ast.In) and len(stmt.body) == 1 and isinstance(stmt.body[0], ast.Return)):
            continue
        key, cache, back = ast.dump(test.left), ast.dump(test.comparators[0]), stmt.body[0].value
        if isinstance(back, ast.Subscript) and ast.dump(back.value) == cache and ast.dump(back.slice) == key:
            return any(isinstance(n, ast.Assign) and any(
                isinstance(t, ast.Subscript) and ast.dump(t.value) == cache and ast.dump(t.slice) == key for t in n.targets)
                for n in descendants(func))
    return False


def accumulates(stmt: ast.AST) -> bool:
    """``text += part`` or ``text = text + part``: what the test lets in is added to the text."""
    if isinstance(stmt, ast.AugAssign):
        return isinstance(stmt.op, ast.Add)
    value, targets = getattr(stmt, "value", None), getattr(stmt, "targets", ())
    while isinstance(value, ast.BinOp) and isinstance(value.op, ast.Add):
        value = value.left
    return (isinstance(value, ast.Name) and len(targets) == 1 and isinstance(targets[0], ast.Name)
            and targets[0].id == value.id)


#: Calls in a test that say nothing of which text it picks.
_PLAIN_TESTS = frozenset({"len", "isinstance", "bool", "str", "int", "hasattr", "callable", "getattr"})


def selects(test: ast.AST) -> bool:
    """A test that picks by what a text says (`key in message`, `keyword_check(message, ...)`,
    `pattern.search(message)`), not one that only checks it is there (`message != ""`, `len(...)`)."""
    return cached_on(test, "_promptlint_selects", None, lambda: any(isinstance(n, ast.Compare) and any(isinstance(op, (ast.In, ast.NotIn)) for op in n.ops)
               or isinstance(n, ast.Call) and callee_name(n.func) not in _PLAIN_TESTS for n in ast.walk(test)))


def list_name(node: ast.AST) -> str | None:
    """The name a list is known by: ``messages``, ``self.history``, ``state["messages"]``."""
    if isinstance(node, ast.Name):
        return node.id
    if isinstance(node, ast.Attribute):
        return node.attr
    if isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Constant) and isinstance(node.slice.value, str):
        return node.slice.value
    return None


def receiver_name(node: ast.AST) -> str:
    """The name a method's receiver is known by: ``memory`` of ``self.memory.search()``; one item of
    a named collection is ``memories[]`` (``self.memories[guild_id].get_context_string()``)."""
    if isinstance(node, ast.Subscript):
        inner = receiver_name(node.value)
        return f"{inner}[]" if inner else ""
    return node.attr if isinstance(node, ast.Attribute) else getattr(node, "id", "")


def windowed(node: ast.AST) -> ast.AST:
    """The list a window of it is taken from: ``history`` of ``history[-20:]``, ``reversed(history)``."""
    while isinstance(node, ast.Subscript) and isinstance(node.slice, ast.Slice) or (
            isinstance(node, ast.Call) and getattr(node.func, "id", None) == "reversed" and node.args):
        node = node.value if isinstance(node, ast.Subscript) else node.args[0]
    return node


def tested_taints(evaluate, test: ast.AST, whole: tuple) -> tuple:
    """The taints a test's outcome depends on (``whole``: those of the test as evaluated). A
    record or list asked only whether it is empty (``if not result or not result.get("answer")``)
    is decided by which entries it has, not by what they hold: a clock stored beside the answer
    (`{"answer": ..., "time": elapsed}`) chooses nothing. Reads of a field (``.get("k")``) are
    evaluated again; any other part of the test keeps the whole."""
    def part(node: ast.AST):
        if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            return part(node.operand)
        if isinstance(node, ast.BoolOp):
            parts = [part(v) for v in node.values]
            return None if any(p is None for p in parts) else tuple(t for p in parts for t in p)
        reads = isinstance(node, (ast.Name, ast.Attribute)) or (
            isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "get"
            and len(node.args) == 1 and isinstance(node.args[0], ast.Constant) and not node.keywords)
        if not reads:
            return None
        val = evaluate(node)
        return () if val.keys is not None or val.items is not None else val.taints

    found = part(test) if isinstance(test, (ast.UnaryOp, ast.BoolOp, ast.Name)) else None
    return whole if found is None else found


#: Keywords of a request that give it a stable layer of its own beside its messages.
_LAYER_KEYWORDS = frozenset({"system", "instructions", "system_instruction", "system_prompt", "preamble", "tools"})


def sends_only_users_words(func: ast.AST) -> bool:
    """A function whose requests are a user message alone (``messages=[{"role": "user", "content":
    full_prompt}]``, no ``system=``): a local it names ``system_prompt`` is folded into that user
    message, not sent as a system prompt (older and local-model code writes its "system prompt"
    at the head of the one prompt it sends). Read once per function (cached on its node)."""
    found = func.__dict__.get("_promptlint_users_words")
    if found is None:
        sent = [n for n in descendants(func) if isinstance(n, ast.Call) and any(k.arg == "messages" for k in n.keywords)]
        found = func._promptlint_users_words = bool(sent) and all(
            not _LAYER_KEYWORDS.intersection(k.arg for k in n.keywords) and all(
                isinstance(k.value, ast.List) and k.value.elts and all(written_role(e) == "user" for e in k.value.elts)
                for k in n.keywords if k.arg == "messages") for n in sent)
    return found


def default_factory(value: ast.AST) -> ast.AST | None:
    """The factory of a class-body default (``field(default_factory=f)``, ``Field(default_factory=f)``):
    it makes the default afresh for each instance."""
    return next((kw.value for kw in value.keywords if kw.arg == "default_factory"), None) if isinstance(value, ast.Call) else None


#: Decorators that hand a function to the model as a tool (`@tool`, `@function_tool`, `@kernel_function`).
_TOOL_DECORATORS = frozenset({"tool", "function_tool", "kernel_function", "ai_function", "llm_tool", "ai_callable"})


def tool_functions(scope: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    """The functions of a class or module that the model calls as tools: handed to a tool maker
    (``Tool(func=f)``, ``StructuredTool.from_function(f)``) or in a ``tools=``/``functions=`` list,
    decorated ``@tool``, or named by a tool definition (``{"name": "write_file", ...}``, dispatched
    by that name). Cached on the node."""
    return cached_on(scope, "_promptlint_tool_functions", None, lambda: _tool_functions(scope))


def _tool_functions(scope: ast.AST) -> list[ast.FunctionDef | ast.AsyncFunctionDef]:
    handed = set()  # names of functions passed to a tool maker, in a tools list, or a tool's name
    for n in descendants(scope):
        if isinstance(n, ast.Call):
            maker = "tool" in callee_name(n.func).lower()
            given = [*(n.args if maker else ()), *(k.value for k in n.keywords if maker or k.arg in ("tools", "functions"))]
            for value in given:
                for v in value.elts if isinstance(value, (ast.List, ast.Tuple)) else [value]:
                    if isinstance(v, ast.Name) or isinstance(v, ast.Attribute) and getattr(v.value, "id", "") == "self":
                        handed.add(v.id if isinstance(v, ast.Name) else v.attr)
        elif isinstance(n, ast.Dict) and any(isinstance(k, ast.Constant) and k.value in ("parameters", "input_schema")
                                             for k in n.keys):
            handed.update(v.value for k, v in zip(n.keys, n.values) if isinstance(k, ast.Constant) and k.value == "name"
                          and isinstance(v, ast.Constant) and isinstance(v.value, str))
    return [fn for fn in descendants(scope) if isinstance(fn, (ast.FunctionDef, ast.AsyncFunctionDef))
            and not fn.name.startswith("__") and (fn.name in handed or decorator_names(fn) & _TOOL_DECORATORS)]


def tool_written(cls: ast.ClassDef) -> dict[str, tuple[ast.AST, str]]:
    """Attributes of the object a tool the model calls sets from its arguments: ``def
    manage_tasks(tasks): self.tasks = tasks`` handed to ``Tool(func=manage_tasks)`` (or a method
    decorated ``@tool``, or ``self.save_note`` in a tools list). The model calls it mid-conversation,
    so what the object's prompt builder reads there changes between requests. Attribute ->
    (the write, the tool's name); read once per class (cached on its node)."""
    return cached_on(cls, "_promptlint_tool_written", None, lambda: _tool_written(cls))


def _tool_written(cls: ast.ClassDef) -> dict[str, tuple[ast.AST, str]]:
    found: dict[str, tuple[ast.AST, str]] = {}
    for fn in tool_functions(cls):
        params = {a.arg for a in ast.walk(fn.args) if isinstance(a, ast.arg)} - {"self", "cls"}
        for n in descendants(fn):
            target, value = None, None
            if isinstance(n, (ast.Assign, ast.AugAssign)):
                target, value = (n.targets[0] if isinstance(n, ast.Assign) else n.target), n.value
            elif isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr in GROWERS and n.args:
                target, value = n.func.value, n.args[-1]
            if isinstance(target, ast.Attribute) and getattr(target.value, "id", "") == "self" and any(
                    isinstance(v, ast.Name) and v.id in params for v in ast.walk(value)):
                found.setdefault(target.attr, (n, fn.name))
    return found


def expiry_check(operands: list[ast.expr], vals: list[Val]) -> bool:
    """A clock compared with an age (``now - fetched_at >= TTL``) or another point in time
    (``expires_at < now``, ``Model.updated_at >= cutoff``) decides freshness, not which text goes
    in; a clock field compared with constants (``now.hour < 12``) chooses the text."""
    if any(isinstance(o, ast.BinOp) and isinstance(o.op, (ast.Sub, ast.Add)) for o in operands):
        return True
    clocked = [any(t.code.startswith("PC1") for t in v.taints) for v in vals]
    return any(not c and not _constant(o, v) for o, v, c in zip(operands, vals, clocked))


def _constant(node: ast.expr, val: Val) -> bool:
    if val.const is not None or isinstance(node, ast.Constant):
        return True
    if isinstance(node, (ast.Tuple, ast.List, ast.Set)):
        return all(isinstance(e, ast.Constant) for e in node.elts)
    return isinstance(node, ast.Name) and node.id.isupper()  # a module constant (`MORNING_END`)

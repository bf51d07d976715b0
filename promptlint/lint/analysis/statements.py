"""Statements: assignments (names, tuples, attributes, subscripts), control flow, returns."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.sinks import is_system_message, other_role
from promptlint.lint.analysis.values import (ANY_KEY, RUN_STATE, Summary, Taint, Val, frozen_ok, as_fallback, chosen,
                                             join, key_of, merge, parameters, system_only, user_words)
from promptlint.lint.diagnostic import CHOOSES, PARAMETER
from promptlint.lint.guards import (COUNTING_CALLS, accumulates, callee_name, descendants, ends_pass, first_of_loop, first_pass,
                                    heads_given_conversation, list_name, picks_system, returns_when_set, role_names, role_test, selects,
                                    sends_only_users_words, tested_taints, unset_test)
from promptlint.lint.run_state import state_key, state_receiver

def _content_of(target: ast.AST) -> ast.AST | None:
    """The message written to by ``msg["content"] = ...``, ``msg[CONTENT] += ...`` or
    ``msg.content += ...``; None for any other target."""
    if isinstance(target, ast.Attribute) and target.attr == "content":
        return target.value
    if isinstance(target, ast.Subscript):
        key = target.slice
        name = key.value if isinstance(key, ast.Constant) else getattr(key, "id", getattr(key, "attr", None))
        if isinstance(name, str) and name.lower() == "content":
            return target.value
    return None




def counting_only_names(func: ast.AST) -> frozenset[str]:
    """Local names whose every read is an argument of a token-counting call (or a method call on
    the name that adds to it): the prompt they hold is measured, not sent (cached on the node)."""
    found = getattr(func, "_promptlint_count_only", None)
    if found is not None:
        return found
    names: list[ast.Name] = []
    counting: set[int] = set()  # names passed to a counting call
    adding: set[int] = set()  # names read as `name.append` where a call reads it
    for node in descendants(func):
        if isinstance(node, ast.Name):
            if isinstance(node.ctx, ast.Load):
                names.append(node)
        elif isinstance(node, ast.Call):
            if COUNTING_CALLS.match(callee_name(node.func)):
                counting.update(id(a) for a in node.args if isinstance(a, ast.Name))
            for part in (node.func, *node.args):
                if isinstance(part, ast.Attribute) and part.attr in ("append", "extend", "insert"):
                    adding.add(id(part.value))
    counted = {n.id for n in names if id(n) in counting}
    other = {n.id for n in names if id(n) not in counting and id(n) not in adding}
    func._promptlint_count_only = found = frozenset(counted - other)
    return found


class Statements:
    """Statement evaluation of ``FunctionAnalysis``."""

    counting = 0  # > 0 while evaluating a prompt built only to count its tokens: no sink there
    count_only: frozenset[str] = frozenset()

    def run_function(self) -> Summary:
        node = self.ref.node
        args = node.args
        all_args = parameters(node)
        self.params = [a.arg for a in all_args]
        self.env.update(self.ref.closure or {})
        for i, a in enumerate(all_args):
            taints = [Taint("", "volatile", (), param=i), Taint("", "unordered", (), param=i)]
            spec = self.m.catalog.source_params.get(a.arg)
            typed = self.m.catalog.source_message_types.match(self.m._dotted(a.annotation) or "") if a.annotation else ()
            if typed:  # `message: discord.Message`: the message this turn answers; its `.content` is the user's words
                self.turn_objects[a.arg] = Taint(typed[0].code, typed[0].label, (self.m.step(a, f"{typed[0].note}{PARAMETER}{a.arg}`"),))
            elif spec is not None:
                taint = Taint(spec.code, spec.label, (self.m.step(a, f"{spec.note}{PARAMETER}{a.arg}`"),))
                if _object_annotation(a.annotation):
                    # `user_input: ConversationInput`: its `.text` is this turn's words; the object
                    # itself (device, language, conversation id) is not.
                    self.turn_objects[a.arg] = taint
                else:
                    taints.append(taint)
            val = Val(tuple(taints), node=a) if not self.run_state else Val(origin=RUN_STATE, node=a)
            if i == 0 and self.cls is not None and a.arg in ("self", "cls") and self.run_state != "self":
                val = Val((), origin=f"@{self.cls.qualname}()", node=a)
            self.env[a.arg] = val
        defaults = [*args.defaults, *[d for d in args.kw_defaults if d is not None]]
        for d in defaults:
            self.eval(d)
        given = {name: self.env[name].taints for name in self.params}
        if isinstance(node, ast.Lambda):
            self.ret = self.eval(node.body)
        else:
            segment = self.m._segment(node)
            if "token" in segment or "len(" in segment:
                self.count_only = counting_only_names(node)
            self.run_block(node.body)
            self.check_decorators(node)
            self.check_stable_name(node)
        return Summary(self.ret or Val(), self.param_sinks, self._param_writes(node, given))

    def _param_writes(self, node: ast.AST, given: dict[str, tuple[Taint, ...]]) -> dict[int, tuple[Taint, ...]]:
        """Sources written into a parameter's object (``context["time"] = now()``, ``parts.append(x)``):
        the caller's argument holds them after the call. A name the body rebinds is not the argument."""
        if not any(t.param < 0 for v in self.env.values() for t in v.taints):
            return {}  # nothing real was computed here: nothing written (and no syntax walk)
        rebound, aliases = loops.bindings(node)[:2]
        writes = {}
        for i, name in enumerate(self.params):
            val = self.env.get(name)
            if name in rebound or name in ("self", "cls") or val is None:
                continue
            # `data = context.setdefault("recipient", {})`: writes into `data` are writes into `context`;
            # what the alias read from the object at its binding (`usage = response.usage`) is not.
            held = merge(val.taints, *(tuple(t for t in self.env[a].taints if not t.steps or t.steps[0].line != line)
                                       for a, (p, line, _) in aliases.items() if p == name and a in self.env))
            found = {i: tuple(t for t in held if t.param < 0 and t not in given[name])}
            for field in loops.grown_fields(node, name):  # `chat_log.content.append(x)`: into that list of the caller's object
                found[(i, field)] = tuple(t for t in self.env.get(f"{name}.{field}", Val()).taints if t.param < 0)
            if any(found.values()):
                step = self.m.step(node, f"written into `{name}` by {getattr(node, 'name', 'lambda')}()")
                writes.update((key, tuple(t.then(step) for t in new)) for key, new in found.items() if new)
        return writes

    def run_block(self, body: list[ast.stmt]) -> None:
        depth = len(self.lazy)
        for stmt in body:
            try:
                self.stmt(stmt)
            except RecursionError:
                raise
            except Exception:  # noqa: BLE001 - one odd statement must not lose the file
                if self.m.project is not None and self.m.project.strict:
                    raise
            if (cached := returns_when_set(stmt)) is not None:
                # `if self._cached is not None: return self._cached`: the rest runs while it is unset
                self.lazy.append(cached)
        del self.lazy[depth:]

    # --------------------------------------------------------------- statements
    def stmt(self, node: ast.stmt) -> None:
        turn = self.cls.next_turn if self.cls is not None else None
        if turn and turn.method is getattr(self.ref, "node", None) and node.lineno >= turn.until:
            self.cls.next_turn = None  # (module.summary) from the line that keeps this turn's reply on
        method = getattr(self, "stmt_" + type(node).__name__, None)
        if method is not None:
            method(node)
        else:
            for child in ast.iter_child_nodes(node):
                if isinstance(child, ast.expr):
                    self.eval(child)

    def stmt_Expr(self, node: ast.Expr) -> None:
        call = node.value
        counted = (isinstance(call, ast.Call) and isinstance(call.func, ast.Attribute)
                   and isinstance(call.func.value, ast.Name) and call.func.value.id in self.count_only)
        self.counting += counted
        self.bare_call = node.value if loops.bare_grower(node.value) else None  # grows its receiver (loops.py)
        try:
            self.eval(node.value)
        finally:
            self.counting -= counted

    def stmt_Assign(self, node: ast.Assign) -> None:
        counted = bool(self.count_only) and all(isinstance(t, ast.Name) and t.id in self.count_only for t in node.targets)
        self.counting += counted
        try:
            val = self.eval(node.value)
        finally:
            self.counting -= counted
        if self.passes and len(node.targets) == 1 and isinstance(node.targets[0], ast.Name) and loops.grows(
                node.value, node.targets[0].id):
            val = val.with_taints(merge(val.taints, self.grown(node.targets[0].id, node)))
        for target in node.targets:
            self.assign(target, val, node)

    def stmt_AnnAssign(self, node: ast.AnnAssign) -> None:
        if node.value is not None:
            self.assign(node.target, self.eval(node.value), node)

    def stmt_AugAssign(self, node: ast.AugAssign) -> None:
        old = self.eval(node.target)
        new = self.eval(node.value)
        grown = self.grown(self._dotted_local(node.target), node, old, new)
        taints = merge(old.taints, new.taints, grown, *self.loop_unordered)
        items = None
        if old.items is not None and new.items is not None and isinstance(node.op, ast.Add):
            items = old.items + new.items
        if isinstance(node.target, ast.Name) and not self.frozen and self.ref is not None and not self._not_a_layer(node.target.id):
            self.check_stable_target(node.target.id, node.target.id, new, node.target)
        self.check_content_write(node.target, new)
        self.assign(node.target, Val(taints, items=items, node=node.value), node, weak=True)

    def _not_a_layer(self, name: str) -> bool:
        """A local named for a system message added after the conversation (``history.append({"role": "system",
        "content": system_message_content})``) or to the user's message alone (``sends_only_users_words``)."""
        return sends_only_users_words(self.ref.node) or any(
            isinstance(n, ast.Call) and isinstance(n.func, ast.Attribute) and n.func.attr == "append"
            and self.m.catalog.source_newest_of.match(list_name(n.func.value) or "")
            and any(isinstance(m, ast.Name) and m.id == name for a in n.args for m in ast.walk(a)) for n in descendants(self.ref.node))

    def stmt_Return(self, node: ast.Return) -> None:
        if node.value is None:
            return
        update = _state_update(node.value)
        self.defer_shapes += update  # `return {"messages": [SystemMessage(...)]}`: a graph's state
        self.history_adds += update  # update, appended to the history (after it), not a request
        try:
            val = self.eval(node.value)
        finally:
            self.defer_shapes -= update
            self.history_adds -= update
        if self.loop_unordered:
            val = val.with_taints(merge(val.taints, *self.loop_unordered))
        if self.control and isinstance(node.value, ast.Constant) and isinstance(node.value.value, bool):
            # `if k in phrase: return True`: a predicate of this turn's words
            val = val.with_taints(merge(val.taints, self._chosen(clocks=False)))
        elif self.control and _chosen_text(node, val):  # `if now.hour < 12: return "Good morning"`
            val = val.with_taints(merge(val.taints, self._chosen(clocks=True)))
        if self.passes:  # what a loop has built so far is returned once, not per pass
            val = val.keep_deep(lambda t: not loops.given(self.passes, t))
        if self.graph_node and not self.m.calls_itself(self.ref.node):
            self._note_node_update(node.value, val)
        name = self.ref.qualname.rsplit(".", 1)[-1] if self.ref else "function"
        step = self.m.step(node.value, f"returned by {name}()")
        val = val.with_taints(tuple(t.then(step) for t in val.taints))
        self.ret = join(self.ret, val) if self.ret is not None else val
        self.return_nodes.append(node.value)
        self.returned[id(node.value)] = join(self.returned[id(node.value)], val) if id(node.value) in self.returned else val

    @property
    def return_nodes(self) -> list:
        if not hasattr(self, "_return_nodes"):
            self._return_nodes = []
        return self._return_nodes

    @property
    def returned(self) -> dict[int, Val]:
        """What each return statement returned (by the id of its expression), on every pass."""
        if not hasattr(self, "_returned"):
            self._returned = {}
        return self._returned

    def stmt_If(self, node: ast.If) -> None:
        """Each branch runs on its own copy of the environment, where its assignments are strong
        (`fn = tool["function"]` hides an `fn` of an earlier loop); the copies are joined after."""
        tested = self.eval(node.test)
        if (fixed := self._fixed_flag(node.test)) is not None:
            self.run_block(node.body if fixed else node.orelse)  # the other branch never runs
            return
        dispatch = role_test(node.test)
        self.control.append(self.chosen_by(tested, node.test, dispatch))
        before, depth = self.on_copy()
        self.role_branch += dispatch
        # `for m in messages: if m["role"] == "system":` (or `role = m.get("role")` first) sees the
        # system messages only; its `else:` (or what follows a `continue`) the others.
        picked = [(name, loop) for name, loop in self.loop_targets
                  if any(picks_system(node.test, n) for n in role_names(loop, name))] if dispatch else []
        for target, element, loop in self.role_elements if picked else ():
            if any(target.id == name for name, _ in picked):
                self.assign(target, element, loop)
        for name, _ in picked:  # a parameter's element: only the caller's system messages come in here
            if name in self.env and not any(t.id == name for t, _, _ in self.role_elements):
                self.env[name] = self.env[name].with_taints(system_only(self.env[name].taints))
        lazy = unset_test(node.test)
        self.lazy.append(lazy)
        first = first_pass(node) or int(first_of_loop(node, self.passes[-1].node if self.passes else None)
                                        or heads_given_conversation(node, self.params))
        self.first_pass += first
        self.system_picks.append({name for name, _ in picked})
        try:
            self.run_block(node.body)
        finally:
            self.lazy.pop()
            self.system_picks.pop()
            self.first_pass -= first
        self.role_branch -= dispatch
        taken, self.env = self.env, dict(before)
        param, unset = self.param_test(node.test)
        if param >= 0 and unset and (name := self.params[param]) in taken:  # `if now is None: now = datetime.now()`
            taken[name] = as_fallback(taken[name], param)
        self._other_roles(picked)
        self.run_block(node.orelse)
        self.env = self._settle(before, joined(before, self._left(node.body, taken, before), self._left(node.orelse, self.env, before)))
        if ends_pass(node.body):
            self._other_roles(picked)
        self.depth = depth
        self.control.pop()

    def _fixed_flag(self, test: ast.AST) -> bool | None:
        """The value of a test that is a module's constant flag (`USE_ENHANCED_SEARCH = True` at
        the top, never declared `global` to be set again), or its negation, read in a function;
        else None."""
        name = test.operand if isinstance(test, ast.UnaryOp) and isinstance(test.op, ast.Not) else test
        flag = self.m.globals.get(name.id) if isinstance(name, ast.Name) else None
        if not (self.ref is not None and isinstance(flag, Val) and isinstance(flag.const, bool) and name.id not in self.env
                and not re.search(rf"\bglobal\b[^\n]*\b{name.id}\b", self.m.text)):
            return None
        return flag.const if name is test else not flag.const

    def _other_roles(self, picked: list) -> None:
        """Where a role test has set the system messages aside, the loop's message is another
        role's: what a parameter gives there is no system message (`else: input_items.append(m)`)."""
        for name, _ in picked:
            if name in self.env:
                self.env[name] = self.env[name].keep_deep(lambda t: t.param < 0)

    def chosen_by(self, test: Val, node: ast.AST, dispatch: bool) -> tuple[Taint, ...]:
        """What a test chooses text by (``guards.tested_taints``): a clock (``if now.hour < 12``), or this
        turn's words or a parameter (``if lore["key"] in user_message``: which entries of a lorebook,
        which skills go in). A role test picks messages, not text: what it picks is followed as such."""
        picks, taints = not dispatch and selects(node), tested_taints(self.eval, node, test.taints) if test.taints else ()
        found = [t for t in taints if t.code.startswith("PC1") and t.param < 0 and not chosen(t)
                 or picks and (user_words(t) or t.param >= 0 and t.label == "volatile" and not t.code)]
        step = found and self.m.step(node, f"{CHOOSES}: `{self.m.snippet(node, 40)}`")
        return tuple(t.then(step) for t in found)

    def _chosen(self, clocks: bool) -> list[Taint]:
        """What the enclosing tests choose text by (``chosen_by``), with or without their clocks."""
        return [t for group in self.control for t in group if clocks or not t.code.startswith("PC1")]

    def stmt_With(self, node: ast.With) -> None:
        for item in node.items:
            val = self.eval(item.context_expr)
            if item.optional_vars is not None:
                self.assign(item.optional_vars, val, node)
        self.run_block(node.body)

    stmt_AsyncWith = stmt_With

    def stmt_Try(self, node) -> None:
        """The body binds in order (`today = date.today()` bound again before its use: the later
        value is the one used). An exception may leave it anywhere, so a handler starts from
        what was bound before the body or at its end; `else` from the body's end; the code after
        from any of them. Each branch's own assignments are strong, as in an `if`."""
        before, depth = self.on_copy()
        self.run_block(node.body)
        self.run_block(node.orelse)
        after = self._left(node.orelse or node.body, self.env, before)
        for handler in node.handlers:
            self.env = joined(before, before, after)
            self.run_block(handler.body)
            after = joined(before, after, self._left(handler.body, self.env, before))
        self.env, self.depth = self._settle(before, after), depth
        self.run_block(node.finalbody)

    def on_copy(self) -> tuple[dict, int]:
        """Run a branch (an `if`, a `try`, a loop's body) on a copy of the environment, its
        assignments strong (`fn = tool["function"]` hides an earlier `fn`); the caller joins the
        copy with ``before`` and restores ``depth`` after it."""
        before, depth = self.env, self.depth
        self.env, self.depth = dict(before), 0
        return before, depth

    def _settle(self, before: dict, env: dict) -> dict:
        """The environment after a statement whose branches ran on copies. At module level it is
        the module's own globals, updated in place: functions read them there (a template bound
        after an `if` or a `try` at the top of a module)."""
        if before is not self.m.globals or env is before:
            return env
        before.clear()
        before.update(env)
        return before

    stmt_TryStar = stmt_Try

    def stmt_Match(self, node) -> None:
        self.eval(node.subject)
        self.depth += 1
        for case in node.cases:
            dispatch = role_test(case.pattern)
            self.role_branch += dispatch
            self.run_block(case.body)
            self.role_branch -= dispatch
        self.depth -= 1

    def stmt_FunctionDef(self, node) -> None:
        if self.ref is None and self.cls is None:
            return  # module-level functions are summarised on their own
        inner = self.m.nested(node, f"{self.ref.qualname if self.ref else ''}.{node.name}", self.env)
        self.env[node.name] = Val(origin=inner.qualname, func=inner, node=node)

    stmt_AsyncFunctionDef = stmt_FunctionDef

    def stmt_ClassDef(self, node) -> None:
        return

    def stmt_Global(self, node) -> None:
        return

    def check_content_write(self, target: ast.AST, val: Val, message_val: Val | None = None) -> None:
        """``messages[0]["content"] += memory`` under ``if messages[0]["role"] == "system":`` (or
        into a message built as a system message, or into the head of a list named for a
        conversation, `conversation_history[0]["content"] = prompt`): the system message is edited
        in place. ``message_val``: the message, when the caller has evaluated it already."""
        message = _content_of(target)
        if message is None:
            return
        held = message_val if message_val is not None else self.eval(message)
        # (a head this function built with another role is that message: `{"role": "tool", ...}`)
        if self.role_branch or self._conversation_head(message) and not other_role(held.keys) or is_system_message(held):
            self.sink_value(val, target, "value", "system message (edited in place)")

    def _conversation_head(self, message: ast.AST) -> bool:
        if not (isinstance(message, ast.Subscript) and isinstance(message.slice, ast.Constant) and message.slice.value == 0):
            return False
        listed = message.value.attr if isinstance(message.value, ast.Attribute) else getattr(message.value, "id", None)
        return bool(listed and self.m.catalog.source_newest_of.match(listed))

    # -------------------------------------------------------------- assignment
    def assign(self, target: ast.AST, val: Val, stmt: ast.AST, weak: bool = False) -> None:
        if self.first_pass or (self.lazy and self.lazy[-1] and self._dotted_local(target) == self.lazy[-1]):
            # `if self.agent_id_ is None: self.agent_id_ = str(uuid4())`: set once, then reused
            # (and so is each message of a list stored there).
            val = val.keep_deep(frozen_ok)
        if self.control:
            # Text a test picks follows it; text added under a test on this turn's words (a
            # lorebook's entries, skills) too, while a clock test only times what it lets in
            # (`if hour < 12: system += note`).
            picked = _chosen_text(stmt, val)
            if picked or accumulates(stmt):
                val = val.with_taints(merge(val.taints, self._chosen(clocks=picked)))
        if self.role_branch and any(t.param >= 0 for t in val.taints):
            # `if msgs[0]["role"] == "system": instructions = msgs[0]["content"]`: what a parameter
            # gives here is its system message only, as for a sink inside the dispatch.
            val = val.with_taints(system_only(val.taints))
        if isinstance(target, ast.Name) and isinstance(value := getattr(stmt, "value", None), ast.Name) and (
                self.system_picks and value.id in self.system_picks[-1]):
            # `if m.get("role") == "system": system_msg = m; break`: it holds the system message
            # (`system_msg["content"] = f"{date}\n{old}"` later edits it in place).
            val = Val(val.taints, origin=val.origin, items=val.items, keys={**(val.keys or {}), "role": Val(const="system")},
                      node=val.node)
        if isinstance(target, ast.Name):
            step = self.m.step(target, f"assigned to `{target.id}`")
            val = val.with_taints(tuple(t.then(step) for t in val.taints))
            self._store(target.id, val, weak)
        elif isinstance(target, (ast.Tuple, ast.List)):
            for i, elt in enumerate(target.elts):
                if isinstance(elt, ast.Starred):
                    elt = elt.value
                part = val.items[i] if val.items is not None and i < len(val.items) else Val(val.taints)
                self.assign(elt, part, stmt, weak)
        elif isinstance(target, ast.Attribute):
            self._note_state_write(target, target.attr, val)
            base = self._dotted_local(target)
            step = self.m.step(target, f"stored in `{self.m.snippet(target)}`")
            val = val.with_taints(tuple(t.then(step) for t in val.taints))
            if base is not None:
                self._store(base, val, weak)
            if (self.cls is not None and isinstance(target.value, ast.Name) and target.value.id == "self"):
                # A parameter of this method means nothing in another method: keep real sources
                # only; what ``__init__`` computes is frozen for the object's life (docs/field.md).
                stored = val.keep(lambda t: t.param < 0 and (not self.frozen or frozen_ok(t)))
                for t in stored.taints:
                    if t.reply:
                        self.kept_replies.setdefault(loops.origin(t), stmt.lineno)
                old = self.cls.attrs.get(target.attr)
                self.cls.attrs[target.attr] = join(old, stored) if old is not None else stored
                known = {t.key() for t in old.taints} if old is not None else set()
                if any(t.key() not in known for t in stored.taints):
                    (self.ref.module if self.ref is not None else self.m).forget_methods(self.cls)
            if not weak:
                self.check_content_write(target, val)
            shown = f"{target.value.id}.{target.attr}" if isinstance(target.value, ast.Name) else target.attr
            if not self.frozen and self.ref is not None:
                self.check_stable_target(target.attr, shown, val, target, self.m.snippet(target.value))
            elif self.ref is None and self.cls is None:
                # Set once at import (`agent.system_message = """..."""`), but a template
                # expression inside is evaluated each time the host renders the message.
                rendered = val.keep(lambda t: t.report_at is not None)
                if rendered.taints:
                    self.check_stable_target(target.attr, self.m.snippet(target), rendered, target)
        elif isinstance(target, ast.Subscript):
            container = self.eval(target.value)
            if not weak:
                self.check_content_write(target, val, container)
            key = self.eval(target.slice)
            self._note_state_write(target, key.const, val)
            taints = merge(container.taints, val.taints, *self.loop_unordered)
            keys = container.keys
            name = key_of(target.slice, key)
            if keys is not None and not isinstance(name, int):  # a field, or a key computed at run time
                keys = {**keys, name: val} if name is not None else {**keys, ANY_KEY: join(keys.get(ANY_KEY), val)}
            self._update_container(target.value, Val(taints, origin=container.origin, items=container.items, keys=keys, node=container.node))
        elif isinstance(target, ast.Starred):
            self.assign(target.value, val, stmt, weak)

    def _note_node_update(self, value: ast.expr, val: Val) -> None:
        """A graph node's returned update (`{"summary": s}`, `Command(update={...}, goto=...)`):
        each field it names is written while the conversation runs."""
        if isinstance(value, ast.Call) and getattr(value.func, "id", getattr(value.func, "attr", "")) == "Command":
            value, val = next((k.value for k in value.keywords if k.arg == "update"), None), (val.keys or {}).get("update", val)
        if isinstance(value, ast.Dict) and val.keys:
            for key, field in zip(value.keys, value.values):  # not a field handed back as it was
                if isinstance(key, ast.Constant) and key.value in val.keys and state_key(field) != key.value:
                    self._note_state_write(key, key.value, val.keys[key.value], any_write=True)

    def _note_state_write(self, target: ast.AST, name, val: Val, any_write: bool = False) -> None:
        """``callback_context.state["_time"] = now``: the family of a real source written into a
        run's state, for the instructions that read it back (run_state.py). A graph node's returned
        update (``any_write``) is a write whatever it holds: nodes run while the conversation runs."""
        if not isinstance(name, str) or name in self.m.state_writes or not (
                any_write or state_receiver(self.m.snippet(target.value, 200))):
            return
        where = [target.lineno, self.m.column(target.lineno, target.col_offset)]
        here = lambda t: bool(t.steps) and t.steps[0].path == self.m.path  # noqa: E731
        for t in sorted(val.taints, key=lambda t: not here(t)):  # (a source in this file first: the trace starts there)
            if t.param < 0 and t.label == "volatile" and t.code and not t.needs:
                self.m.state_writes[name] = [*where, t.code, *([t.steps[0].line, t.steps[0].column, t.steps[0].note] if here(t) else [])]
                return
        if any_write:
            self.m.state_writes[name] = where

    def _store(self, name: str, val: Val, weak: bool) -> None:
        if (weak or self.depth > 0) and name in self.env:
            val = join(self.env[name], val)
        elif "." not in name:
            self._forget(name)  # a new object: what was stored in the old one's fields is not in it
        self.env[name] = val

    def _forget(self, name: str) -> None:
        """A name bound afresh: its value and what was stored in its fields (``content.text``)."""
        self.env.pop(name, None)
        for key in [k for k in self.env if k.startswith(name + ".")]:
            del self.env[key]

    def _dotted_local(self, node: ast.AST) -> str | None:
        if isinstance(node, ast.Name):
            return node.id
        if isinstance(node, ast.Attribute):
            inner = self._dotted_local(node.value)
            return f"{inner}.{node.attr}" if inner else None
        return None

    def _update_container(self, node: ast.AST, val: Val) -> None:
        name = self._dotted_local(node)
        if name is None:
            if isinstance(node, ast.Subscript) and val.taints:
                # `by_domain[domain].append(attrs)`: what the inner list holds, the outer one holds
                outer = self._dotted_local(node.value)
                held = self.env.get(outer) if outer is not None else None
                if held is not None:
                    self._update_container(node.value, held.with_taints(merge(held.taints, val.taints)))
                elif isinstance(node.value, ast.Subscript):
                    self._update_container(node.value, val)
            return
        if self.first_pass:  # filled on the first call only (`if not self.messages: ...append(...)`)
            val = val.keep_deep(frozen_ok)
        self.env[name] = val if name not in self.env or self.depth == 0 else join(self.env[name], val)
        if self.cls is not None and name.startswith("self.") and name.count(".") == 1:
            grew = self.per_call_growth  # what this call added stays with this call (loops.per_call)
            self.cls.attrs[name[5:]] = self.env[name].keep_deep(
                lambda t: loops.origin(t) not in grew) if grew else self.env[name]


def _state_update(value: ast.AST) -> int:
    """1 for a returned ``{"messages": [...]}`` without a ``model``: an agent graph's (or its
    middleware's) state update, whose messages the graph appends to the conversation."""
    if not isinstance(value, ast.Dict):
        return 0
    keys = {k.value for k in value.keys if isinstance(k, ast.Constant)}
    return int("messages" in keys and "model" not in keys)


def joined(before: dict[str, Val], a: dict[str, Val], b: dict[str, Val]) -> dict[str, Val]:
    """The environment after two branches: a name either branch changed holds both values, with
    the structure (items, keys) of the branch that changed it (`msgs.append(system)` under an `if`)."""
    out = dict(a)
    for name, val in b.items():
        other = out.get(name)
        if other is None:
            out[name] = val
        elif other is not val:
            out[name] = join(val, other) if val is before.get(name) else join(other, val)
    return out


_TEXT_TYPES = {"str", "Any", "object", "list", "List", "Sequence", "Iterable", "dict", "Dict", "Mapping", "tuple",
               "Tuple", "bytes"}


def _object_annotation(annotation: ast.expr | None) -> bool:
    """True when a parameter is annotated with a class of its own (``ConversationInput``)."""
    if annotation is None:
        return False
    if isinstance(annotation, ast.Constant):
        return isinstance(annotation.value, str) and not any(t in annotation.value for t in _TEXT_TYPES)
    names = {n.id for n in ast.walk(annotation) if isinstance(n, ast.Name)}
    names |= {n.attr for n in ast.walk(annotation) if isinstance(n, ast.Attribute)}
    return bool(names - {"Optional", "Union", "None", "typing", "t"}) and not names & _TEXT_TYPES


def _chosen_text(stmt: ast.AST, val: Val) -> bool:
    """Whether an assignment or a return under a test picks a text (``greeting = "Good morning"``, ``note += f"..."``,
    ``return ["home"]``): that choice follows the test. A value with data of its own (``queue.get()``) does not."""
    value = getattr(stmt, "value", None)
    return isinstance(val.const, str) or isinstance(value, ast.JoinedStr) or value is not None and all(
        isinstance(e, ast.Constant) and isinstance(e.value, str) for e in getattr(value, "elts", None) or [value])


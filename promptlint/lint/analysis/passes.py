"""How the analysis walks a loop: twice, so that what a pass binds late reaches the next pass's
start (loops.py says what a loop carries); a branch that leaves (``break``, ``return``) takes
what it bound out of the loop, or out of the function, not into the next pass."""

from __future__ import annotations

import ast

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.sinks import REQUEST_METHODS, system_side
from promptlint.lint.analysis.statements import joined
from promptlint.lint.analysis.values import NEWEST, Taint, Val


class Passes:
    """The loop statements of a function's evaluation (a part of FunctionAnalysis)."""

    def _loop(self, iter_val: Val, target, body, orelse, node) -> None:
        unordered = tuple(t for t in iter_val.taints if t.label == "unordered")
        element = self.element_of(node.iter, iter_val)
        if _newest_first(node, self.m.catalog.source_newest_of):
            element = Val(element.taints, origin=NEWEST, node=element.node)
        before, depth = self._enter_body()
        self.loop_unordered.append(tuple(self._consumed(t, node.iter) for t in unordered))
        self.passes.append(loops.enter(node, body, self.env, REQUEST_METHODS))
        picked = system_side(iter_val.items) if isinstance(target, ast.Name) else None
        if picked is not None:
            self.role_elements.append((target, self.this_pass(picked), node))
        if isinstance(target, ast.Name):
            self.loop_targets.append((target.id, node))
        for _ in range(self.passes[-1].runs):  # (twice: values assigned late in the body flow to its start)
            if target is not None:
                # Each iteration rebinds the target: what the body later assigns to the same
                # name (`language = code_dict["language"]`) does not flow into the next element.
                for sub in ast.walk(target):
                    if isinstance(sub, ast.Name):
                        self._forget(sub.id)
                self.assign(target, element, node)
            self.run_block(body)
            self._next_pass()
        if picked is not None:
            self.role_elements.pop()
        if isinstance(target, ast.Name):
            self.loop_targets.pop()
        self.loop_unordered.pop()
        self._leave_loop(before, depth)
        self.run_block(orelse)

    def stmt_For(self, node: ast.For) -> None:
        self._loop(self.eval(node.iter), node.target, node.body, node.orelse, node)

    stmt_AsyncFor = stmt_For

    def stmt_While(self, node: ast.While) -> None:
        self.eval(node.test)
        before, depth = self._enter_body()
        self.passes.append(loops.enter(node, node.body, self.env, REQUEST_METHODS))
        for _ in range(self.passes[-1].runs):
            self.run_block(node.body)
            self._next_pass()
        self._leave_loop(before, depth)
        self.run_block(node.orelse)

    def grown(self, name: str | None, node: ast.AST, *added: Val) -> tuple[Taint, ...]:
        """The per-turn taint of ``name`` grown at ``node`` in a loop that carries it (loops.py),
        or in a method that grows its object's list on each call; none when what is added is a
        conversation's message (the history grows by design)."""
        if loops.history(*added):
            return ()
        return (self.passes and loops.carried(self.passes, name, node, self.m)) or (
            () if self.frozen or self.ref is None else loops.per_call(self.ref, name, node, self.m, self.per_call_growth))

    def _next_pass(self) -> None:
        frame = self.passes[-1]
        for went_on in frame.continued:
            self.env = joined({}, self.env, went_on)
        frame.continued.clear()

    def _enter_body(self) -> tuple[dict, int]:
        """A loop's body runs on a copy, as a branch does (``on_copy``); the copy is joined with
        what was bound before the loop when it ends (no pass ran)."""
        self.loop_depth += 1
        return self.on_copy()

    def _leave_loop(self, before: dict, depth: int) -> None:
        frame = self.passes.pop()
        for broken in frame.broken:
            self.env = joined({}, self.env, broken)
        loops.leave(frame, self.env)
        if self.cls is not None:
            loops.leave(frame, self.cls.attrs, replies_stay=True)
        self.env = self._settle(before, joined(before, before, self.env))
        self.depth = depth
        self.loop_depth -= 1

    def _left(self, block: list[ast.stmt], env: dict, before: dict) -> dict:
        """A branch that leaves (``notes += reply; break``, ``return``): what it binds reaches no
        later statement and no other pass of the loop; a ``break``'s reaches the code after it."""
        last = block[-1] if block else None
        if isinstance(last, ast.Continue) and self.passes:  # (nested in a block that leaves: still the next pass's)
            self.passes[-1].continued.append(env)
        if isinstance(last, (ast.Return, ast.Raise)) or isinstance(last, ast.Break) and self.passes:
            if isinstance(last, ast.Break):
                self.passes[-1].broken.append(env)
            return before
        return env


def _newest_first(node: ast.AST, newest) -> bool:
    """``for m in reversed(messages): if m["role"] == "user": return m["content"]``: a search of
    the conversation from its newest end that stops at the first match (cached on the loop)."""
    found = getattr(node, "_promptlint_newest", None)
    if found is None:
        it = getattr(node, "iter", None)
        if isinstance(it, ast.Call) and getattr(it.func, "id", None) == "reversed" and len(it.args) == 1:
            it = it.args[0]
        elif (isinstance(it, ast.Subscript) and isinstance(it.slice, ast.Slice) and it.slice.lower is None
              and isinstance(it.slice.step, ast.UnaryOp) and isinstance(it.slice.step.operand, ast.Constant)
              and it.slice.step.operand.value == 1):
            it = it.value
        else:
            it = None
        listed = it.attr if isinstance(it, ast.Attribute) else getattr(it, "id", None)
        found = node._promptlint_newest = bool(listed and newest.match(listed)) and any(
            isinstance(n, (ast.Return, ast.Break)) for stmt in node.body for n in ast.walk(stmt))
    return found


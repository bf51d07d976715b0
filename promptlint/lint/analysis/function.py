"""The abstract interpretation of one function body (or the module body)."""

from __future__ import annotations

from promptlint.lint.analysis import loops
from promptlint.lint.analysis.calls import Calls
from promptlint.lint.analysis.expressions import Expressions
from promptlint.lint.analysis.passes import Passes
from promptlint.lint.analysis.sinks import Sinks
from promptlint.lint.analysis.statements import Statements
from promptlint.lint.analysis.values import ClassInfo, FunctionRef, ParamSink, Summary, Taint, Val, frozen_ok
from promptlint.lint.guards import memoized
from promptlint.lint.lifetimes import graph_node, runs_once, set_up_path


class FunctionAnalysis(Statements, Passes, Expressions, Calls, Sinks):
    """One function's evaluation state; its behaviour lives in the five parts it is made of."""

    def __init__(self, module: ModuleAnalysis, ref: FunctionRef | None, cls: ClassInfo | None):
        self.m = module
        self.ref = ref
        self.cls = cls
        self.env: dict[str, Val] = {}
        self.ret: Val | None = None
        self.param_sinks: list[ParamSink] = []
        self.loop_unordered: list[tuple[Taint, ...]] = []
        self.passes: list[loops.Pass] = []  # the loops being evaluated, outermost first (loops.py)
        self.per_call_growth: set = set()  # sources of `self.tools.append(...)` taints given out in this call
        self.depth = 0  # > 0 inside branches/loops: assignments are weak updates
        self.params: list[str] = []
        self.sink_via: tuple | None = None  # (steps inside the callee, its sink step, dumped, label)
        self.stable_template: tuple | None = None  # (template step, layer) of a system template being built
        self.role_branch = 0  # > 0 inside `if role == "system":` (a role dispatch)
        self.system_list = 0  # > 0 while appending to a list that only ever takes system messages (sinks.system_list)
        self.role_elements: list = []  # (target, system-side element, loop) of the loops over message lists
        self.loop_targets: list = []  # (target name, loop) of the enclosing `for` loops
        self.system_picks: list[set[str]] = []  # loop targets an enclosing role test picks system messages of
        self.loop_depth = 0  # > 0 inside a loop (a module-level loop runs per request)
        self.sending = 0  # > 0 while checking the arguments of a request-sending call
        self.bare_call = None  # the call of the statement being evaluated, when it is `x.append(...)` alone
        self.calling = 0  # > 0 while checking the arguments of any call against the sinks
        self.per_call = 0  # > 0 while reporting what a framework evaluates on each call (instructions=fn)
        self.defer_shapes = 0  # > 0 while evaluating `msgs.append(...)` arguments: position decides
        self.history_adds = 0  # > 0 while evaluating `context.add_message(...)` arguments: after the history
        self.lazy: list[str | None] = []  # names that enclosing `if x is None:` tests set once
        self.first_pass = 0  # > 0 inside `if self.turn_count == 0:`: code that runs on the first call only
        self.replies = False  # a model was asked here (Summary.replies)
        self.kept_replies: dict = {}  # where a reply this method kept in `self` was received -> the line keeping it
        self.control: list[tuple[Taint, ...]] = []  # clock taints of enclosing `if now.hour < 12:` tests
        self.turn_objects: dict[str, Taint] = {}  # per-turn parameters typed as objects: only their text is
        self.run_state = False  # an instructions function a framework calls: its parameters are the run's context

    @property
    def frozen(self) -> bool:
        """True where code runs once per process, object or session: import time, ``__init__``,
        ``__post_init__``, and set-up paths named for it (``initialize_message_sequence``).

        A volatile value computed there is reused unchanged by every request (docs/field.md: not a
        leak); unordered values and template expressions evaluated later are still followed."""
        if self.ref is None:  # module-level code, or a class body (it runs at import too)
            return self.loop_depth == 0 and not self.m.reruns
        return runs_once(getattr(self.ref.node, "name", "")) and not graph_node(self.ref.node) or memoized(self.ref.node)

    def run_function(self) -> Summary:
        """The summary; a set-up path's result is what it computed once (a sticky session id, the
        stored first messages), so its clock and ids do not reach callers as per-request values."""
        summary = super().run_function()
        summary.replies = self.replies
        if self.frozen:
            summary.ret = summary.ret.keep_deep(frozen_ok)
            summary.writes = {i: kept for i, ts in summary.writes.items() if (kept := tuple(filter(frozen_ok, ts)))}
        if set_up_path(getattr(self.ref.node, "name", "")):
            # `initialize_message_sequence(agent, memory_edit_timestamp=now())`: the stamp its
            # caller passes is stored with the first messages once; orderings still count.
            summary.param_sinks = [ps for ps in summary.param_sinks if ps.label == "unordered"]
        return summary

"""The abstract interpretation of one function body (or the module body)."""

from __future__ import annotations

from promptlint.lint.analysis.calls import Calls
from promptlint.lint.analysis.expressions import Expressions
from promptlint.lint.analysis.sinks import Sinks
from promptlint.lint.analysis.statements import Statements
from promptlint.lint.analysis.values import ClassInfo, FunctionRef, ParamSink, Taint, Val


class FunctionAnalysis(Statements, Expressions, Calls, Sinks):
    """One function's evaluation state; its behaviour lives in the four parts it is made of."""

    def __init__(self, module: ModuleAnalysis, ref: FunctionRef | None, cls: ClassInfo | None):
        self.m = module
        self.ref = ref
        self.cls = cls
        self.env: dict[str, Val] = {}
        self.ret: Val | None = None
        self.param_sinks: list[ParamSink] = []
        self.loop_unordered: list[tuple[Taint, ...]] = []
        self.depth = 0  # > 0 inside branches/loops: assignments are weak updates
        self.params: list[str] = []
        self.sink_via: tuple | None = None  # (steps inside the callee, its sink step, dumped, label)
        self.stable_template: tuple | None = None  # (template step, layer) of a system template being built
        self.role_branch = 0  # > 0 inside `if role == "system":` (a role dispatch)


"""The taint analysis of one module: sources, propagation, sanitizers, sinks.

It runs on CPython's ``ast`` (C-speed parsing, exact positions): the issue's corpus of
3,000+ files rules out full libcst metadata on every file. libcst is used where the concrete
tree matters, for fixes (``promptlint.lint.fix``).

The analysis is an abstract interpretation over statements in order. Every expression
evaluates to a ``Val``: the taints it carries, plus what is statically known about it (the
qualified name it refers to, a string constant, the items of a list or dict display, the
function it names). Functions are summarised once: which taints their return value always
carries, which parameters flow into it, and which parameters reach a sink inside them.
Summaries of functions in other project modules come from ``promptlint.lint.project``.
"""

from promptlint.lint.analysis.module import ModuleAnalysis
from promptlint.lint.analysis.values import ClassInfo, FunctionRef, Summary, Taint, Val

__all__ = ["ClassInfo", "FunctionRef", "ModuleAnalysis", "Summary", "Taint", "Val"]

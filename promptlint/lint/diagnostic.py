"""The linter's small typed core: every other module passes these frozen dataclasses around.

Positions are 1-based lines and 1-based character columns (not bytes), end exclusive,
the convention of ruff's JSON and of SARIF.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Literal

Severity = Literal["error", "warning"]

#: Taint labels (Semgrep-style). ``volatile`` values differ between requests, sessions or
#: machines; ``unordered`` values have an iteration order that is not fixed. ``sorted()``
#: and ``json.dumps(sort_keys=True)`` clean ``unordered`` only.
Label = Literal["volatile", "unordered"]


#: The note of a trace step where a test picks which text goes in (`if now.hour < 12`, `if key in words`).
CHOOSES = "chooses the text"
#: The end of a source's note when a framework fills the value in on every call of what was built
#: once (a retrieval chain's documents): when the builder ran says nothing of the value's lifetime.
EVERY_CALL = "on every call"
#: In a source's note: the source is a parameter whose name says it carries the turn's input
#: (`per-turn input: parameter `user_message``).
PARAMETER = ": parameter `"


@dataclass(frozen=True)
class TraceStep:
    """One hop of a flow from source to sink."""

    path: str
    line: int
    column: int
    note: str


@dataclass(frozen=True)
class Fix:
    """A mechanical edit that keeps behaviour.

    ``kind`` is ``wrap-sorted`` (wrap the expression at the range in ``sorted(...)``) or
    ``add-sort-keys`` (add ``sort_keys=True`` to the ``json.dumps`` call at the range).
    """

    kind: str
    line: int
    column: int
    end_line: int
    end_column: int
    safe: bool = True
    description: str = ""
    path: str = ""  # the file to edit: the fix sits where the value is consumed, maybe another module
    keyword: str = "sort_keys"  # add-sort-keys: the serializer's sorting keyword


@dataclass(frozen=True)
class Diagnostic:
    """A finding: a code, a message, a precise range and the trace from source to sink."""

    path: str
    line: int
    column: int
    end_line: int
    end_column: int
    code: str
    name: str
    message: str
    severity: Severity = "error"
    trace: tuple[TraceStep, ...] = ()
    fix: Fix | None = None
    #: The sources of other flows that reach the same line with the same code (one finding per leak).
    related: tuple[TraceStep, ...] = ()
    #: A run-state field the flow needs written while the conversation runs (run_state.py);
    #: resolved before output, never printed.
    needs: str = ""
    #: The sink is a request sent right there (not a layer built to be sent later): lifetimes.py.
    sent: bool = False

    def sort_key(self) -> tuple:
        return (self.path, self.line, self.column, self.code, self.message)


#: The families of sources a leak is counted under (PC1xx to PC5xx; docs/field.md).
SOURCE_FAMILIES = ("time", "identity", "host", "per-turn", "ordering")


@dataclass(frozen=True)
class RuleDoc:
    """The documentation and examples of one rule code (loaded from rules/codes.yaml)."""

    code: str
    name: str
    family: str
    summary: str
    severity: Severity
    what: str
    why: str
    example: str
    use_instead: str
    fix_safety: str = "Not auto-fixable."
    # Extra examples that are run as tests but not printed: (code, expected codes).
    valid: tuple[str, ...] = ()
    invalid: tuple[str, ...] = ()
    # The source family of the values it reports, for a framework check (PC602: per-turn);
    # "" where the family says it (PC1xx time ... PC5xx ordering) or none does.
    sources: str = ""

    @property
    def source_family(self) -> str | None:
        """The family of the sources it reports (a framework check's by its ``sources``), or None
        (meta codes, a framework check of no one family)."""
        family = self.sources or self.family
        return family if family in SOURCE_FAMILIES else None

    @property
    def fixable(self) -> bool:
        """True when the rule offers a safe automatic fix (its fix-safety text says so)."""
        return self.fix_safety.strip().lower().startswith("safe fix")


@dataclass(frozen=True)
class Settings:
    """Resolved configuration for one lint run ([tool.promptlint] plus command line)."""

    root: str = "."
    select: tuple[str, ...] = ("PC",)
    ignore: tuple[str, ...] = ()
    exclude: tuple[str, ...] = ()
    extend_exclude: tuple[str, ...] = ()
    per_file_ignores: tuple[tuple[str, tuple[str, ...]], ...] = ()
    rule_files: tuple[str, ...] = ()
    memory_files: tuple[str, ...] = ()
    src: tuple[str, ...] = ()
    max_file_bytes: int = 2_000_000
    config_path: str | None = None
    extra: dict = field(default_factory=dict, compare=False, hash=False)


@dataclass
class FileResult:
    """What one file contributes: its diagnostics and what the cache must know."""

    diagnostics: list[Diagnostic] = field(default_factory=list)
    deps: list[str] = field(default_factory=list)  # other files the analysis read
    analyzed: bool = False
    param_sink_functions: list[str] = field(default_factory=list)  # functions whose params reach sinks (`+Base`: a base class callers may hold them as)
    has_marker: bool = False  # the text holds "promptlint:" (a suppression comment, maybe)
    writes: dict = field(default_factory=dict)  # run-state fields the text writes: name -> [line, column]

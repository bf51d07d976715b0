"""Inline suppressions and the findings about them (PC010, PC011, PC012)."""

from __future__ import annotations

from promptlint.lint.catalog import known_codes
from promptlint.lint.diagnostic import Diagnostic, TraceStep
from promptlint.lint.suppress import apply_suppressions

PATH = "app.py"


def finding(line: int, code: str = "PC101", trace_lines: tuple[int, ...] = (), trace_path: str = PATH) -> Diagnostic:
    trace = tuple(TraceStep(trace_path, n, 1, "step") for n in trace_lines)
    return Diagnostic(PATH, line, 5, line, 9, code, "time-in-stable-layer", "Wall-clock time reaches system prompt",
                      trace=trace)


def run(text: str, diagnostics: list[Diagnostic]) -> list[tuple[int, str]]:
    return [(d.line, d.code) for d in apply_suppressions(PATH, text, diagnostics, known_codes())]


def test_suppression_on_the_finding_line_removes_it():
    text = "a = 1\nsystem = now()  # promptlint: ignore[PC101] date is in the user turn\n"
    assert run(text, [finding(2)]) == []


def test_suppression_by_prefix_removes_the_finding():
    text = "system = now()  # promptlint: ignore[PC1]\n"
    assert run(text, [finding(1)]) == []


def test_comment_only_line_above_suppresses_the_next_line():
    text = "# promptlint: ignore[PC101]\nsystem = now()\n"
    assert run(text, [finding(2)]) == []


def test_trailing_comment_does_not_reach_the_next_line():
    text = "x = 1  # promptlint: ignore[PC101]\nsystem = now()\n"
    assert run(text, [finding(2)]) == [(1, "PC010"), (2, "PC101")]


def test_suppression_on_a_trace_source_line_in_the_same_file_removes_the_finding():
    text = "stamp = now()  # promptlint: ignore[PC101]\n\n\nsystem = stamp\n"
    assert run(text, [finding(4, trace_lines=(1, 4))]) == []


def test_trace_step_in_another_file_does_not_match_a_line_here():
    text = "stamp = now()  # promptlint: ignore[PC101]\n\n\nsystem = stamp\n"
    assert run(text, [finding(4, trace_lines=(1, 4), trace_path="other.py")]) == [(1, "PC010"), (4, "PC101")]


def test_unused_suppression_is_pc010_per_unused_code():
    text = "system = now()  # promptlint: ignore[PC101, PC501]\n"
    out = apply_suppressions(PATH, text, [finding(1)], known_codes())
    assert [(d.code, d.message) for d in out] == [("PC010", "Unused suppression of PC501")]


def test_blanket_suppression_suppresses_and_is_reported_as_pc011():
    text = "system = now()  # promptlint: ignore\n"
    assert run(text, [finding(1)]) == [(1, "PC011")]


def test_unknown_code_in_a_suppression_is_pc012():
    text = "system = now()  # promptlint: ignore[PC101, PC999]\n"
    out = apply_suppressions(PATH, text, [finding(1)], known_codes())
    assert [(d.code, d.message) for d in out] == [("PC012", "Suppression names unknown code PC999")]


def test_marker_inside_a_string_literal_is_not_a_suppression():
    text = 'system = f"{now()} # promptlint: ignore[PC101]"\n'
    assert run(text, [finding(1)]) == [(1, "PC101")]


def test_suppression_of_another_code_keeps_the_finding():
    text = "system = now()  # promptlint: ignore[PC501]\n"
    assert run(text, [finding(1)]) == [(1, "PC101"), (1, "PC010")]


def test_meta_findings_point_at_the_comment():
    text = "system = now()  # promptlint: ignore[PC501]\n"
    meta = apply_suppressions(PATH, text, [], known_codes())[0]
    assert (meta.line, meta.column, meta.severity) == (1, text.index("#") + 1, "warning")


def test_file_that_does_not_tokenize_keeps_suppressions_before_the_error():
    text = "system = now()  # promptlint: ignore[PC101]\ndef broken(:\n    '''unterminated\n"
    assert run(text, [finding(1)]) == []

"""How --fix/--diff group fixes by the file they edit, and the progress line (promptlint.lint.cli)."""

from __future__ import annotations

import io

from promptlint.lint import cli as lint_cli
from promptlint.lint.diagnostic import Diagnostic, Fix, TraceStep


def unordered(path: str, line: int, fix: Fix | None, trace: tuple[TraceStep, ...]) -> Diagnostic:
    return Diagnostic(path, line, 13, line, 40, "PC501", "unordered-collection-in-stable-layer", "m", trace=trace, fix=fix)


def test_fix_in_a_helper_module_is_planned_for_that_module():
    trace = (TraceStep("pkg/memory.py", 43, 21, "os.listdir"), TraceStep("pkg/memory.py", 45, 16, "returned"),
             TraceStep("pkg/loop.py", 43, 13, "reaches system prompt"))
    fix = Fix("wrap-sorted", 43, 21, 43, 42)
    assert lint_cli.planned_fixes([unordered("pkg/loop.py", 43, fix, trace)]) == {"pkg/memory.py": [fix]}


def test_same_fix_reached_by_two_findings_is_planned_once():
    trace = (TraceStep("a.py", 2, 9, "set"), TraceStep("a.py", 8, 5, "sink"))
    fix = Fix("wrap-sorted", 2, 9, 2, 20)
    plan = lint_cli.planned_fixes([unordered("a.py", 8, fix, trace), unordered("a.py", 9, fix, trace)])
    assert plan == {"a.py": [fix]}


def test_unsafe_fixes_and_findings_without_fix_are_not_planned():
    trace = (TraceStep("a.py", 2, 9, "set"),)
    unsafe = Fix("wrap-sorted", 2, 9, 2, 20, safe=False)
    assert lint_cli.planned_fixes([unordered("a.py", 8, unsafe, trace), unordered("a.py", 9, None, trace)]) == {}


def test_progress_stays_silent_for_short_runs_and_reports_long_ones(monkeypatch):
    clock = iter([0.0, 0.1, 0.9, 0.95])
    monkeypatch.setattr(lint_cli.time, "monotonic", lambda: next(clock))
    err = io.StringIO()
    monkeypatch.setattr(lint_cli.sys, "stderr", err)
    progress = lint_cli.Progress()  # starts at 0.0
    progress(1, 100)  # 0.1 s: too early
    assert err.getvalue() == ""
    progress(50, 100)  # 0.9 s
    assert err.getvalue() == "\rLinting 50/100 files"


def test_atomic_write_replaces_the_file_and_leaves_no_temp_file(tmp_path):
    target = tmp_path / "report.json"
    target.write_text("old")
    lint_cli.write_atomic(str(target), b"new")
    assert target.read_text() == "new"
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]

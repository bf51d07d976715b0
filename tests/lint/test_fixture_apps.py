"""The example apps specify the linter: every marked leak is found, nothing else is.

Markers (see fixtures/apps/README.md): ``# expect: CODE ...`` at the end of the reporting line
(``{# expect: CODE #}`` in Jinja), ``[source]`` where a flow starts, ``[sink]`` where a template
flow (reported in its template) enters the request.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

import pytest

APPS_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "apps"
APPS = ("helpdesk", "twohop")
MARKED_SUFFIXES = {".py", ".j2", ".jinja", ".jinja2", ".yaml", ".yml"}
EXPECT = re.compile(r"(?:#|\{#).*?\bexpect:\s*(PC\d{3}(?:[\s,]+PC\d{3})*)")
SOURCE_TAG = re.compile(r"(?:#|\{#).*\[source\]")
SINK_TAG = re.compile(r"(?:#|\{#).*\[sink\]")


@dataclass(frozen=True)
class Markers:
    """What an app's comments promise: reported (file, line, code), flow starts and template sinks."""

    expected: frozenset[tuple[str, int, str]]
    sources: frozenset[tuple[str, int]]
    sinks: frozenset[tuple[str, int]]
    lines: dict[tuple[str, int], str]


def read_markers(app: Path) -> Markers:
    expected, sources, sinks, lines = set(), set(), set(), {}
    for path in sorted(app.rglob("*")):
        if path.suffix not in MARKED_SUFFIXES or not path.is_file():
            continue
        name = path.relative_to(app).as_posix()
        for number, text in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
            lines[(name, number)] = text.strip()
            match = EXPECT.search(text)
            if match:
                expected.update((name, number, code) for code in re.findall(r"PC\d{3}", match.group(1)))
            if SOURCE_TAG.search(text):
                sources.add((name, number))
            if SINK_TAG.search(text):
                sinks.add((name, number))
    return Markers(frozenset(expected), frozenset(sources), frozenset(sinks), lines)


def show(markers: Markers, where: tuple) -> str:
    return f"{where[0]}:{where[1]}: {' '.join(map(str, where[2:]))}  | {markers.lines.get(where[:2], '?')}"


@pytest.fixture(scope="module", params=APPS)
def app(request, lint_tree, in_tree):
    """One example app: its directory, markers and diagnostics (paths relative to the app)."""
    root = APPS_DIR / request.param
    diagnostics = lint_tree(root)
    return root, read_markers(root), diagnostics, lambda path: in_tree(root, path)


def reported(app) -> set[tuple[str, int, str]]:
    _, _, diagnostics, rel = app
    return {(rel(d.path), d.line, d.code) for d in diagnostics}


def test_helpdesk_marks_a_leak_of_every_family_and_template_kind():
    markers = read_markers(APPS_DIR / "helpdesk")
    codes = {code for _, _, code in markers.expected}
    assert codes >= {"PC101", "PC201", "PC401", "PC501", "PC502", "PC601", "PC604"}
    files = {name for name, _, _ in markers.expected}
    assert any(name.endswith(".j2") for name in files)
    assert any(name.endswith(".yaml") for name in files)
    assert markers.sources and markers.sinks


def test_every_marked_finding_is_reported(app):
    _, markers, diagnostics, _ = app
    missing = markers.expected - reported(app)
    assert not missing, "not reported:\n" + "\n".join(show(markers, m) for m in sorted(missing)) + (
        "\nreported:\n" + "\n".join(show(markers, r) for r in sorted(reported(app))))


def test_nothing_unmarked_is_reported(app):
    _, markers, diagnostics, rel = app
    unexpected = reported(app) - markers.expected
    details = [f"{show(markers, (rel(d.path), d.line, d.code))}\n    {d.message}" for d in diagnostics
               if (rel(d.path), d.line, d.code) in unexpected]
    assert not unexpected, "reported without a marker:\n" + "\n".join(sorted(details))


def test_every_trace_starts_at_a_marked_source(app):
    _, markers, diagnostics, rel = app
    wrong = []
    for d in diagnostics:
        first = (rel(d.trace[0].path), d.trace[0].line) if d.trace else None
        if first not in markers.sources:
            wrong.append(f"{show(markers, (rel(d.path), d.line, d.code))}\n    trace starts at {first}: "
                         f"{markers.lines.get(first, '(empty trace)') if first else '(empty trace)'}")
    assert not wrong, "traces not starting at a [source] line:\n" + "\n".join(wrong)


def test_every_trace_ends_at_the_sink(app):
    _, markers, diagnostics, rel = app
    wrong = []
    for d in diagnostics:
        if not d.trace:
            wrong.append(f"{rel(d.path)}:{d.line}: {d.code} has an empty trace")
            continue
        last = (rel(d.trace[-1].path), d.trace[-1].line)
        where = (rel(d.path), d.line)
        # A Python flow ends where it is reported; a template flow (reported at its template
        # line: a .j2/.yaml file or a Python string constant) ends at a [sink] line.
        if last != where and last not in markers.sinks:
            wrong.append(f"{show(markers, (*where, d.code))}\n    trace ends at {last}: {markers.lines.get(last, '?')}")
    assert not wrong, "traces not ending at the sink:\n" + "\n".join(wrong)


def python_files_in_trace(diagnostic, rel) -> set[str]:
    return {rel(step.path) for step in diagnostic.trace if step.path.endswith(".py")}


def test_a_helpdesk_trace_crosses_modules(lint_tree, in_tree):
    root = APPS_DIR / "helpdesk"
    spans = [python_files_in_trace(d, lambda p: in_tree(root, p)) for d in lint_tree(root)]
    assert any(len(files) >= 2 for files in spans), spans


def test_a_helpdesk_trace_follows_helpers_through_three_modules(lint_tree, in_tree):
    # clock.utc_now -> clock.current_time_line -> prompting.build_system_prompt -> openai_paths.draft_reply
    root = APPS_DIR / "helpdesk"
    spans = [python_files_in_trace(d, lambda p: in_tree(root, p)) for d in lint_tree(root) if d.code == "PC101"]
    assert {"clock.py", "prompting.py", "openai_paths.py"} in [s & {"clock.py", "prompting.py", "openai_paths.py"}
                                                               for s in spans], spans


def test_twohop_traces_run_from_the_clock_module_to_the_agent_module(lint_tree, in_tree):
    root = APPS_DIR / "twohop"
    diagnostics = lint_tree(root)
    assert diagnostics
    for d in diagnostics:
        assert python_files_in_trace(d, lambda p: in_tree(root, p)) == {"clock.py", "agent.py"}, d.trace

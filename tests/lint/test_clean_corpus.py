"""Precision: clean, realistic agent code for every supported SDK produces no finding."""

from __future__ import annotations

from pathlib import Path

import pytest

CLEAN_DIR = Path(__file__).resolve().parents[2] / "fixtures" / "clean"
CLEAN_FILES = sorted(p.relative_to(CLEAN_DIR).as_posix() for p in CLEAN_DIR.rglob("*.py"))


def render(diagnostics, in_tree) -> str:
    lines = []
    for d in diagnostics:
        lines.append(f"{in_tree(CLEAN_DIR, d.path)}:{d.line}:{d.column}: {d.code} {d.message}")
        lines += [f"    {in_tree(CLEAN_DIR, s.path)}:{s.line}:{s.column}: {s.note}" for s in d.trace]
    return "\n".join(lines)


def test_the_corpus_covers_many_sdks():
    assert len(CLEAN_FILES) >= 12


@pytest.mark.parametrize("name", CLEAN_FILES)
def test_clean_file_has_no_findings(name, lint_tree, in_tree):
    # The whole corpus is linted together (cross-module flows included); findings are
    # grouped by the file they are reported in.
    diagnostics = lint_tree(CLEAN_DIR)
    here = [d for d in diagnostics if in_tree(CLEAN_DIR, d.path) == name]
    assert not here, "\n" + render(here, in_tree)


def test_no_finding_in_templates_or_other_files(lint_tree, in_tree):
    diagnostics = [d for d in lint_tree(CLEAN_DIR) if in_tree(CLEAN_DIR, d.path) not in CLEAN_FILES]
    assert not diagnostics, "\n" + render(diagnostics, in_tree)

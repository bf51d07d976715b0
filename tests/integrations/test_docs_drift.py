"""docs/rules/ is generated from the rule metadata; a stale page fails here."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from promptlint.lint.catalog import load_rule_docs
from promptlint.lint.rule_docs import render_all
from promptlint.lint.engine import lint_source

RULES_DOCS = Path(__file__).resolve().parents[2] / "docs" / "rules"
REGENERATE = "python scripts/gen_docs.py"


def test_every_rule_page_matches_the_rule_metadata():
    for name, text in render_all().items():
        page = RULES_DOCS / name
        assert page.is_file(), f"docs/rules/{name} is missing; run `{REGENERATE}`"
        assert page.read_text(encoding="utf-8") == text, f"docs/rules/{name} is stale; run `{REGENERATE}`"


def test_no_page_documents_a_rule_that_does_not_exist():
    expected = set(render_all())
    extra = sorted(p.name for p in RULES_DOCS.glob("*.md") if p.name not in expected)
    assert not extra, f"pages for unknown rules: {extra}; run `{REGENERATE}`"


def test_a_rule_page_has_the_fixed_sections_in_order():
    text = render_all()["PC501.md"]
    sections = ["## What it does", "## Why is this bad?", "## Example", "## Use instead", "## Fix safety"]
    positions = [text.index(s) for s in sections]
    assert positions == sorted(positions)
    assert load_rule_docs()["PC501"].why.strip() in text


def test_the_fixable_column_agrees_with_promptlint_rules():
    result = subprocess.run([sys.executable, "-m", "promptlint", "rules", "--format", "json"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    fixable = {row["code"] for row in json.loads(result.stdout) if row["fixable"]}
    index = render_all()["index.md"]
    documented = {line.split("[", 1)[1].split("]", 1)[0] for line in index.splitlines() if line.endswith("| yes |")}
    assert fixable and documented == fixable


def test_the_suppression_each_page_shows_silences_its_example():
    doc = load_rule_docs()["PC101"]
    assert "`# promptlint: ignore[PC101] <reason>`" in render_all()["PC101.md"]
    [finding] = [d for d in lint_source(doc.example) if d.code == "PC101"]
    lines = doc.example.splitlines()
    lines[finding.line - 1] += "  # promptlint: ignore[PC101] a daily digest, one call a day"
    assert lint_source("\n".join(lines) + "\n") == []

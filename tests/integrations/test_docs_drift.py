"""docs/rules/ is generated from the rule metadata; a stale page fails here."""

from __future__ import annotations

from pathlib import Path

from promptlint.catalog import load_rule_docs
from promptlint.docs_gen import render_all

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

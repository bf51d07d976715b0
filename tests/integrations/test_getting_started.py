"""docs/index.md (getting started) shows what promptlint really prints and accepts."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

from promptlint.lint.engine import lint_source

ROOT = Path(__file__).resolve().parents[2]
INDEX = ROOT / "docs" / "index.md"


def fenced(lang: str) -> list[str]:
    return re.findall(rf"```{lang}\n(.*?)```", INDEX.read_text(encoding="utf-8"), flags=re.S)


def test_the_finding_shown_is_what_lint_prints_for_the_bundled_example():
    [shown] = fenced("text")
    result = subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "fixtures/apps/helpdesk"],
                            cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert result.returncode == 1, result.stderr
    assert shown in result.stdout, "docs/index.md 'Read a finding' no longer matches `promptlint lint fixtures/apps/helpdesk`"


def test_the_suppression_shown_silences_the_finding_without_being_reported_unused():
    [suppressed] = [line for block in fenced("python") for line in block.splitlines() if "promptlint: ignore[" in line]
    source = ("import anthropic\nfrom datetime import date\n\nclient = anthropic.Anthropic()\n"
              f"{suppressed}\n"
              'client.messages.create(model="m", max_tokens=1, system=system, messages=[])\n')
    assert lint_source(source) == []
    assert [d.code for d in lint_source(source.replace(suppressed, suppressed.split("  #")[0]))] == ["PC101"]


def test_every_relative_link_points_at_a_file():
    for page in [INDEX, *(ROOT / "docs").glob("*.md")]:
        for target in re.findall(r"\]\(([^)#:]+)(?:#[^)]*)?\)", page.read_text(encoding="utf-8")):
            assert (page.parent / target).exists(), f"{page.relative_to(ROOT)} links to missing {target}"

"""The worked example of docs/custom-rules.md works as written, through the real CLI."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

DOC = Path(__file__).resolve().parents[2] / "docs" / "custom-rules.md"


def block(lang: str) -> str:
    return re.findall(rf"```{lang}\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)[0]


@pytest.fixture(scope="module")
def project(tmp_path_factory) -> Path:
    """pyproject.toml, the rule file and the code, each copied from the page."""
    root = tmp_path_factory.mktemp("custom-rules")
    (root / "pyproject.toml").write_text(block("toml"), encoding="utf-8")
    (root / "promptlint-rules.yaml").write_text(block("yaml"), encoding="utf-8")
    (root / "app.py").write_text("q = input()\n" + block("python"), encoding="utf-8")
    return root


def lint(root: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "--format", "json", "."],
                          cwd=root, capture_output=True, text=True, timeout=120)


def test_the_custom_source_reaching_the_custom_sink_is_reported_and_the_sanitized_call_is_not(project):
    result = lint(project)
    assert result.returncode == 1, result.stderr
    lines = (project / "app.py").read_text(encoding="utf-8").splitlines()
    found = [(d["code"], lines[d["line"] - 1]) for d in json.loads(result.stdout)]
    assert len(found) == 1, found
    code, line = found[0]
    assert code == "PC101" and "clock.now()" in line and "day_bucket" not in line


def test_a_rule_file_with_an_unknown_key_stops_the_run_naming_file_entry_and_key(project, tmp_path):
    for name in ("pyproject.toml", "app.py"):
        (tmp_path / name).write_text((project / name).read_text(encoding="utf-8"), encoding="utf-8")
    rules = block("yaml").replace("    note: company clock\n", "    note: company clock\n    colour: red\n")
    (tmp_path / "promptlint-rules.yaml").write_text(rules, encoding="utf-8")
    result = lint(tmp_path)
    assert result.returncode == 2
    assert "promptlint-rules.yaml: sources[0]: unknown key(s) colour" in result.stderr
    assert "Traceback" not in result.stderr

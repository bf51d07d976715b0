"""Users extend sources, sinks and sanitizers with their own YAML (docs/custom-rules.md)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

DOC = Path(__file__).resolve().parents[2] / "docs" / "custom-rules.md"
APP = '''from myco import clock, llm


def run(q):
    llm.ask(system=f"Now {clock.now()}", question=q)
    llm.ask(system=f"Day {clock.day_bucket()}", question=q)
'''


def project(tmp_path: Path, rules: str) -> Path:
    (tmp_path / "pyproject.toml").write_text('[tool.promptlint]\nrule-files = ["promptlint-rules.yaml"]\n')
    (tmp_path / "promptlint-rules.yaml").write_text(rules, encoding="utf-8")
    (tmp_path / "app.py").write_text(APP, encoding="utf-8")
    return tmp_path


def lint(cwd: Path) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptlint", "lint", "--no-cache", "--format", "json", "app.py"],
                          cwd=cwd, capture_output=True, text=True, timeout=60)


def documented_rule_file() -> str:
    return re.search(r"```yaml\n# promptlint-rules.yaml\n(.*?)```", DOC.read_text(), re.S).group(1)


def test_the_documented_rule_file_adds_a_source_a_sink_and_a_sanitizer(tmp_path):
    import json

    run = lint(project(tmp_path, documented_rule_file()))
    assert run.returncode == 1, run.stderr
    found = json.loads(run.stdout)
    assert [(d["line"], d["code"]) for d in found] == [(5, "PC101")]
    assert found[0]["trace"][0]["note"].startswith("company clock")


def test_a_rule_file_with_an_unknown_key_is_a_clear_config_error(tmp_path):
    run = lint(project(tmp_path, "version: 1\nsources:\n  - id: x\n    code: PC101\n    label: volatile\n    callz: [a.b]\n"))
    assert run.returncode == 2
    assert "promptlint-rules.yaml: sources[0]: unknown key(s) callz" in run.stderr
    assert "Traceback" not in run.stderr


def test_a_rule_file_that_is_not_yaml_is_a_clear_config_error(tmp_path):
    run = lint(project(tmp_path, "sources: [unclosed\n"))
    assert run.returncode == 2 and "invalid YAML" in run.stderr and "Traceback" not in run.stderr

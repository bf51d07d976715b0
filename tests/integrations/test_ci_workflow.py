"""Every `promptlint` step of the sample workflow docs/ci/github-actions.yml runs as written.

The steps run in a small temporary checkout (one leaking module, the support-bot contract and
its golden file), with the real CLI in a subprocess, as a runner would run them.
"""

from __future__ import annotations

import json
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

ROOT = Path(__file__).resolve().parents[2]
WORKFLOW = ROOT / "docs" / "ci" / "github-actions.yml"
CONTRACT = "fixtures/contracts/support_bot.py"
GOLDEN = "fixtures/golden/support-bot.json"
LEAK = '''import anthropic
import uuid

client = anthropic.Anthropic()
client.messages.create(model="claude-haiku-4-5", max_tokens=64,
                       system=f"Session {uuid.uuid4()}: be brief.",
                       messages=[{"role": "user", "content": "hi"}])
'''


def steps() -> list[dict]:
    return yaml.safe_load(WORKFLOW.read_text(encoding="utf-8"))["jobs"]["promptlint"]["steps"]


def promptlint_step(name: str) -> list[str]:
    """The arguments after `promptlint` of the step called ``name``."""
    [step] = [s for s in steps() if s.get("name") == name]
    words = shlex.split(step["run"])
    assert words[0] == "promptlint", step["run"]
    return words[1:]


@pytest.fixture(scope="module")
def checkout(tmp_path_factory) -> Path:
    work = tmp_path_factory.mktemp("checkout")
    (work / "app.py").write_text(LEAK, encoding="utf-8")
    for name in (CONTRACT, GOLDEN):
        (work / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, work / name)
    return work


def run(checkout: Path, args: list[str]) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptlint", *args], cwd=checkout, capture_output=True,
                          text=True, timeout=120)


def test_the_lint_step_annotates_the_finding_and_fails_the_job(checkout):
    result = run(checkout, promptlint_step("lint"))
    assert result.returncode == 1, result.stderr
    assert any(line.startswith("::error file=app.py,line=6") and "PC201" in line
               for line in result.stdout.splitlines()), result.stdout


def test_the_sarif_step_writes_the_report_and_lets_the_upload_run(checkout):
    args = promptlint_step("lint (SARIF)")
    result = run(checkout, args)
    assert result.returncode == 0, result.stderr
    report = json.loads((checkout / args[args.index("--output-file") + 1]).read_text(encoding="utf-8"))
    assert report["version"] == "2.1.0"
    assert [r["ruleId"] for r in report["runs"][0]["results"]] == ["PC201"]


def test_the_sarif_report_is_the_file_the_upload_step_reads():
    args = promptlint_step("lint (SARIF)")
    [upload] = [s for s in steps() if str(s.get("uses", "")).startswith("github/codeql-action/upload-sarif@")]
    assert upload["with"]["sarif_file"] == args[args.index("--output-file") + 1]
    assert upload.get("if") == "always()"


def test_the_golden_step_passes_on_an_unchanged_contract(checkout):
    result = run(checkout, promptlint_step("golden prefix hashes"))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.startswith("ok support-bot")

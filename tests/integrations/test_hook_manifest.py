""".pre-commit-hooks.yaml is a valid pre-commit manifest whose entries are real promptlint commands.

The slow test_pre_commit.py runs the hooks for real; this one is quick and offline.
"""

from __future__ import annotations

import shlex
import subprocess
import sys
from pathlib import Path

import pytest
from pre_commit.clientlib import load_manifest

MANIFEST = Path(__file__).resolve().parents[2] / ".pre-commit-hooks.yaml"


def hooks() -> dict[str, dict]:
    return {hook["id"]: hook for hook in load_manifest(str(MANIFEST))}


def test_the_manifest_defines_the_lint_and_golden_hooks():
    assert sorted(hooks()) == ["promptlint", "promptlint-golden"]


def test_the_lint_hook_gets_python_files_and_notebooks_in_one_process():
    hook = hooks()["promptlint"]
    assert (hook["entry"], hook["language"], hook["types_or"]) == ("promptlint lint", "python", ["python", "jupyter"])
    assert hook["pass_filenames"] and hook["require_serial"]


def test_the_golden_hook_takes_its_targets_from_args_and_always_runs():
    hook = hooks()["promptlint-golden"]
    assert (hook["entry"], hook["language"]) == ("promptlint golden check", "python")
    assert not hook["pass_filenames"] and hook["always_run"]


@pytest.mark.parametrize("hook_id", ["promptlint", "promptlint-golden"])
def test_the_entry_is_a_promptlint_command(hook_id):
    program, *words = shlex.split(hooks()[hook_id]["entry"])
    assert program == "promptlint"
    result = subprocess.run([sys.executable, "-m", "promptlint", *words, "--help"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("Usage: ")

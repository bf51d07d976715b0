"""The real pre-commit runs this checkout's hooks (.pre-commit-hooks.yaml) in temporary repositories.

pre-commit installs the hook repository into its own virtualenv (pip, from PyPI or the local
pip cache); the module-scoped fixtures build that environment once for every test here.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SKIP = {".git", ".venv", ".bench", ".promptlint_cache", ".pytest_cache", ".hypothesis", "__pycache__", "build", "dist"}
CONTRACT = "fixtures/contracts/support_bot.py"
GOLDEN = "fixtures/golden/support-bot.json"

LEAK = '''import anthropic
from datetime import datetime

client = anthropic.Anthropic()


def ask(question):
    return client.messages.create(model="claude-haiku-4-5", max_tokens=64,
                                  system=f"You are helpful. Now: {datetime.now()}",
                                  messages=[{"role": "user", "content": question}])
'''
FIXED = LEAK.replace('f"You are helpful. Now: {datetime.now()}"', '"You are helpful."').replace(
    '"content": question', '"content": f"(now: {datetime.now()}) {question}"')

pytestmark = pytest.mark.slow


def git(cwd: Path, *args: str) -> str:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t", "GIT_COMMITTER_NAME": "t",
           "GIT_COMMITTER_EMAIL": "t@t"}
    return subprocess.run(["git", *args], cwd=cwd, env=env, check=True, capture_output=True, text=True).stdout.strip()


@pytest.fixture(scope="module")
def hook_repo(tmp_path_factory) -> tuple[Path, str]:
    """A committed copy of this working tree (it may hold uncommitted changes) and its HEAD sha."""
    repo = tmp_path_factory.mktemp("hooks") / "promptlint"
    shutil.copytree(ROOT, repo, ignore=lambda d, names: [n for n in names if n in SKIP or n.endswith(".egg-info")])
    git(repo, "init", "-q")
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "-m", "hooks under test")
    return repo, git(repo, "rev-parse", "HEAD")


@pytest.fixture(scope="module")
def pre_commit_home(tmp_path_factory) -> Path:
    """One PRE_COMMIT_HOME for the module: the hook environment is installed once."""
    return tmp_path_factory.mktemp("pre-commit-home")


def user_repo(tmp_path_factory, hook_repo, hook: str, args: list[str] | None = None) -> Path:
    repo, sha = hook_repo
    work = tmp_path_factory.mktemp("user") / "app"
    work.mkdir()
    git(work, "init", "-q")
    config = f"repos:\n- repo: {repo}\n  rev: {sha}\n  hooks:\n  - id: {hook}\n"
    if args:
        config += f"    args: [{', '.join(args)}]\n"
    (work / ".pre-commit-config.yaml").write_text(config, encoding="utf-8")
    return work


def run_hooks(work: Path, home: Path) -> subprocess.CompletedProcess:
    git(work, "add", "-A")
    env = {**os.environ, "PRE_COMMIT_HOME": str(home), "PRE_COMMIT_COLOR": "never"}
    return subprocess.run([sys.executable, "-m", "pre_commit", "run", "--all-files"], cwd=work, env=env,
                          capture_output=True, text=True, timeout=900)


def test_lint_hook_fails_on_a_leak_and_passes_once_it_is_fixed(hook_repo, pre_commit_home, tmp_path_factory):
    project = user_repo(tmp_path_factory, hook_repo, "promptlint")
    (project / "bot.py").write_text(LEAK, encoding="utf-8")
    leaking = run_hooks(project, pre_commit_home)
    assert leaking.returncode == 1, leaking.stdout + leaking.stderr
    assert "PC101" in leaking.stdout and "bot.py:9" in leaking.stdout

    (project / "bot.py").write_text(FIXED, encoding="utf-8")
    fixed = run_hooks(project, pre_commit_home)
    assert fixed.returncode == 0, fixed.stdout + fixed.stderr
    assert "Passed" in fixed.stdout


def test_golden_hook_passes_on_a_clean_contract_and_fails_when_its_prefix_changes(
        hook_repo, pre_commit_home, tmp_path_factory):
    project = user_repo(tmp_path_factory, hook_repo, "promptlint-golden", [f"{CONTRACT}:contract"])
    for name in (CONTRACT, GOLDEN):
        (project / name).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(ROOT / name, project / name)
    clean = run_hooks(project, pre_commit_home)
    assert clean.returncode == 0, clean.stdout + clean.stderr
    assert "Passed" in clean.stdout

    contract = project / CONTRACT
    text = contract.read_text(encoding="utf-8")
    assert "You are friendly, brief and exact." in text
    contract.write_text(text.replace("You are friendly, brief and exact.", "You are friendly and exact."),
                        encoding="utf-8")
    drifted = run_hooks(project, pre_commit_home)
    assert drifted.returncode == 1, drifted.stdout + drifted.stderr
    assert "prefix sha256 changed" in drifted.stdout and "layer 'identity' changed" in drifted.stdout

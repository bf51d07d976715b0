"""The result cache: reused while nothing changed, invalidated by a changed helper module."""

from __future__ import annotations

import os
from pathlib import Path

from promptlint.lint.engine import lint_paths
from promptlint.lint.diagnostic import Settings

AGENT = '''import anthropic
from helpers import banner

anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=banner(), messages=[])
'''
STABLE = 'def banner():\n    return "You are a support agent."\n'
LEAKY = 'from datetime import datetime\n\n\ndef banner():\n    return f"Started {datetime.now()}"\n'


def run(root: Path):
    return lint_paths([str(root)], Settings(root=str(root)), use_cache=True, jobs=1)


def write(path: Path, text: str) -> None:
    path.write_text(text, encoding="utf-8")
    stat = path.stat()  # make the change visible even within one mtime tick
    os.utime(path, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))


def test_an_unchanged_tree_is_answered_from_the_cache(tmp_path):
    write(tmp_path / "agent.py", AGENT)
    write(tmp_path / "helpers.py", STABLE)
    first = run(tmp_path)
    second = run(tmp_path)
    assert (first.cached, second.cached) == (0, 2)
    assert second.diagnostics == first.diagnostics


def test_changing_a_helper_module_re_analyses_its_callers(tmp_path):
    write(tmp_path / "agent.py", AGENT)
    write(tmp_path / "helpers.py", STABLE)
    assert run(tmp_path).diagnostics == []
    write(tmp_path / "helpers.py", LEAKY)
    report = run(tmp_path)
    assert [(Path(d.path).name, d.code) for d in report.diagnostics] == [("agent.py", "PC101")]


def test_the_cache_folder_is_tagged_and_ignored_by_git(tmp_path):
    write(tmp_path / "agent.py", AGENT)
    run(tmp_path)
    cache = tmp_path / ".promptlint_cache"
    assert (cache / "CACHEDIR.TAG").read_text().startswith("Signature: 8a477f597d28d172789f06886806bc55")
    assert (cache / ".gitignore").read_text().strip().endswith("*")


def test_a_corrupt_cache_is_ignored_and_rewritten(tmp_path):
    write(tmp_path / "agent.py", AGENT)
    write(tmp_path / "helpers.py", LEAKY)
    expected = run(tmp_path).diagnostics
    for pack in (tmp_path / ".promptlint_cache").glob("results-*.json"):
        pack.write_bytes(b"not a signed pack")
    again = run(tmp_path)
    assert again.diagnostics == expected and again.cached == 0

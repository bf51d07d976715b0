"""The result cache sits in the linted tree: a tree that plants one must not run code, hide
findings or redirect writes. Each test runs the real CLI on a temporary tree."""

from __future__ import annotations

import json
import os
import pickle
import subprocess
import sys
from pathlib import Path

import pytest

LEAK = '''import anthropic
from datetime import datetime

anthropic.Anthropic().messages.create(model="m", max_tokens=9, system=f"Now {datetime.now()}", messages=[])
'''


def lint(tree: Path, *extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "promptlint", "lint", "--format", "json", *extra, "."],
                          cwd=tree, capture_output=True, text=True, timeout=120)


class _Boom:
    def __init__(self, marker: str):
        self.marker = marker

    def __reduce__(self):
        return (open, (self.marker, "w"))


def test_a_planted_pickle_is_never_loaded(tmp_path):
    (tmp_path / "agent.py").write_text(LEAK)
    cache = tmp_path / ".promptlint_cache"
    cache.mkdir()
    marker = tmp_path / "pwned"
    payload = pickle.dumps(_Boom(str(marker)))
    for name in ("results-0.pickle", "results-0.json"):
        (cache / name).write_bytes(payload)
    # Plant under every name this version could use for its pack, too.
    first = lint(tmp_path)
    for pack in cache.glob("results-*"):
        pack.write_bytes(payload)
    second = lint(tmp_path)
    assert not marker.exists()
    assert first.returncode == second.returncode == 1
    assert [d["code"] for d in json.loads(second.stdout)] == ["PC101"]


def test_a_forged_pack_cannot_hide_findings(tmp_path):
    (tmp_path / "agent.py").write_text(LEAK)
    assert lint(tmp_path).returncode == 1
    [pack] = (tmp_path / ".promptlint_cache").glob("results-*.json")
    signature, body = pack.read_bytes().split(b"\n", 1)
    entries = json.loads(body)
    for key, entry in entries.items():
        entries[key] = [entry[0], None, [], ""]  # "nothing here"
    pack.write_bytes(signature + b"\n" + json.dumps(entries).encode())  # old signature, new body
    again = lint(tmp_path)
    assert again.returncode == 1 and [d["code"] for d in json.loads(again.stdout)] == ["PC101"]
    # ... and the forged pack was replaced by a signed one this user wrote.
    rerun = lint(tmp_path)
    assert rerun.returncode == 1


def test_a_pack_signed_by_another_user_is_a_miss(tmp_path):
    (tmp_path / "agent.py").write_text(LEAK)
    other_home = tmp_path.parent / (tmp_path.name + "-other-key")
    env = {**os.environ, "PROMPTLINT_KEY_DIR": str(other_home)}
    subprocess.run([sys.executable, "-m", "promptlint", "lint", "."], cwd=tmp_path, env=env,
                   capture_output=True, timeout=120)
    from promptlint.lint.result_cache import LintCache
    from promptlint.lint.catalog import settings_fingerprint
    from promptlint.lint.diagnostic import Settings

    cache = LintCache(str(tmp_path / ".promptlint_cache"), settings_fingerprint(Settings(root=str(tmp_path))))
    assert cache.entries == {}


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_linked_gitignore_is_replaced_not_followed(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "agent.py").write_text(LEAK)
    victim = tmp_path / "victim.txt"
    victim.write_text("precious\n")
    cache = tree / ".promptlint_cache"
    cache.mkdir()
    (cache / ".gitignore").symlink_to(victim)
    (cache / "CACHEDIR.TAG").symlink_to(victim)
    assert lint(tree).returncode == 1
    assert victim.read_text() == "precious\n"
    assert not (cache / ".gitignore").is_symlink()


@pytest.mark.skipif(not hasattr(os, "symlink"), reason="needs symlinks")
def test_a_cache_folder_that_is_a_link_is_not_used(tmp_path):
    tree = tmp_path / "tree"
    tree.mkdir()
    (tree / "agent.py").write_text(LEAK)
    outside = tmp_path / "outside"
    outside.mkdir()
    (tree / ".promptlint_cache").symlink_to(outside, target_is_directory=True)
    result = lint(tree)
    assert result.returncode == 1, result.stderr
    assert list(outside.iterdir()) == []

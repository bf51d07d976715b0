"""Which files a run lints (promptlint.discover.collect_files)."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from promptlint.lint.discover import collect_files
from promptlint.lint.diagnostic import Settings


def make_tree(root, *names):
    for name in names:
        path = root / name
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("x = 1\n", encoding="utf-8")


def rel(files, root):
    return [Path(f).resolve().relative_to(root).as_posix() for f in files]


def test_default_excludes_prune_vcs_venv_build_and_caches(tmp_path):
    make_tree(tmp_path, "app/a.py", ".git/hook.py", ".venv/lib/x.py", "build/b.py", "node_modules/n.py",
              "app/__pycache__/c.py", "pkg.egg-info/d.py", "lib/site-packages/e.py")
    assert rel(collect_files([str(tmp_path)], Settings(root=str(tmp_path))), tmp_path) == ["app/a.py"]


def test_only_python_files_are_collected_sorted(tmp_path):
    make_tree(tmp_path, "b.py", "a.py", "c.pyi", "notes.txt", "sub/z.py")
    assert rel(collect_files([str(tmp_path)], Settings(root=str(tmp_path))), tmp_path) == ["a.py", "b.py", "sub/z.py"]


def test_exclude_glob_with_a_slash_matches_the_path_under_the_root(tmp_path):
    make_tree(tmp_path, "fixtures/apps/a.py", "fixtures/keep.py", "apps/b.py")
    settings = Settings(root=str(tmp_path), extend_exclude=("fixtures/apps",))
    assert rel(collect_files([str(tmp_path)], settings), tmp_path) == ["apps/b.py", "fixtures/keep.py"]


def test_exclude_replaces_the_defaults(tmp_path):
    make_tree(tmp_path, "build/b.py", "gen/g.py")
    settings = Settings(root=str(tmp_path), exclude=("gen",))
    assert rel(collect_files([str(tmp_path)], settings), tmp_path) == ["build/b.py"]


def test_file_named_on_the_command_line_is_linted_even_when_excluded(tmp_path):
    make_tree(tmp_path, "build/b.py")
    target = str(tmp_path / "build" / "b.py")
    assert collect_files([target], Settings(root=str(tmp_path))) == [target]


def test_overlapping_paths_give_each_file_once(tmp_path):
    make_tree(tmp_path, "a/x.py")
    files = collect_files([str(tmp_path), str(tmp_path / "a"), str(tmp_path / "a" / "x.py")], Settings(root=str(tmp_path)))
    assert len(files) == 1


def test_missing_path_raises_file_not_found_naming_it(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.py"):
        collect_files([str(tmp_path / "nope.py")], Settings(root=str(tmp_path)))


def test_dot_gives_paths_without_a_dot_prefix(tmp_path, monkeypatch):
    make_tree(tmp_path, "pkg/a.py")
    monkeypatch.chdir(tmp_path)
    assert collect_files(["."], Settings(root=str(tmp_path))) == [os.path.join("pkg", "a.py")]

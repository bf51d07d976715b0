"""Shared by the linter's corpus tests: lint a directory once per session, name files by their path in it."""

from __future__ import annotations

import functools
from pathlib import Path

import pytest

@functools.lru_cache(maxsize=None)
def _lint_directory(directory: str) -> tuple:
    from promptlint.lint.config import load_settings
    from promptlint.lint.engine import lint_paths

    # With the configuration a user running `promptlint lint <directory>` gets (an example app
    # may opt in to rules in its own promptlint.toml).
    report = lint_paths([directory], load_settings([directory]), use_cache=False)
    return tuple(report.diagnostics)


@pytest.fixture(scope="session")
def lint_tree():
    """``lint_tree(directory)``: the diagnostics of a whole directory, linted once without the cache."""
    return lambda directory: _lint_directory(str(Path(directory).resolve()))


def path_in_tree(root: Path, path: str) -> str:
    """``path`` (absolute, or relative to ``root`` or to the working directory) as a posix path under ``root``."""
    candidate = Path(path)
    if not candidate.is_absolute():
        candidate = root / candidate if (root / candidate).exists() else Path.cwd() / candidate
    try:
        return candidate.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path


@pytest.fixture(scope="session")
def in_tree():
    """``in_tree(root, path)``: a reported path as a posix path relative to the linted root."""
    return path_in_tree

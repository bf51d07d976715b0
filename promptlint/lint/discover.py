"""Which files a lint run reads: Python files and Jupyter notebooks under the given paths, minus
the excludes.

Excludes are shell globs matched against every path component (``build`` prunes any folder
named build) and against the path relative to ``Settings.root`` (``fixtures/apps/*``).
Like ruff without ``--force-exclude``, a file named explicitly on the command line is linted
even when an exclude matches it: asking for a file by name is taken at its word.

One bad entry never aborts the walk: a ``*.py`` symlink that loops is collected (reading it
gives a PC003 finding), and a folder that cannot be listed is handed back to the caller,
which reports it (PC003) instead of skipping it silently. Dangling ``*.py`` links are
skipped, as ruff skips them. Symlinked folders are not followed.
"""

from __future__ import annotations

import errno
import os

from promptlint.lint.patterns import glob_match
from promptlint.lint.diagnostic import Settings

#: Folders and files never worth linting; ``exclude`` replaces this list, ``extend-exclude`` adds.
#: Test code is skipped by default (as Semgrep's default ignores do): a test sends no production
#: request, and a leak it exercises is reported where the library puts the value in the layer.
DEFAULT_EXCLUDES: tuple[str, ...] = (
    ".git", ".hg", ".svn", ".venv", "venv", "env", ".tox", ".nox", "build", "dist",
    "node_modules", "__pycache__", ".mypy_cache", ".pytest_cache", ".ruff_cache",
    ".promptlint_cache", "site-packages", "*.egg-info",
    # Copies editors keep of notebooks: Jupyter's autosaves, jupyterlab-lsp's shadow documents.
    ".ipynb_checkpoints", ".virtual_documents",
    "tests", "test", "*_tests", "conftest.py", "test_*.py", "*_test.py",
)


def exclude_patterns(settings: Settings) -> tuple[str, ...]:
    """The exclude globs in force: ``exclude`` (or the defaults) plus ``extend-exclude``."""
    base = settings.exclude if settings.exclude else DEFAULT_EXCLUDES
    return tuple(p.rstrip("/") for p in (*base, *settings.extend_exclude) if p.strip("/"))


def _join(directory: str, name: str) -> str:
    # Plain concatenation: this runs for every entry of the tree.
    return name if directory == "." else directory + os.sep + name


def _loops(path: str) -> bool:
    try:
        os.stat(path)
    except OSError as exc:
        return exc.errno == errno.ELOOP
    return False


def collect_files(paths: list[str], settings: Settings, unreadable: list[tuple[str, str]] | None = None) -> list[str]:
    """Python files and notebooks (``*.py``, ``*.ipynb``) under ``paths``, sorted, without duplicates.

    Folders that cannot be listed are appended to ``unreadable`` as ``(folder, reason)``.
    Raises ``FileNotFoundError`` naming the first path that does not exist.
    """
    patterns = exclude_patterns(settings)
    name_patterns = tuple(p for p in patterns if "/" not in p)
    path_patterns = tuple(p for p in patterns if "/" in p)
    root = os.path.abspath(settings.root or ".")

    def excluded(path: str, name: str) -> bool:
        if glob_match(name, name_patterns):
            return True
        if not path_patterns:
            return False
        rel = os.path.relpath(os.path.abspath(path), root).replace(os.sep, "/")
        return glob_match(rel, path_patterns)

    found: dict[str, str] = {}  # absolute path -> path as shown
    for given in paths or ["."]:
        path = os.path.normpath(given)
        if os.path.isfile(path) or _loops(path):
            found.setdefault(os.path.abspath(path), path)
            continue
        if not os.path.isdir(path):
            raise FileNotFoundError(f"{given}: no such file or directory")
        # Keys for de-duplication: the absolute form, built by prefix instead of abspath per file.
        base = os.path.abspath(path)
        cut = 0 if path == "." else len(path) + 1
        stack = [path]
        while stack:
            directory = stack.pop()
            try:
                entries = list(os.scandir(directory))
            except OSError as exc:
                if unreadable is not None:
                    unreadable.append((directory, exc.strerror or str(exc)))
                continue
            for entry in entries:
                name = entry.name
                child = _join(directory, name)
                try:
                    is_dir = entry.is_dir(follow_symlinks=False)
                except OSError:
                    continue
                if is_dir:
                    if not excluded(child, name):
                        stack.append(child)
                elif name.endswith((".py", ".ipynb")) and _is_file(entry) and not excluded(child, name):
                    found.setdefault(base + os.sep + child[cut:], child)
    return sorted(found.values())


def _is_file(entry: os.DirEntry) -> bool:
    # A link loop raises (a dangling link is just "not a file"): keep it, so that reading
    # it reports the file (PC003) instead of aborting the run.
    try:
        return entry.is_file()
    except OSError:
        return True


def import_roots(files: list[str]) -> list[str]:
    """The folders imports are resolved from: for each file, the nearest folder above it
    without ``__init__.py``. Computed once from the whole file list, before any analysis, so
    that what ``import helpers`` resolves to never depends on which files a worker met first."""
    roots: set[str] = set()
    seen: set[str] = set()
    for path in files:
        directory = os.path.dirname(os.path.abspath(path))
        if directory in seen:
            continue
        seen.add(directory)
        while os.path.isfile(os.path.join(directory, "__init__.py")):
            parent = os.path.dirname(directory)
            if parent == directory:
                break
            directory = parent
        roots.add(directory)
    return sorted(roots)

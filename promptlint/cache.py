"""The result cache in ``.promptlint_cache/``, the way ruff keeps its own.

One pack file per settings fingerprint (version, rule files, analysis settings) holds an
entry per linted file: its stat key (mtime_ns, size), its result, the files its analysis
read (helper modules, templates) with their stat keys, and its imports. An entry is used
only when the file and every dependency are unchanged, so editing a helper module
re-analyses the files that called into it. The folder carries a ``CACHEDIR.TAG`` and a
``.gitignore``; the pack is written atomically (temp file + ``os.replace``).
"""

from __future__ import annotations

import hashlib
import os
import pickle
import tempfile

from promptlint.engine import FileResult, settings_fingerprint
from promptlint.model import Settings

CACHE_DIR = ".promptlint_cache"
FORMAT = "3"  # bump when the entry layout changes
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by promptlint.\n"


def _stat_key(path: str) -> tuple[int, int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_mtime_ns, st.st_size)


class LintCache:
    """Per-file results keyed by content stat, settings and dependencies."""

    def __init__(self, directory: str, fingerprint: str):
        self.directory = directory
        digest = hashlib.blake2b(f"{FORMAT}|{fingerprint}".encode(), digest_size=10).hexdigest()
        self.pack = os.path.join(directory, f"results-{digest}.pickle")
        self.entries: dict[str, tuple] = {}
        self.dirty = False
        self._cwd = os.getcwd()
        try:
            with open(self.pack, "rb") as handle:
                loaded = pickle.load(handle)
            if isinstance(loaded, dict):
                self.entries = loaded
        except (OSError, EOFError, pickle.UnpicklingError, AttributeError, ImportError, IndexError, TypeError, ValueError):
            self.entries = {}  # a missing or corrupt cache is an empty cache

    @classmethod
    def for_run(cls, settings: Settings, files: list[str]) -> "LintCache":
        root = os.path.abspath(settings.root or ".")
        return cls(os.path.join(root, CACHE_DIR), settings_fingerprint(settings))

    def lookup(self, path: str) -> tuple[FileResult, str] | None:
        """The cached result and import names (space-separated) of an unchanged file."""
        entry = self.entries.get(self._key(path))
        if entry is None:
            return None
        try:
            key, result, deps, imports = entry
            imports.encode
        except (TypeError, ValueError, AttributeError):
            return None  # an entry from another layout is a miss
        if key != _stat_key(path):
            return None
        for dep_path, dep_key in deps:
            if _stat_key(dep_path) != dep_key:
                return None
        return (result if result is not None else FileResult()), imports

    def store(self, path: str, result: FileResult, imports: str) -> None:
        deps = [(d, _stat_key(d)) for d in result.deps]
        empty = not (result.diagnostics or result.analyzed or result.has_marker or deps)
        # Most files hold nothing: store None and no imports unless a later round may need them.
        self.entries[self._key(path)] = (_stat_key(path), None if empty else result, deps, imports)
        self.dirty = True

    def _key(self, path: str) -> str:
        # Joined, not normalised: discovery yields one spelling per file, and this runs per file.
        return path if os.path.isabs(path) else self._cwd + os.sep + path

    def save(self) -> None:
        if not self.dirty:
            return
        try:
            os.makedirs(self.directory, exist_ok=True)
            tag = os.path.join(self.directory, "CACHEDIR.TAG")
            if not os.path.exists(tag):
                with open(tag, "w", encoding="ascii") as handle:
                    handle.write(_TAG)
                with open(os.path.join(self.directory, ".gitignore"), "w", encoding="ascii") as handle:
                    handle.write("# Created by promptlint automatically.\n*\n")
            fd, tmp = tempfile.mkstemp(dir=self.directory, prefix=".results-", suffix=".tmp")
            with os.fdopen(fd, "wb") as handle:
                pickle.dump(self.entries, handle, protocol=pickle.HIGHEST_PROTOCOL)
            os.replace(tmp, self.pack)
        except OSError:
            pass  # a read-only tree still lints; it just is not cached

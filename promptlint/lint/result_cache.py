"""The result cache in ``.promptlint_cache/``, the way ruff keeps its own, safe in a hostile tree.

One pack file per settings fingerprint (version, rule files, analysis settings) holds an
entry per linted file: its stat key (mtime_ns, size), its result, the files its analysis
read (helper modules, templates) with their stat keys, and its imports. An entry is used
only when the file and every dependency are unchanged, so editing a helper module
re-analyses the files that called into it.

The cache folder sits inside the linted tree, so whoever wrote the tree could have planted
it (a pull request, a fork). Three rules make that harmless:

* the pack is **data only** (JSON), every field type-checked on load; nothing is unpickled;
* the pack is **signed** with HMAC-SHA256 under a key kept in this user's own cache folder
  (``$PROMPTLINT_KEY_DIR``, else ``$XDG_CACHE_HOME/promptlint``, else ``~/.cache/promptlint``),
  outside the tree: a pack this user did not write is a miss, and is rewritten;
* nothing is **written through a link**: a cache folder that is a symlink (or not a folder)
  is not used, and every file in it is written to a temporary name and ``os.replace``-d, which
  replaces a planted link instead of following it.

Any doubt is a cache miss, never an error: the run lints from scratch.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import os
import secrets
import stat
import tempfile

from promptlint.lint.diagnostic import Diagnostic, FileResult, Fix, TraceStep
from promptlint.lint.writing import replace_atomically

CACHE_DIR = ".promptlint_cache"
FORMAT = "7"  # bump when the entry layout changes (6: a diagnostic's `needs` and `sent`, a result's run-state
# `writes`; 7: a write's source)
_TAG = "Signature: 8a477f597d28d172789f06886806bc55\n# This file is a cache directory tag created by promptlint.\n"
_GITIGNORE = "# Created by promptlint automatically.\n*\n"
_MAX_PACK_BYTES = 256 * 1024 * 1024


def _stat_key(path: str) -> list[int] | None:
    try:
        st = os.stat(path)
    except OSError:
        return None
    return [st.st_mtime_ns, st.st_size]


# ---------------------------------------------------------------- the user's signing key
def key_directory() -> str:
    """Where this user's cache-signing key lives: never inside a linted tree."""
    explicit = os.environ.get("PROMPTLINT_KEY_DIR")
    if explicit:
        return explicit
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "promptlint")


def signing_key() -> bytes | None:
    """This user's key (created on first use, mode 0600), or None when it cannot be kept."""
    directory = key_directory()
    path = os.path.join(directory, "cache-key")
    try:
        with open(path, "rb") as handle:
            key = handle.read(128)
        if len(key) >= 32:
            return key
    except OSError:
        pass
    try:
        os.makedirs(directory, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=directory, prefix=".cache-key-")
        with os.fdopen(fd, "wb") as handle:
            handle.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)  # first writer wins when two runs start together
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
        with open(path, "rb") as handle:
            key = handle.read(128)
        return key if len(key) >= 32 else None
    except OSError:
        return None  # no writable home: results are simply not cached


# ---------------------------------------------------------------- strict (de)serialisation
class _Invalid(Exception):
    """A pack entry that is not exactly what this version writes."""


def _check(value, kind):
    if kind is int and isinstance(value, bool) or not isinstance(value, kind):
        raise _Invalid
    return value


def _ints(value, n: int) -> list[int]:
    _check(value, list)
    if len(value) != n:
        raise _Invalid
    return [_check(v, int) for v in value]


def _write(value) -> list:
    """A run-state write: [line, column] from the text, or [line, column, code] from the analysis,
    and the source it stores when that is in the same file: [..., line, column, note]."""
    _check(value, list)
    if len(value) == 6:
        return [*_write(value[:3]), *_ints(value[3:5], 2), _check(value[5], str)]
    if len(value) == 3:
        return [*_ints(value[:2], 2), _check(value[2], str)]
    return _ints(value, 2)


def _dump_diagnostic(d: Diagnostic) -> list:
    fix = None if d.fix is None else [d.fix.kind, d.fix.line, d.fix.column, d.fix.end_line, d.fix.end_column,
                                      d.fix.safe, d.fix.description, d.fix.path, d.fix.keyword]
    return [d.path, d.line, d.column, d.end_line, d.end_column, d.code, d.name, d.message, d.severity,
            [[s.path, s.line, s.column, s.note] for s in d.trace], fix, d.needs, d.sent]


def _load_diagnostic(raw) -> Diagnostic:
    _check(raw, list)
    if len(raw) != 13:
        raise _Invalid
    path, line, column, end_line, end_column, code, name, message, severity, trace, fix, needs, sent = raw
    for text in (path, code, name, message, needs):
        _check(text, str)
    if severity not in ("error", "warning"):
        raise _Invalid
    steps = []
    for step in _check(trace, list):
        _check(step, list)
        if len(step) != 4:
            raise _Invalid
        steps.append(TraceStep(_check(step[0], str), _check(step[1], int), _check(step[2], int),
                               _check(step[3], str)))
    fixed = None
    if fix is not None:
        _check(fix, list)
        if len(fix) != 9:
            raise _Invalid
        fixed = Fix(_check(fix[0], str), *_ints(fix[1:5], 4), safe=_check(fix[5], bool),
                    description=_check(fix[6], str), path=_check(fix[7], str), keyword=_check(fix[8], str))
    return Diagnostic(path, *_ints([line, column, end_line, end_column], 4), code, name, message, severity,
                      tuple(steps), fixed, needs=needs, sent=_check(sent, bool))


def _dump_result(result) -> dict:
    return {"diagnostics": [_dump_diagnostic(d) for d in result.diagnostics], "deps": list(result.deps),
            "analyzed": result.analyzed, "param_sink_functions": list(result.param_sink_functions),
            "has_marker": result.has_marker, "writes": result.writes}


def _load_result(raw):
    _check(raw, dict)
    if set(raw) != {"diagnostics", "deps", "analyzed", "param_sink_functions", "has_marker", "writes"}:
        raise _Invalid
    writes = {_check(name, str): _write(at) for name, at in _check(raw["writes"], dict).items()}
    return FileResult(diagnostics=[_load_diagnostic(d) for d in _check(raw["diagnostics"], list)],
                      deps=[_check(d, str) for d in _check(raw["deps"], list)],
                      analyzed=_check(raw["analyzed"], bool),
                      param_sink_functions=[_check(f, str) for f in _check(raw["param_sink_functions"], list)],
                      has_marker=_check(raw["has_marker"], bool), writes=writes)


# ---------------------------------------------------------------- the cache
class LintCache:
    """Per-file results keyed by content stat, settings and dependencies."""

    def __init__(self, directory: str, fingerprint: str, key: bytes | None = None):
        self.directory = directory
        digest = hashlib.blake2b(f"{FORMAT}|{fingerprint}".encode(), digest_size=10).hexdigest()
        self.pack = os.path.join(directory, f"results-{digest}.json")
        self.key = signing_key() if key is None else key
        self.entries: dict[str, list] = {}
        self.dirty = False
        self._cwd = os.getcwd()
        if self.key is not None and self._usable_directory():
            self.entries = self._read_pack()

    def _usable_directory(self) -> bool:
        """False when the cache folder is a link or not a folder: never read or write through it."""
        try:
            mode = os.lstat(self.directory).st_mode
        except FileNotFoundError:
            return True
        except OSError:
            return False
        return stat.S_ISDIR(mode)

    def _sign(self, body: bytes) -> str:
        return hmac.new(self.key, body, hashlib.sha256).hexdigest()

    def _read_pack(self) -> dict[str, list]:
        try:
            flags = os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0)
            fd = os.open(self.pack, flags)
            with os.fdopen(fd, "rb") as handle:
                if not stat.S_ISREG(os.fstat(handle.fileno()).st_mode):
                    return {}
                data = handle.read(_MAX_PACK_BYTES + 1)
        except OSError:
            return {}
        signature, _, body = data.partition(b"\n")
        if len(data) > _MAX_PACK_BYTES or not hmac.compare_digest(signature, self._sign(body).encode()):
            return {}  # not written by this user's promptlint: a miss, rewritten on save
        try:
            loaded = json.loads(body)
        except (ValueError, RecursionError):
            return {}
        return loaded if isinstance(loaded, dict) else {}

    def lookup(self, path: str):
        """The cached ``(FileResult, imports)`` of an unchanged file, or None."""
        entry = self.entries.get(self._key(path))
        if entry is None:
            return None
        try:
            _check(entry, list)
            if len(entry) != 4:
                raise _Invalid
            key, raw, deps, imports = entry
            _check(imports, str)
            if key != _stat_key(path):
                return None
            for dep in _check(deps, list):
                _check(dep, list)
                if len(dep) != 2 or _stat_key(_check(dep[0], str)) != dep[1]:
                    return None
            return (FileResult() if raw is None else _load_result(raw)), imports
        except _Invalid:
            return None  # an entry from another layout is a miss

    def store(self, path: str, result, imports: str) -> None:
        deps = [[d, _stat_key(d)] for d in result.deps]
        empty = not (result.diagnostics or result.analyzed or result.has_marker or deps or result.writes)
        # Most files hold nothing: store null and no imports unless a later round may need them.
        self.entries[self._key(path)] = [_stat_key(path), None if empty else _dump_result(result), deps, imports]
        self.dirty = True

    def _key(self, path: str) -> str:
        # Joined, not normalised: discovery yields one spelling per file, and this runs per file.
        return path if os.path.isabs(path) else self._cwd + os.sep + path

    def _replace(self, name: str, data: bytes) -> None:
        """Write a file of the cache folder atomically; a link planted at ``name`` is replaced."""
        replace_atomically(os.path.join(self.directory, name), data, mode=0o600)

    def save(self) -> None:
        if not self.dirty or self.key is None:
            return
        try:
            if not self._usable_directory():
                return
            os.makedirs(self.directory, exist_ok=True)
            if not self._usable_directory():
                return  # raced into a link
            for name, text in (("CACHEDIR.TAG", _TAG), (".gitignore", _GITIGNORE)):
                target = os.path.join(self.directory, name)
                if os.path.islink(target) or not os.path.isfile(target):
                    self._replace(name, text.encode("ascii"))
            body = json.dumps(self.entries, separators=(",", ":"), ensure_ascii=True).encode("ascii")
            self._replace(os.path.basename(self.pack), self._sign(body).encode() + b"\n" + body)
        except OSError:
            pass  # a read-only tree still lints; it just is not cached

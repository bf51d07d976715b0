"""File reads: what a read of a file's content carries into a prompt.

The path that located a file (an env var, the home folder, a timestamped name) is not its content
(docs/field.md): host and environment taints stop at the read. A file a tool the model calls
writes (an agent's `write_file` tool rewriting the file it is editing) is read back with what the
conversation put there: each read is per turn."""

from __future__ import annotations

import ast

from promptlint.lint.analysis.values import LOCATED, LOCATORS, Taint, Val, merge
from promptlint.lint.guards import cached_on, descendants, tool_functions

#: Calls that read a file's content, by qualified name and by method name.
_CONTENT_READERS = {"builtins.open", "io.open", "codecs.open", "json.load", "yaml.safe_load", "yaml.load",
                   "tomllib.load", "tomli.load"}
_CONTENT_METHODS = {"read_text", "read_bytes", "read", "readlines", "open"}
_WRITE_METHODS = {"write_text", "write_bytes"}
_OPENER_MODULES = {"io", "codecs", "aiofiles"}


def reads_content(origin: str | None, node: ast.Call) -> bool:
    return origin in _CONTENT_READERS or (isinstance(node.func, ast.Attribute) and node.func.attr in _CONTENT_METHODS)


def read(fa, node: ast.Call, origin: str | None, func: Val, args: list[Val], kwargs: dict[str, Val]) -> Val:
    """The content a read returns. Read here: a file read once (import time, `__init__`) is frozen
    like any value, and a file read on every call is read anew, wherever its name was set
    (`self.path` in `__init__`): the read is the source."""
    located = merge(func.taints, *(a.taints for a in args), *(v.taints for v in kwargs.values()))
    content = tuple(t._replace(code=LOCATED) if t.param >= 0 else
                    t._replace(unread=False, steps=(fa.m.step(node, t.steps[0].note),)) if t.unread else t
                    for t in located if not t.code.startswith(LOCATORS))
    written = _rewritten(fa.m).get(_read_path(node))
    if written is not None:
        note = f"file the program rewrites (line {written}): `{fa.m.snippet(node, 40)}`"
        content = merge((Taint("PC401", "volatile", (fa.m.step(node, note),)),), content)
    return Val(content, origin=origin, node=node,
               template=func.template or next((a.template for a in args if a.template is not None), None))


def _opened(node: ast.Call) -> tuple[ast.expr, int] | None:
    """What an open call opens and where its mode goes: `open(p, mode)` (also `io.`, `codecs.`,
    `aiofiles.open`), `p.open(mode)`."""
    f = node.func
    if isinstance(f, ast.Name) and f.id == "open" or (
            isinstance(f, ast.Attribute) and f.attr == "open" and isinstance(f.value, ast.Name)
            and f.value.id in _OPENER_MODULES):
        return (node.args[0], 1) if node.args else None
    if isinstance(f, ast.Attribute) and f.attr == "open":
        return f.value, 0
    return None


def _read_path(node: ast.Call) -> str | None:
    """The path a read names: `open(p)` / `open(p, "r")`, `p.read_text()`, `p.open()`."""
    if isinstance(node.func, ast.Attribute) and node.func.attr in ("read_text", "read_bytes"):
        return _path_key(node.func.value)
    opened = _opened(node)
    return _path_key(opened[0]) if opened and not _writes_mode(node, opened[1]) else None


def _writes_mode(node: ast.Call, position: int) -> bool:
    mode = node.args[position] if len(node.args) > position else next(
        (k.value for k in node.keywords if k.arg == "mode"), None)
    return isinstance(mode, ast.Constant) and isinstance(mode.value, str) and any(c in mode.value for c in "wax+")


def _path_key(e: ast.expr) -> str | None:
    """A path named the same way wherever it is used: an attribute of the object (`self.filename`),
    a module constant or a string constant. A local or a parameter (`path`) names a different
    file in each function."""
    if isinstance(e, ast.Attribute) and isinstance(e.value, ast.Name) and e.value.id in ("self", "cls"):
        return ast.unparse(e)
    if isinstance(e, ast.Name) and e.id.isupper():
        return e.id
    if isinstance(e, ast.Constant) and isinstance(e.value, str):
        return repr(e.value)
    return None


def _rewritten(m) -> dict[str, int]:
    """Paths a tool the model calls writes (`guards.tool_functions`: an agent's `write_file`),
    with the line of the first write. A file written when a session ends or a setting is saved
    changes between conversations, not within one (on the field corpus, 2 of 8 findings from
    writes anywhere were true; both writes were the model's own)."""
    return cached_on(m.tree, "_promptlint_rewritten_files", None, lambda: _written_by_tools(m.tree))


def _written_by_tools(tree: ast.Module) -> dict[str, int]:
    found: dict[str, int] = {}
    for fn in tool_functions(tree):
        for n in descendants(fn):
            if not isinstance(n, ast.Call):
                continue
            key = None
            if isinstance(n.func, ast.Attribute) and n.func.attr in _WRITE_METHODS:
                key = _path_key(n.func.value)
            elif (opened := _opened(n)) and _writes_mode(n, opened[1]):
                key = _path_key(opened[0])
            if key is not None:
                found.setdefault(key, n.lineno)
    return found

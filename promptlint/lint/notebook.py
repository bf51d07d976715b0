"""Jupyter notebooks (``*.ipynb``) as Python source whose line numbers are the notebook file's.

Each code cell's lines are placed at the lines of the JSON file that hold them, and every other
line is blank, so every position the linter reports (finding, trace, message, suppression
comment) is a line of the ``.ipynb`` file as an editor shows it. Jupyter saves one source line
per JSON line; a notebook saved otherwise (a cell's source as one string, minified JSON) has each
cell's code placed from the line where its source starts, in order. Columns count within the
code line. IPython syntax (``%magic``, ``!shell``, ``x = !cmd``, ``obj?``, ``?obj``) becomes
``pass`` or ``None``. A cell that is not Python (a ``%%`` cell magic, another language, shell
commands, a syntax error) is left out: Jupyter runs each cell on its own.
"""

from __future__ import annotations

import json
import re
import textwrap

from promptlint.lint.source import SourceError, parse_python

SUFFIX = ".ipynb"
_SOURCE_KEY = re.compile(r'^\s*"source"\s*:\s*(\[)?')
_ASSIGNED_MAGIC = re.compile(r"^(\s*[\w.\[\]'\", ]+=\s*)[%!]")
_MAGIC = re.compile(r"^(\s*)(?:[%!?]|[\w.]+\?\??\s*$)")


def is_notebook(path: str) -> bool:
    return path.endswith(SUFFIX)


def notebook_source(raw: bytes) -> str:
    """The Python code of a notebook, line-aligned with the file; ``SourceError`` if it is not one."""
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        raise SourceError("PC002", f"utf-8 (notebook, byte {exc.start}: {exc.reason})") from None
    try:
        document = json.loads(text)
    except ValueError as exc:
        raise SourceError("PC001", f"not a notebook: invalid JSON ({exc})") from None
    cells = document.get("cells") if isinstance(document, dict) else None
    if not isinstance(cells, list):
        raise SourceError("PC001", "not a notebook: no list of cells")
    if _language(document) not in ("", "python"):
        return ""  # an R or Julia notebook has no Python to lint
    raw_lines = text.split("\n")
    starts = [i for i, line in enumerate(raw_lines) if _SOURCE_KEY.match(line)]
    aligned = len(starts) == len(cells)
    out: list[str] = []
    for index, cell in enumerate(cells):
        if not isinstance(cell, dict) or cell.get("cell_type") != "code":
            continue
        lines = _cell_lines(cell.get("source"))
        code = _cell_python(lines) if lines and _python_cell(cell) else None
        if code is None:
            continue
        first = len(out)  # 0-based line of the cell's first code line
        if aligned:  # one element per line after `"source": [`; otherwise from the "source" line on
            listed = _SOURCE_KEY.match(raw_lines[starts[index]]).group(1)
            first = starts[index] + 1 if listed and _listed_at(raw_lines, starts[index] + 1, lines) else starts[index]
        first = max(first, len(out))
        out.extend([""] * (first - len(out)))
        out.extend(code)
    return "\n".join(out) + "\n" if out else ""


def _python_cell(cell: dict) -> bool:
    """Not a cell VS Code marks as another language (`"languageId": "shellscript"`)."""
    metadata = cell.get("metadata")
    editor = metadata.get("vscode") if isinstance(metadata, dict) else None
    language = editor.get("languageId") if isinstance(editor, dict) else None
    return not isinstance(language, str) or language == "python"


def _cell_python(lines: list[str]) -> list[str] | None:
    """The cell's lines as Python, or None for a cell that is not Python: a ``%%`` cell magic,
    shell commands, a syntax error. Jupyter runs each cell on its own, so one such cell does not
    stop the others from being linted. Leading indentation is removed, as IPython does."""
    if lines[0].lstrip().startswith("%%"):
        return None
    code = [_python(line) for line in lines]
    if code[0][:1].isspace():
        code = textwrap.dedent("\n".join(code)).split("\n")
    try:
        parse_python("\n".join(code), "<cell>")
    except (SyntaxError, ValueError, MemoryError, RecursionError):
        return None
    return code


def _language(document: dict) -> str:
    metadata = document.get("metadata")
    if not isinstance(metadata, dict):
        return ""
    for key in ("kernelspec", "language_info"):
        entry = metadata.get(key)
        if isinstance(entry, dict):
            name = entry.get("language") or entry.get("name") or ""
            if isinstance(name, str) and name:
                return "python" if name.lower().startswith("python") else name.lower()
    return ""


def _cell_lines(source) -> list[str]:
    if isinstance(source, list):
        text = "".join(s for s in source if isinstance(s, str))
    elif isinstance(source, str):
        text = source
    else:
        return []
    return text.split("\n") if text else []


def _listed_at(raw_lines: list[str], first: int, lines: list[str]) -> bool:
    """The cell's source lines are the JSON strings on the lines from ``first``, one per line."""
    if first + len(lines) > len(raw_lines):
        return False
    for offset, expected in enumerate(lines):
        token = raw_lines[first + offset].strip().rstrip(",")
        try:
            if json.loads(token).rstrip("\n") != expected:
                return False
        except ValueError:
            return False
    return True


def _python(line: str) -> str:
    """A notebook line as plain Python: IPython's own syntax keeps its place and indentation."""
    assigned = _ASSIGNED_MAGIC.match(line)
    if assigned:
        return assigned.group(1) + "None"
    magic = _MAGIC.match(line)
    if magic and not line.lstrip().startswith("#"):
        return magic.group(1) + "pass"
    return line

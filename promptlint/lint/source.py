"""Reading Python source files the way Python does (PEP 263), with clear failures."""

from __future__ import annotations

import codecs
import os
import re

# PEP 263: a coding cookie in a comment on line 1 or 2.
_COOKIE = re.compile(rb"^[ \t\f]*#.*?coding[:=][ \t]*([-\w.]+)")


class SourceError(Exception):
    """A file is not text Python can read. ``code`` is PC002 (encoding) or PC003 (binary)."""

    def __init__(self, code: str, detail: str):
        super().__init__(detail)
        self.code = code
        self.detail = detail


def declared_encoding(raw: bytes) -> str:
    """The encoding a file declares (BOM or cookie), UTF-8 by default."""
    if raw.startswith(codecs.BOM_UTF8):
        return "utf-8-sig"
    for line in raw.split(b"\n", 2)[:2]:
        match = _COOKIE.match(line)
        if match:
            return match.group(1).decode("ascii", "replace")
        if line.strip() and not line.lstrip().startswith(b"#"):
            break
    return "utf-8"


def decode_source(raw: bytes) -> str:
    """Decode source bytes, honouring the PEP 263 cookie; raise ``SourceError`` on failure."""
    if b"\0" in raw:
        raise SourceError("PC003", "binary file (contains NUL bytes)")
    encoding = declared_encoding(raw)
    try:
        codecs.lookup(encoding)
    except LookupError:
        raise SourceError("PC002", f"unknown encoding {encoding!r} in coding cookie") from None
    try:
        text = raw.decode(encoding)
    except UnicodeDecodeError as exc:
        line = raw[: exc.start].count(b"\n") + 1
        raise SourceError("PC002", f"{encoding} (line {line}: {exc.reason})") from None
    except LookupError:
        # rot13, hex, base64, zlib, uu...: codecs that exist but are not text encodings;
        # Python's tokenizer refuses them too.
        raise SourceError("PC002", f"text: the coding cookie names {encoding!r}, which is not a text encoding") from None
    except (UnicodeError, ValueError) as exc:  # a text codec that fails in its own way
        raise SourceError("PC002", f"{encoding} ({exc})") from None
    return text


_LINE_BREAK = re.compile(r"\r\n|\r|\n")


def source_lines(text: str) -> list[str]:
    """The lines of Python source as the tokenizer counts them: split on ``\\n``, ``\\r\\n`` and
    ``\\r`` only (``str.splitlines`` also splits on form feeds, U+2028 and others, which
    shifts every line number after them)."""
    lines = _LINE_BREAK.split(text)
    if lines and lines[-1] == "":
        lines.pop()  # a final line break ends the last line, it does not start a new one
    return lines


def display_path(path: str) -> str:
    """How a path is shown: relative to the working directory when it lies below it (like ruff)."""
    if not os.path.isabs(path):
        return path
    try:
        rel = os.path.relpath(path)
    except ValueError:  # another drive on Windows
        return path
    return path if rel.startswith("..") else rel


def generator_template(path: str, text: str) -> bool:
    """A project generator's template (cookiecutter's ``{{cookiecutter.project_slug}}/app.py``, a
    file of Jinja ``{% if %}`` blocks): not Python source, so its parse failure is not PC001."""
    return "{{" in path or "{%" in text


def parse_python(text: str, path: str):
    """``ast.parse`` without printing the compiler's SyntaxWarnings about the user's code."""
    import ast
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        try:
            return ast.parse(text, filename=path)
        except SyntaxError:
            # Newer syntax than this interpreter reads (3.12 type aliases, PEP 701 f-strings):
            # analysed through an equivalent rewrite; PC001 only for what no Python accepts.
            from promptlint.lint.newer_syntax import downgrade

            rewritten = downgrade(text)
            if rewritten is None:
                raise
            return ast.parse(rewritten, filename=path)

"""Inline suppressions: ``# promptlint: ignore[PC101, PC5] reason``.

A suppression covers the findings on its own line; on a comment-only line it also covers the
next line. A finding is covered when its line, its end line, or the line of one of its trace
steps in the same file carries a suppression for its code (so a comment on the source line
works as well as one on the sink line). Suppressions are checked like ruff checks ``noqa``:
PC010 for a code that suppressed nothing, PC011 for a bare ``ignore`` without codes (it still
suppresses everything on its line), PC012 for a code promptlint does not have.

Only real comments count: files that mention ``promptlint:`` are tokenized, so the marker
inside a string literal is text, not a suppression.
"""

from __future__ import annotations

import io
import os
import re
import tokenize
from dataclasses import dataclass, field

from promptlint.lint.diagnostic import Diagnostic

MARKER = "promptlint:"
_SUPPRESSION = re.compile(r"#\s*promptlint:\s*ignore\b(?:\[([^\]]*)\])?")
_SPLIT = re.compile(r"[\s,]+")


@dataclass
class Suppression:
    """One ``# promptlint: ignore`` comment."""

    line: int
    column: int  # 1-based column of the marker's ``#``
    end_column: int
    selectors: tuple[str, ...]  # empty for a blanket suppression
    comment_only: bool
    used: set[str] = field(default_factory=set)  # selectors that matched a finding

    @property
    def blanket(self) -> bool:
        """A bare ``# promptlint: ignore`` without codes."""
        return not self.selectors


def find_suppressions(text: str) -> list[Suppression]:
    """Every suppression comment in ``text`` (tokens read up to the first tokenize error)."""
    found: list[Suppression] = []
    tokens = tokenize.generate_tokens(io.StringIO(text).readline)
    try:
        for tok in tokens:
            if tok.type != tokenize.COMMENT or MARKER not in tok.string:
                continue
            match = _SUPPRESSION.search(tok.string)
            if match is None:
                continue
            listed = match.group(1)
            selectors = tuple(s.upper() for s in _SPLIT.split(listed or "") if s)
            column = tok.start[1] + match.start() + 1
            found.append(Suppression(
                line=tok.start[0], column=column, end_column=tok.start[1] + match.end() + 1,
                selectors=selectors, comment_only=not tok.line[: tok.start[1]].strip(),
            ))
    except (tokenize.TokenError, SyntaxError):
        pass  # a file that does not tokenize to the end keeps the suppressions read so far
    return found


def _same_file(a: str, b: str) -> bool:
    return a == b or os.path.abspath(a) == os.path.abspath(b)


def _lines_of(d: Diagnostic, path: str) -> set[int]:
    lines = {d.line, d.end_line}
    lines.update(step.line for step in d.trace if _same_file(step.path, path))
    return lines


def apply_suppressions(path: str, text: str, diagnostics: list[Diagnostic], known_codes: frozenset[str]) -> list[Diagnostic]:
    """The diagnostics not suppressed in ``text``, plus PC010/PC011/PC012 for the suppressions."""
    if MARKER not in text:
        return diagnostics
    suppressions = find_suppressions(text)
    if not suppressions:
        return diagnostics
    from promptlint.lint.catalog import expand_selector

    expanded: dict[str, frozenset[str]] = {}
    for s in suppressions:
        for selector in s.selectors:
            if selector not in expanded:
                try:
                    expanded[selector] = expand_selector(selector, known_codes)
                except ValueError:
                    expanded[selector] = frozenset()
    by_line: dict[int, list[Suppression]] = {}
    for s in suppressions:
        by_line.setdefault(s.line, []).append(s)
        if s.comment_only:
            by_line.setdefault(s.line + 1, []).append(s)

    kept: list[Diagnostic] = []
    for d in diagnostics:
        suppressed = False
        if _same_file(d.path, path):
            for line in _lines_of(d, path):
                for s in by_line.get(line, ()):
                    if s.blanket:
                        s.used.add("")
                        suppressed = True
                    for selector in s.selectors:
                        if d.code in expanded[selector]:
                            s.used.add(selector)
                            suppressed = True
        if not suppressed:
            kept.append(d)

    display = diagnostics[0].path if diagnostics else path
    for s in suppressions:
        if s.blanket:
            kept.append(_meta(display, s, "PC011", ""))
            if not s.used:
                kept.append(_meta(display, s, "PC010", "all codes (blanket suppression)"))
            continue
        for selector in dict.fromkeys(s.selectors):
            if not expanded[selector]:
                kept.append(_meta(display, s, "PC012", selector))
            elif selector not in s.used:
                kept.append(_meta(display, s, "PC010", selector))
    return sorted(kept, key=Diagnostic.sort_key)


def _meta(path: str, s: Suppression, code: str, detail: str) -> Diagnostic:
    from promptlint.lint.catalog import load_rule_docs

    doc = load_rule_docs()[code]
    return Diagnostic(path=path, line=s.line, column=s.column, end_line=s.line, end_column=s.end_column,
                      code=code, name=doc.name, message=doc.summary.format(detail=detail, sink=""),
                      severity=doc.severity)

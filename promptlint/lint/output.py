"""Serializers of one Diagnostic list: text, json, sarif, github; and ``--statistics``.

Every format is API (docs/cli.md shows each with an example): change one only on purpose.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from pathlib import Path

from promptlint import __version__
from promptlint.lint.diagnostic import Diagnostic, RuleDoc

FORMATS = ("text", "json", "sarif", "github")
INFORMATION_URI = "https://github.com/promptlint/promptlint"
SARIF_SCHEMA = "https://json.schemastore.org/sarif-2.1.0.json"

_RESET, _BOLD, _DIM, _RED, _YELLOW, _CYAN = "\x1b[0m", "\x1b[1m", "\x1b[2m", "\x1b[31m", "\x1b[33m", "\x1b[36m"


def readable(text: str) -> str:
    """``text`` as valid Unicode: the undecodable bytes of a file name (held as lone surrogates,
    PEP 383) become backslash escapes, ``b"bad\\xff.py"`` -> ``bad\\xff.py``, so every format
    stays valid UTF-8 (and JSON stays JSON)."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:
        pass
    try:
        return text.encode("utf-8", "surrogateescape").decode("utf-8", "backslashreplace")
    except UnicodeEncodeError:  # a surrogate that is not an escaped byte
        return text.encode("utf-8", "backslashreplace").decode("utf-8")


def readable_diagnostic(d: Diagnostic) -> Diagnostic:
    """``d`` with every path and text field passed through ``readable``."""
    from dataclasses import replace

    fix = None if d.fix is None else replace(d.fix, path=readable(d.fix.path), description=readable(d.fix.description))
    return replace(d, path=readable(d.path), message=readable(d.message), fix=fix,
                   trace=tuple(replace(s, path=readable(s.path), note=readable(s.note)) for s in d.trace),
                   related=tuple(replace(s, path=readable(s.path), note=readable(s.note)) for s in d.related))


def is_fixable(d: Diagnostic) -> bool:
    """Whether ``--fix`` applies this diagnostic's fix (only safe fixes are applied)."""
    return d.fix is not None and d.fix.safe


def render(diagnostics: list[Diagnostic], fmt: str, *, rules: dict[str, RuleDoc], color: bool = False,
           root: str = ".") -> str:
    """The diagnostics in format ``fmt``; ``root`` is the base of SARIF's relative URIs."""
    if fmt == "text":
        return render_text(diagnostics, color=color)
    if fmt == "json":
        return json.dumps([diagnostic_dict(d) for d in diagnostics], indent=2, ensure_ascii=False) + "\n"
    if fmt == "sarif":
        return json.dumps(sarif_log(diagnostics, rules, root), indent=2, ensure_ascii=False) + "\n"
    if fmt == "github":
        return "".join(github_annotation(readable_diagnostic(d)) + "\n" for d in diagnostics)
    raise ValueError(f"unknown output format {fmt!r}; expected one of {', '.join(FORMATS)}")


# ----------------------------------------------------------------------------- text
def _paint(text: str, style: str, color: bool) -> str:
    return f"{style}{text}{_RESET}" if color else text


def step_role(index: int, count: int) -> str:
    """How a trace step is labelled: the first is the source, the last the sink."""
    if index == 0:
        return "source"
    return "sink" if index == count - 1 else "via"


def step_kind(index: int, count: int) -> str:
    """The kind of a trace step in JSON and SARIF: ``source``, ``step`` or ``sink`` (a finding
    with a single location, such as a configuration check, has only its ``sink``)."""
    if index == count - 1:
        return "sink"
    return "source" if index == 0 else "step"


def render_text(diagnostics: list[Diagnostic], *, color: bool = False, summary: bool = True) -> str:
    """``path:line:col: CODE message`` lines with the indented trace, then a summary line."""
    lines: list[str] = []
    for d in map(readable_diagnostic, diagnostics):
        where = _paint(f"{d.path}:{d.line}:{d.column}:", _BOLD, color)
        code = _paint(d.code, _RED if d.severity == "error" else _YELLOW, color)
        marker = " [*]" if is_fixable(d) else ""
        lines.append(f"{where} {code}{marker} {d.message}")
        count = len(d.trace)
        if count > 1:
            for i, step in enumerate(d.trace):
                role = step_role(i, count)
                lines.append(_paint(f"  {role:<6} {step.path}:{step.line}:{step.column} {step.note}", _DIM, color))
    if summary:
        lines.append(summary_line(diagnostics))
    return "".join(line + "\n" for line in lines)


def summary_line(diagnostics: list[Diagnostic]) -> str:
    """``Found N findings (M fixable with --fix).`` or ``All clear.``"""
    if not diagnostics:
        return "All clear."
    n = len(diagnostics)
    fixable = sum(1 for d in diagnostics if is_fixable(d))
    return f"Found {n} finding{'s' if n != 1 else ''} ({fixable} fixable with --fix)."


# ----------------------------------------------------------------------------- json
def diagnostic_dict(d: Diagnostic) -> dict:
    """The JSON object of one diagnostic (documented field by field in docs/cli.md)."""
    d = readable_diagnostic(d)
    return {
        "path": d.path,
        "line": d.line,
        "column": d.column,
        "end_line": d.end_line,
        "end_column": d.end_column,
        "code": d.code,
        "name": d.name,
        "message": d.message,
        "severity": d.severity,
        "fix": None if d.fix is None else {"kind": d.fix.kind, "safe": d.fix.safe, "description": d.fix.description},
        "trace": [{"path": s.path, "line": s.line, "column": s.column, "note": s.note, "kind": step_kind(i, len(d.trace))}
                  for i, s in enumerate(d.trace)],
        "related": [{"path": s.path, "line": s.line, "column": s.column, "note": s.note} for s in d.related],
    }


# ---------------------------------------------------------------------------- sarif
def _uri(path: str, root: str) -> str:
    """A relative URI (forward slashes, percent-encoded) of ``path`` under ``root``."""
    from urllib.parse import quote

    absolute = os.path.abspath(path)
    try:
        rel = os.path.relpath(absolute, os.path.abspath(root))
    except ValueError:
        rel = ".."
    if rel.startswith(".."):
        return _file_uri(absolute)
    # The name's own bytes, percent-encoded: a name that is not UTF-8 keeps its identity.
    return quote(os.fsencode(rel).replace(os.sep.encode(), b"/"))


def _file_uri(absolute: str) -> str:
    from urllib.parse import quote

    if os.name == "nt":
        return Path(absolute).as_uri()
    return "file://" + quote(os.fsencode(absolute))


def _location(path: str, line: int, column: int, end_line: int, end_column: int, root: str) -> dict:
    uri = _uri(path, root)
    artifact = {"uri": uri} if uri.startswith("file:") else {"uri": uri, "uriBaseId": "%SRCROOT%"}
    region = {"startLine": line, "startColumn": column}
    if end_line >= line:
        region["endLine"] = end_line
        if end_column > 0 and (end_line > line or end_column >= column):
            region["endColumn"] = end_column
    return {"physicalLocation": {"artifactLocation": artifact, "region": region}}


def _rule_descriptor(doc: RuleDoc) -> dict:
    short = doc.summary.replace("{detail}", "…").replace("{sink}", "a stable layer")
    help_text = f"{doc.what}\n\nWhy is this bad?\n{doc.why}"
    markdown = f"## What it does\n{doc.what}\n\n## Why is this bad?\n{doc.why}\n"
    if doc.example.strip():
        markdown += f"\n## Example\n```python\n{doc.example.rstrip()}\n```\n"
    if doc.use_instead.strip():
        markdown += f"\n## Use instead\n```python\n{doc.use_instead.rstrip()}\n```\n"
    markdown += f"\n## Fix safety\n{doc.fix_safety}\n"
    return {
        "id": doc.code,
        "name": doc.name,
        "shortDescription": {"text": short},
        "fullDescription": {"text": doc.what},
        "help": {"text": help_text, "markdown": markdown},
        "defaultConfiguration": {"level": doc.severity},
        "properties": {"tags": [doc.family]},
    }


def sarif_log(diagnostics: list[Diagnostic], rules: dict[str, RuleDoc], root: str = ".") -> dict:
    """A SARIF 2.1.0 log with one run; ``tool.driver.rules`` lists the codes used."""
    codes = sorted({d.code for d in diagnostics})
    descriptors = []
    index: dict[str, int] = {}
    for code in codes:
        doc = rules.get(code)
        if doc is None:
            continue
        index[code] = len(descriptors)
        descriptors.append(_rule_descriptor(doc))
    results = []
    for raw in diagnostics:
        d = readable_diagnostic(raw)
        result: dict = {
            "ruleId": d.code,
            "level": d.severity,
            "message": {"text": d.message},
            "locations": [_location(raw.path, d.line, d.column, d.end_line, d.end_column, root)],
        }
        if d.code in index:
            result["ruleIndex"] = index[d.code]
        if d.trace:
            steps = []
            for i, (s, raw_step) in enumerate(zip(d.trace, raw.trace)):
                location = _location(raw_step.path, s.line, s.column, s.line, 0, root)
                location["message"] = {"text": f"{step_role(i, len(d.trace))}: {s.note}"}
                steps.append({"location": location, "kinds": [step_kind(i, len(d.trace))]})
            result["codeFlows"] = [{"threadFlows": [{"locations": steps}]}]
        if d.related:  # the sources of other flows folded into this finding
            related = []
            for n, (s, raw_step) in enumerate(zip(d.related, raw.related)):
                location = _location(raw_step.path, s.line, s.column, s.line, 0, root)
                location["id"] = n
                location["message"] = {"text": f"also from: {s.note}"}
                related.append(location)
            result["relatedLocations"] = related
        if d.fix is not None:
            result["properties"] = {"fix": {"kind": d.fix.kind, "safe": d.fix.safe, "description": d.fix.description}}
        results.append(result)
    root_uri = _file_uri(os.path.abspath(root)).rstrip("/") + "/"
    return {
        "$schema": SARIF_SCHEMA,
        "version": "2.1.0",
        "runs": [{
            "tool": {"driver": {
                "name": "promptlint",
                "version": __version__,
                "semanticVersion": __version__,
                "informationUri": INFORMATION_URI,
                "rules": descriptors,
            }},
            "originalUriBaseIds": {"%SRCROOT%": {"uri": root_uri}},
            # Our columns count characters, not UTF-16 code units (SARIF's default).
            "columnKind": "unicodeCodePoints",
            "results": results,
        }],
    }


# --------------------------------------------------------------------------- github
def _escape_data(text: str) -> str:
    return text.replace("%", "%25").replace("\r", "%0D").replace("\n", "%0A")


def _escape_property(text: str) -> str:
    return _escape_data(text).replace(":", "%3A").replace(",", "%2C")


def github_annotation(d: Diagnostic) -> str:
    """One GitHub Actions workflow command (``::error``/``::warning``) for a diagnostic."""
    command = "error" if d.severity == "error" else "warning"
    props = [
        ("file", d.path.replace(os.sep, "/")),
        ("line", str(d.line)),
        ("col", str(d.column)),
        ("endLine", str(d.end_line)),
        ("endColumn", str(d.end_column)),
        ("title", f"{d.code} {d.name}"),
    ]
    body = d.message
    if len(d.trace) > 1:
        body += "".join(f"\n{step_role(i, len(d.trace))} {s.path}:{s.line}:{s.column} {s.note}"
                        for i, s in enumerate(d.trace))
    rendered = ",".join(f"{key}={_escape_property(value)}" for key, value in props)
    return f"::{command} {rendered}::{_escape_data(body)}"


# ------------------------------------------------------------------------ statistics
def statistics(diagnostics: list[Diagnostic], fmt: str = "text") -> str:
    """Findings counted per code, most frequent first (like ``ruff --statistics``)."""
    counts = Counter(d.code for d in diagnostics)
    names = {d.code: d.name for d in diagnostics}
    fixable = {d.code for d in diagnostics if is_fixable(d)}
    ordered = sorted(counts, key=lambda c: (-counts[c], c))
    if fmt == "json":
        rows = [{"code": c, "name": names[c], "count": counts[c], "fixable": c in fixable} for c in ordered]
        return json.dumps(rows, indent=2) + "\n"
    if not ordered:
        return ""
    width = len(str(max(counts.values())))
    return "".join(f"{counts[c]:>{width}}\t{c}\t{'[*] ' if c in fixable else '    '}{names[c]}\n" for c in ordered)

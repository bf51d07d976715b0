"""Fixit-style: every example in rules/codes.yaml is a test.

``example`` and ``invalid`` snippets must produce their code and no other non-meta code;
``use_instead`` and ``valid`` snippets must produce no finding at all.
"""

from __future__ import annotations

import pytest

from promptlint.lint.catalog import load_rule_docs, rules_dir
from promptlint.lint.diagnostic import Settings
from promptlint.lint.engine import lint_source

DOCS = load_rule_docs()
META_CODES = {code for code, doc in DOCS.items() if doc.family == "meta"}
# PC004 (internal error) has no snippet that could trigger it on purpose.
NO_EXAMPLE = {"PC004"}
# Rules whose sources are opt-in rule files: their examples run with that file enabled.
OPT_IN = {"PC302": str(rules_dir() / "optional" / "environment.yaml"),
          "PC301": str(rules_dir() / "optional" / "host.yaml"),
          "PC603": str(rules_dir() / "optional" / "host.yaml"),
          "PC501": str(rules_dir() / "optional" / "ordering.yaml"),
          "PC502": str(rules_dir() / "optional" / "ordering.yaml")}


def lint(code: str, snippet: str):
    return lint_source(snippet, settings=Settings(rule_files=(OPT_IN[code],)) if code in OPT_IN else None)


def cases(kind: str) -> list:
    out = []
    for code, doc in DOCS.items():
        if code in NO_EXAMPLE:
            continue
        if kind == "bad":
            snippets = [("example", doc.example), *((f"invalid[{i}]", s) for i, s in enumerate(doc.invalid))]
        else:
            snippets = [("use_instead", doc.use_instead), *((f"valid[{i}]", s) for i, s in enumerate(doc.valid))]
        out += [pytest.param(code, snippet, id=f"{code}-{label}") for label, snippet in snippets if snippet]
    return out


def describe(diagnostics) -> str:
    return "\n".join(f"  {d.line}:{d.column}: {d.code} {d.message}" for d in diagnostics) or "  (none)"


@pytest.mark.parametrize(("code", "snippet"), cases("bad"))
def test_bad_example_reports_its_code_and_nothing_else(code, snippet):
    diagnostics = lint(code, snippet)
    codes = {d.code for d in diagnostics}
    assert code in codes, f"{code} not reported:\n{describe(diagnostics)}"
    others = codes - {code} - META_CODES
    assert not others, f"unrelated codes {sorted(others)}:\n{describe(diagnostics)}"


@pytest.mark.parametrize(("code", "snippet"), cases("good"))
def test_good_example_reports_nothing(code, snippet):
    diagnostics = lint(code, snippet)
    assert not diagnostics, f"findings on the good example of {code}:\n{describe(diagnostics)}"


def test_every_code_but_the_internal_error_has_both_examples():
    missing = [code for code, doc in DOCS.items()
               if code not in NO_EXAMPLE and not (doc.example.strip() and doc.use_instead.strip())]
    assert not missing

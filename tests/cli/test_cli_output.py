"""Output formats are API: text, JSON, SARIF 2.1.0 (validated against the official schema), GitHub."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from promptlint.lint.catalog import load_rule_docs
from promptlint.lint.diagnostic import Diagnostic, Fix, TraceStep
from promptlint.lint.output import render, statistics

SCHEMA = Path(__file__).resolve().parents[1] / "data" / "sarif" / "sarif-schema-2.1.0.json"

LEAK = Diagnostic(
    path="app/agent.py", line=12, column=16, end_line=12, end_column=48, code="PC101", name="time-in-stable-layer",
    message="Wall-clock time reaches system prompt (Anthropic system=)",
    trace=(TraceStep("app/clock.py", 3, 12, "wall-clock time: `datetime.now()`"),
           TraceStep("app/clock.py", 3, 12, "returned by stamp()"),
           TraceStep("app/agent.py", 12, 16, "reaches system prompt (Anthropic system=)")),
)
UNORDERED = Diagnostic(
    path="app/tools.py", line=8, column=5, end_line=9, end_column=2, code="PC501",
    name="unordered-collection-in-stable-layer", message="Unordered iteration reaches tool definitions",
    trace=(TraceStep("app/tools.py", 2, 9, "set display"), TraceStep("app/tools.py", 8, 5, "reaches tools")),
    fix=Fix("wrap-sorted", 8, 5, 8, 10, True, "wrap `TOOLS` in sorted()"),
)
UNUSED = Diagnostic(path="app/x.py", line=1, column=20, end_line=1, end_column=50, code="PC010",
                    name="unused-suppression", message="Unused suppression of PC501", severity="warning")
ALL = [LEAK, UNORDERED, UNUSED]


def out(fmt: str, diagnostics=ALL, **kw) -> str:
    return render(diagnostics, fmt, rules=load_rule_docs(), **kw)


def test_text_has_location_code_message_and_trace_roles():
    lines = out("text").splitlines()
    assert lines[0] == "app/agent.py:12:16: PC101 Wall-clock time reaches system prompt (Anthropic system=)"
    assert lines[1] == "  source app/clock.py:3:12 wall-clock time: `datetime.now()`"
    assert lines[2].startswith("  via    app/clock.py:3:12")
    assert lines[3] == "  sink   app/agent.py:12:16 reaches system prompt (Anthropic system=)"


def test_text_marks_fixable_findings_and_counts_them_in_the_summary():
    text = out("text")
    assert "app/tools.py:8:5: PC501 [*] Unordered" in text
    assert text.splitlines()[-1] == "Found 3 findings (1 fixable with --fix)."


def test_text_without_findings_is_all_clear():
    assert out("text", []) == "All clear.\n"


def test_text_has_no_escape_codes_unless_colour_is_asked():
    assert "\x1b[" not in out("text")
    assert "\x1b[" in out("text", color=True)


def test_json_objects_carry_every_documented_field():
    items = json.loads(out("json"))
    assert [i["code"] for i in items] == ["PC101", "PC501", "PC010"]
    first = items[0]
    assert first == {
        "path": "app/agent.py", "line": 12, "column": 16, "end_line": 12, "end_column": 48, "code": "PC101",
        "name": "time-in-stable-layer", "message": LEAK.message, "severity": "error", "fix": None,
        "trace": [{"path": s.path, "line": s.line, "column": s.column, "note": s.note, "kind": kind}
                  for s, kind in zip(LEAK.trace, ["source", *["step"] * (len(LEAK.trace) - 2), "sink"])],
        "related": [],
    }
    assert items[1]["fix"] == {"kind": "wrap-sorted", "safe": True, "description": "wrap `TOOLS` in sorted()"}


def test_sarif_validates_against_the_official_2_1_0_schema(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    log = json.loads(out("sarif", root=str(tmp_path)))
    jsonschema.Draft7Validator(schema, format_checker=jsonschema.Draft7Validator.FORMAT_CHECKER).validate(log)


def test_vendored_schema_rejects_a_broken_log():
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    log = json.loads(out("sarif", [LEAK]))
    log["runs"][0]["results"][0]["level"] = "fatal"
    assert not jsonschema.Draft7Validator(schema).is_valid(log)


def test_empty_sarif_log_validates_too(tmp_path):
    jsonschema = pytest.importorskip("jsonschema")
    schema = json.loads(SCHEMA.read_text(encoding="utf-8"))
    jsonschema.Draft7Validator(schema).validate(json.loads(out("sarif", [], root=str(tmp_path))))


def test_sarif_driver_lists_exactly_the_rules_used_with_docs():
    run = json.loads(out("sarif"))["runs"][0]
    driver = run["tool"]["driver"]
    assert (driver["name"], driver["informationUri"].startswith("https://")) == ("promptlint", True)
    rules = {r["id"]: r for r in driver["rules"]}
    assert set(rules) == {"PC010", "PC101", "PC501"}
    assert rules["PC010"]["defaultConfiguration"]["level"] == "warning"
    assert all(r["shortDescription"]["text"] and r["fullDescription"]["text"] and r["help"]["text"]
               for r in rules.values())
    for result in run["results"]:
        assert driver["rules"][result["ruleIndex"]]["id"] == result["ruleId"]


def test_sarif_locations_are_relative_uris_under_srcroot(tmp_path):
    run = json.loads(out("sarif", [LEAK], root="."))["runs"][0]
    location = run["results"][0]["locations"][0]["physicalLocation"]
    assert location["artifactLocation"] == {"uri": "app/agent.py", "uriBaseId": "%SRCROOT%"}
    assert location["region"] == {"startLine": 12, "startColumn": 16, "endLine": 12, "endColumn": 48}
    assert run["originalUriBaseIds"]["%SRCROOT%"]["uri"].startswith("file:///")


def test_sarif_code_flow_follows_the_trace_from_source_to_sink():
    result = json.loads(out("sarif", [LEAK]))["runs"][0]["results"][0]
    steps = result["codeFlows"][0]["threadFlows"][0]["locations"]
    assert [s["location"]["physicalLocation"]["region"]["startLine"] for s in steps] == [3, 3, 12]
    assert steps[0]["location"]["message"]["text"].startswith("source: ")
    assert steps[-1]["location"]["message"]["text"].startswith("sink: ")


def test_github_prints_one_annotation_per_finding_with_the_severity_command():
    lines = out("github").splitlines()
    assert len(lines) == 3
    assert lines[0].startswith("::error file=app/agent.py,line=12,col=16,endLine=12,endColumn=48,"
                               "title=PC101 time-in-stable-layer::Wall-clock time")
    assert lines[2].startswith("::warning file=app/x.py,")


def test_github_escapes_data_and_property_special_characters():
    odd = Diagnostic(path="a,b:c.py", line=1, column=1, end_line=1, end_column=2, code="PC101", name="n",
                     message="100% of\r\nbytes")
    line = out("github", [odd])
    assert "file=a%2Cb%3Ac.py," in line
    assert line.endswith("::100%25 of%0D%0Abytes\n")


def test_github_message_carries_the_trace_as_escaped_lines():
    assert "%0Asource app/clock.py:3:12 " in out("github", [LEAK])


def test_statistics_count_per_code_most_frequent_first():
    table = statistics([LEAK, LEAK, UNORDERED])
    assert table.splitlines() == ["2\tPC101\t    time-in-stable-layer", "1\tPC501\t[*] unordered-collection-in-stable-layer"]


def test_statistics_as_json():
    rows = json.loads(statistics([LEAK, UNORDERED], "json"))
    assert rows[0] == {"code": "PC101", "name": "time-in-stable-layer", "count": 1, "fixable": False}

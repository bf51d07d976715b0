"""Mutated configurations through ``promptlint lint``: exit 0, 1 or 2 — and 2 only with one
``promptlint: error:`` line (or click's usage message) — never a traceback or an internal error.

The command runs in-process through click's test runner so that a campaign of thousands of
configs takes minutes (``tests/cli`` runs the console script itself as a subprocess). Small by
default; ``PROMPTLINT_FUZZ_EXAMPLES=N`` runs N examples per strategy.
"""

from __future__ import annotations

import json
import math
import os
import tempfile

from click.testing import CliRunner
from hypothesis import HealthCheck, event, given, settings, strategies as st

from promptlint.cli import cli
from tests.cli.test_cli_lint_command import LEAK, UNORDERED

EXAMPLES = int(os.environ.get("PROMPTLINT_FUZZ_EXAMPLES") or 40)
FUZZ = settings(max_examples=EXAMPLES, deadline=None,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])

KEYS = ["select", "ignore", "extend-select", "exclude", "extend-exclude", "per-file-ignores", "rule-files",
        "memory-files", "src", "max-file-bytes"]
WORDS = ["PC", "PC1", "PC101", "PC501", "ALL", "pc6", "PC999", "", "*", "*.py", "tests/*", "agent.py", ".", "..",
         "/", "rules.yaml", "src", "MEMORY.md", "[", "**", "\\", "é", "\x00"]

VALID = """[tool.promptlint]
select = ["PC"]
ignore = ["PC604"]
extend-select = ["PC5"]
extend-exclude = ["generated", "*_pb2.py"]
memory-files = ["MEMORY.md"]
src = ["src"]
max-file-bytes = 2000000

[tool.promptlint.per-file-ignores]
"tests/*" = ["PC1", "PC2"]
"""


def toml_value(value) -> str:
    """A TOML literal for a generated value (strings as JSON strings: TOML basic strings agree)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf") if math.isinf(value) else repr(value)
    if isinstance(value, (int, str)):
        return json.dumps(value) if isinstance(value, str) else str(value)
    if isinstance(value, list):
        return "[" + ", ".join(toml_value(v) for v in value) + "]"
    return "{" + ", ".join(f"{json.dumps(k)} = {toml_value(v)}" for k, v in value.items()) + "}"


scalars = st.one_of(st.sampled_from(WORDS), st.text(max_size=8), st.integers(-2**63, 2**63 - 1), st.booleans(),
                    st.floats())
values = st.recursive(scalars, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.sampled_from(WORDS[:12]) | st.text(max_size=6), inner, max_size=3)),
    max_leaves=12)
tables = st.dictionaries(st.sampled_from(KEYS) | st.sampled_from(["selekt", "max_file_bytes", "version"]), values,
                         max_size=5)


@st.composite
def mutated_text(draw) -> str:
    """The valid configuration with a few characters deleted, replaced or inserted."""
    text = VALID
    for _ in range(draw(st.integers(1, 6))):
        at = draw(st.integers(0, len(text)))
        op = draw(st.sampled_from(["delete", "replace", "insert"]))
        char = draw(st.sampled_from(list("[]{}=\"',.\n #\\") + ["PC", "x", "é", "\x00", "9" * 30]) | st.characters())
        if op == "delete":
            text = text[:at] + text[at + 1:]
        elif op == "replace":
            text = text[:at] + char + text[at + 1:]
        else:
            text = text[:at] + char + text[at:]
    return text


def run_lint(config: str | bytes, *, standalone: bool = False) -> int:
    with tempfile.TemporaryDirectory(prefix="promptlint-config-fuzz-") as tree:
        name = "promptlint.toml" if standalone else "pyproject.toml"
        with open(os.path.join(tree, name), "wb") as handle:
            handle.write(config if isinstance(config, bytes) else config.encode("utf-8", "surrogatepass"))
        for file, text in (("agent.py", LEAK), ("tools.py", UNORDERED), ("MEMORY.md", "notes\n")):
            with open(os.path.join(tree, file), "w", encoding="utf-8") as handle:
                handle.write(text)
        os.mkdir(os.path.join(tree, "src"))
        result = CliRunner().invoke(cli, ["lint", "--no-cache", "-j", "1", tree], catch_exceptions=True)
    stderr = result.stderr
    assert result.exception is None or isinstance(result.exception, SystemExit), repr(result.exception)
    assert result.exit_code in (0, 1, 2), (result.exit_code, stderr)
    assert "Traceback" not in stderr and "internal error" not in stderr, stderr
    if result.exit_code == 2:
        assert stderr.startswith("promptlint: error: ") or "Error:" in stderr, stderr
        if stderr.startswith("promptlint: error: "):
            assert stderr.count("\n") == 1, stderr
    return result.exit_code


def record(code: int) -> None:
    event(f"exit {code}")  # the spread shows with --hypothesis-show-statistics


@FUZZ
@given(tables, st.booleans())
def test_generated_tables_give_a_report_or_one_error_line(table, standalone):
    body = "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in table.items())
    record(run_lint(body if standalone else "[tool.promptlint]\n" + body, standalone=standalone))


@FUZZ
@given(mutated_text())
def test_mutated_config_text_gives_a_report_or_one_error_line(text):
    record(run_lint(text))


# Well-typed values for the known keys: most of these configurations get as far as linting.
word_lists = st.lists(st.sampled_from(WORDS), max_size=4)
typed_tables = st.fixed_dictionaries({}, optional={
    **{key: word_lists for key in KEYS if key not in ("per-file-ignores", "max-file-bytes")},
    "per-file-ignores": st.dictionaries(st.sampled_from(WORDS), word_lists, max_size=3),
    "max-file-bytes": st.integers(-5, 2**63 - 1),
})


@FUZZ
@given(typed_tables)
def test_well_typed_tables_give_a_report_or_one_error_line(table):
    body = "".join(f"{json.dumps(key)} = {toml_value(value)}\n" for key, value in table.items())
    record(run_lint("[tool.promptlint]\n" + body))


def test_the_unmutated_config_lints_the_tree():
    assert run_lint(VALID) == 1  # the baseline the mutations start from works (and finds the leak)

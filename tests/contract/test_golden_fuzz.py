"""Property-based campaign: mutated golden files through ``golden check`` give exit 1 or 2 with a
message, never a traceback. Small by default; ``PROMPTLINT_FUZZ_EXAMPLES=2000`` for a larger run."""

from __future__ import annotations

import json
import os
import traceback

from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings, strategies as st

from promptlint.contract import Layer, PromptContract
from promptlint.golden.gate import check_command, golden_document

EXAMPLES = int(os.environ.get("PROMPTLINT_FUZZ_EXAMPLES", "150"))
CONTRACT = PromptContract("fuzz", "v1", [Layer("identity", text="You are Fuzz."),
                                         Layer("tools", tools=[{"name": "t", "parameters": {"type": "object"}}])])
GOLDEN = golden_document(CONTRACT)
RAN = {"inputs": 0}

json_value = st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(max_size=8),
                          lambda inner: st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=6), inner, max_size=3),
                          max_leaves=8)


def paths(value, prefix=()):
    """Every key path of a JSON document."""
    yield prefix
    if isinstance(value, dict):
        for key, item in value.items():
            yield from paths(item, (*prefix, key))
    elif isinstance(value, list):
        for index, item in enumerate(value):
            yield from paths(item, (*prefix, index))


PATHS = list(paths(GOLDEN))


def mutate(document, path, action, value):
    document = json.loads(json.dumps(document))
    if not path:
        return value
    parent = document
    for key in path[:-1]:
        parent = parent[key]
    if action == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return document


def contract_factory():
    return CONTRACT


@settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))
@given(path=st.sampled_from(PATHS), action=st.sampled_from(["replace", "delete"]), value=json_value,
       raw=st.one_of(st.none(), st.binary(max_size=40)))
def test_mutated_golden_files_never_give_a_traceback(tmp_path_factory, path, action, value, raw):
    directory = tmp_path_factory.mktemp("golden")
    if raw is not None:
        (directory / "fuzz.json").write_bytes(raw)
    else:
        if not path and action == "delete":
            action = "replace"
        (directory / "fuzz.json").write_text(json.dumps(mutate(GOLDEN, path, action, value)))
    result = CliRunner().invoke(check_command, [f"{__file__}:contract_factory", "--dir", str(directory)])
    RAN["inputs"] += 1
    detail = "".join(traceback.format_exception(*result.exc_info)) if result.exc_info else ""
    assert result.exit_code in (0, 1, 2) and not isinstance(result.exception, (Exception,)) or \
        isinstance(result.exception, SystemExit), detail
    assert "Traceback" not in result.output, result.output
    if result.exit_code:
        assert result.output.strip(), "a failure without a message"


def test_report_campaign_size():
    print(f"\ngolden fuzz campaign: {RAN['inputs']} mutated golden files, none gave a traceback")

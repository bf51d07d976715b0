"""Robustness: the analyzer survives any syntactically valid program (hypothesmith) and gives
the same findings when it lints the same program again.

Small by default; ``PROMPTLINT_FUZZ_EXAMPLES=N`` runs N examples per strategy (a campaign:
``PROMPTLINT_FUZZ_EXAMPLES=1500 pytest tests/lint/test_analyzer_never_raises.py
tests/lint/test_config_fuzz.py --hypothesis-show-statistics``).
"""

from __future__ import annotations

import os

import hypothesmith
from hypothesis import HealthCheck, given, settings

from promptlint.lint.diagnostic import Diagnostic
from promptlint.lint.engine import lint_source


def fuzz_examples(default: int) -> int:
    """``default`` examples, or ``$PROMPTLINT_FUZZ_EXAMPLES`` for a larger campaign."""
    return int(os.environ.get("PROMPTLINT_FUZZ_EXAMPLES") or default)


QUICK = settings(
    max_examples=fuzz_examples(50),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.filter_too_much, HealthCheck.data_too_large],
)

# Most generated programs import no LLM library, so the prefilter would skip them; this
# trailer makes every program reach the full analysis (a sink call at module level).
SINK_TRAILER = (
    "\nimport anthropic\n"
    "anthropic.Anthropic().messages.create(model='m', max_tokens=1, system=[], tools=[], messages=[])\n"
)


def check(source: str) -> None:
    for text in (source, source + SINK_TRAILER):
        diagnostics = lint_source(text)
        assert isinstance(diagnostics, list)
        assert all(isinstance(d, Diagnostic) for d in diagnostics)
        # PC004 is the analyzer catching its own crash: that is the failure this test looks for.
        crashes = [d for d in diagnostics if d.code == "PC004"]
        assert not crashes, crashes[0].message
    # The full analysis again: the same program must give the same findings.
    assert lint_source(text) == diagnostics, "a second run of the same program gave other findings"


@QUICK
@given(hypothesmith.from_grammar())
def test_programs_from_the_grammar_never_crash_the_analyzer(source):
    check(source)


# from_node spends ~80 ms generating each program; 30 keeps this test to a few seconds.
@settings(QUICK, max_examples=fuzz_examples(30))
@given(hypothesmith.from_node())
def test_programs_from_libcst_nodes_never_crash_the_analyzer(source):
    check(source)

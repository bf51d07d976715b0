"""The admission test searches an alternation branch by branch, from a literal (issue 14, speed).

``TextTest`` must say exactly what ``re.search`` says for the same pattern: a file the regex
admits and the split search does not would lose its findings without any sign.
"""

from __future__ import annotations

import re

from hypothesis import given, settings
from hypothesis import strategies as st

from promptlint.lint.catalog import load_catalog
from promptlint.lint.literal_search import TextTest, _top_level_branches

PATTERNS = [
    r"""["']role["']\s*:\s*["'](?:system|developer)["']""",
    r"""\brole\s*=\s*["']system["']|\bSystem(?:Message|Prompt)\s*\(|\(\s*["']system["']\s*,""",
    r"""\bsystem(?:_prompt)?=(?!=)|["']instructions["']\s*:|\{[{%][^}\n]{0,20}\bnow\s*\(""",
    r"""\bdef\s+(?:get_)?system_prompt\b|\.(?:system_prompt)\s*(?:\+?=|\.append)""",
    r"""[a-c]x|[^"]y|\bz""",  # classes that are not a short list of characters stay whole
]

# Texts made of the pieces the patterns look for, so that near misses are common.
PIECES = ["role", "system", "System", "Message", "Prompt", "def ", "get_", "_prompt", ".", "=", "==", "+=",
          ".append", "(", ")", "'", '"', ":", " ", "\n", "x", "_", "é", "{{", "{%", "now", "instructions",
          "ax", "dy", '"y', "z", "az"]


@settings(max_examples=300, deadline=None)
@given(st.lists(st.sampled_from(PIECES), max_size=40), st.sampled_from(PATTERNS))
def test_text_test_agrees_with_re_search(pieces, pattern):
    text = "".join(pieces)
    assert TextTest(pattern).search(text) == (re.search(pattern, text) is not None), (pattern, text)


def test_the_catalogs_shape_test_agrees_with_its_regex_on_near_misses():
    shape = load_catalog().shape_prefilter
    regex = re.compile(shape.pattern)
    texts = [
        'msgs = [{"role": "system", "content": x}]', "mysystem = 1", "system=prompt", "x.system == y",
        "class SystemMessageFactory: pass", "SystemMessage(content=x)", "xSystemMessage(", "def build_system_prompt():",
        "def rebuild_system_prompt_x():", "self.system_prompt += part", "'inputSchema': {}", "\"parameters\": {\"type\"",
        "{{ now() }}", "preamble=", "subsystem=1", 'pairs = [("system", text)]',
    ]
    for text in texts:
        assert shape.search(text) == (regex.search(text) is not None), text


def test_branches_split_only_at_the_top_level():
    assert _top_level_branches(r"a(?:b|c)|[|]d|\|e|f") == ["a(?:b|c)", "[|]d", r"\|e", "f"]

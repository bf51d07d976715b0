"""The worked example of docs/custom-rules.md is the files in fixtures/custom_rules/, word for word."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
DOC = (ROOT / "docs" / "custom-rules.md").read_text("utf-8")
EXAMPLE = ROOT / "fixtures" / "custom_rules"


def test_the_documented_rule_file_is_the_example_rule_file():
    documented = re.search(r"```yaml\n(# promptlint-rules.yaml\n.*?)```", DOC, re.S).group(1)
    assert documented == (EXAMPLE / "promptlint-rules.yaml").read_text("utf-8")


def test_the_documented_app_is_the_example_app():
    documented = re.search(r"docs-test: in fixtures/custom_rules -->\n```python\n(.*?)```", DOC, re.S).group(1)
    assert documented == (EXAMPLE / "app.py").read_text("utf-8")

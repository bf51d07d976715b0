"""``fix_source`` edits exactly the expression it is given, keeps the layout, and is idempotent."""

from __future__ import annotations

import pytest

from promptlint.catalog import load_rule_docs
from promptlint.engine import lint_source
from promptlint.fix import FixError, fix_source
from promptlint.model import Fix


def wrap(line, col, end_line, end_col):
    return Fix("wrap-sorted", line, col, end_line, end_col)


def sort_keys(line, col, end_line, end_col):
    return Fix("add-sort-keys", line, col, end_line, end_col)


def test_wraps_a_directory_listing_inside_join_in_sorted():
    src = 'text = "\\n".join(os.listdir("skills"))  # the skills\n'
    assert fix_source(src, [wrap(1, 18, 1, 38)]) == 'text = "\\n".join(sorted(os.listdir("skills")))  # the skills\n'


def test_wraps_the_iterable_of_a_for_loop():
    src = "for name in TOOLS:\n    out.append(name)\n"
    assert fix_source(src, [wrap(1, 13, 1, 18)]) == "for name in sorted(TOOLS):\n    out.append(name)\n"


def test_adds_sort_keys_after_existing_keyword_arguments():
    src = "s = json.dumps(d, indent=2)\n"
    assert fix_source(src, [sort_keys(1, 5, 1, 28)]) == "s = json.dumps(d, indent=2, sort_keys=True)\n"


def test_flips_an_explicit_sort_keys_false():
    src = "s = yaml.dump(d, sort_keys=False)\n"
    assert fix_source(src, [sort_keys(1, 5, 1, 34)]) == "s = yaml.dump(d, sort_keys=True)\n"


def test_keeps_a_multi_line_call_layout_with_trailing_comma():
    src = "s = json.dumps(\n    d,\n    indent=2,\n)\n"
    out = fix_source(src, [sort_keys(1, 5, 4, 2)])
    assert out == "s = json.dumps(\n    d,\n    indent=2,\n    sort_keys=True,\n)\n"


def test_a_second_run_changes_nothing():
    src = 'text = ", ".join(sorted(NAMES))\n'
    assert fix_source(src, [wrap(1, 25, 1, 30)]) == src


def test_overlapping_wraps_apply_the_outermost_once():
    src = "x = list(set(a))\n"
    assert fix_source(src, [wrap(1, 5, 1, 17), wrap(1, 10, 1, 16)]) == "x = sorted(list(set(a)))\n"


def test_a_range_that_matches_no_expression_is_an_error():
    with pytest.raises(FixError, match="no expression at 1:3"):
        fix_source("x = 1\n", [wrap(1, 3, 1, 4)])


def test_a_file_that_does_not_parse_is_an_error():
    with pytest.raises(FixError, match="does not parse"):
        fix_source("def f(:\n", [wrap(1, 1, 1, 2)])


def test_sort_keys_cannot_be_added_after_double_star_kwargs():
    with pytest.raises(FixError, match=r"\*\*kwargs"):
        fix_source("s = json.dumps(d, **opts)\n", [sort_keys(1, 5, 1, 26)])


@pytest.mark.parametrize("code", ["PC501", "PC502"])
def test_engine_fixes_make_the_rule_examples_lint_clean(code):
    doc = load_rule_docs()[code]
    for src in (doc.example, *doc.invalid):
        found = lint_source(src)
        fixes = [d.fix for d in found if d.code == code and d.fix is not None and d.fix.safe]
        assert fixes, f"{code} example has no safe fix"
        fixed = fix_source(src, fixes)
        assert fixed != src
        assert [d.code for d in lint_source(fixed)] == []

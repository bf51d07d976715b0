"""``fix_source`` edits exactly the expression it is given, keeps the layout, and is idempotent."""

from __future__ import annotations

import pytest

from promptlint.lint.catalog import load_rule_docs
from promptlint.lint.engine import lint_source
from promptlint.lint.fix import FixError, fix_source
from promptlint.lint.diagnostic import Fix
from tests.lint.opt_in import ORDERING


def wrap(line, col, end_line, end_col):
    return Fix("wrap-sorted", line, col, end_line, end_col)


def sort_keys(line, col, end_line, end_col):
    return Fix("add-sort-keys", line, col, end_line, end_col)


def span_of(src: str, snippet: str, kind: str = "wrap-sorted") -> Fix:
    """The fix whose range is the first occurrence of ``snippet`` (which may span lines)."""
    start = src.index(snippet)
    end = start + len(snippet)
    line, end_line = src.count("\n", 0, start) + 1, src.count("\n", 0, end) + 1
    column = start - (src.rfind("\n", 0, start) + 1) + 1
    end_column = end - (src.rfind("\n", 0, end) + 1) + 1
    return Fix(kind, line, column, end_line, end_column)


# ------------------------------------------------------------------ wrap-sorted
def test_wraps_a_directory_listing_inside_join_in_sorted():
    src = 'text = "\\n".join(os.listdir("skills"))  # the skills\n'
    assert fix_source(src, [wrap(1, 18, 1, 38)]) == 'text = "\\n".join(sorted(os.listdir("skills")))  # the skills\n'


def test_wraps_a_set_comprehension():
    src = 'names = {p.stem for p in Path("tools").glob("*.py")}\nsystem = ", ".join(names)\n'
    fixed = fix_source(src, [span_of(src, '{p.stem for p in Path("tools").glob("*.py")}')])
    assert fixed == 'names = sorted({p.stem for p in Path("tools").glob("*.py")})\nsystem = ", ".join(names)\n'


def test_wraps_the_iterable_of_a_for_loop():
    src = "for name in TOOLS:\n    out.append(name)\n"
    assert fix_source(src, [wrap(1, 13, 1, 18)]) == "for name in sorted(TOOLS):\n    out.append(name)\n"


def test_wraps_a_multi_line_expression_and_keeps_its_comments():
    src = ("tools = set(\n"
           "    load_tools()  # from the plugin dir\n"
           ")\n")
    fixed = fix_source(src, [wrap(1, 9, 3, 2)])
    assert fixed == "tools = sorted(set(\n    load_tools()  # from the plugin dir\n))\n"


def test_wraps_an_expression_inside_an_f_string():
    src = "system = f\"Skills: {', '.join(os.listdir('skills'))}\"\n"
    fixed = fix_source(src, [span_of(src, "os.listdir('skills')")])
    assert fixed == "system = f\"Skills: {', '.join(sorted(os.listdir('skills')))}\"\n"


def test_columns_count_characters_not_bytes():
    src = 'intro = "Schöne Grüße"; text = "é".join(os.listdir("ß"))\n'
    fixed = fix_source(src, [span_of(src, 'os.listdir("ß")')])
    assert fixed == 'intro = "Schöne Grüße"; text = "é".join(sorted(os.listdir("ß")))\n'


def test_a_tab_indent_counts_as_one_column():
    src = 'if ready:\n\ttext = "".join(os.listdir(d))\n'
    assert fix_source(src, [wrap(2, 17, 2, 30)]) == 'if ready:\n\ttext = "".join(sorted(os.listdir(d)))\n'


def test_windows_line_endings_are_kept():
    src = 'a = 1\r\ntext = "".join(os.listdir(d))\r\n'
    assert fix_source(src, [wrap(2, 16, 2, 29)]) == 'a = 1\r\ntext = "".join(sorted(os.listdir(d)))\r\n'


def test_a_parenthesized_expression_keeps_its_parentheses_inside_sorted():
    src = 'text = "\\n".join((os.listdir(d)))\n'
    assert fix_source(src, [span_of(src, "os.listdir(d)")]) == 'text = "\\n".join(sorted((os.listdir(d))))\n'


def test_an_expression_already_inside_sorted_is_left_alone():
    src = 'text = ", ".join(sorted(NAMES))\n'
    assert fix_source(src, [span_of(src, "NAMES")]) == src


def test_overlapping_wraps_apply_the_outermost_once():
    src = "x = list(set(a))\n"
    assert fix_source(src, [wrap(1, 5, 1, 17), wrap(1, 10, 1, 16)]) == "x = sorted(list(set(a)))\n"


def test_all_fixes_of_a_file_are_applied_in_one_pass():
    src = ('a = ", ".join(os.listdir("x"))\n'
           'b = json.dumps(flags)\n'
           'c = "".join(os.listdir("y"))\n')
    fixes = [span_of(src, 'os.listdir("x")'), span_of(src, "json.dumps(flags)", "add-sort-keys"),
             span_of(src, 'os.listdir("y")')]
    assert fix_source(src, fixes) == ('a = ", ".join(sorted(os.listdir("x")))\n'
                                      'b = json.dumps(flags, sort_keys=True)\n'
                                      'c = "".join(sorted(os.listdir("y")))\n')


def test_one_range_can_carry_both_kinds():
    src = "for line in json.dumps(d):\n    pass\n"
    fixes = [span_of(src, "json.dumps(d)", "add-sort-keys"), span_of(src, "json.dumps(d)")]
    assert fix_source(src, fixes) == "for line in sorted(json.dumps(d, sort_keys=True)):\n    pass\n"


# ---------------------------------------------------------------- add-sort-keys
def test_adds_sort_keys_to_a_call_without_arguments_but_the_value():
    src = 'system = "Flags: " + json.dumps(flags)\n'
    assert fix_source(src, [span_of(src, "json.dumps(flags)", "add-sort-keys")]) == \
        'system = "Flags: " + json.dumps(flags, sort_keys=True)\n'


def test_adds_sort_keys_after_existing_keyword_arguments():
    src = "s = json.dumps(d, indent=2)\n"
    assert fix_source(src, [sort_keys(1, 5, 1, 28)]) == "s = json.dumps(d, indent=2, sort_keys=True)\n"


def test_flips_an_explicit_sort_keys_false_in_json_dumps():
    src = "s = json.dumps(d, sort_keys=False, ensure_ascii=False)\n"
    assert fix_source(src, [span_of(src, src[4:-1], "add-sort-keys")]) == \
        "s = json.dumps(d, sort_keys=True, ensure_ascii=False)\n"


def test_flips_an_explicit_sort_keys_false_in_yaml_dump():
    src = "s = yaml.dump(d, sort_keys=False)\n"
    assert fix_source(src, [sort_keys(1, 5, 1, 34)]) == "s = yaml.dump(d, sort_keys=True)\n"


def test_keeps_a_multi_line_call_layout_with_trailing_comma():
    src = "s = json.dumps(\n    d,\n    indent=2,\n)\n"
    out = fix_source(src, [sort_keys(1, 5, 4, 2)])
    assert out == "s = json.dumps(\n    d,\n    indent=2,\n    sort_keys=True,\n)\n"


def test_a_multi_line_call_with_one_argument_gets_the_keyword_on_its_own_line():
    src = "s = json.dumps(\n    d,\n)\n"
    assert fix_source(src, [sort_keys(1, 5, 3, 2)]) == "s = json.dumps(\n    d,\n    sort_keys=True,\n)\n"


def test_a_multi_line_call_without_trailing_comma_keeps_its_comment():
    src = "s = json.dumps(d,\n               indent=2)  # pretty\n"
    assert fix_source(src, [span_of(src, src[4:src.index(")") + 1], "add-sort-keys")]) == \
        "s = json.dumps(d,\n               indent=2, sort_keys=True)  # pretty\n"


def test_sort_keys_true_is_not_added_twice():
    src = "s = json.dumps(d, sort_keys=True)\n"
    assert fix_source(src, [span_of(src, src[4:-1], "add-sort-keys")]) == src


# ------------------------------------------------------------------------ errors
def test_a_range_that_matches_no_expression_is_an_error():
    with pytest.raises(FixError, match="no expression at 1:3-1:4 for fix 'wrap-sorted'"):
        fix_source("x = 1\n", [wrap(1, 3, 1, 4)])


def test_add_sort_keys_on_something_that_is_not_a_call_is_an_error():
    src = "s = payload\n"
    with pytest.raises(FixError, match="add-sort-keys at 1:5-1:12 needs a call, found Name"):
        fix_source(src, [span_of(src, "payload", "add-sort-keys")])


def test_an_attribute_name_is_not_a_value_to_wrap():
    # `cfg.sorted(tools)` would parse, but it would call a method instead of reading a field
    src = "x = cfg.tools\n"
    with pytest.raises(FixError, match="no expression at 1:9-1:14"):
        fix_source(src, [span_of(src, "tools")])


def test_a_keyword_name_is_not_a_value_to_wrap():
    src = "f(tools=x)\n"
    with pytest.raises(FixError, match="no expression"):
        fix_source(src, [span_of(src, "tools")])


def test_an_edit_that_would_not_compile_is_refused():
    src = "for name in names:\n    pass\n"
    with pytest.raises(FixError, match="would not parse"):
        fix_source(src, [span_of(src, "name")])  # the loop target: `for sorted(name) in ...`


def test_an_unknown_kind_is_an_error():
    with pytest.raises(FixError, match="unknown fix kind 'reorder'"):
        fix_source("x = a\n", [Fix("reorder", 1, 5, 1, 6)])


def test_a_file_that_does_not_parse_is_an_error():
    with pytest.raises(FixError, match="does not parse"):
        fix_source("def f(:\n", [wrap(1, 1, 1, 2)])


def test_sort_keys_cannot_be_added_after_double_star_kwargs():
    with pytest.raises(FixError, match=r"\*\*kwargs"):
        fix_source("s = json.dumps(d, **opts)\n", [sort_keys(1, 5, 1, 26)])


def test_no_fixes_return_the_text_unchanged_even_if_it_does_not_parse():
    assert fix_source("def f(:\n", []) == "def f(:\n"


# ------------------------------------------------------------- with the engine
LEAKS = {
    "listdir in join": '''import anthropic, os

client = anthropic.Anthropic()


def ask(question):
    skills = "\\n".join(os.listdir("skills"))  # one per line
    return client.messages.create(
        model="claude-haiku-4-5", max_tokens=64,
        system=f"You can use: {skills}",
        messages=[{"role": "user", "content": question}],
    )
''',
    "set in a for loop": '''import anthropic, os

client = anthropic.Anthropic()
parts = []
for name in set(os.listdir("tools")):
    parts.append(name)
client.messages.create(model="m", max_tokens=1, system="".join(parts), messages=[])
''',
    "multi-line dumps with sort_keys=False": '''import anthropic, json, os

client = anthropic.Anthropic()
flags = {k: True for k in os.listdir("flags")}
client.messages.create(model="m", max_tokens=1, system=json.dumps(
    flags,
    indent=2,  # readable in the console
    sort_keys=False,
), messages=[])
''',
}


def safe_fixes(src: str) -> list[Fix]:
    return [d.fix for d in lint_source(src, settings=ORDERING) if d.fix is not None and d.fix.safe]


@pytest.mark.parametrize("name", sorted(LEAKS))
def test_engine_fixes_clear_the_finding_and_a_second_round_changes_nothing(name):
    src = LEAKS[name]
    fixes = safe_fixes(src)
    assert fixes, f"the engine offers no safe fix for {name}"
    fixed = fix_source(src, fixes)
    assert fixed != src
    assert [d.code for d in lint_source(fixed, settings=ORDERING) if d.code in ("PC501", "PC502")] == []
    assert fix_source(fixed, safe_fixes(fixed)) == fixed


@pytest.mark.parametrize("code", ["PC501", "PC502"])
def test_engine_fixes_make_the_rule_examples_lint_clean(code):
    doc = load_rule_docs()[code]
    for src in (doc.example, *doc.invalid):
        found = lint_source(src, settings=ORDERING)
        fixes = [d.fix for d in found if d.code == code and d.fix is not None and d.fix.safe]
        assert fixes, f"{code} example has no safe fix"
        fixed = fix_source(src, fixes)
        assert fixed != src
        assert [d.code for d in lint_source(fixed, settings=ORDERING)] == []


def test_add_sort_keys_uses_the_serializers_own_keyword():
    fix = Fix("add-sort-keys", 1, 5, 1, 17, keyword="sort")
    assert fix_source("s = dump(d, x=1)\n", [fix]) == "s = dump(d, x=1, sort=True)\n"

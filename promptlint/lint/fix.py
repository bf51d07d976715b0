"""Mechanical fixes that keep behaviour, applied on the libcst tree (comments and layout kept).

Two kinds (``promptlint.model.Fix.kind``):

- ``wrap-sorted``: wrap the expression at the range in ``sorted(...)`` — the items stay the
  same, only their order becomes fixed;
- ``add-sort-keys``: give the serializer call at the range (``json.dumps``, ``json.dump``)
  ``sort_keys=True``, or turn an explicit ``sort_keys=False`` (``yaml.dump``) into True.

Ranges are 1-based lines and 1-based character columns, end exclusive (``model.py``), the
positions the engine reports; libcst's ``PositionProvider`` uses the same character columns
(0-based) and, like ``ast``, leaves parentheses out of an expression's range.

All fixes of a file are applied in one pass. Fixing is idempotent: an expression that is
already the argument of ``sorted(...)`` is left alone, and ``sort_keys=True`` is not added
twice, so re-linting a fixed file and fixing again changes nothing. Overlapping wraps apply
the outermost once (``sorted(list(set(a)))``, not ``sorted(list(sorted(set(a))))``).
"""

from __future__ import annotations

from promptlint.lint.diagnostic import Fix

KINDS = ("wrap-sorted", "add-sort-keys")


class FixError(Exception):
    """A fix does not match the code, or the edited code would not parse."""


def fix_source(text: str, fixes: list[Fix]) -> str:
    """Apply ``fixes`` to ``text`` in one pass and return the new text.

    Raises ``FixError`` when the text does not parse, a fix has an unknown kind, a range
    does not cover an expression of the right kind, or the edited text would not parse.
    """
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    if not fixes:
        return text
    for fix in fixes:
        if fix.kind not in KINDS:
            raise FixError(f"unknown fix kind {fix.kind!r} at {_where(fix)}")
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the file does not parse: {exc.message} (line {exc.raw_line})") from None
    # range -> kind -> fix: one range may carry both kinds (a dumps call that is also iterated)
    wanted: dict[tuple[int, int, int, int], dict[str, Fix]] = {}
    for fix in fixes:
        wanted.setdefault((fix.line, fix.column, fix.end_line, fix.end_column), {}).setdefault(fix.kind, fix)

    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)

    def span(node) -> tuple[int, int, int, int] | None:
        pos = positions.get(node)
        if pos is None:
            return None
        return (pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)

    found: dict[tuple[int, int, int, int], cst.CSTNode] = {}
    already_sorted: set[tuple[int, int, int, int] | None] = set()
    # Names that share an expression's shape but are not values: wrapping them would
    # change meaning (`x.sorted(attr)`) or not compile (`f(sorted(kw)=1)`).
    not_values: set[int] = set()

    class Finder(cst.CSTVisitor):
        def on_visit(self, node) -> bool:
            if isinstance(node, cst.Attribute):
                not_values.add(id(node.attr))
            elif isinstance(node, cst.Arg) and node.keyword is not None:
                not_values.add(id(node.keyword))
            elif isinstance(node, (cst.FunctionDef, cst.ClassDef, cst.Param)):
                not_values.add(id(node.name))
            elif isinstance(node, (cst.ImportAlias, cst.AsName, cst.NameItem)):
                not_values.update(id(n) for n in (getattr(node, "name", None), getattr(node, "asname", None)) if n)
            k = span(node)
            if (k in wanted and k not in found and isinstance(node, cst.BaseExpression)
                    and id(node) not in not_values):
                found[k] = node  # the first hit is the outermost node with this range
            if _is_sorted_call(node) and len(node.args) == 1:
                already_sorted.add(span(node.args[0].value))
            return True

    wrapper.module.visit(Finder())

    targets: dict[int, dict[str, Fix]] = {}
    for k, by_kind in wanted.items():
        node = found.get(k)
        if node is None:
            fix = next(iter(by_kind.values()))
            raise FixError(f"no expression at {_where(fix)} for fix {fix.kind!r}")
        if "add-sort-keys" in by_kind and not isinstance(node, cst.Call):
            raise FixError(f"add-sort-keys at {_where(by_kind['add-sort-keys'])} needs a call, "
                           f"found {type(node).__name__}")
        if "wrap-sorted" in by_kind and k in already_sorted:
            by_kind = {kind: f for kind, f in by_kind.items() if kind != "wrap-sorted"}
        if by_kind:
            targets[id(node)] = by_kind

    class Editor(cst.CSTTransformer):
        def __init__(self) -> None:
            self.wrapping = 0  # wrap-sorted targets open around the current node

        def on_visit(self, node) -> bool:
            if "wrap-sorted" in targets.get(id(node), {}):
                self.wrapping += 1
            return True

        def on_leave(self, original, updated):
            by_kind = targets.get(id(original))
            if by_kind is None:
                return updated
            if "add-sort-keys" in by_kind:
                updated = _with_sort_keys(updated, by_kind["add-sort-keys"])
            if "wrap-sorted" in by_kind:
                self.wrapping -= 1
                if self.wrapping == 0:  # the outermost wrap only
                    updated = cst.Call(func=cst.Name("sorted"), args=[cst.Arg(value=updated)])
            return updated

    result = wrapper.module.visit(Editor()).code
    try:
        cst.parse_module(result)
        # libcst accepts some trees the compiler rejects (an assignment target in sorted()).
        compile(result, "<fixed>", "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError) as exc:
        detail = exc.message if isinstance(exc, cst.ParserSyntaxError) else exc.msg
        raise FixError(f"the fixed file would not parse ({detail}); nothing was changed") from None
    return result


def _where(fix: Fix) -> str:
    return f"{fix.line}:{fix.column}-{fix.end_line}:{fix.end_column}"


def _is_sorted_call(node) -> bool:
    import libcst as cst

    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "sorted"


def _with_sort_keys(call, fix: Fix):
    """``call`` with ``<keyword>=True`` (``sort_keys`` unless the serializer's rule names another):
    an existing keyword is set, else one is appended."""
    import libcst as cst

    keyword = getattr(fix, "keyword", "") or "sort_keys"
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == keyword:
            return call.with_changes(args=[*args[:i], arg.with_changes(value=cst.Name("True")), *args[i + 1:]])
    if any(arg.star == "**" for arg in args):
        # the mapping may already hold sort_keys: adding one could raise TypeError at run time
        raise FixError(f"add-sort-keys at {_where(fix)} cannot edit a call that passes **kwargs")
    new = cst.Arg(keyword=cst.Name(keyword), value=cst.Name("True"),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if not isinstance(last.comma, cst.Comma):
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:  # a trailing comma: ours takes it, and the gap between arguments is reused
            if len(args) > 1 and isinstance(args[-2].comma, cst.Comma):
                gap = args[-2].comma.whitespace_after
            elif isinstance(call.whitespace_before_args, cst.ParenthesizedWhitespace):
                gap = call.whitespace_before_args  # one argument per line: indent like it
            else:
                gap = cst.SimpleWhitespace(" ")
            new = new.with_changes(comma=last.comma)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=gap))
    return call.with_changes(args=[*args, new])

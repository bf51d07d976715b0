"""Mechanical fixes that keep behaviour, applied on the libcst tree (comments and layout kept).

Two kinds (``promptlint.model.Fix.kind``):

- ``wrap-sorted``: wrap the expression at the range in ``sorted(...)`` — the items stay the
  same, only their order becomes fixed;
- ``add-sort-keys``: give the ``json.dumps``/``json.dump`` call at the range
  ``sort_keys=True``, or turn an explicit ``sort_keys=False`` (also ``yaml.dump``) into True.

Ranges are 1-based lines and 1-based character columns, end exclusive (``model.py``).
"""

from __future__ import annotations

from promptlint.model import Fix


class FixError(Exception):
    """A fix does not match the code, or the edited code would not parse."""


def fix_source(text: str, fixes: list[Fix]) -> str:
    """Apply ``fixes`` to ``text`` in one pass; the result is re-parsed before it is returned."""
    import libcst as cst
    from libcst.metadata import MetadataWrapper, PositionProvider

    if not fixes:
        return text
    try:
        module = cst.parse_module(text)
    except cst.ParserSyntaxError as exc:
        raise FixError(f"the file does not parse: {exc.message}") from None
    wanted = {(f.line, f.column, f.end_line, f.end_column): f for f in fixes}
    wrapper = MetadataWrapper(module)
    positions = wrapper.resolve(PositionProvider)

    def key(node) -> tuple[int, int, int, int] | None:
        pos = positions.get(node)
        if pos is None:
            return None
        # libcst columns are 0-based; ours are 1-based.
        return (pos.start.line, pos.start.column + 1, pos.end.line, pos.end.column + 1)

    found: dict[tuple, object] = {}

    already_sorted: set[tuple] = set()

    class Finder(cst.CSTVisitor):
        def on_visit(self, node) -> bool:
            k = key(node)
            if k in wanted and k not in found and isinstance(node, cst.BaseExpression):
                found[k] = node
            if _is_sorted_call(node) and node.args:
                already_sorted.add(key(node.args[0].value))  # idempotent: sorted(x) stays
            return True

    wrapper.module.visit(Finder())
    missing = [f for k, f in wanted.items() if k not in found]
    if missing:
        f = missing[0]
        raise FixError(f"no expression at {f.line}:{f.column}-{f.end_line}:{f.end_column} for fix {f.kind!r}")

    targets = {id(node): wanted[k] for k, node in found.items()
               if not (wanted[k].kind == "wrap-sorted" and k in already_sorted)}

    class Editor(cst.CSTTransformer):
        def __init__(self) -> None:
            self.depth = 0  # inside an expression being wrapped: apply the outermost fix once

        def on_visit(self, node) -> bool:
            if id(node) in targets and targets[id(node)].kind == "wrap-sorted":
                self.depth += 1
            return True

        def on_leave(self, original, updated):
            fix = targets.get(id(original))
            if fix is None:
                return updated
            if fix.kind == "wrap-sorted":
                self.depth -= 1
                if self.depth > 0 or _is_sorted_call(updated):
                    return updated
                return cst.Call(func=cst.Name("sorted"), args=[cst.Arg(value=updated)])
            if fix.kind == "add-sort-keys":
                return _with_sort_keys(updated)
            raise FixError(f"unknown fix kind {fix.kind!r}")

    edited = wrapper.module.visit(Editor())
    result = edited.code
    try:
        cst.parse_module(result)
        compile(result, "<fixed>", "exec", dont_inherit=True)
    except (cst.ParserSyntaxError, SyntaxError) as exc:
        raise FixError(f"the fixed file would not parse: {exc}") from None
    return result


def _is_sorted_call(node) -> bool:
    import libcst as cst

    return isinstance(node, cst.Call) and isinstance(node.func, cst.Name) and node.func.value == "sorted"


def _with_sort_keys(call):
    import libcst as cst

    if not isinstance(call, cst.Call):
        raise FixError("add-sort-keys needs a call")
    args = list(call.args)
    for i, arg in enumerate(args):
        if arg.keyword is not None and arg.keyword.value == "sort_keys":
            args[i] = arg.with_changes(value=cst.Name("True"))
            return call.with_changes(args=args)
    if args and args[-1].star == "**":
        raise FixError("add-sort-keys cannot edit a call that passes **kwargs")
    new = cst.Arg(keyword=cst.Name("sort_keys"), value=cst.Name("True"),
                  equal=cst.AssignEqual(whitespace_before=cst.SimpleWhitespace(""),
                                        whitespace_after=cst.SimpleWhitespace("")))
    if args:
        last = args[-1]
        if last.comma is cst.MaybeSentinel.DEFAULT or last.comma is None:
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=cst.SimpleWhitespace(" ")))
        else:  # a trailing comma: ours takes it, and the gap between arguments is reused
            gap = args[-2].comma.whitespace_after if len(args) > 1 and isinstance(args[-2].comma, cst.Comma) \
                else cst.SimpleWhitespace(" ")
            new = new.with_changes(comma=last.comma)
            args[-1] = last.with_changes(comma=cst.Comma(whitespace_after=gap))
    return call.with_changes(args=[*args, new])

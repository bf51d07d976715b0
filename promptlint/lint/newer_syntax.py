"""Python 3.12+ syntax on an older interpreter: rewrite to an equivalent the running ``ast`` reads.

promptlint analyses CPython ``ast`` trees for speed, but its users write the syntax of the newest
Python whatever interpreter runs the linter. When ``ast.parse`` fails, libcst (whose parser
knows every current grammar) decides whether the file is valid Python at all; if it is, the
constructs the running interpreter lacks are rewritten so that data flows stay the same:

* ``type X[T] = ...`` (PEP 695) becomes ``X = ...``; type parameters of functions and classes
  are dropped (they carry no values);
* an f-string that only PEP 701 accepts (nested same quotes, backslashes or comments in a
  replacement field) becomes a concatenation of its literal parts and ``format(...)`` of each
  field, which carries the same taints (joined to its neighbours with ``+`` when it is part of an
  implicit concatenation);
* ``except A, B:`` without brackets (PEP 758, Python 3.14) becomes ``except (A, B):``.

Line numbers of everything else are kept: only the rewritten statements change length.
"""

from __future__ import annotations

import ast
import re
import warnings


#: PEP 758: ``except A, B:`` (no ``as``), bracketed for a parser that predates Python 3.14.
_BARE_EXCEPT = re.compile(r"^([ \t]*except\*?[ \t]+)((?:(?! as )[^\n:#()])+,(?:(?! as )[^\n:#()])+?)([ \t]*:)", re.M)


def downgrade(text: str) -> str | None:
    """An equivalent source the running ``ast`` parses, or None when no Python accepts ``text``."""
    bracketed = _BARE_EXCEPT.sub(r"\1(\2)\3", text)
    if bracketed != text and _parses(bracketed):
        return bracketed
    text = bracketed
    try:
        import libcst as cst
    except ImportError:  # pragma: no cover - a dependency
        return None
    try:
        module = cst.parse_module(text)
    except Exception:  # noqa: BLE001 - libcst raises its own ParserSyntaxError and friends
        return None

    class Rewrite(cst.CSTTransformer):
        def leave_TypeAlias(self, original, updated):
            return cst.Assign(targets=[cst.AssignTarget(updated.name)], value=updated.value)

        def leave_FunctionDef(self, original, updated):
            return updated.with_changes(type_parameters=None) if updated.type_parameters else updated

        def leave_ClassDef(self, original, updated):
            return updated.with_changes(type_parameters=None) if updated.type_parameters else updated

        def visit_ConcatenatedString(self, node):
            return False  # (its parts are rewritten together below: a part that is no string breaks the node)

        def leave_ConcatenatedString(self, original, updated):
            # `f"...{d["k"]}..." "more"`: parts joined with `+`, keeping the whitespace (and so the
            # lines) between them, when a part is rewritten; else left as it is
            def parts(node):
                return [*parts(node.left), *parts(node.right)] if isinstance(node, cst.ConcatenatedString) else [node]

            if all(not isinstance(p, cst.FormattedString) or _parses(module.code_for_node(p)) for p in parts(original)):
                return updated

            def joined(node):
                if not isinstance(node, cst.ConcatenatedString):
                    return self.leave_FormattedString(node, node) if isinstance(node, cst.FormattedString) else node
                add = cst.Add(whitespace_before=node.whitespace_between, whitespace_after=cst.SimpleWhitespace(""))
                return cst.BinaryOperation(left=joined(node.left), operator=add, right=joined(node.right))

            return joined(original).with_changes(lpar=original.lpar or [cst.LeftParen()], rpar=original.rpar or [cst.RightParen()])

        def leave_FormattedString(self, original, updated):
            code = module.code_for_node(updated)
            if _parses(code):
                return updated
            parts: list[cst.BaseExpression] = []
            for part in updated.parts:
                if isinstance(part, cst.FormattedStringText):
                    parts.append(cst.SimpleString(repr(part.value)))
                else:
                    parts.append(cst.Call(func=cst.Name("format"), args=[cst.Arg(part.expression)]))
            if not parts:
                return cst.SimpleString("''")
            out = parts[0]
            for nxt in parts[1:]:
                out = cst.BinaryOperation(left=out, operator=cst.Add(), right=nxt)
            return out.with_changes(lpar=[cst.LeftParen()], rpar=[cst.RightParen()])

    try:
        rewritten = module.visit(Rewrite()).code
    except Exception:  # noqa: BLE001 - an odd tree: treat as unparsable rather than crash
        return None
    return rewritten if _parses(rewritten) else None


def _parses(code: str) -> bool:
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            ast.parse(code)
        return True
    except (SyntaxError, ValueError):
        return False

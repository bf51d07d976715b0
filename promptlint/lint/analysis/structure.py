"""Calls whose result is made of their arguments as they are: ``dict(role=..., content=...)``, a
copy or a read-only view, a runnable wrapped or configured, ``asyncio.gather``'s results in the
order of its tasks, and the name of the host's time zone (which reads no clock that changes)."""

from __future__ import annotations

import ast
import re

from promptlint.lint.analysis.values import Val, merge

#: Calls that return their argument's structure: a copy or a read-only view of a list or dict.
_SAME_STRUCTURE = frozenset({"builtins.dict", "builtins.list", "builtins.tuple", "collections.deque", "types.MappingProxyType", "copy.copy",
                             "copy.deepcopy"})
#: A runnable wrapped or configured (`RunnableWithMessageHistory(prompt | llm, ...)`,
#: `chain.with_config(...)`): its `.invoke({...})` still fills the prompt the chain starts with.
_RUNNABLE_WRAPPERS = {"RunnableWithMessageHistory", "RunnableWithFallbacks", "RunnableRetry"}
RUNNABLE_KEEPERS = {"with_config", "with_retry", "with_fallbacks", "bind", "with_listeners", "with_types"}


def structured(node: ast.Call, origin: str | None, callee: str, func: Val, args: list[Val], kwargs: dict[str, Val]) -> Val | None:
    """The value of such a call, or None for any other."""
    if origin == "builtins.dict" and not args:
        return Val(merge(*(v.taints for v in kwargs.values())), keys=dict(kwargs), node=node)
    if origin in _SAME_STRUCTURE and len(args) == 1 and not kwargs:  # `MappingProxyType(registry)`: a view of it
        a = args[0]
        return Val(a.taints, items=a.items, keys=a.keys, node=node, template=a.template, sink_layer=a.sink_layer)
    if callee in _RUNNABLE_WRAPPERS and (runnable := args[0] if args else kwargs.get("runnable")) is not None:
        return Val(runnable.taints, node=node, template=runnable.template, sink_layer=runnable.sink_layer)
    if origin == "asyncio.gather":  # `a, b = await gather(f(), g())`: each result keeps its own taints
        return Val(merge(*(a.taints for a in args)), items=_gathered(node, args), node=node)
    if callee in ("tzname", "utcoffset") and not args or callee == "strftime" and args and _zone_only(args[-1].const):
        # `strftime("%Z")`, `.tzname()` name the host's time zone: no clock that changes per request.
        recv = func.taints if origin is None or "()" in origin else ()
        return Val(tuple(t for t in recv if t.code != "PC101"), node=node)
    return None


def _gathered(node: ast.Call, args: list[Val]) -> list[Val] | None:
    """The results of ``gather(f(), g())`` or ``gather(*tasks)`` of a list display, in order."""
    if len(node.args) != len(args):
        return None
    items: list[Val] = []
    for given, a in zip(node.args, args):
        if isinstance(given, ast.Starred):
            if a.items is None:
                return None
            items.extend(a.items)
        else:
            items.append(a)
    return items


def _zone_only(fmt) -> bool:
    """A strftime format that prints only the time zone (``"%Z"``, ``"%z"``): constant per host."""
    return isinstance(fmt, str) and "%" in fmt and "%" not in re.sub(r"%[Zz%]", "", fmt)

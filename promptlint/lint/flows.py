"""A leak is reported once: the findings of one flow, found at several sinks or through several
paths, folded into one."""

from __future__ import annotations

from dataclasses import replace

from promptlint.lint.diagnostic import CHOOSES, PARAMETER, Diagnostic, TraceStep


def one_per_flow(diagnostics) -> list[Diagnostic]:
    """A leak is reported once.

    First a finding whose sink is only a step of another flow from the same source (a builder
    recognised by name or shape, then the request) is folded into it, of the paths from one
    source to one sink (through several calls of a helper) the shortest is kept, and one path
    recognised at two sinks (a message dict and the request that sends it) is reported at the
    first; the turn's input handed down a chain of calls is one leak; then the findings left at
    one sink line with one code (``datetime.now()`` and ``datetime.now(tz)`` of one if/else, or
    the same clock reached through two paths) become one: the shortest trace is the finding and
    the other sources are named in its message and listed in ``related``."""
    groups: dict[tuple, list[Diagnostic]] = {}
    folded: list[Diagnostic] = []
    for d in _handed_down(list(diagnostics)):
        if len(d.trace) < 2:
            folded.append(d)
        else:
            head = d.trace[0]
            groups.setdefault((d.code, head.path, head.line, head.column), []).append(d)
    for group in groups.values():
        # A sink that is a step of a longer flow from the source (a builder recognised by name or
        # shape, then the request); then a longer flow whose sink is a step of a shorter one (a
        # request whose sink is placed at the message content a builder made and returned).
        mid = {id(d): {(s.path, s.line) for s in d.trace[1:-1]} for d in group}
        kept: list[Diagnostic] = []
        for d in sorted(group, key=lambda x: (-len(x.trace), x.sort_key())):
            if not any(_sink(d) in mid[id(k)] for k in kept):
                kept.append(d)
        kept = [d for d in kept if not any(len(k.trace) < len(d.trace) and _sink(d) in mid[id(k)] for k in kept)]
        # One source, one sink inside a helper, several calls that pass it on: one leak (the
        # shortest path), fixed at the source whichever call site is reported.
        ends: dict[tuple, Diagnostic] = {}
        for d in sorted(kept, key=lambda x: (_by_choice(x), len(x.trace), x.sort_key())):
            ends.setdefault((d.trace[-1].path, d.trace[-1].line, d.trace[-1].column, d.fix), d)
        # One path from the source, recognised at two sinks (the system message dict and the
        # request that sends it): one leak, reported at the first sink.
        paths: dict[tuple, Diagnostic] = {}
        for d in sorted(ends.values(), key=Diagnostic.sort_key):
            key = (tuple((s.path, s.line, s.column) for s in d.trace[:-1]), d.fix)
            first = paths.setdefault(key, d)
            if first is not d and d.related:  # (callers folded into the other one stay named)
                paths[key] = replace(first, related=first.related + tuple(r for r in d.related if r not in first.related))
        folded += paths.values()
    at_sink: dict[tuple, list[Diagnostic]] = {}
    for d in folded:
        # Findings with different fixes stay apart: each is an edit `--fix` must still make.
        at_sink.setdefault((d.path, d.line, d.code, d.fix), []).append(d)
    return [_one_finding(group) for group in at_sink.values()]


def _handed_down(diagnostics: list[Diagnostic]) -> list[Diagnostic]:
    """The turn's input handed down a chain of calls (`run(user_input)` -> `encode(user_input)`),
    each function's parameter a source of its own, to one sink: one leak, from the callee
    nearest the sink, whose flow the callers' flows go on through."""
    handed = [d for d in diagnostics if len(d.trace) > 1 and PARAMETER in d.trace[0].note]
    into: dict[int, Diagnostic] = {}
    for d in handed:
        steps = {(s.path, s.line, s.column) for s in d.trace[1:]}
        near = [k for k in handed if k is not d and (k.code, k.fix, k.trace[-1]) == (d.code, d.fix, d.trace[-1])
                and len(k.trace) < len(d.trace) and (k.trace[1].path, k.trace[1].line, k.trace[1].column) in steps]
        if near:
            into[id(d)] = min(near, key=lambda k: (len(k.trace), k.sort_key()))
    if not into:
        return diagnostics
    chains: dict[int, list[Diagnostic]] = {}
    for d in handed:
        root = d
        while id(root) in into:
            root = into[id(root)]
        chains.setdefault(id(root), []).append(d)
    return [d for d in diagnostics if id(d) not in into and id(d) not in chains] + [
        _one_finding(sorted(chain, key=lambda x: (len(x.trace), x.sort_key()))) for chain in chains.values()]


def _by_choice(d: Diagnostic) -> bool:
    """A trace through a test's choice: shown only when no flow of the data itself is."""
    return any(s.note.startswith(CHOOSES) for s in d.trace)


def _sink(d: Diagnostic) -> tuple[str, int]:
    return d.trace[-1].path, d.trace[-1].line


def _one_finding(group: list[Diagnostic]) -> Diagnostic:
    """The finding of one sink line and code: the shortest trace, the other sources related."""
    if len(group) == 1:
        return group[0]
    # A source that is a value read or computed (a retrieval, a clock) before a parameter that
    # merely carries it, or the turn's input, there; then the shortest trace.
    ordered = sorted(group, key=lambda d: (_by_choice(d), PARAMETER in (d.trace[0].note if d.trace else ""), len(d.trace),
                                           d.sort_key()))
    first = ordered[0]
    related: list[TraceStep] = []
    for d in ordered[1:]:
        source = d.trace[0] if d.trace else None
        if source is not None and source not in related and (not first.trace or source != first.trace[0]):
            related.append(source)
    if not related:
        return first
    named = ", ".join(f"{s.note.split(': ', 1)[-1]} ({_where(s, first.path)})" for s in related[:2])
    more = f" and {len(related) - 2} more" if len(related) > 2 else ""
    return replace(first, message=f"{first.message}; also from {named}{more}", related=tuple(related))


def _where(step: TraceStep, path: str) -> str:
    return f"line {step.line}" if step.path == path else f"{step.path}:{step.line}"

"""Run state written while a conversation runs: the project-wide half of conditional findings.

Frameworks call an instructions function on every model call and hand it the run's context
(openai-agents ``Agent(instructions=fn)``, pydantic-ai ``@agent.instructions``, LangGraph
``create_agent(system_prompt=fn)``, ADK ``instruction="... {key} ..."``). What it reads from that
context changes the instructions only if something writes the field while the conversation runs:
a tool (``ctx.context.state.seat_number = seat``), a callback (``callback_context.state["_time"] =
now()``). A customer name set when the context is built does not.

The analysis marks such a flow with the field it needs (``Diagnostic.needs``). Each file's text is
scanned here for writes through a context or state receiver, whether or not the file is analysed
(tools often live in files with no prompt in them). A marked flow is kept only when its field is
written somewhere in the linted tree, and its trace then starts at that write.
"""

from __future__ import annotations

import re
from dataclasses import replace

from promptlint.lint.diagnostic import Diagnostic, TraceStep

#: Receivers that hold a run's state: the object a framework carries from turn to turn.
_STATE_WORDS = re.compile(r"state|context|ctx|deps|session", re.IGNORECASE)
_MUTATORS = r"(?:append|extend|insert|add|update|pop|remove|clear|setdefault|discard)"
_WRITES = (
    # ctx.context.state.seat_number = seat / ctx.counter += 1
    re.compile(r"^[ \t]*((?:[A-Za-z_]\w*\.)+)([A-Za-z_]\w*)[ \t]*(?::[^=\n]*)?[-+|]?=(?!=)", re.MULTILINE),
    # callback_context.state["_time"] = now()
    re.compile(r"^[ \t]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\[[ \t]*[\"'](\w+)[\"'][ \t]*\][ \t]*[-+|]?=(?!=)", re.MULTILINE),
    # ctx.deps.notes.append(x) / state["sources"].append(x)
    re.compile(rf"^[ \t]*((?:[A-Za-z_]\w*\.)+)(\w+)\.{_MUTATORS}\(", re.MULTILINE),
    re.compile(rf"^[ \t]*((?:[A-Za-z_]\w*\.)*[A-Za-z_]\w*)\[[ \t]*[\"'](\w+)[\"'][ \t]*\]\.{_MUTATORS}\(", re.MULTILINE),
)


def writes_state(text: str) -> bool:
    """Whether a piece of code writes through a state or context receiver (cheap test)."""
    return _STATE_WORDS.search(text) is not None and any(
        _STATE_WORDS.search(m.group(1)) for p in _WRITES for m in p.finditer(text))


def state_receiver(text: str) -> bool:
    """Whether a receiver's text names a run's state or context."""
    return _STATE_WORDS.search(text) is not None


def written_fields(text: str) -> dict[str, list]:
    """Fields written through a state or context receiver: name -> [line, column] of the first.
    (The analysis adds the rule code of a real source written there: [line, column, code].)"""
    found: dict[str, list[int]] = {}
    if _STATE_WORDS.search(text) is None:
        return found
    for pattern in _WRITES:
        for match in pattern.finditer(text):
            receiver, name = match.group(1), match.group(2)
            if _STATE_WORDS.search(receiver) is None:
                continue
            line = text.count("\n", 0, match.start(1)) + 1
            column = match.start(1) - (text.rfind("\n", 0, match.start(1)) + 1) + 1
            if name not in found or [line, column] < found[name]:
                found[name] = [line, column]
    return found


def resolve(diagnostics, writes: dict[str, dict[str, list]], docs: dict) -> list[Diagnostic]:
    """Keep a flow that needs a field only when the tree writes it; its trace starts at the write.

    The write chosen: one that stores a real source (its rule code then replaces per-turn
    content: a clock written into the state is a clock), in the reading file if there is one,
    else the first by path and line."""
    by_name: dict[str, list[tuple]] = {}
    for path in sorted(writes):
        for name, at in writes[path].items():
            by_name.setdefault(name, []).append((path, *at))
    kept = []
    for d in diagnostics:
        if not d.needs:
            kept.append(d)
            continue
        found = by_name.get(d.needs)
        if not found:
            continue
        path, line, column, *code = min(found, key=lambda w: (len(w) < 4, w[0] != d.path, w[0], w[1]))
        code = code[0] if code and code[0] in docs else d.code
        what = f" ({docs[code].summary.split(' reaches ')[0].lower()})" if code != d.code else ""
        write = TraceStep(path, line, column, f"written while the conversation runs: `{d.needs}`{what}")
        where = f"line {line}" if path == d.path else f"{path}:{line}"
        message = f"{d.message}; written while the conversation runs ({where})"
        if code != d.code:
            layer = d.trace[-1].note.removeprefix("reaches ") if d.trace else ""
            old, new = (docs[c].summary.format(sink=layer, detail="") for c in (d.code, code))
            message = new + message[len(old):] if message.startswith(old) else message
        kept.append(replace(d, code=code, name=docs[code].name if code in docs else d.name,
                            trace=(write, *d.trace), needs="", message=message))
    return kept

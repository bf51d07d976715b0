"""Deterministic padding of a stable prefix up to a model's minimum cacheable length.

A prefix under the provider's floor is never cached and the request still succeeds, so the
loss is silent. The assembler appends padding *units* to the contract block until the counted
prefix reaches the floor: first the bodies of the contract's own skills in name order (useful
text the model may need anyway), then the paragraphs of a constant operating-context block,
cycled with a section number. The units depend only on the contract and the floor, so the same
inputs give the same bytes, and the total is bounded by the floor plus one unit.
"""

from __future__ import annotations

from dataclasses import dataclass
from itertools import count as counter, islice
from typing import Callable, Iterator, Sequence

from promptlint.contract.layers import Skill

OPERATING_CONTEXT: tuple[str, ...] = (
    "Operating context. This block is constant reference material. It is placed here so that "
    "the stable part of the prompt is long enough to be cached by the provider; it never "
    "changes between requests and carries no instructions that override the ones above.",
    "Conversation conduct. Read the whole request before answering. When a request is "
    "ambiguous, state the interpretation you chose in one sentence and proceed. Prefer short, "
    "direct answers; expand only when the user asks for detail or the task needs it.",
    "Use of tools. Call a tool only when its result is needed to answer. Pass arguments that "
    "match the declared schema exactly. When a tool fails, report the failure plainly, do not "
    "invent its output, and suggest the next step the user can take.",
    "Accuracy. Distinguish what you know from what you infer. Quote figures, names and paths "
    "exactly as they appear in the provided material. If the material does not contain the "
    "answer, say so instead of guessing.",
    "Privacy. Do not repeat secrets, keys or personal data back to the user unless the task "
    "requires it. Never include such data in tool arguments that are not meant to receive it.",
    "Formatting. Use plain text by default. Use lists for steps and options, code blocks for "
    "code, commands and file contents, and tables only when comparing several items on the "
    "same attributes.",
    "Safety. Decline requests that would cause harm, explain briefly why, and offer a safe "
    "alternative when one exists. Do not take irreversible actions without explicit consent.",
    "Handoff. When a task needs a person, say who should handle it and what information they "
    "will need, so the user can pass it on without repeating the conversation.",
)


@dataclass(frozen=True)
class Padding:
    """The padding chosen for one prefix: its text and the token count it was sized with."""

    text: str
    tokens: int
    units: int


def padding_units(skills: Sequence[Skill]) -> Iterator[str]:
    """Padding units in order: skill bodies by name, then numbered context paragraphs, forever."""
    for skill in sorted(skills, key=lambda s: s.name):
        yield f'<skill-reference name="{skill.name}">\n{skill.body}\n</skill-reference>'
    for number in counter(1):
        yield f"§{number}. {OPERATING_CONTEXT[(number - 1) % len(OPERATING_CONTEXT)]}"


def pad_to_floor(
    prefix_tokens: int,
    floor: int,
    skills: Sequence[Skill],
    count: Callable[[str], int],
    *,
    margin: int = 16,
) -> Padding:
    """Padding that lifts a prefix of ``prefix_tokens`` to at least ``floor + margin`` tokens.

    ``count`` must be the same lower-bound counter the caller used for ``prefix_tokens``.
    Returns empty padding when the prefix is already long enough. Units are separated by a
    blank line, which keeps the counts additive.
    """
    target = floor + margin
    if prefix_tokens >= target:
        return Padding("", 0, 0)
    chosen: list[str] = []
    total = 0
    # Upper bound on units: every unit counts at least one token, so this always terminates.
    for unit in islice(padding_units(skills), len(skills) + target):
        chosen.append(unit)
        total += max(1, count(unit))
        if prefix_tokens + total >= target:
            break
    return Padding("\n\n".join(chosen), total, len(chosen))

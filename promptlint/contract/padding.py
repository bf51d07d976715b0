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

from promptlint.contract.layers import DEFAULT_SKILL_FORMAT, ContractError, Skill, SkillFormat

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
class PaddingPolicy:
    """How a short prefix is padded (the Metis MIN/MAX bounds, and the fallback text).

    ``min_tokens``: pad to at least this many prefix tokens even above the floor (None: the
    floor plus ``margin``). ``max_tokens``: never pad past this many (None: no bound beyond
    floor + one unit); a prefix that cannot reach the floor under it stays short and its report
    says ``cacheable`` False. ``paragraphs``: the constant fallback text, cycled after the skill
    bodies (default :data:`OPERATING_CONTEXT`); give your own reference text to avoid repeats.
    ``skill_bodies``: False keeps skill bodies out of the padding.
    """

    min_tokens: int | None = None
    max_tokens: int | None = None
    margin: int = 16
    paragraphs: tuple[str, ...] = OPERATING_CONTEXT
    skill_bodies: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "paragraphs", tuple(self.paragraphs))
        if not self.paragraphs or not all(isinstance(p, str) and p.strip() for p in self.paragraphs):
            raise ContractError("PaddingPolicy.paragraphs must be non-empty strings")
        for name in ("min_tokens", "max_tokens"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or value < 0):
                raise ContractError(f"PaddingPolicy.{name} must be a non-negative integer or None")
        if self.min_tokens is not None and self.max_tokens is not None and self.min_tokens > self.max_tokens:
            raise ContractError(f"PaddingPolicy: min_tokens {self.min_tokens} is above max_tokens {self.max_tokens}")


@dataclass(frozen=True)
class Padding:
    """The padding chosen for one prefix: its text, token count, and the skills it pre-loads."""

    text: str
    tokens: int
    units: int
    preloaded: tuple[str, ...] = ()


def padding_units(skills: Sequence[Skill], policy: PaddingPolicy | None = None,
                  skill_format: SkillFormat = DEFAULT_SKILL_FORMAT) -> Iterator[tuple[str, str | None]]:
    """Padding units in order, each with the skill it pre-loads: skill bodies by name, then the
    numbered paragraphs, forever."""
    policy = policy or PaddingPolicy()
    if policy.skill_bodies:
        for skill in sorted(skills, key=lambda s: s.name):
            yield skill_format.wrap(skill, skill_format.reference), skill.name
    paragraphs = policy.paragraphs
    for number in counter(1):
        yield f"§{number}. {paragraphs[(number - 1) % len(paragraphs)]}", None


def pad_to_floor(
    prefix_tokens: int,
    floor: int,
    skills: Sequence[Skill],
    count: Callable[[str], int],
    *,
    margin: int | None = None,
    policy: PaddingPolicy | None = None,
    skill_format: SkillFormat = DEFAULT_SKILL_FORMAT,
) -> Padding:
    """Padding that lifts a prefix of ``prefix_tokens`` to at least ``floor + margin`` tokens.

    ``count`` must be the same lower-bound counter the caller used for ``prefix_tokens``.
    Returns empty padding when the prefix is already long enough. Units are separated by a
    blank line, which keeps the counts additive. A unit that would pass ``policy.max_tokens``
    is not added (padding stops before the bound).
    """
    policy = policy or PaddingPolicy()
    target = floor + (policy.margin if margin is None else margin)
    if policy.min_tokens is not None:
        target = max(target, policy.min_tokens)
    if prefix_tokens >= target:
        return Padding("", 0, 0)
    chosen: list[str] = []
    preloaded: list[str] = []
    total = 0
    # Upper bound on units: every unit counts at least one token, so this always terminates.
    for unit, skill in islice(padding_units(skills, policy, skill_format), len(skills) + target):
        size = max(1, count(unit))
        if policy.max_tokens is not None and prefix_tokens + total + size > policy.max_tokens:
            if skill is not None:
                continue  # a body too long for the bound is skipped; shorter units may still fit
            break
        chosen.append(unit)
        if skill is not None:
            preloaded.append(skill)
        total += size
        if prefix_tokens + total >= target:
            break
    return Padding("\n\n".join(chosen), total, len(chosen), tuple(preloaded))

"""What renderers consume and produce: the ordered assembly, the rendered request, its prefix report.

This module sits below both the contract (which builds an :class:`Assembly`) and the renderers
(which turn one into a :class:`RenderedRequest`), so neither imports the other's internals.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from promptlint import providers
from promptlint.contract.layers import (
    STABLE_STABILITIES,
    ContractError,
    Skill,
    SkillFormat,
    ToolSpec,
    canonical_json,
    escape_closing,
    sha256_hex,
)
from promptlint.contract.padding import Padding
from promptlint.contract.turns import CACHE_MARKERS, without_markers

if TYPE_CHECKING:  # only for annotations: the contract imports this module, not the reverse
    from promptlint.contract.contract import PromptContract

__all__ = ["CACHE_MARKERS", "Assembly", "PrefixReport", "RenderedRequest", "SkillLoad", "build_report",
           "data_provider", "without_markers"]

DEFAULT_MAX_TOKENS = 1024
"""Anthropic's required ``max_tokens`` when the caller gives none."""


def data_provider(renderer: str) -> str:
    """The provider whose data a renderer uses (both OpenAI renderers use ``openai``)."""
    return "openai" if renderer.startswith("openai") else renderer


@dataclass(frozen=True)
class PrefixReport:
    """The cacheable prefix of one rendering: canonical bytes, hashes and where it breaks."""

    provider: str
    model: str
    data: bytes
    sha256: str
    tokens: int
    token_method: str
    floor: int
    breakpoints: tuple[str, ...]
    layers: Mapping[str, str]
    """sha256 per layer present in the prefix, in prefix order (``(padding)`` included)."""
    cache_key: str | None = None
    preloaded: tuple[str, ...] = ()
    """Skills whose bodies the padding inlined (``load_reason="always"``), by name."""

    @property
    def cacheable(self) -> bool:
        """True when the counted prefix reaches the model's floor."""
        return self.tokens >= self.floor


@dataclass(frozen=True)
class SkillLoad:
    """One skill of one render: why it is in the request and what it cost the session.

    ``load_reason`` is ``"always"`` (its body is in the prefix, pre-loaded as padding) or
    ``"on_demand"`` (passed to ``render(skills=...)``). ``sent``: its body is in this request's
    context message. ``charged``: tokens this render charged to the session budget (0 when the
    skill was already charged this session, or is pre-loaded).
    """

    name: str
    load_reason: str
    tokens: int
    sent: bool
    charged: int


@dataclass
class Assembly:
    """Everything a renderer needs, already ordered and validated."""

    contract: "PromptContract"
    provider: str
    model: str
    tools: list[tuple[str, ToolSpec]]
    contract_blocks: list[tuple[str, str]]
    padding: Padding
    session_blocks: list[tuple[str, str]]
    turn_blocks: list[tuple[str, str]]
    skills: tuple[Skill, ...]
    history: list[dict[str, Any]]
    family: str
    ttl: str | None
    rolling_breakpoints: int
    rolling_ttl: str | None = None
    max_tokens: int | None = None
    skill_format: SkillFormat = SkillFormat()
    skill_loads: tuple[SkillLoad, ...] = ()

    @property
    def contract_text(self) -> str:
        """Global and project text, then padding: the block shared by every session."""
        parts = [text for _, text in self.contract_blocks]
        if self.padding.text:
            parts.append(self.padding.text)
        return "\n\n".join(parts)

    @property
    def session_text(self) -> str:
        """The session layers' text (stable within a session)."""
        return "\n\n".join(text for _, text in self.session_blocks)

    @property
    def context_text(self) -> str:
        """Per-request content: turn layers then matched skill bodies (one user-role block).

        Text that would close a ``<context>`` or skill wrapper is escaped.
        """
        parts = [f'<context name="{name}">\n{escape_closing(text, ("context",))}\n</context>'
                 for name, text in self.turn_blocks]
        parts.extend(self.skill_format.wrap(skill) for skill in sorted(self.skills, key=lambda s: s.name))
        return "\n\n".join(parts)

    def layer_fragments(self, rendered_tools: Mapping[str, Any]) -> dict[str, bytes]:
        """Bytes of every layer in the prefix, in order, for the per-layer hashes."""
        fragments: dict[str, bytes] = {}
        texts = dict(self.contract_blocks)
        for layer in self.contract.layers:
            if layer.stability == "turn":
                continue
            if layer.tools is not None:
                fragments[layer.name] = canonical_json(rendered_tools[layer.name])
            elif layer.stability in STABLE_STABILITIES:
                fragments[layer.name] = texts[layer.name].encode("utf-8")
            else:
                fragments[layer.name] = dict(self.session_blocks)[layer.name].encode("utf-8")
        if self.padding.text:
            fragments["(padding)"] = self.padding.text.encode("utf-8")
        return fragments


class RenderedRequest(dict):
    """Keyword arguments for the provider SDK call, plus what the assembler knows about them.

    ``ephemeral`` lists indexes (into ``messages``/``input``/``contents``) of the items that
    carry the per-request context; ``conversation_start`` is the index where the conversation
    begins (after the leading stable system/developer items); ``skills`` says which skills the
    request carries and why (:class:`SkillLoad`). :meth:`history` gives what to persist.
    """

    provider: str
    model: str
    prefix: PrefixReport
    ephemeral: tuple[int, ...]
    messages_key: str
    cache_create: dict[str, Any] | None
    conversation_start: int = 0
    skills: tuple[SkillLoad, ...] = ()
    turns: list[dict[str, Any]]

    def history(self) -> list[dict[str, Any]]:
        """The conversation to persist and pass back as ``messages=`` next turn.

        Provider-neutral turns (see :mod:`promptlint.contract.turns`): no stable system or
        developer items, no per-request context, no cache markers. Every renderer takes them
        back as they are.
        """
        return copy.deepcopy(self.turns)

    def with_cached_content(self, cache_name: str) -> dict[str, Any]:
        """Gemini: the per-request kwargs once ``caches.create(**cache_create)`` returned ``cache_name``."""
        if self.cache_create is None:
            raise ContractError(f"{self.provider} renderings have no explicit cache split")
        config = {k: v for k, v in self["config"].items() if k not in ("system_instruction", "tools", "tool_config")}
        return {"model": self["model"], "contents": self["contents"], "config": {**config, "cached_content": cache_name}}


def finish(assembly: Assembly, kwargs: dict[str, Any], *, messages_key: str, ephemeral: tuple[int, ...],
           conversation_start: int, prefix: PrefixReport, cache_create: dict[str, Any] | None = None) -> RenderedRequest:
    """Wrap a renderer's kwargs with what the assembler knows about them."""
    request = RenderedRequest(kwargs)
    request.provider, request.model, request.prefix = assembly.provider, assembly.model, prefix
    request.ephemeral, request.messages_key, request.cache_create = ephemeral, messages_key, cache_create
    request.conversation_start, request.skills = conversation_start, assembly.skill_loads
    request.turns = copy.deepcopy(assembly.history)
    return request


def build_report(assembly: Assembly, document: Mapping[str, Any], rendered_tools: Mapping[str, Any],
                 breakpoints: Sequence[str], cache_key: str | None = None) -> PrefixReport:
    """Canonicalise a renderer's prefix document into a :class:`PrefixReport`."""
    data = canonical_json(document)
    text_for_count = "\n\n".join(
        [canonical_json([spec.neutral() for _, spec in assembly.tools]).decode(), assembly.contract_text, assembly.session_text]
    )
    count = providers.count_tokens(text_for_count, data_provider(assembly.provider), assembly.model, allow_tiktoken=False)
    fragments = assembly.layer_fragments(rendered_tools)
    return PrefixReport(
        provider=assembly.provider,
        model=assembly.model,
        data=data,
        sha256=sha256_hex(data),
        tokens=count.n,
        token_method=count.method,
        floor=providers.cache_floor(data_provider(assembly.provider), assembly.model),
        breakpoints=tuple(breakpoints),
        layers={name: sha256_hex(fragment) for name, fragment in fragments.items()},
        cache_key=cache_key,
        preloaded=assembly.padding.preloaded,
    )

"""The prompt contract, its sessions, and the provider-neutral assembly renderers consume."""

from __future__ import annotations

import re
import warnings
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping, Sequence

from promptlint import providers
from promptlint.contract.layers import (
    STABLE_STABILITIES,
    ContractError,
    Layer,
    Skill,
    ToolSpec,
    canonical_json,
    rank,
    sha256_hex,
)
from promptlint.contract.padding import Padding, pad_to_floor

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-haiku-4-5",
    "openai": "gpt-4.1",
    "openai-responses": "gpt-5.6-luna",
    "gemini": "gemini-2.5-flash",
}
"""The model each renderer uses when none is given (and that goldens record)."""

SESSION_PLACEHOLDER = "<session-layer:{name}>"
"""What a session layer holds when a prefix is hashed without a session (goldens)."""


class SkillBudgetError(ContractError):
    """A render would exceed the session's skill budget."""


class SkillBudgetWarning(UserWarning):
    """The session's skill tokens crossed the warning threshold."""


@dataclass(frozen=True)
class SkillBudget:
    """Per-session skill limits (the Metis spec): distinct explicit activations and tokens."""

    max_activations: int = 3
    warn_tokens: int = 10_000
    max_tokens: int = 30_000


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

    @property
    def cacheable(self) -> bool:
        """True when the counted prefix reaches the model's floor."""
        return self.tokens >= self.floor


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
        """Per-request content: turn layers then matched skill bodies (one user-role message)."""
        parts = [f'<context name="{name}">\n{text}\n</context>' for name, text in self.turn_blocks]
        parts.extend(skill.wrapped() for skill in sorted(self.skills, key=lambda s: s.name))
        return "\n\n".join(parts)

    def layer_fragments(self, rendered_tools: Mapping[str, Any]) -> dict[str, bytes]:
        """Bytes of every layer in the prefix, in order, for the per-layer hashes."""
        fragments: dict[str, bytes] = {}
        for layer in self.contract.layers:
            if layer.stability == "turn":
                continue
            if layer.tools is not None:
                fragments[layer.name] = canonical_json(rendered_tools[layer.name])
            elif layer.stability in STABLE_STABILITIES:
                fragments[layer.name] = (layer.content_text() or "").encode("utf-8")
            else:
                fragments[layer.name] = dict(self.session_blocks)[layer.name].encode("utf-8")
        if self.padding.text:
            fragments["(padding)"] = self.padding.text.encode("utf-8")
        return fragments

    def split_history(self) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
        """History before the context message, and the final user message after it."""
        if self.history and self.history[-1].get("role") == "user":
            return self.history[:-1], self.history[-1:]
        return list(self.history), []


@dataclass(frozen=True)
class PromptContract:
    """A versioned, ordered set of layers, stable first.

    ``version`` is a label (``px3``) bumped on every intended change of the stable prefix;
    goldens tie each version to its prefix hashes.
    """

    name: str
    version: str
    layers: Sequence[Layer]
    models: Mapping[str, str] = field(default_factory=dict)
    skill_budget: SkillBudget = SkillBudget()

    def __post_init__(self) -> None:
        if not re.fullmatch(r"[A-Za-z0-9][A-Za-z0-9._-]{0,63}", self.name or ""):
            raise ContractError(f"contract name {self.name!r} must be 1-64 of letters, digits, '.', '_' or '-'")
        if not self.version or not self.version.strip() or "\n" in self.version:
            raise ContractError(f"contract {self.name!r}: version must be a non-empty one-line label like 'px1'")
        object.__setattr__(self, "layers", tuple(self.layers))
        seen: dict[str, Layer] = {}
        previous: Layer | None = None
        for layer in self.layers:
            if not isinstance(layer, Layer):
                raise ContractError(f"contract {self.name!r}: {layer!r} is not a Layer")
            if layer.name in seen or layer.name.startswith("("):
                raise ContractError(f"contract {self.name!r}: duplicate layer name {layer.name!r}")
            if previous is not None and rank(layer.stability) < rank(previous.stability):
                raise ContractError(
                    f"contract {self.name!r}: layer {layer.name!r} ({layer.stability}) comes after "
                    f"layer {previous.name!r} ({previous.stability}); every byte of a more stable layer "
                    "must come before every byte of a less stable one, so move it up"
                )
            seen[layer.name] = layer
            previous = layer
        tool_names = [spec.name for layer in self.layers for spec in layer.tool_specs]
        if len(set(tool_names)) != len(tool_names):
            raise ContractError(f"contract {self.name!r}: a tool name appears in two layers: {tool_names}")
        unknown = set(self.models) - set(DEFAULT_MODELS)
        if unknown:
            raise ContractError(f"contract {self.name!r}: models= names unknown renderers {sorted(unknown)}")
        object.__setattr__(self, "models", {**DEFAULT_MODELS, **dict(self.models)})

    def layer(self, name: str) -> Layer:
        """The layer called ``name``."""
        for layer in self.layers:
            if layer.name == name:
                return layer
        raise ContractError(f"contract {self.name!r} has no layer {name!r}")

    def layers_of(self, stability: str) -> tuple[Layer, ...]:
        """The layers of one stability, in order."""
        return tuple(layer for layer in self.layers if layer.stability == stability)

    @property
    def catalogue(self) -> tuple[Skill, ...]:
        """Every skill listed in a stable skill index, by name."""
        skills = [skill for layer in self.layers for skill in (layer.skills or ())]
        return tuple(sorted(skills, key=lambda s: s.name))

    def session(self, family: str | None = None, values: Mapping[str, str] | None = None, **session_values: str) -> "Session":
        """Open a session: fill every session layer (by keyword or ``values=``).

        ``family`` is the fork-root id of the conversation family; it feeds cache keys only
        through a hash. Filling a global/project layer here, or a turn layer, is an error.
        """
        filled = {**dict(values or {}), **session_values}
        for name, value in filled.items():
            layer = self.layer(name)
            if layer.stability != "session":
                when = "per request (pass it to render(turn=...))" if layer.stability == "turn" else "only by a new contract version"
                raise ContractError(
                    f"contract {self.name!r}: layer {name!r} is {layer.stability}; it changes {when}, not per session"
                )
            if not isinstance(value, str):
                raise ContractError(f"session layer {name!r} must be text, got {type(value).__name__}")
        missing = [layer.name for layer in self.layers_of("session") if layer.name not in filled]
        if missing:
            raise ContractError(f"contract {self.name!r}: session layer(s) {', '.join(missing)} not filled")
        return Session(self, {layer.name: filled[layer.name] for layer in self.layers_of("session")}, family or "root")

    def placeholder_session(self) -> "Session":
        """A session whose layers hold fixed placeholders: the shape goldens are taken of."""
        return self.session(values={layer.name: SESSION_PLACEHOLDER.format(name=layer.name) for layer in self.layers_of("session")})

    def prefix_report(self, provider: str, model: str | None = None, session: "Session | None" = None) -> PrefixReport:
        """The cacheable prefix of ``provider``'s rendering (placeholder session by default)."""
        return (session or self.placeholder_session()).render(provider, model).prefix

    def prefix_bytes(self, provider: str, model: str | None = None, session: "Session | None" = None) -> bytes:
        """Canonical bytes (sorted-key JSON, fixed separators, UTF-8) of the cacheable prefix."""
        return self.prefix_report(provider, model, session).data

    def prefix_hash(self, provider: str, model: str | None = None, session: "Session | None" = None) -> str:
        """sha256 of :meth:`prefix_bytes`."""
        return self.prefix_report(provider, model, session).sha256


class Session:
    """A contract with its session layers filled, its family id and its skill budget."""

    def __init__(self, contract: PromptContract, values: Mapping[str, str], family: str) -> None:
        self.contract = contract
        self.values = dict(values)
        self.family = family
        self.activated: list[str] = []
        self.skill_tokens = 0

    def _charge_skills(self, skills: Sequence[Skill], provider: str, model: str) -> None:
        budget = self.contract.skill_budget
        new = [skill.name for skill in skills if skill.name not in self.activated]
        if len(self.activated) + len(new) > budget.max_activations:
            raise SkillBudgetError(
                f"session of {self.contract.name!r}: activating {new} would make "
                f"{len(self.activated) + len(new)} skills this session (limit {budget.max_activations}; "
                f"already active: {self.activated or 'none'})"
            )
        tokens = sum(providers.count_tokens(skill.wrapped(), _data_provider(provider), model, allow_tiktoken=False).n for skill in skills)
        total = self.skill_tokens + tokens
        if total > budget.max_tokens:
            raise SkillBudgetError(
                f"session of {self.contract.name!r}: skill bodies would reach {total} tokens "
                f"(limit {budget.max_tokens}); start a new session or drop a skill"
            )
        if self.skill_tokens < budget.warn_tokens <= total:
            warnings.warn(
                f"session of {self.contract.name!r}: skill bodies reached {total} tokens (warning at {budget.warn_tokens})",
                SkillBudgetWarning,
                stacklevel=3,
            )
        self.activated.extend(new)
        self.skill_tokens = total

    def assemble(
        self,
        provider: str,
        model: str | None = None,
        *,
        turn: Mapping[str, str] | None = None,
        messages: Iterable[Mapping[str, Any]] | None = None,
        skills: Sequence[Skill] = (),
        ttl: str | None = None,
        rolling_breakpoints: int = 0,
        pad: bool = True,
    ) -> Assembly:
        """Validate per-request inputs and order everything (no provider shape yet)."""
        if provider not in DEFAULT_MODELS:
            raise ContractError(f"unknown renderer {provider!r}; expected one of: {', '.join(DEFAULT_MODELS)}")
        model = model or self.contract.models[provider]
        data_provider = _data_provider(provider)
        if ttl is not None and ttl not in providers.ttls(data_provider):
            raise ContractError(f"{provider} accepts ttl {' or '.join(providers.ttls(data_provider))}, not {ttl!r}")
        turn = dict(turn or {})
        for name, value in turn.items():
            layer = self.contract.layer(name)
            if layer.stability != "turn":
                raise ContractError(
                    f"contract {self.contract.name!r}: layer {name!r} is {layer.stability} and cannot change per turn; "
                    + ("fill it when opening the session" if layer.stability == "session" else "bump the contract version to change it")
                )
            if not isinstance(value, str):
                raise ContractError(f"turn layer {name!r} must be text, got {type(value).__name__}")
        if rolling_breakpoints < 0:
            raise ContractError("rolling_breakpoints must be >= 0")
        skills = tuple(skills)
        if len({skill.name for skill in skills}) != len(skills):
            raise ContractError(f"a skill is activated twice in one request: {[s.name for s in skills]}")
        history = [_message(m) for m in (messages or ())]
        if skills:
            self._charge_skills(skills, provider, model)

        tools = [(layer.name, spec) for layer in self.contract.layers for spec in layer.tool_specs]
        contract_blocks = [
            (layer.name, layer.content_text() or "")
            for layer in self.contract.layers
            if layer.stability in STABLE_STABILITIES and layer.tools is None
        ]
        padding = Padding("", 0, 0)
        if pad:
            def count(text: str) -> int:
                return providers.count_tokens(text, data_provider, model, allow_tiktoken=False).n

            stable_text = "\n\n".join(text for _, text in contract_blocks)
            base = count(stable_text) + count(canonical_json([spec.neutral() for _, spec in tools]).decode())
            padding = pad_to_floor(base, providers.cache_floor(data_provider, model), self.contract.catalogue, count)
        return Assembly(
            contract=self.contract,
            provider=provider,
            model=model,
            tools=tools,
            contract_blocks=contract_blocks,
            padding=padding,
            session_blocks=[(name, text) for name, text in self.values.items()],
            turn_blocks=[(layer.name, turn[layer.name]) for layer in self.contract.layers_of("turn") if turn.get(layer.name)],
            skills=skills,
            history=history,
            family=self.family,
            ttl=ttl,
            rolling_breakpoints=rolling_breakpoints,
        )

    def render(
        self,
        provider: str,
        model: str | None = None,
        *,
        turn: Mapping[str, str] | None = None,
        messages: Iterable[Mapping[str, Any]] | None = None,
        skills: Sequence[Skill] = (),
        ttl: str | None = None,
        rolling_breakpoints: int = 0,
        pad: bool = True,
    ) -> "RenderedRequest":
        """Render one request for ``provider`` (``anthropic``, ``openai``, ``openai-responses``, ``gemini``).

        Options: ``turn`` (turn-layer text by name), ``messages`` (history, ``{"role",
        "content"}``, the last one the user's message), ``skills`` (matched :class:`Skill`s),
        ``ttl``, ``rolling_breakpoints`` (Anthropic / OpenAI 5.6+), ``pad`` (default True).
        Returns the SDK call's keyword arguments (a dict) with the prefix report attached.
        """
        from promptlint.contract.renderers import RENDERERS

        spent = (list(self.activated), self.skill_tokens)
        assembly = self.assemble(provider, model, turn=turn, messages=messages, skills=skills, ttl=ttl,
                                 rolling_breakpoints=rolling_breakpoints, pad=pad)
        try:
            return RENDERERS[provider](assembly)
        except BaseException:
            self.activated, self.skill_tokens = spent  # a request never built spends no skill budget
            raise


CACHE_MARKERS: tuple[str, ...] = ("cache_control", "prompt_cache_breakpoint")
"""Block keys that place a cache breakpoint (Anthropic, OpenAI GPT-5.6+)."""

_TEXT_BLOCKS = ({"type": "text"}, {"type": "input_text"})


def without_markers(content: Any) -> Any:
    """``content`` with every cache marker removed, and a lone text block back to a string.

    Breakpoints are placed per request (rolling ones move every turn); a marker kept in
    persisted history would pile up next to the new ones and push a request past the
    provider's limit (a 400). Undoing the string-to-block conversion the renderers do when
    they mark a message makes the next rendering byte-identical to one from plain strings.
    """
    if not isinstance(content, list):
        return content
    blocks = [{k: v for k, v in block.items() if k not in CACHE_MARKERS} if isinstance(block, Mapping) else block
              for block in content]
    if len(blocks) == 1 and isinstance(blocks[0], dict) and isinstance(blocks[0].get("text"), str) \
            and {k: v for k, v in blocks[0].items() if k != "text"} in _TEXT_BLOCKS:
        return blocks[0]["text"]
    return blocks


class RenderedRequest(dict):
    """Keyword arguments for the provider SDK call, plus what the assembler knows about them.

    ``ephemeral`` lists indexes (into ``messages``/``input``/``contents``) of the per-request
    context message; ``conversation_start`` is the index where the conversation begins (after
    the leading stable system/developer items). :meth:`history` gives what to persist.
    """

    provider: str
    model: str
    prefix: PrefixReport
    ephemeral: tuple[int, ...]
    messages_key: str
    cache_create: dict[str, Any] | None
    conversation_start: int = 0

    def history(self) -> list[Any]:
        """The conversation to persist and pass back as ``messages=`` next turn.

        Leading stable system/developer items and the ephemeral context message are dropped,
        and cache markers removed (see :func:`without_markers`).
        """
        items = self[self.messages_key]
        kept = []
        for index in range(self.conversation_start, len(items)):
            if index in self.ephemeral:
                continue
            item = dict(items[index])
            if "content" in item:
                item["content"] = without_markers(item["content"])
            kept.append(item)
        return kept

    def with_cached_content(self, cache_name: str) -> dict[str, Any]:
        """Gemini: the per-request kwargs once ``caches.create(**cache_create)`` returned ``cache_name``."""
        if self.cache_create is None:
            raise ContractError(f"{self.provider} renderings have no explicit cache split")
        return {"model": self["model"], "contents": self["contents"], "config": {"cached_content": cache_name}}


def _data_provider(renderer: str) -> str:
    return "openai" if renderer.startswith("openai") else renderer


def _message(message: Mapping[str, Any]) -> dict[str, Any]:
    """One history message as ``{"role", "content"}``, markers removed.

    Accepts the neutral shape and what :meth:`RenderedRequest.history` returns for every
    renderer (Anthropic/OpenAI content blocks, Gemini ``{"role": "model", "parts": [...]}``).
    """
    if isinstance(message, Mapping) and "parts" in message and "content" not in message:
        role = {"user": "user", "model": "assistant"}.get(message.get("role"))  # type: ignore[arg-type]
        parts = message["parts"]
        texts = [part.get("text") for part in parts] if isinstance(parts, list) and all(isinstance(p, Mapping) for p in parts) else None
        if role is None or not texts or not all(isinstance(text, str) for text in texts):
            raise ContractError(f"a Gemini history item must have role 'user' or 'model' and text parts, got {message!r}")
        content: Any = texts[0] if len(texts) == 1 else [{"type": "text", "text": text} for text in texts]
        return {"role": role, "content": content}
    if not isinstance(message, Mapping) or message.get("role") not in ("user", "assistant"):
        raise ContractError(f"a message must be a mapping with role 'user' or 'assistant', got {message!r}")
    if "content" not in message:
        raise ContractError(f"message {message!r} has no content")
    return {"role": message["role"], "content": without_markers(message["content"])}


def build_report(assembly: Assembly, document: Mapping[str, Any], rendered_tools: Mapping[str, Any],
                 breakpoints: Sequence[str], cache_key: str | None = None) -> PrefixReport:
    """Canonicalise a renderer's prefix document into a :class:`PrefixReport`."""
    data = canonical_json(document)
    text_for_count = "\n\n".join(
        [canonical_json([spec.neutral() for _, spec in assembly.tools]).decode(), assembly.contract_text, assembly.session_text]
    )
    count = providers.count_tokens(text_for_count, _data_provider(assembly.provider), assembly.model, allow_tiktoken=False)
    fragments = assembly.layer_fragments(rendered_tools)
    return PrefixReport(
        provider=assembly.provider,
        model=assembly.model,
        data=data,
        sha256=sha256_hex(data),
        tokens=count.n,
        token_method=count.method,
        floor=providers.cache_floor(_data_provider(assembly.provider), assembly.model),
        breakpoints=tuple(breakpoints),
        layers={name: sha256_hex(fragment) for name, fragment in fragments.items()},
        cache_key=cache_key,
    )

"""The prompt contract, its sessions, and the provider-neutral assembly renderers consume."""

from __future__ import annotations

import difflib
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
    SkillFormat,
    canonical_json,
    rank,
)
from promptlint.contract.padding import Padding, PaddingPolicy, pad_to_floor
from promptlint.contract.renderers import RENDERERS
from promptlint.contract.request import (
    CACHE_MARKERS,
    Assembly,
    PrefixReport,
    RenderedRequest,
    SkillLoad,
    data_provider,
    without_markers,
)
from promptlint.contract.turns import neutral_turns

__all__ = ["CACHE_MARKERS", "DEFAULT_MODELS", "Assembly", "PrefixReport", "PromptContract", "RenderedRequest",
           "Session", "SkillBudget", "SkillBudgetError", "SkillBudgetWarning", "SkillLoad", "without_markers"]

DEFAULT_MODELS: dict[str, str] = {
    "anthropic": "claude-haiku-4-5",
    "openai": "gpt-4.1",
    "openai-responses": "gpt-5.6-luna",
    "gemini": "gemini-2.5-flash",
}
"""The model each renderer uses when none is given (and that goldens record)."""

SESSION_PLACEHOLDER = "<session-layer:{name}>"
"""What a session layer holds when a prefix is hashed without a session (goldens)."""


PREFIX_TURN = {"role": "user", "content": "(prefix report)"}


class SkillBudgetError(ContractError):
    """A render would exceed the session's skill budget."""


class SkillBudgetWarning(UserWarning):
    """The session's skill tokens crossed the warning threshold."""


@dataclass(frozen=True)
class SkillBudget:
    """Skill limits. Per session (the Metis spec): distinct explicit activations and their
    tokens, each skill charged once however often it is re-sent. Per turn (the CrowClaw
    harness): at most ``max_per_turn`` skills and ``max_tokens_per_turn`` tokens of skill
    bodies in one request (None: no per-turn limit). Pre-loaded skills cost nothing."""

    max_activations: int = 3
    warn_tokens: int = 10_000
    max_tokens: int = 30_000
    max_per_turn: int | None = None
    max_tokens_per_turn: int | None = None

    def __post_init__(self) -> None:
        for name in ("max_activations", "warn_tokens", "max_tokens", "max_per_turn", "max_tokens_per_turn"):
            value = getattr(self, name)
            if value is not None and (not isinstance(value, int) or isinstance(value, bool) or value < 0):
                raise ContractError(f"SkillBudget.{name} must be a non-negative integer, got {value!r}")


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
    skill_format: SkillFormat = SkillFormat()
    padding: PaddingPolicy = PaddingPolicy()

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
        for renderer, model in dict(self.models).items():
            check_model(renderer, model)
        for name, kind in (("skill_budget", SkillBudget), ("skill_format", SkillFormat), ("padding", PaddingPolicy)):
            if not isinstance(getattr(self, name), kind):
                raise ContractError(f"contract {self.name!r}: {name}= must be a {kind.__name__}")
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
        # The prefix never depends on the conversation; one placeholder turn makes a valid request.
        return (session or self.placeholder_session()).render(provider, model, messages=[PREFIX_TURN]).prefix

    def prefix_bytes(self, provider: str, model: str | None = None, session: "Session | None" = None) -> bytes:
        """Canonical bytes (sorted-key JSON, fixed separators, UTF-8) of the cacheable prefix."""
        return self.prefix_report(provider, model, session).data

    def prefix_hash(self, provider: str, model: str | None = None, session: "Session | None" = None) -> str:
        """sha256 of :meth:`prefix_bytes`."""
        return self.prefix_report(provider, model, session).sha256


class Session:
    """A contract with its session layers filled, its family id and its skill budget.

    ``activated`` lists the distinct skills charged this session, in order; ``skill_tokens``
    their tokens (each skill counted once, however often it is re-sent).
    """

    def __init__(self, contract: PromptContract, values: Mapping[str, str], family: str) -> None:
        self.contract = contract
        self.values = dict(values)
        self.family = family
        self.activated: list[str] = []
        self.skill_tokens = 0

    def _charge_skills(self, skills: Sequence[Skill], preloaded: Sequence[str], provider: str, model: str) -> tuple[SkillLoad, ...]:
        budget = self.contract.skill_budget
        fmt = self.contract.skill_format
        sent = [skill for skill in skills if skill.name not in preloaded]
        sizes = {skill.name: providers.count_tokens(fmt.wrap(skill), data_provider(provider), model, allow_tiktoken=False).n
                 for skill in sent}
        if budget.max_per_turn is not None and len(sent) > budget.max_per_turn:
            raise SkillBudgetError(f"session of {self.contract.name!r}: {len(sent)} skills in one request "
                                   f"(per-turn limit {budget.max_per_turn}): {[s.name for s in sent]}")
        if budget.max_tokens_per_turn is not None and sum(sizes.values()) > budget.max_tokens_per_turn:
            raise SkillBudgetError(f"session of {self.contract.name!r}: skill bodies of {sum(sizes.values())} tokens in one "
                                   f"request (per-turn limit {budget.max_tokens_per_turn}); send fewer skills")
        new = [skill.name for skill in sent if skill.name not in self.activated]
        if len(self.activated) + len(new) > budget.max_activations:
            raise SkillBudgetError(
                f"session of {self.contract.name!r}: activating {new} would make "
                f"{len(self.activated) + len(new)} skills this session (limit {budget.max_activations}; "
                f"already active: {self.activated or 'none'})"
            )
        tokens = sum(sizes[name] for name in new)
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
                stacklevel=4,
            )
        self.activated.extend(new)
        self.skill_tokens = total
        loads = [SkillLoad(name, "always", 0, False, 0) for name in preloaded]
        loads += [SkillLoad(skill.name, "on_demand", sizes[skill.name], True, sizes[skill.name] if skill.name in new else 0)
                  for skill in sent]
        return tuple(loads)

    def assemble(
        self,
        provider: str,
        model: str | None = None,
        *,
        turn: Mapping[str, str] | None = None,
        messages: Iterable[Mapping[str, Any]] | None = None,
        skills: Sequence[Skill] = (),
        ttl: str | None = None,
        rolling_ttl: str | None = None,
        rolling_breakpoints: int = 0,
        max_tokens: int | None = None,
        pad: bool = True,
    ) -> Assembly:
        """Validate per-request inputs and order everything (no provider shape yet)."""
        if provider not in DEFAULT_MODELS:
            raise ContractError(f"unknown renderer {provider!r}; expected one of: {', '.join(DEFAULT_MODELS)}")
        model = model or self.contract.models[provider]
        check_model(provider, model)
        provider_data = data_provider(provider)
        check_ttls(provider, ttl, rolling_ttl)
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
        if not isinstance(rolling_breakpoints, int) or isinstance(rolling_breakpoints, bool) or rolling_breakpoints < 0:
            raise ContractError("rolling_breakpoints must be an integer >= 0")
        if max_tokens is not None and (not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1):
            raise ContractError(f"max_tokens must be a positive integer, got {max_tokens!r}")
        skills = tuple(skills)
        if not all(isinstance(skill, Skill) for skill in skills):
            raise ContractError(f"skills= takes Skill objects, got {[type(s).__name__ for s in skills]}")
        if len({skill.name for skill in skills}) != len(skills):
            raise ContractError(f"a skill is activated twice in one request: {[s.name for s in skills]}")
        if messages is None or isinstance(messages, (str, bytes, Mapping)):
            raise ContractError("messages= must be a list of turns ending with the user's message")
        history = neutral_turns(messages)
        if not history:
            raise ContractError("messages= is empty: a request needs at least the user's message")

        fmt = self.contract.skill_format
        tools = [(layer.name, spec) for layer in self.contract.layers for spec in layer.tool_specs]

        def stable_blocks(preloaded: frozenset[str]) -> list[tuple[str, str]]:
            return [(layer.name, layer.content_text(fmt, preloaded) or "") for layer in self.contract.layers
                    if layer.stability in STABLE_STABILITIES and layer.tools is None]

        contract_blocks = stable_blocks(frozenset())
        padding = Padding("", 0, 0)
        if pad:
            def count(text: str) -> int:
                return providers.count_tokens(text, provider_data, model, allow_tiktoken=False).n

            stable_text = "\n\n".join(text for _, text in contract_blocks)
            base = count(stable_text) + count(canonical_json([spec.neutral() for _, spec in tools]).decode())
            padding = pad_to_floor(base, providers.cache_floor(provider_data, model), self.contract.catalogue, count,
                                   policy=self.contract.padding, skill_format=fmt)
            # Marking pre-loaded skills only lengthens the index, so the prefix stays above the floor.
            contract_blocks = stable_blocks(frozenset(padding.preloaded))
        loads = self._charge_skills(skills, padding.preloaded, provider, model)
        return Assembly(
            contract=self.contract,
            provider=provider,
            model=model,
            tools=tools,
            contract_blocks=contract_blocks,
            padding=padding,
            session_blocks=[(name, text) for name, text in self.values.items()],
            turn_blocks=[(layer.name, turn[layer.name]) for layer in self.contract.layers_of("turn") if turn.get(layer.name)],
            skills=tuple(skill for skill in skills if skill.name not in padding.preloaded),
            history=history,
            family=self.family,
            ttl=ttl,
            rolling_breakpoints=rolling_breakpoints,
            rolling_ttl=rolling_ttl,
            max_tokens=max_tokens,
            skill_format=fmt,
            skill_loads=loads,
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
        rolling_ttl: str | None = None,
        rolling_breakpoints: int = 0,
        max_tokens: int | None = None,
        pad: bool = True,
    ) -> RenderedRequest:
        """Render one request for ``provider`` (``anthropic``, ``openai``, ``openai-responses``, ``gemini``).

        Options: ``turn`` (turn-layer text by name), ``messages`` (the conversation as neutral
        turns or any renderer's shapes, the last one the user's message or tool results),
        ``skills`` (matched :class:`Skill`s), ``ttl`` (stable breakpoints; Gemini: the explicit
        cache's duration), ``rolling_ttl`` (rolling breakpoints, default ``ttl``),
        ``rolling_breakpoints`` (Anthropic / OpenAI 5.6+), ``max_tokens``, ``pad`` (default True).
        Returns the SDK call's keyword arguments (a dict) with the prefix report attached.
        """
        spent = (list(self.activated), self.skill_tokens)
        try:
            assembly = self.assemble(provider, model, turn=turn, messages=messages, skills=skills, ttl=ttl,
                                     rolling_ttl=rolling_ttl, rolling_breakpoints=rolling_breakpoints,
                                     max_tokens=max_tokens, pad=pad)
            return RENDERERS[provider](assembly)
        except BaseException:
            self.activated, self.skill_tokens = spent  # a request never built spends no skill budget
            raise


_GEMINI_DURATION = re.compile(r"[0-9]{1,12}(\.[0-9]{1,9})?s")


def check_ttls(renderer: str, ttl: str | None, rolling_ttl: str | None) -> None:
    """Raise :class:`ContractError` for a TTL the provider rejects (Gemini: any positive ``"<seconds>s"``)."""
    provider = data_provider(renderer)
    for name, value in (("ttl", ttl), ("rolling_ttl", rolling_ttl)):
        if value is None:
            continue
        if provider == "gemini":
            if name == "rolling_ttl":
                raise ContractError("gemini has no rolling breakpoints; rolling_ttl does not apply")
            if not isinstance(value, str) or not _GEMINI_DURATION.fullmatch(value) or float(value[:-1]) <= 0:
                raise ContractError(f"gemini ttl must be a positive duration in seconds like '300s' or '7200s', not {value!r}")
        elif value not in providers.ttls(provider):
            raise ContractError(f"{renderer} accepts {name} {' or '.join(providers.ttls(provider))}, not {value!r}")
    if provider == "anthropic" and (ttl or "5m") == "5m" and rolling_ttl == "1h":
        raise ContractError("anthropic: a 1h breakpoint may not follow a 5m one; with rolling_ttl='1h' set ttl='1h' too")


def check_model(renderer: str, model: Any) -> None:
    """Raise :class:`ContractError` unless ``model`` is a model id the renderer's provider data knows.

    An unknown id would silently get another model's cache floor (or another provider's).
    """
    if renderer not in DEFAULT_MODELS:
        raise ContractError(f"unknown renderer {renderer!r}; expected one of: {', '.join(DEFAULT_MODELS)}")
    provider = data_provider(renderer)
    if not isinstance(model, str) or not model:
        raise ContractError(f"{renderer}: the model must be a model id string, got {model!r}")
    if providers.is_known_model(provider, model):
        return
    owners = [name for name in providers.PROVIDERS if name != provider and providers.is_known_model(name, model)]
    if owners:
        raise ContractError(f"model {model!r} is a {owners[0]} model; the {renderer} renderer needs a {provider} model "
                            f"(e.g. {DEFAULT_MODELS[renderer]})")
    close = difflib.get_close_matches(model, providers.known_models(provider), n=3, cutoff=0.6)
    hint = f"did you mean {', '.join(close)}?" if close else f"known: {', '.join(providers.known_models(provider))}"
    raise ContractError(f"unknown {provider} model {model!r} (its cache floor is not in the provider data); {hint}")

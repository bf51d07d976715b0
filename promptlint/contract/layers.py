"""Layers, skills and tool specs: the provider-neutral parts of a prompt contract."""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

STABILITIES: tuple[str, ...] = ("global", "project", "session", "turn")
"""Stabilities from most to least stable; a layer never precedes a more stable one."""

STABLE_STABILITIES: frozenset[str] = frozenset({"global", "project"})
"""Stabilities fixed by the contract version (shared by every session)."""


class ContractError(ValueError):
    """A prompt contract is built or filled the wrong way; the message says how to fix it."""


def rank(stability: str) -> int:
    """Position of ``stability`` in :data:`STABILITIES` (0 is the most stable)."""
    return STABILITIES.index(stability)


def canonical_json(value: Any) -> bytes:
    """Canonical bytes of a JSON value: sorted keys, fixed separators, UTF-8, no ASCII escaping."""
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def sha256_hex(data: bytes) -> str:
    """Hex SHA-256 of ``data``."""
    return hashlib.sha256(data).hexdigest()


@dataclass(frozen=True)
class Skill:
    """A skill: its index line (``name``: ``description``) and the ``body`` injected when matched."""

    name: str
    description: str
    body: str

    def __post_init__(self) -> None:
        if not self.name or any(ch in self.name for ch in '"<>\n'):
            raise ContractError(f"skill name {self.name!r} must be non-empty without quotes, <, > or newlines")

    def wrapped(self) -> str:
        """The body as it enters a request: ``<skill name="..">body</skill>``."""
        return f'<skill name="{self.name}">\n{self.body}\n</skill>'


@dataclass(frozen=True)
class ToolSpec:
    """A provider-neutral function tool: name, description and a JSON-schema for its input."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    @classmethod
    def coerce(cls, value: Any) -> "ToolSpec":
        """Accept a ToolSpec or a mapping with name/description/parameters (or input_schema)."""
        if isinstance(value, ToolSpec):
            return value
        if not isinstance(value, Mapping) or "name" not in value:
            raise ContractError(f"a tool must be a ToolSpec or a mapping with a 'name', got {value!r}")
        schema = value.get("parameters", value.get("input_schema", {"type": "object", "properties": {}}))
        return cls(str(value["name"]), str(value.get("description", "")), json.loads(json.dumps(schema)))

    def neutral(self) -> dict[str, Any]:
        """The spec as a plain JSON object."""
        return {"name": self.name, "description": self.description, "parameters": dict(self.parameters)}


@dataclass(frozen=True)
class Layer:
    """One ordered layer of a prompt contract.

    ``global``/``project`` layers carry their content here (``text``, ``tools`` or a skill
    index ``skills``); ``session`` layers are filled by :meth:`PromptContract.session`,
    ``turn`` layers by :meth:`Session.render`.
    """

    name: str
    text: str | None = None
    stability: str = "global"
    tools: Sequence[Any] | None = None
    skills: Sequence[Skill] | None = None
    _tools: tuple[ToolSpec, ...] = field(default=(), init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if self.stability not in STABILITIES:
            raise ContractError(
                f"layer {self.name!r}: unknown stability {self.stability!r}; use one of {', '.join(STABILITIES)}"
            )
        if not self.name or not self.name.replace("_", "").replace("-", "").isalnum():
            raise ContractError(f"layer name {self.name!r} must be letters, digits, '-' or '_'")
        filled = [kind for kind, value in (("text", self.text), ("tools", self.tools), ("skills", self.skills)) if value is not None]
        if len(filled) > 1:
            raise ContractError(f"layer {self.name!r} holds {' and '.join(filled)}; give each its own layer")
        if self.stability in STABLE_STABILITIES and not filled:
            raise ContractError(
                f"layer {self.name!r} is {self.stability} but has no content; a {self.stability} layer "
                "is fixed by the contract version, so give it text=, tools= or skills="
            )
        if self.stability not in STABLE_STABILITIES and filled:
            raise ContractError(
                f"layer {self.name!r} is {self.stability}: its content is filled "
                f"{'per session' if self.stability == 'session' else 'per request'}, not in the contract; "
                "tools and skill indexes belong in global or project layers"
            )
        if self.tools is not None:
            specs = tuple(ToolSpec.coerce(tool) for tool in self.tools)
            names = [spec.name for spec in specs]
            if len(set(names)) != len(names):
                raise ContractError(f"layer {self.name!r}: duplicate tool names in {names}")
            object.__setattr__(self, "_tools", specs)
        if self.skills is not None:
            names = [skill.name for skill in self.skills]
            if len(set(names)) != len(names):
                raise ContractError(f"layer {self.name!r}: duplicate skill names in {names}")

    @property
    def tool_specs(self) -> tuple[ToolSpec, ...]:
        """The layer's tools, normalised, in declared order."""
        return self._tools

    def index_text(self) -> str:
        """The skill index of a ``skills=`` layer, sorted by name so it is stable."""
        lines = ["Available skills (ask for one by name):"]
        for skill in sorted(self.skills or (), key=lambda s: s.name):
            lines.append(f"- {skill.name}: {skill.description}")
        return "\n".join(lines)

    def content_text(self) -> str | None:
        """The system text this layer contributes (None for tool layers)."""
        if self.skills is not None:
            return self.index_text()
        return self.text

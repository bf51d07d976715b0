"""Layers, skills and tool specs: the provider-neutral parts of a prompt contract."""

from __future__ import annotations

import hashlib
import json
import re
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


def escape_closing(text: str, tags: "tuple[str, ...] | list[str]") -> str:
    """``text`` with every closing tag among ``tags`` (``</context``) written ``<\\/context``.

    Turn text and skill bodies sit inside ``<context>``/``<skill>`` wrappers; text that closed
    the wrapper would let a note or a tool result pose as the assembler's own structure.
    """
    for tag in tags:
        text = re.sub(f"</({re.escape(tag)})(?=[\\s>/]|$)", r"<\\/\1", text, flags=re.IGNORECASE)
    return text


def closing_tags(template: str) -> tuple[str, ...]:
    """Names of the tags a wrapper template closes after its ``{body}`` (``</skill>`` -> ``skill``)."""
    tail = template.split("{body}", 1)[-1]
    return tuple(dict.fromkeys(re.findall(r"</([A-Za-z][\w.-]*)", tail)))


@dataclass(frozen=True)
class SkillFormat:
    """How skills are written: the index (header, one line per skill) and the body wrapper.

    Templates use ``str.format`` fields: ``index_line`` takes ``{name}``, ``{description}`` and
    ``{preloaded}`` (``preloaded_mark`` for a skill whose body is in the prefix, else empty);
    ``wrapper`` (a matched skill, user content) and ``reference`` (a pre-loaded body in the
    padding) take ``{name}`` and ``{body}``.
    """

    index_header: str = "Available skills (ask for one by name):"
    index_line: str = "- {name}{preloaded}: {description}"
    preloaded_mark: str = " [preloaded]"
    wrapper: str = '<skill name="{name}">\n{body}\n</skill>'
    reference: str = '<skill-reference name="{name}">\n{body}\n</skill-reference>'

    def __post_init__(self) -> None:
        for field_name, needed in (("index_line", ("{name}", "{description}")), ("wrapper", ("{name}", "{body}")),
                                   ("reference", ("{name}", "{body}"))):
            template = getattr(self, field_name)
            if not isinstance(template, str) or any(token not in template for token in needed):
                raise ContractError(f"SkillFormat.{field_name} must be a string containing {' and '.join(needed)}")
            try:
                template.format(name="n", description="d", body="b", preloaded="")
            except (KeyError, IndexError, ValueError) as exc:
                raise ContractError(f"SkillFormat.{field_name}: bad template {template!r} ({exc})") from None

    def index(self, skills: "Sequence[Skill]", preloaded: "frozenset[str] | set[str]" = frozenset()) -> str:
        """The skill index, sorted by name; pre-loaded skills carry ``preloaded_mark``."""
        lines = [self.index_header] if self.index_header else []
        for skill in sorted(skills, key=lambda s: s.name):
            mark = self.preloaded_mark if skill.name in preloaded else ""
            lines.append(self.index_line.format(name=skill.name, description=skill.description, preloaded=mark))
        return "\n".join(lines)

    def wrap(self, skill: "Skill", template: str | None = None) -> str:
        """A skill body in ``wrapper`` (or ``template``), any closing tag of it in the body escaped."""
        template = template or self.wrapper
        return template.format(name=skill.name, body=escape_closing(skill.body, closing_tags(template)))


DEFAULT_SKILL_FORMAT = SkillFormat()


@dataclass(frozen=True)
class Skill:
    """A skill: its index line (``name``: ``description``) and the ``body`` injected when matched."""

    name: str
    description: str
    body: str

    def __post_init__(self) -> None:
        if not self.name or any(ch in self.name for ch in '"<>\n'):
            raise ContractError(f"skill name {self.name!r} must be non-empty without quotes, <, > or newlines")

    def wrapped(self, skill_format: SkillFormat | None = None) -> str:
        """The body as it enters a request: ``<skill name="..">body</skill>`` by default."""
        return (skill_format or DEFAULT_SKILL_FORMAT).wrap(self)


@dataclass(frozen=True)
class ToolSpec:
    """A provider-neutral function tool: name, description and a JSON-schema for its input."""

    name: str
    description: str
    parameters: Mapping[str, Any]

    def __post_init__(self) -> None:
        if not isinstance(self.name, str) or not re.fullmatch(r"[A-Za-z0-9_-]{1,64}", self.name):
            raise ContractError(f"tool name {self.name!r} must be 1-64 letters, digits, '_' or '-' (every provider's rule)")
        if not isinstance(self.parameters, Mapping):
            raise ContractError(f"tool {self.name!r}: parameters must be a JSON-schema object, got {type(self.parameters).__name__}")
        try:
            # Sorted keys: what the SDK sends is then exactly what the golden hashes (canonical JSON).
            schema = json.loads(canonical_json(self.parameters))
        except (TypeError, ValueError) as exc:
            raise ContractError(f"tool {self.name!r}: parameters are not JSON ({exc})") from None
        object.__setattr__(self, "parameters", schema)

    @classmethod
    def coerce(cls, value: Any) -> "ToolSpec":
        """Accept a ToolSpec or a mapping with name/description/parameters (or input_schema)."""
        if isinstance(value, ToolSpec):
            return value
        if not isinstance(value, Mapping) or "name" not in value:
            raise ContractError(f"a tool must be a ToolSpec or a mapping with a 'name', got {value!r}")
        schema = value.get("parameters", value.get("input_schema", {"type": "object", "properties": {}}))
        return cls(str(value["name"]), str(value.get("description", "")), schema)

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

    def index_text(self, skill_format: SkillFormat | None = None, preloaded: "frozenset[str] | set[str]" = frozenset()) -> str:
        """The skill index of a ``skills=`` layer, sorted by name so it is stable."""
        return (skill_format or DEFAULT_SKILL_FORMAT).index(self.skills or (), preloaded)

    def content_text(self, skill_format: SkillFormat | None = None, preloaded: "frozenset[str] | set[str]" = frozenset()) -> str | None:
        """The system text this layer contributes (None for tool layers)."""
        if self.skills is not None:
            return self.index_text(skill_format, preloaded)
        return self.text

"""The reference prompt assembler: a versioned contract of ordered layers, rendered per provider.

    from promptlint.contract import PromptContract, Layer, Skill

The contract orders layers global < project < session < turn, renders them to each provider's
wire shape with cache breakpoints, pads short prefixes up to the model's cache floor and hashes
the cacheable prefix (see docs/contract.md).
"""

from promptlint.contract.contract import (
    CACHE_MARKERS,
    DEFAULT_MODELS,
    PrefixReport,
    PromptContract,
    RenderedRequest,
    Session,
    SkillBudget,
    SkillBudgetError,
    SkillBudgetWarning,
    SkillLoad,
    without_markers,
)
from promptlint.contract.layers import STABILITIES, ContractError, Layer, Skill, SkillFormat, ToolSpec, canonical_json
from promptlint.contract.openai import prompt_cache_key
from promptlint.contract.padding import OPERATING_CONTEXT, PaddingPolicy
from promptlint.contract.turns import neutral_turns, reply_turns

__all__ = [
    "CACHE_MARKERS",
    "DEFAULT_MODELS",
    "OPERATING_CONTEXT",
    "STABILITIES",
    "ContractError",
    "Layer",
    "PaddingPolicy",
    "PrefixReport",
    "PromptContract",
    "RenderedRequest",
    "Session",
    "Skill",
    "SkillBudget",
    "SkillBudgetError",
    "SkillBudgetWarning",
    "SkillFormat",
    "SkillLoad",
    "ToolSpec",
    "canonical_json",
    "neutral_turns",
    "prompt_cache_key",
    "reply_turns",
    "without_markers",
]

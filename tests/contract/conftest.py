"""Shared fixtures for the assembler tests: the example contract and a small one."""

from __future__ import annotations

from pathlib import Path

import pytest

from promptlint.contract import Layer, PromptContract, Skill
from tests.loading import import_file

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "contracts" / "support_bot.py"


def load_example():
    """Import fixtures/contracts/support_bot.py as a module."""
    return import_file("support_bot_fixture", EXAMPLE)


@pytest.fixture(scope="session")
def example():
    """The example module (contract, SKILLS, TOOLS)."""
    return load_example()


@pytest.fixture
def small_contract() -> PromptContract:
    """A tiny contract with one layer of each stability and a tool."""
    return PromptContract(
        name="tiny",
        version="v1",
        layers=[
            Layer("identity", text="You are a helpful assistant.", stability="global"),
            Layer("tools", tools=[{"name": "search", "description": "Search.", "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}], stability="project"),
            Layer("skills", skills=[Skill("b-skill", "B.", "Body of B."), Skill("a-skill", "A.", "Body of A.")], stability="project"),
            Layer("workspace", stability="session"),
            Layer("memory", stability="turn"),
        ],
    )

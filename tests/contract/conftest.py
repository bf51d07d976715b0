"""Shared fixtures for the assembler tests: the example contract and a small one."""

from __future__ import annotations

import importlib.util
import sys
from pathlib import Path

import pytest

from promptlint.contract import Layer, PromptContract, Skill

ROOT = Path(__file__).resolve().parents[2]
EXAMPLE = ROOT / "fixtures" / "contracts" / "support_bot.py"


def load_example():
    """Import fixtures/contracts/support_bot.py as a module."""
    spec = importlib.util.spec_from_file_location("support_bot_fixture", EXAMPLE)
    module = importlib.util.module_from_spec(spec)
    sys.modules["support_bot_fixture"] = module
    spec.loader.exec_module(module)
    return module


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

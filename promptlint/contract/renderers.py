"""The registry of wire-shape renderers, by provider name."""

from __future__ import annotations

from typing import Callable

from promptlint.contract.anthropic import render_anthropic
from promptlint.contract.gemini import render_gemini
from promptlint.contract.openai import render_openai_chat, render_openai_responses
from promptlint.contract.request import Assembly, RenderedRequest

RENDERERS: dict[str, Callable[[Assembly], RenderedRequest]] = {
    "anthropic": render_anthropic,
    "openai": render_openai_chat,
    "openai-responses": render_openai_responses,
    "gemini": render_gemini,
}
"""Renderer per provider name; ``openai`` is Chat Completions."""

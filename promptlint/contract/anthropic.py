"""Anthropic Messages: tools -> system -> messages, with cache_control breakpoints."""

from __future__ import annotations

from typing import Any

from promptlint import providers
from promptlint.contract.contract import Assembly, RenderedRequest, build_report


def _marker(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def _with_marker(message: dict[str, Any], marker: dict[str, str]) -> dict[str, Any]:
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1] = {**blocks[-1], "cache_control": marker}
    return {"role": message["role"], "content": blocks}


def render_anthropic(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.messages.create``.

    Breakpoints: the last tool, the contract system block (shared by every session), the
    session system block; then up to ``rolling_breakpoints`` on the last history messages
    before the per-request context (Hermes' "system and 3"), never more than 4 in total.
    Turn layers and skills form one user message before the user's message, outside the prefix.
    """
    marker = _marker(assembly.ttl)
    breakpoints: list[str] = []
    rendered_tools: dict[str, list[dict[str, Any]]] = {}
    tools: list[dict[str, Any]] = []
    for layer_name, spec in assembly.tools:
        tool = {"name": spec.name, "description": spec.description, "input_schema": dict(spec.parameters)}
        rendered_tools.setdefault(layer_name, []).append(tool)
        tools.append(dict(tool))
    if tools:
        tools[-1]["cache_control"] = marker
        breakpoints.append(f"tools[{len(tools) - 1}]")

    system: list[dict[str, Any]] = []
    for text in (assembly.contract_text, assembly.session_text):
        if text:
            system.append({"type": "text", "text": text, "cache_control": marker})
            breakpoints.append(f"system[{len(system) - 1}]")

    before, last = assembly.split_history()
    messages: list[dict[str, Any]] = [dict(m) for m in before]
    slots = providers.max_breakpoints("anthropic") - len(breakpoints)
    # Anthropic rejects a marker on an empty text block, so empty messages are skipped.
    markable = [i for i, m in enumerate(messages) if m["content"]]
    rolled = markable[len(markable) - min(assembly.rolling_breakpoints, slots, len(markable)):] if slots > 0 else []
    for index in rolled:
        messages[index] = _with_marker(messages[index], marker)
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        ephemeral = (len(messages),)
        messages.append({"role": "user", "content": [{"type": "text", "text": assembly.context_text}]})
    messages.extend(dict(m) for m in last)

    kwargs: dict[str, Any] = {"model": assembly.model, "max_tokens": 1024}
    if tools:
        kwargs["tools"] = tools
    if system:
        kwargs["system"] = system
    kwargs["messages"] = messages
    request = RenderedRequest(kwargs)
    request.provider, request.model = assembly.provider, assembly.model
    request.ephemeral, request.messages_key, request.cache_create = ephemeral, "messages", None
    # The stable prefix ends at the last system breakpoint; rolling marks move every turn.
    request.prefix = build_report(
        assembly,
        {"model": assembly.model, "tools": tools, "system": system},
        rendered_tools,
        breakpoints + [f"messages[{i}]" for i in rolled],
    )
    return request

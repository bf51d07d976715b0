"""Anthropic Messages: tools -> system -> messages, with cache_control breakpoints."""

from __future__ import annotations

from typing import Any

from promptlint import providers
from promptlint.contract.request import DEFAULT_MAX_TOKENS, Assembly, RenderedRequest, build_report, finish


def _marker(ttl: str | None) -> dict[str, str]:
    return {"type": "ephemeral", "ttl": ttl} if ttl else {"type": "ephemeral"}


def _block(part: dict[str, Any]) -> dict[str, Any]:
    """A neutral part as an Anthropic content block."""
    if part["type"] == "text":
        return {"type": "text", "text": part["text"]}
    if part["type"] == "tool_call":
        return {"type": "tool_use", "id": part["id"], "name": part["name"], "input": part["arguments"]}
    block = {"type": "tool_result", "tool_use_id": part["tool_call_id"], "content": part["content"]}
    if part.get("is_error"):
        block["is_error"] = True
    return block


def _message(turn: dict[str, Any]) -> dict[str, Any]:
    content = turn["content"]
    if isinstance(content, str):
        return {"role": turn["role"], "content": content}
    return {"role": turn["role"], "content": [_block(part) for part in content]}


def _markable(message: dict[str, Any]) -> bool:
    # Anthropic rejects a marker on an empty text block.
    content = message["content"]
    if isinstance(content, str):
        return bool(content)
    last = content[-1] if content else None
    return last is not None and (last["type"] != "text" or bool(last["text"]))


def _with_marker(message: dict[str, Any], marker: dict[str, str]) -> dict[str, Any]:
    content = message["content"]
    blocks = [{"type": "text", "text": content}] if isinstance(content, str) else [dict(b) for b in content]
    blocks[-1] = {**blocks[-1], "cache_control": marker}
    return {"role": message["role"], "content": blocks}


def render_anthropic(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.messages.create``.

    Breakpoints: the last tool, the contract system block (shared by every session), the
    session system block; then up to ``rolling_breakpoints`` on the last history messages
    of the conversation, the user's turn included (Hermes' "system and 3"), never more than 4 in
    total. Turn layers and skills form one text block appended to the final user message, after
    its tool results and text: what precedes it is exactly next turn's history, so the rolling
    breakpoint on the user's turn is read on the next turn.
    """
    marker = _marker(assembly.ttl)
    rolling_marker = _marker(assembly.rolling_ttl or assembly.ttl)
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

    messages: list[dict[str, Any]] = [_message(turn) for turn in assembly.history]
    slots = providers.max_breakpoints("anthropic") - len(breakpoints)
    markable = [i for i, m in enumerate(messages) if _markable(m)]
    rolled = markable[len(markable) - min(assembly.rolling_breakpoints, slots, len(markable)):] if slots > 0 else []
    for index in rolled:
        messages[index] = _with_marker(messages[index], rolling_marker)
    ephemeral: tuple[int, ...] = ()
    context = assembly.context_text
    if context and messages[-1]["role"] == "user":
        # After the turn's tool results and text, in the same message: the results stay first,
        # and everything before the context is next turn's cached history.
        ephemeral = (len(messages) - 1,)
        last = messages[-1]["content"]
        blocks = [{"type": "text", "text": last}] if isinstance(last, str) else list(last)
        messages[-1] = {"role": "user", "content": [*blocks, {"type": "text", "text": context}]}
    elif context:
        ephemeral = (len(messages),)
        messages.append({"role": "user", "content": [{"type": "text", "text": context}]})

    kwargs: dict[str, Any] = {"model": assembly.model, "max_tokens": assembly.max_tokens or DEFAULT_MAX_TOKENS}
    if tools:
        kwargs["tools"] = tools
    if system:
        kwargs["system"] = system
    kwargs["messages"] = messages
    # The stable prefix ends at the last system breakpoint; rolling marks move every turn.
    prefix = build_report(
        assembly,
        {"model": assembly.model, "tools": tools, "system": system},
        rendered_tools,
        breakpoints + [f"messages[{i}]" for i in rolled],
    )
    return finish(assembly, kwargs, messages_key="messages", ephemeral=ephemeral, conversation_start=0, prefix=prefix)

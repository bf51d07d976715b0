"""Gemini generateContent: ``system_instruction`` + contents, and the explicit-cache split."""

from __future__ import annotations

from typing import Any

from promptlint.contract.request import Assembly, RenderedRequest, build_report, finish


def _part(part: dict[str, Any]) -> dict[str, Any]:
    """A neutral part as a Gemini part (``function_call`` / ``function_response`` carry the call id)."""
    if part["type"] == "text":
        return {"text": part["text"]}
    if part["type"] == "tool_call":
        return {"function_call": {"id": part["id"], "name": part["name"], "args": part["arguments"]}}
    key = "error" if part.get("is_error") else "output"
    return {"function_response": {"id": part["tool_call_id"], "name": part["name"], "response": {key: part["content"]}}}


def _content(role: str, parts: list[dict[str, Any]]) -> dict[str, Any]:
    return {"role": "model" if role == "assistant" else "user", "parts": [_part(p) for p in parts]}


def _parts(turn: dict[str, Any]) -> list[dict[str, Any]]:
    content = turn["content"]
    return [{"type": "text", "text": content}] if isinstance(content, str) else list(content)


def render_gemini(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.models.generate_content`` (implicit caching).

    ``request.cache_create`` holds the kwargs for ``client.caches.create`` (system
    instruction and tools: the stable prefix); ``request.with_cached_content(name)`` gives
    the per-request kwargs that reference the cache, which may not repeat ``system_instruction``
    or ``tools``. The context is a last text part of the final user content, after its
    function responses and text.
    """
    rendered_tools: dict[str, list[dict[str, Any]]] = {}
    declarations = []
    for layer_name, spec in assembly.tools:
        declaration = {"name": spec.name, "description": spec.description, "parameters_json_schema": dict(spec.parameters)}
        rendered_tools.setdefault(layer_name, []).append(declaration)
        declarations.append(declaration)
    tools = [{"function_declarations": declarations}] if declarations else []
    system_instruction = "\n\n".join(t for t in (assembly.contract_text, assembly.session_text) if t)

    contents = [_content(turn["role"], _parts(turn)) for turn in assembly.history]
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        context = {"text": assembly.context_text}
        if contents and contents[-1]["role"] == "user":  # after the function responses and text of the turn
            ephemeral = (len(contents) - 1,)
            contents[-1] = {"role": "user", "parts": [*contents[-1]["parts"], context]}
        else:
            ephemeral = (len(contents),)
            contents.append({"role": "user", "parts": [context]})

    config: dict[str, Any] = {}
    if system_instruction:
        config["system_instruction"] = system_instruction
    if tools:
        config["tools"] = tools
    kwargs: dict[str, Any] = {"model": assembly.model, "contents": contents, "config": dict(config)}
    if assembly.max_tokens is not None:
        kwargs["config"]["max_output_tokens"] = assembly.max_tokens
    cache_create = {
        "model": assembly.model,
        "config": {**config, "ttl": assembly.ttl or "3600s",
                   "display_name": f"{assembly.contract.name}-{assembly.contract.version}"},
    }
    prefix = build_report(
        assembly,
        {"model": assembly.model, "system_instruction": system_instruction, "tools": tools},
        rendered_tools,
        ["cachedContent"],
    )
    return finish(assembly, kwargs, messages_key="contents", ephemeral=ephemeral, conversation_start=0,
                  prefix=prefix, cache_create=cache_create)

"""Gemini generateContent: ``system_instruction`` + contents, and the explicit-cache split."""

from __future__ import annotations

from typing import Any

from promptlint.contract.contract import Assembly, RenderedRequest, build_report
from promptlint.contract.layers import ContractError


def _content(role: str, content: Any) -> dict[str, Any]:
    """A ``contents`` item; text blocks of a list become one part each."""
    if isinstance(content, str):
        parts = [{"text": content}]
    else:
        parts = []
        for block in content:
            text = block.get("text") if isinstance(block, dict) else None
            if not isinstance(text, str):
                raise ContractError(f"the gemini renderer takes text content only, got block {block!r}")
            parts.append({"text": text})
    return {"role": "model" if role == "assistant" else "user", "parts": parts}


def render_gemini(assembly: Assembly) -> RenderedRequest:
    """Render for ``client.models.generate_content`` (implicit caching).

    ``request.cache_create`` holds the kwargs for ``client.caches.create`` (system
    instruction and tools: the stable prefix); ``request.with_cached_content(name)`` gives
    the per-request kwargs that reference the cache, which may not repeat ``system_instruction``
    or ``tools``.
    """
    rendered_tools: dict[str, list[dict[str, Any]]] = {}
    declarations = []
    for layer_name, spec in assembly.tools:
        declaration = {"name": spec.name, "description": spec.description, "parameters_json_schema": dict(spec.parameters)}
        rendered_tools.setdefault(layer_name, []).append(declaration)
        declarations.append(declaration)
    tools = [{"function_declarations": declarations}] if declarations else []
    system_instruction = "\n\n".join(t for t in (assembly.contract_text, assembly.session_text) if t)

    before, last = assembly.split_history()
    contents = []
    for message in before:
        contents.append(_content(message["role"], message["content"]))
    ephemeral: tuple[int, ...] = ()
    if assembly.context_text:
        ephemeral = (len(contents),)
        contents.append(_content("user", assembly.context_text))
    for message in last:
        contents.append(_content(message["role"], message["content"]))

    config: dict[str, Any] = {}
    if system_instruction:
        config["system_instruction"] = system_instruction
    if tools:
        config["tools"] = tools
    request = RenderedRequest({"model": assembly.model, "contents": contents, "config": config})
    request.provider, request.model = assembly.provider, assembly.model
    request.ephemeral, request.messages_key = ephemeral, "contents"
    request.cache_create = {
        "model": assembly.model,
        "config": {**config, "ttl": assembly.ttl or "3600s",
                   "display_name": f"{assembly.contract.name}-{assembly.contract.version}"},
    }
    request.prefix = build_report(
        assembly,
        {"model": assembly.model, "system_instruction": system_instruction, "tools": tools},
        rendered_tools,
        ["cachedContent"],
    )
    return request

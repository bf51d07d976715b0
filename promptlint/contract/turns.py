"""Provider-neutral conversation turns, and reading each provider's shapes into them.

A turn is ``{"role": "user" | "assistant", "content": str | [part, ...]}`` where a part is one of

- ``{"type": "text", "text": str}``
- ``{"type": "tool_call", "id": str, "name": str, "arguments": {...}}`` (assistant turns)
- ``{"type": "tool_result", "tool_call_id": str, "name": str, "content": str, "is_error": bool}``
  (user turns; tool results come before any text of the same turn)

:func:`neutral_turns` accepts these and what each renderer sends or each SDK returns
(Anthropic ``tool_use``/``tool_result`` blocks, OpenAI Chat ``tool_calls`` and ``role: "tool"``
messages, Responses ``function_call``/``function_call_output`` items, Gemini
``function_call``/``function_response`` parts), drops cache markers, and checks that every tool
call is answered in the next turn. Renderers turn the neutral form back into wire shapes, so a
conversation persisted from any renderer renders on every other one.
"""

from __future__ import annotations

import json
from typing import Any, Iterable, Mapping

from promptlint.contract.layers import ContractError

CACHE_MARKERS: tuple[str, ...] = ("cache_control", "prompt_cache_breakpoint")
"""Block keys that place a cache breakpoint (Anthropic, OpenAI GPT-5.6+)."""

_TEXT_TYPES = ("text", "input_text", "output_text")


def without_markers(content: Any) -> Any:
    """``content`` with every cache marker removed, and a lone text block back to a string.

    Breakpoints are placed per request (rolling ones move every turn); a marker kept in
    persisted history would pile up next to the new ones and push a request past the
    provider's limit (a 400).
    """
    if not isinstance(content, list):
        return content
    blocks = [{k: v for k, v in block.items() if k not in CACHE_MARKERS} if isinstance(block, Mapping) else block
              for block in content]
    if len(blocks) == 1 and isinstance(blocks[0], dict) and blocks[0].get("type") in _TEXT_TYPES \
            and isinstance(blocks[0].get("text"), str) and set(blocks[0]) == {"type", "text"}:
        return blocks[0]["text"]
    return blocks


def _arguments(value: Any, where: str) -> dict[str, Any]:
    if isinstance(value, str):
        try:
            value = json.loads(value) if value.strip() else {}
        except ValueError:
            raise ContractError(f"{where}: tool call arguments are not JSON: {value[:80]!r}") from None
    if not isinstance(value, Mapping):
        raise ContractError(f"{where}: tool call arguments must be a JSON object, got {type(value).__name__}")
    return dict(value)


def _result_text(value: Any, where: str) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return ""
    if isinstance(value, list) and all(isinstance(b, Mapping) and b.get("type") in _TEXT_TYPES for b in value):
        return "\n".join(str(b.get("text", "")) for b in value)
    raise ContractError(f"{where}: a tool result must be text (a string or text blocks), got {value!r:.80}")


def _part(block: Any, role: str, where: str) -> dict[str, Any]:
    """One content block or part of any provider as a neutral part."""
    if isinstance(block, str):
        return {"type": "text", "text": block}
    if not isinstance(block, Mapping):
        raise ContractError(f"{where}: a content block must be an object, got {block!r:.80}")
    kind = block.get("type")
    if kind in _TEXT_TYPES or (kind is None and isinstance(block.get("text"), str) and len(block) == 1):
        if not isinstance(block.get("text"), str):
            raise ContractError(f"{where}: a text block needs a string 'text'")
        return {"type": "text", "text": block["text"]}
    if kind == "tool_call":
        return {"type": "tool_call", "id": str(block["id"]), "name": str(block["name"]),
                "arguments": _arguments(block.get("arguments", {}), where)}
    if kind == "tool_use":  # Anthropic
        return {"type": "tool_call", "id": str(block["id"]), "name": str(block["name"]),
                "arguments": _arguments(block.get("input", {}), where)}
    if kind == "tool_result":
        call_id = block.get("tool_call_id", block.get("tool_use_id"))
        part = {"type": "tool_result", "tool_call_id": str(call_id), "name": block.get("name"),
                "content": _result_text(block.get("content"), where)}
        if block.get("is_error"):
            part["is_error"] = True
        return part
    if "function_call" in block:  # Gemini
        call = block["function_call"]
        return {"type": "tool_call", "id": call.get("id"), "name": str(call["name"]),
                "arguments": _arguments(call.get("args") or {}, where)}
    if "function_response" in block:  # Gemini
        response = block["function_response"]
        payload = response.get("response") or {}
        error = isinstance(payload, Mapping) and set(payload) == {"error"}
        if isinstance(payload, Mapping) and set(payload) <= {"output", "error"} and len(payload) == 1:
            text = payload.get("output", payload.get("error"))
            text = text if isinstance(text, str) else json.dumps(text, ensure_ascii=False)
        else:
            text = json.dumps(payload, ensure_ascii=False)
        part = {"type": "tool_result", "tool_call_id": response.get("id"), "name": str(response["name"]), "content": text}
        if error:
            part["is_error"] = True
        return part
    raise ContractError(f"{where}: unsupported {role} content block of type {kind!r}; the assembler carries "
                        "text, tool calls and tool results")


def _turns_of(item: Mapping[str, Any], where: str) -> list[dict[str, Any]]:
    """One provider item as neutral turns (an OpenAI ``tool`` message or Responses item is one part)."""
    kind, role = item.get("type"), item.get("role")
    if kind == "function_call":  # Responses
        return [{"role": "assistant", "content": [{"type": "tool_call", "id": str(item["call_id"]), "name": str(item["name"]),
                                                     "arguments": _arguments(item.get("arguments", "{}"), where)}]}]
    if kind == "function_call_output":
        return [{"role": "user", "content": [{"type": "tool_result", "tool_call_id": str(item["call_id"]), "name": None,
                                                "content": _result_text(item.get("output"), where)}]}]
    if role == "tool":  # OpenAI Chat
        return [{"role": "user", "content": [{"type": "tool_result", "tool_call_id": str(item.get("tool_call_id")),
                                                "name": None, "content": _result_text(item.get("content"), where)}]}]
    if "parts" in item and "content" not in item:  # Gemini
        role = {"user": "user", "model": "assistant", "function": "user"}.get(role)  # type: ignore[arg-type]
        if role is None or not isinstance(item["parts"], list):
            raise ContractError(f"{where}: a Gemini content must have role 'user' or 'model' and a list of parts")
        return [{"role": role, "content": [_part(p, role, f"{where}.parts") for p in item["parts"]]}]
    if role not in ("user", "assistant"):
        raise ContractError(f"{where}: a message must have role 'user' or 'assistant' (or be a tool call/result), "
                            f"got {dict(item)!r:.120}")
    if "content" not in item and "tool_calls" not in item:
        raise ContractError(f"{where}: message {dict(item)!r:.80} has no content")
    content = without_markers(item.get("content"))
    parts: list[dict[str, Any]] = []
    if isinstance(content, str):
        parts.append({"type": "text", "text": content})
    elif isinstance(content, list):
        parts.extend(_part(block, role, f"{where}.content") for block in content)
    elif content is not None:
        raise ContractError(f"{where}: content must be a string or a list of blocks, got {type(content).__name__}")
    for call in item.get("tool_calls") or ():  # OpenAI Chat
        function = call.get("function") or {}
        parts.append({"type": "tool_call", "id": str(call.get("id")), "name": str(function.get("name")),
                      "arguments": _arguments(function.get("arguments", "{}"), where)})
    return [{"role": role, "content": parts}]


def _compact(turn: dict[str, Any]) -> dict[str, Any]:
    parts = turn["content"]
    if len(parts) == 1 and parts[0]["type"] == "text":
        return {"role": turn["role"], "content": parts[0]["text"]}
    return turn


def neutral_turns(messages: Iterable[Mapping[str, Any]]) -> list[dict[str, Any]]:
    """The conversation as neutral turns; raises :class:`ContractError` naming the bad item.

    Consecutive provider items of one turn (an assistant message and its Responses
    ``function_call`` items, several ``role: "tool"`` messages) merge into one turn. Every tool
    call must be answered by a tool result in the next turn, and a tool result must answer a
    call of the turn before it (the providers reject anything else).
    """
    turns: list[dict[str, Any]] = []
    for index, item in enumerate(messages):
        if not isinstance(item, Mapping):
            raise ContractError(f"messages[{index}]: a message must be a mapping with role 'user' or 'assistant', got {item!r:.80}")
        try:
            pieces = _turns_of(item, f"messages[{index}]")
        except (KeyError, TypeError, AttributeError) as exc:
            raise ContractError(f"messages[{index}]: malformed message ({type(exc).__name__}: {exc})") from None
        for piece in pieces:
            previous = turns[-1] if turns else None
            merge = previous is not None and previous["role"] == piece["role"] and (
                all(p["type"] != "text" for p in piece["content"]) and previous["content"]
                and (piece["role"] == "assistant" or previous["content"][-1]["type"] == "tool_result"))
            if merge:
                previous["content"].extend(piece["content"])
            else:
                turns.append(piece)
    _link_tool_calls(turns)
    return [_compact(turn) for turn in turns]


def _link_tool_calls(turns: list[dict[str, Any]]) -> None:
    """Give results their call's name (Gemini needs it), ids to id-less Gemini calls, and check pairing."""
    pending: dict[str, str] = {}
    for t, turn in enumerate(turns):
        calls = [p for p in turn["content"] if p["type"] == "tool_call"]
        results = [p for p in turn["content"] if p["type"] == "tool_result"]
        if results:
            if turn["role"] != "user":
                raise ContractError(f"turn {t}: tool results belong in a user turn")
            first_text = next((i for i, p in enumerate(turn["content"]) if p["type"] == "text"), len(turn["content"]))
            if any(p["type"] == "tool_result" for p in turn["content"][first_text:]):
                raise ContractError(f"turn {t}: tool results must come before the text of their turn")
            unnamed = list(pending.items())
            for number, result in enumerate(results):
                if result["tool_call_id"] in (None, "None"):  # Gemini answers by position when ids are absent
                    if number >= len(unnamed):
                        raise ContractError(f"turn {t}: a tool result answers no pending tool call")
                    result["tool_call_id"] = unnamed[number][0]
                name = pending.pop(result["tool_call_id"], None)
                if name is None:
                    raise ContractError(f"turn {t}: tool result for call {result['tool_call_id']!r} answers no tool call "
                                        "of the turn before it")
                result["name"] = result.get("name") or name
        if pending:
            raise ContractError(f"turn {t - 1}: tool call(s) {', '.join(map(repr, pending))} are not answered by tool "
                                f"results in the next turn")
        for number, call in enumerate(calls):
            if turn["role"] != "assistant":
                raise ContractError(f"turn {t}: tool calls belong in an assistant turn")
            if call["id"] in (None, "None"):
                call["id"] = f"call_{t}_{number}"  # stable: derived from the position in the conversation
            pending[call["id"]] = call["name"]


def reply_turns(provider: str, response: Any) -> list[dict[str, Any]]:
    """The assistant turn of an SDK response (object or dict), ready to append to ``history()``.

    ``provider`` is the renderer name. Anthropic ``Message``, OpenAI ``ChatCompletion``,
    Responses ``Response`` and Gemini ``GenerateContentResponse`` are read.
    """
    data = response.model_dump(exclude_none=True) if hasattr(response, "model_dump") else dict(response)
    if provider == "anthropic":
        blocks = [b for b in data["content"] if b.get("type") in ("text", "tool_use")]
        items: list[Mapping[str, Any]] = [{"role": "assistant", "content": [
            {"type": "text", "text": b["text"]} if b["type"] == "text" else
            {"type": "tool_use", "id": b["id"], "name": b["name"], "input": b.get("input") or {}} for b in blocks]}]
    elif provider == "openai":
        message = data["choices"][0]["message"]
        items = [{"role": "assistant", "content": message.get("content"), "tool_calls": message.get("tool_calls") or []}]
    elif provider == "openai-responses":
        items = []
        for item in data.get("output") or []:
            if item.get("type") == "message":
                items.append({"role": "assistant", "content": [
                    {"type": "text", "text": c["text"]} for c in item.get("content") or [] if c.get("type") == "output_text"]})
            elif item.get("type") == "function_call":
                items.append({"type": "function_call", "call_id": item["call_id"], "name": item["name"],
                              "arguments": item.get("arguments", "{}")})
    elif provider == "gemini":
        content = data["candidates"][0]["content"]
        items = [{"role": "model", "parts": [{k: v for k, v in part.items() if k in ("text", "function_call")}
                                              for part in content.get("parts") or []]}]
    else:
        raise ContractError(f"unknown renderer {provider!r}")
    return neutral_turns(items)

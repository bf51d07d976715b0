"""What the real APIs reject before caching anything: the request-shape rules of the emulator.

Each check raises :class:`~promptlint.caching.model.CacheRequestError` with the status, error
type and message the real API answers (docs/smoke.md, "What the emulator rejects", cites each).
The cache model calls these first, so the emulator and ``simulate`` reject the same requests.
"""

from __future__ import annotations

from typing import Any

from promptlint import providers
from promptlint.caching.errors import CacheRequestError

ANTHROPIC_ROLES = ("user", "assistant")
OPENAI_CHAT_ROLES = ("system", "developer", "user", "assistant", "tool", "function")
OPENAI_RESPONSES_ROLES = ("system", "developer", "user", "assistant")
RETENTIONS = ("in_memory", "24h")


def _type_name(value: Any) -> str:
    return {bool: "boolean", int: "integer", float: "number", str: "string", list: "array", dict: "object",
            type(None): "null"}.get(type(value), type(value).__name__)


def unknown_model(provider: str, model: Any) -> CacheRequestError | None:
    """The real 404 for a model the provider does not serve (None when ``model`` is known)."""
    if isinstance(model, str) and providers.known_model(provider, model):
        return None
    if provider == "anthropic":
        return CacheRequestError(f"model: {model}", "model", status=404, kind="not_found_error")
    if provider == "gemini":
        return CacheRequestError(f"models/{model} is not found for API version v1beta, or is not supported for "
                                 "generateContent.", "model", status=404, kind="NOT_FOUND")
    return CacheRequestError(f"The model `{model}` does not exist or you do not have access to it.", "model",
                             status=404, kind="invalid_request_error", code="model_not_found")


# ---------------------------------------------------------------------------------- Anthropic
def check_anthropic(body: dict) -> None:
    """Raise the Messages API's 400/404 for a malformed request (required fields first)."""
    for key in ("model", "max_tokens", "messages"):
        if key not in body:
            raise CacheRequestError(f"{key}: Field required", key)
    max_tokens = body["max_tokens"]
    if isinstance(max_tokens, bool) or not isinstance(max_tokens, int):
        raise CacheRequestError("max_tokens: Input should be a valid integer", "max_tokens")
    if max_tokens < 0:
        raise CacheRequestError("max_tokens: Input should be greater than or equal to 0", "max_tokens")
    if max_tokens == 0 and body.get("stream"):
        raise CacheRequestError("max_tokens: pre-warming with max_tokens=0 is not supported with stream=true",
                                "max_tokens")
    if not isinstance(body["model"], str):
        raise CacheRequestError("model: Input should be a valid string", "model")
    system = body.get("system")
    if system is not None and not isinstance(system, (str, list)):
        raise CacheRequestError("system: Input should be a valid string or a valid list", "system")
    tools = body.get("tools")
    if tools is not None and not isinstance(tools, list):
        raise CacheRequestError("tools: Input should be a valid list", "tools")
    for i, tool in enumerate(tools or []):
        if not isinstance(tool, dict):
            raise CacheRequestError(f"tools.{i}: Input should be a valid dictionary", f"tools.{i}")
        _check_marker(tool, f"tools.{i}")
    for i, block in enumerate(system if isinstance(system, list) else []):
        _check_block(block, f"system.{i}", text_only=True)
    messages = body["messages"]
    if not isinstance(messages, list):
        raise CacheRequestError("messages: Input should be a valid list", "messages")
    if not messages:
        raise CacheRequestError("messages: at least one message is required", "messages")
    for m, message in enumerate(messages):
        if not isinstance(message, dict):
            raise CacheRequestError(f"messages.{m}: Input should be a valid dictionary", f"messages.{m}")
        if message.get("role") not in ANTHROPIC_ROLES:
            raise CacheRequestError(f"messages.{m}.role: Input should be 'user' or 'assistant'", f"messages.{m}.role")
        content = message.get("content")
        if not isinstance(content, (str, list)):
            raise CacheRequestError(f"messages.{m}.content: Input should be a valid string or a valid list",
                                    f"messages.{m}.content")
        for i, block in enumerate(content if isinstance(content, list) else []):
            _check_block(block, f"messages.{m}.content.{i}")
    if "cache_control" in body:
        _check_marker(body, "")
    _check_tool_pairs(messages)
    error = unknown_model("anthropic", body["model"])
    if error:
        raise error


def _check_block(block: Any, where: str, text_only: bool = False) -> None:
    if not isinstance(block, dict) or not isinstance(block.get("type"), str):
        raise CacheRequestError(f"{where}: Input should be a valid content block object with a 'type'", where)
    if text_only and block["type"] != "text":
        raise CacheRequestError(f"{where}.type: Input should be 'text'", f"{where}.type")
    if block["type"] == "text":
        if not isinstance(block.get("text"), str):
            raise CacheRequestError(f"{where}.text: Input should be a valid string", f"{where}.text")
        if block["text"] == "" and "cache_control" in block:
            raise CacheRequestError(f"{where}.text: cache_control cannot be set for empty text blocks", f"{where}.text")
    _check_marker(block, where)


def _check_marker(holder: dict, where: str) -> None:
    if "cache_control" not in holder:
        return
    marker = holder["cache_control"]
    name = f"{where}.cache_control" if where else "cache_control"
    if marker is None:
        return
    if not isinstance(marker, dict):
        raise CacheRequestError(f"{name}: Input should be a valid dictionary", name)
    if marker.get("type") != "ephemeral":
        raise CacheRequestError(f"{name}.type: Input should be 'ephemeral'", f"{name}.type")
    ttl = marker.get("ttl", "5m")
    if ttl not in ("5m", "1h"):
        raise CacheRequestError(f"{name}.ttl: Input should be '5m' or '1h'", f"{name}.ttl")


def _check_tool_pairs(messages: list[dict]) -> None:
    """Every ``tool_result`` answers a ``tool_use`` of the message right before it, and every
    ``tool_use`` followed by a message is answered there (the API's pairing rule)."""
    def ids(message: dict, kind: str, key: str) -> list[str]:
        content = message.get("content")
        return [str(b.get(key)) for b in content if isinstance(b, dict) and b.get("type") == kind] \
            if isinstance(content, list) else []

    for m, message in enumerate(messages):
        results = ids(message, "tool_result", "tool_use_id")
        previous = ids(messages[m - 1], "tool_use", "id") if m and messages[m - 1].get("role") == "assistant" else []
        stray = [r for r in results if r not in previous]
        if stray:
            raise CacheRequestError(
                f"messages.{m}.content.0: unexpected `tool_use_id` found in `tool_result` blocks: {stray[0]}. "
                "Each `tool_result` block must have a corresponding `tool_use` block in the previous message.",
                f"messages.{m}")
        uses = ids(message, "tool_use", "id")
        if uses and m + 1 < len(messages):
            answered = ids(messages[m + 1], "tool_result", "tool_use_id")
            missing = [u for u in uses if u not in answered]
            if missing:
                raise CacheRequestError(
                    f"messages.{m + 1}: `tool_use` ids were found without `tool_result` blocks immediately after: "
                    f"{missing[0]}. Each `tool_use` block must have a corresponding `tool_result` block in the "
                    "next message.", f"messages.{m + 1}")


# ------------------------------------------------------------------------------------- OpenAI
def _openai_type_error(param: str, expected: str, value: Any) -> CacheRequestError:
    return CacheRequestError(f"Invalid type for '{param}': expected {expected}, but got {_type_name(value)} instead.",
                             param, code="invalid_type")


def check_openai(body: dict) -> None:
    """Raise Chat Completions' or Responses' 400/404 for a malformed request."""
    api = "chat" if "messages" in body or "input" not in body else "responses"
    if "model" not in body:
        raise CacheRequestError("you must provide a model parameter", "model", code="missing_required_parameter")
    if not isinstance(body["model"], str):
        raise _openai_type_error("model", "a string", body["model"])
    items_key = "messages" if api == "chat" else "input"
    if api == "chat" and "messages" not in body:
        raise CacheRequestError("Missing required parameter: 'messages'.", "messages", code="missing_required_parameter")
    items = body.get(items_key)
    if api == "chat" and not isinstance(items, list):
        raise _openai_type_error("messages", "an array of objects", items)
    if api == "chat" and not items:
        raise CacheRequestError("Invalid 'messages': empty array. Expected an array with minimum length 1, but got an "
                                "empty array instead.", "messages", code="empty_array")
    if api == "responses" and items is not None and not isinstance(items, (str, list)):
        raise _openai_type_error("input", "a string or an array of input items", items)
    roles = OPENAI_CHAT_ROLES if api == "chat" else OPENAI_RESPONSES_ROLES
    for m, item in enumerate(items if isinstance(items, list) else []):
        where = f"{items_key}[{m}]"
        if not isinstance(item, dict):
            raise _openai_type_error(where, "an object", item)
        if "role" in item or api == "chat":
            if item.get("role") not in roles:
                supported = ", ".join(f"'{r}'" for r in roles)
                raise CacheRequestError(f"Invalid value: '{item.get('role')}'. Supported values are: {supported}.",
                                        f"{where}.role", code="invalid_value")
        content = item.get("content")
        if "content" in item and content is not None and not isinstance(content, (str, list)):
            raise _openai_type_error(f"{where}.content", "a string or an array of content parts", content)
        for i, part in enumerate(content if isinstance(content, list) else []):
            if not isinstance(part, dict):
                raise _openai_type_error(f"{where}.content[{i}]", "an object", part)
    for key, expected, kinds in (("tools", "an array of objects", list), ("stream_options", "an object", dict),
                                 ("prompt_cache_options", "an object", dict), ("prompt_cache_key", "a string", str),
                                 ("instructions", "a string", str), ("stream", "a boolean", bool)):
        if body.get(key) is not None and not isinstance(body[key], kinds):
            raise _openai_type_error(key, expected, body[key])
    for i, tool in enumerate(body.get("tools") or []):
        if not isinstance(tool, dict):
            raise _openai_type_error(f"tools[{i}]", "an object", tool)
    for key in ("max_tokens", "max_completion_tokens", "max_output_tokens"):
        value = body.get(key)
        if value is not None and (isinstance(value, bool) or not isinstance(value, int)):
            raise _openai_type_error(key, "an integer", value)
    _check_retention(body)
    error = unknown_model("openai", body["model"])
    if error:
        raise error


def _check_retention(body: dict) -> None:
    retention = body.get("prompt_cache_retention")
    if retention is None:
        return
    if body.get("prompt_cache_options") is not None:
        raise CacheRequestError("prompt_cache_retention cannot be used together with prompt_cache_options; "
                                "use prompt_cache_options.ttl.", "prompt_cache_retention", code="invalid_request")
    if retention not in RETENTIONS:
        raise CacheRequestError(f"Invalid value: '{retention}'. Supported values are: 'in_memory' and '24h'.",
                                "prompt_cache_retention", code="invalid_value")
    model = str(body["model"])
    accepted = providers.accepted_retentions(model)
    if retention not in accepted:
        raise CacheRequestError(f"prompt_cache_retention '{retention}' is not supported with model '{model}' "
                                f"(supported: {', '.join(accepted)}).", "prompt_cache_retention",
                                code="unsupported_value")


# ------------------------------------------------------------------------------------- Gemini
def check_gemini(request: dict) -> None:
    """Raise generateContent's 400/404 for a normalised Gemini request (see ``gemini_request``)."""
    contents = request["contents"]
    if not isinstance(contents, list):
        raise CacheRequestError("Invalid value at 'contents': expected a list of Content", "contents",
                                status=400, kind="INVALID_ARGUMENT")
    if not contents:
        raise CacheRequestError("* GenerateContentRequest.contents: contents is not specified", "contents",
                                status=400, kind="INVALID_ARGUMENT")
    for i, content in enumerate(contents):
        if not isinstance(content, dict) or not isinstance(content.get("parts"), list):
            raise CacheRequestError(f"Invalid value at 'contents[{i}]': expected a Content with 'parts'",
                                    f"contents[{i}]", status=400, kind="INVALID_ARGUMENT")
        if content.get("role", "user") not in ("user", "model"):
            raise CacheRequestError(f"Please use a valid role: user, model. (contents[{i}].role)",
                                    f"contents[{i}].role", status=400, kind="INVALID_ARGUMENT")
    if request["tools"] is not None and not isinstance(request["tools"], list):
        raise CacheRequestError("Invalid value at 'tools': expected a list of Tool", "tools",
                                status=400, kind="INVALID_ARGUMENT")
    error = unknown_model("gemini", request["model"])
    if error:
        raise error

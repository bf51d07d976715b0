"""An offline prompt-cache emulator speaking the Anthropic Messages, OpenAI Chat Completions /
Responses and Gemini generateContent / cachedContents request and response shapes closely enough
that the official SDKs work against it unchanged, with caching decided by
``promptlint.caching.model``.

This module holds the emulator's rules as a WSGI application (:class:`Emulator`); the transport
is a real HTTP server, waitress, in :mod:`promptlint.caching.server`. Replies are deterministic:
the text is a fixed acknowledgement, ids count up per emulator. Usage fields carry the real names
(``cache_read_input_tokens``, ``prompt_tokens_details.cached_tokens``,
``input_tokens_details.cached_tokens``, ``usageMetadata.cachedContentTokenCount``). Any API key is
accepted, but one must be sent, as the real APIs require. ``stream: true`` (and Gemini's
``:streamGenerateContent?alt=sse``) answers with server-sent events. Every error, from a bad
field to an internal failure, is the provider's JSON error body; nothing raises to the server.
"""

from __future__ import annotations

import itertools
import json
import sys
import threading
import time
from collections import OrderedDict
from datetime import datetime, timezone
from typing import Any, Callable, Iterable
from urllib.parse import parse_qs

from promptlint import providers
from promptlint.caching.errors import CacheRequestError
from promptlint.caching.model import CacheModel, CachedContent
from promptlint.caching.prefix import Block, cache_miss_reason
from promptlint.caching.request_blocks import anthropic_blocks, gemini_blocks, gemini_request, openai_blocks
from promptlint.caching.usage import Usage

REPLY = "Acknowledged."
REPLY_TOKENS = 3
CREATED = 1_700_000_000  # a fixed epoch base keeps replies deterministic
KEPT_RESPONSES = 1024  # responses remembered for previous_message_id / previous_response_id
MAX_BODY_BYTES = 32 * 1024 * 1024
"""Request bodies above this get 413, as the real APIs answer above 32 MB."""

_STATUS_TEXT = {200: "OK", 400: "Bad Request", 401: "Unauthorized", 403: "Forbidden", 404: "Not Found",
                405: "Method Not Allowed", 413: "Request Entity Too Large", 429: "Too Many Requests",
                431: "Request Header Fields Too Large", 500: "Internal Server Error"}
_ANTHROPIC_KINDS = {400: "invalid_request_error", 401: "authentication_error", 403: "permission_error",
                    404: "not_found_error", 405: "invalid_request_error", 413: "request_too_large",
                    429: "rate_limit_error", 500: "api_error"}
_GEMINI_STATUS = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED", 404: "NOT_FOUND",
                  405: "INVALID_ARGUMENT", 413: "INVALID_ARGUMENT", 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL"}


class ApiError(Exception):
    """An error reply: HTTP status, error type and message (and OpenAI's ``param`` / ``code``)."""

    def __init__(self, status: int, message: str, kind: str | None = None, param: str | None = None,
                 code: str | None = None):
        super().__init__(message)
        self.status, self.kind, self.param, self.code = status, kind, param, code


def api_family(path: str) -> str:
    """Whose error shape a path gets: ``anthropic``, ``gemini`` or ``openai``."""
    if path.startswith("/v1/messages"):
        return "anthropic"
    if path.startswith(("/v1beta/", "/v1alpha/", "/v1/models/", "/v1/cachedContents")) or path in ("/v1beta", "/v1alpha"):
        return "gemini"  # the google-genai SDK uses v1beta, or v1 with a custom base URL
    return "openai"


def error_body(path: str, error: ApiError) -> dict:
    """The provider's JSON error body for ``error`` on ``path``."""
    family = api_family(path)
    if family == "anthropic":
        kind = error.kind if error.kind and error.kind.islower() else _ANTHROPIC_KINDS.get(error.status, "api_error")
        return {"type": "error", "error": {"type": kind, "message": str(error)}, "request_id": "req_emulator"}
    if family == "gemini":
        status = error.kind if error.kind and error.kind.isupper() else _GEMINI_STATUS.get(error.status, "UNKNOWN")
        return {"error": {"code": error.status, "message": str(error), "status": status}}
    kind = error.kind if error.kind and error.kind.islower() else (
        "invalid_request_error" if error.status < 500 else "server_error")
    return {"error": {"message": str(error), "type": kind, "param": error.param, "code": error.code}}


def _reject_constant(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def parse_body(raw: bytes) -> dict:
    """The request body as a JSON object; :class:`ApiError` 400 for anything else (bad UTF-8,
    bad JSON, NaN, nesting too deep for a parser, a non-object)."""
    try:
        body = json.loads(raw.decode("utf-8") if raw else "{}", parse_constant=_reject_constant)
    except RecursionError:
        raise ApiError(400, "invalid JSON body: nested too deeply") from None
    except (ValueError, UnicodeDecodeError) as exc:
        raise ApiError(400, f"invalid JSON body: {exc}") from None
    if not isinstance(body, dict):
        raise ApiError(400, "the request body must be a JSON object")
    return body


class Reply:
    """A response: status, JSON payload or server-sent events."""

    def __init__(self, status: int, payload: dict | None = None, events: Iterable[tuple[str | None, Any]] | None = None):
        self.status, self.payload, self.events = status, payload, events


def _iso(seconds: float) -> str:
    return datetime.fromtimestamp(seconds, timezone.utc).isoformat().replace("+00:00", "Z")


class Emulator:
    """The emulator's rules as a WSGI application: routes, authentication, validation, replies.

    ``cache`` is the shared :class:`CacheModel` (inject one with a fake clock in tests).
    """

    def __init__(self, cache: CacheModel | None = None, log: bool = False):
        self.cache = cache or CacheModel()
        self.ids = itertools.count(1)
        self.log = log
        # response id -> what a later request may refer to: (model, prefix blocks) of an Anthropic
        # request (diagnostics.previous_message_id) or the full item list of a stored Responses turn
        self.responses: OrderedDict[str, Any] = OrderedDict()
        self.responses_lock = threading.Lock()

    def remember(self, response_id: str, record: Any) -> None:
        """Keep what a later request may refer to by ``response_id`` (the latest KEPT_RESPONSES)."""
        with self.responses_lock:
            self.responses[response_id] = record
            while len(self.responses) > KEPT_RESPONSES:
                self.responses.popitem(last=False)

    def recall(self, response_id: str) -> Any | None:
        """What :meth:`remember` kept for ``response_id``, or None."""
        with self.responses_lock:
            return self.responses.get(response_id)

    # ------------------------------------------------------------------ WSGI
    def __call__(self, environ: dict, start_response: Callable) -> Iterable[bytes]:
        method = environ.get("REQUEST_METHOD", "GET")
        path = environ.get("PATH_INFO", "") or "/"
        headers = {key[5:].replace("_", "-").lower(): value for key, value in environ.items() if key.startswith("HTTP_")}
        query = parse_qs(environ.get("QUERY_STRING", ""))
        try:
            length = int(environ.get("CONTENT_LENGTH") or 0)
            if length > MAX_BODY_BYTES:
                raise ApiError(413, "Request exceeds the maximum allowed number of bytes.")
            raw = environ["wsgi.input"].read(length) if length > 0 else b""
            reply = self.handle(method, path, query, headers, raw)
        except ApiError as exc:
            reply = Reply(exc.status, error_body(path, exc))
        except CacheRequestError as exc:
            reply = Reply(exc.status, error_body(path, ApiError(exc.status, str(exc), exc.kind, exc.param, exc.code)))
        except RecursionError:
            reply = Reply(400, error_body(path, ApiError(400, "the request is nested too deeply")))
        except Exception as exc:  # noqa: BLE001 - a bug in a rule is a 500 reply, never a dropped connection
            sys.stderr.write(f"emulate: internal error on {method} {path}: {type(exc).__name__}: {exc}\n")
            reply = Reply(500, error_body(path, ApiError(500, f"internal emulator error: {type(exc).__name__}")))
        if self.log:
            sys.stderr.write(f"emulate: {method} {path} -> {reply.status}\n")
        status = f"{reply.status} {_STATUS_TEXT.get(reply.status, 'Error')}"
        common = [("request-id", "req_emulator"), ("x-request-id", "req_emulator")]
        if reply.events is not None:
            start_response(status, [("content-type", "text/event-stream"), ("cache-control", "no-cache"), *common])
            return self._event_stream(reply.events)
        data = json.dumps(reply.payload).encode("utf-8")
        start_response(status, [("content-type", "application/json"), ("content-length", str(len(data))), *common])
        return [] if method == "HEAD" else [data]

    @staticmethod
    def _event_stream(events: Iterable[tuple[str | None, Any]]) -> Iterable[bytes]:
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            yield ((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode("utf-8")

    def handle(self, method: str, path: str, query: dict, headers: dict, raw: bytes) -> Reply:
        """Route one request; raises :class:`ApiError` / :class:`CacheRequestError` for error replies."""
        path = path.rstrip("/") or "/"
        posts = {
            "/v1/messages": self._messages, "/v1/messages/count_tokens": self._count_tokens,
            "/v1/chat/completions": self._chat, "/chat/completions": self._chat,
            "/v1/responses": self._responses, "/responses": self._responses,
            "/v1/responses/input_tokens": self._input_tokens, "/responses/input_tokens": self._input_tokens,
        }
        family = api_family(path)
        if family == "gemini":
            return self._gemini(method, path, query, headers, raw)
        route = posts.get(path)
        if route is None:
            raise ApiError(404, f"no route for {method} {path}")
        if method != "POST":
            raise ApiError(405, f"method {method} is not allowed on {path}; use POST")
        self._authenticate(family, headers)
        return route(parse_body(raw))

    @staticmethod
    def _authenticate(family: str, headers: dict) -> None:
        if family == "anthropic":
            if not (headers.get("x-api-key") or headers.get("authorization")):
                raise ApiError(401, "x-api-key header is required")
        elif not (headers.get("authorization") or "").lower().startswith("bearer "):
            raise ApiError(401, "You didn't provide an API key. You need to provide your API key in an Authorization "
                                "header using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")

    # ------------------------------------------------------------------ Anthropic
    def _messages(self, body: dict) -> Reply:
        diagnostics = body.get("diagnostics")
        if diagnostics is not None and not (isinstance(diagnostics, dict) and isinstance(
                diagnostics.get("previous_message_id"), (str, type(None)))):
            raise ApiError(400, "diagnostics.previous_message_id: Input should be a valid string or null")
        usage = self.cache.anthropic(body)  # validates the request first (rejections.check_anthropic)
        max_tokens = body["max_tokens"]
        n = next(self.ids)
        blocks = anthropic_blocks(body)
        self.remember(f"msg_emulator_{n:06d}", (str(body["model"]), blocks))
        out_tokens = min(max_tokens, REPLY_TOKENS)
        # max_tokens 0 is the pre-warm request: empty content, stop_reason max_tokens [A-PC]
        stop = "end_turn" if out_tokens == REPLY_TOKENS else "max_tokens"
        text = REPLY if out_tokens == REPLY_TOKENS else REPLY[: out_tokens * 4]
        message = {
            "id": f"msg_emulator_{n:06d}", "type": "message", "role": "assistant", "model": body["model"],
            "content": [{"type": "text", "text": text}] if text else [], "stop_reason": stop, "stop_sequence": None,
            "usage": _anthropic_usage(usage, out_tokens),
        }
        if diagnostics is not None:
            message["diagnostics"] = self._diagnose(diagnostics.get("previous_message_id"), body, blocks, usage)
        if not body.get("stream"):
            return Reply(200, message)
        start = {**message, "content": [], "stop_reason": None, "usage": _anthropic_usage(usage, 1)}
        events: list[tuple[str | None, Any]] = [("message_start", {"type": "message_start", "message": start})]
        if text:
            events += [
                ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}}),
                ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": text}}),
                ("content_block_stop", {"type": "content_block_stop", "index": 0}),
            ]
        events += [
            ("message_delta", {"type": "message_delta", "delta": {"stop_reason": stop, "stop_sequence": None},
                               "usage": {"output_tokens": out_tokens}}),
            ("message_stop", {"type": "message_stop"}),
        ]
        return Reply(200, events=events)

    def _diagnose(self, previous_id: str | None, body: dict, blocks: list[Block], usage: Usage) -> dict | None:
        """``diagnostics`` of a response: null when nothing diverged or there is nothing to compare [A-CD]."""
        if previous_id is None:
            return None  # the first turn opts in without a message to compare
        previous = self.recall(previous_id)
        if previous is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        reason = cache_miss_reason(previous[0], previous[1], str(body["model"]), blocks, usage.cache_read)
        return None if reason is None else {"cache_miss_reason": reason}

    def _count_tokens(self, body: dict) -> Reply:
        from promptlint.caching import rejections

        rejections.check_anthropic({"max_tokens": 1, **body})
        return Reply(200, {"input_tokens": sum(b.tokens for b in anthropic_blocks(body))})

    # --------------------------------------------------------------------- OpenAI
    @staticmethod
    def _details(body: dict, usage: Usage) -> dict:
        details = {"cached_tokens": usage.cache_read}
        if providers.uses_explicit_breakpoints(str(body["model"])):
            details["cache_write_tokens"] = usage.cache_write  # GPT-5.6+ only [O-SDK]
        return details

    def _chat(self, body: dict) -> Reply:
        usage = self.cache.openai(body)
        n = next(self.ids)
        prompt = usage.input_tokens + usage.cache_read + usage.cache_write  # both are parts of the prompt
        stats = {"prompt_tokens": prompt, "completion_tokens": REPLY_TOKENS, "total_tokens": prompt + REPLY_TOKENS,
                 "prompt_tokens_details": {**self._details(body, usage), "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
        head = {"id": f"chatcmpl-emulator-{n:06d}", "created": CREATED + n, "model": body["model"],
                "system_fingerprint": "fp_emulator"}
        if not body.get("stream"):
            return Reply(200, {
                **head, "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY, "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": stats,
            })
        chunk = {**head, "object": "chat.completion.chunk"}
        deltas = [({"role": "assistant", "content": ""}, None), ({"content": REPLY}, None), ({}, "stop")]
        events: list[tuple[str | None, Any]] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": f}]})
            for d, f in deltas]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append((None, {**chunk, "choices": [], "usage": stats}))
        return Reply(200, events=[*events, (None, "[DONE]")])

    def _with_history(self, body: dict) -> tuple[dict, list]:
        """The Responses body with ``previous_response_id`` resolved, and its full item list."""
        items = body.get("input") or []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else items
        if not isinstance(items, list):
            raise ApiError(400, f"Invalid type for 'input': expected a string or an array of input items.", param="input")
        previous_id = body.get("previous_response_id")
        if previous_id is None:
            return body, list(items)
        # the earlier turn's input and output come first; its instructions do not carry over [O-SDK]
        earlier = self.recall(str(previous_id))
        if not isinstance(earlier, list):
            raise ApiError(400, f"Previous response with id '{previous_id}' not found.", param="previous_response_id",
                           code="previous_response_not_found")
        items = earlier + list(items)
        return {**{k: v for k, v in body.items() if k != "previous_response_id"}, "input": items}, items

    def _input_tokens(self, body: dict) -> Reply:
        from promptlint.caching import rejections

        rejections.check_openai({**body, "input": body.get("input") or []})
        body, _ = self._with_history(body)
        return Reply(200, {"object": "response.input_tokens", "input_tokens": sum(b.tokens for b in openai_blocks(body))})

    def _responses(self, body: dict) -> Reply:
        if "model" in body:
            body, items = self._with_history(body)
        else:
            items = []
        usage = self.cache.openai(body)
        n = next(self.ids)
        prompt = usage.input_tokens + usage.cache_read + usage.cache_write  # both are parts of the prompt
        item = {"type": "message", "id": f"msg_emulator_{n:06d}", "status": "completed", "role": "assistant",
                "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}
        response = {
            "id": f"resp_emulator_{n:06d}", "object": "response", "created_at": CREATED + n,
            "status": "completed", "model": body["model"], "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
            "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": body.get("tools") or [],
            "output": [item],
            "usage": {"input_tokens": prompt, "input_tokens_details": self._details(body, usage),
                      "output_tokens": REPLY_TOKENS, "output_tokens_details": {"reasoning_tokens": 0},
                      "total_tokens": prompt + REPLY_TOKENS},
        }
        if body.get("store", True) is not False:  # store: false responses cannot be referred to later
            self.remember(response["id"], [*items, item])
        if not body.get("stream"):
            return Reply(200, response)
        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        return Reply(200, events=[
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": pending}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                                            "item_id": item["id"], "output_index": 0, "content_index": 0,
                                            "delta": REPLY, "logprobs": []}),
            ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": response}),
        ])

    # --------------------------------------------------------------------- Gemini
    def _gemini(self, method: str, path: str, query: dict, headers: dict, raw: bytes) -> Reply:
        parts = path.split("/")  # ["", "v1beta", "models", "m:generateContent"] or ["", "v1beta", "cachedContents", id]
        if len(parts) >= 3 and parts[2] == "cachedContents":
            self._authenticate_gemini(headers, query)
            return self._cached_contents(method, "/".join(parts[2:4]) if len(parts) > 3 else None, raw)
        if len(parts) == 4 and parts[2] == "models" and ":" in parts[3]:
            model, action = parts[3].rsplit(":", 1)
            if action in ("generateContent", "streamGenerateContent", "countTokens"):
                if method != "POST":
                    raise ApiError(405, f"method {method} is not allowed on {path}; use POST")
                self._authenticate_gemini(headers, query)
                body = {**parse_body(raw), "model": model}
                if action == "countTokens":
                    request = gemini_request({**body, **(body.get("generateContentRequest") or {}), "model": model})
                    return Reply(200, {"totalTokens": sum(b.tokens for b in gemini_blocks(request))})
                return self._generate(body, stream=action == "streamGenerateContent")
        raise ApiError(404, f"no route for {method} {path}")

    @staticmethod
    def _authenticate_gemini(headers: dict, query: dict) -> None:
        if not (headers.get("x-goog-api-key") or query.get("key") or headers.get("authorization")):
            raise ApiError(403, "Method doesn't allow unregistered callers (callers without established identity). "
                                "Please use API Key or other form of API consumer identity to call this API.",
                           "PERMISSION_DENIED")

    def _generate(self, body: dict, stream: bool) -> Reply:
        usage = self.cache.gemini(body)
        n = next(self.ids)
        prompt = usage.input_tokens + usage.cache_read
        meta = {"promptTokenCount": prompt, "candidatesTokenCount": REPLY_TOKENS, "totalTokenCount": prompt + REPLY_TOKENS,
                "promptTokensDetails": [{"modality": "TEXT", "tokenCount": prompt}]}
        if usage.cache_read:
            meta["cachedContentTokenCount"] = usage.cache_read
            meta["cacheTokensDetails"] = [{"modality": "TEXT", "tokenCount": usage.cache_read}]
        model = gemini_request(body)["model"]
        response = {"candidates": [{"content": {"role": "model", "parts": [{"text": REPLY}]}, "finishReason": "STOP",
                                    "index": 0}],
                    "usageMetadata": meta, "modelVersion": model, "responseId": f"emulator{n:06d}"}
        return Reply(200, events=[(None, response)]) if stream else Reply(200, response)

    def _cached_contents(self, method: str, name: str | None, raw: bytes) -> Reply:
        if name is None:
            if method == "POST":
                return Reply(200, self._resource(self.cache.create_cached_content(parse_body(raw))))
            raise ApiError(405, f"method {method} is not allowed on cachedContents; use POST")
        if method == "GET":
            return Reply(200, self._resource(self.cache.cached_content(name)))
        if method == "DELETE":
            self.cache.delete_cached_content(name)
            return Reply(200, {})
        if method == "PATCH":
            body = parse_body(raw)
            return Reply(200, self._resource(self.cache.update_cached_content(name, body.get("ttl"))))
        raise ApiError(405, f"method {method} is not allowed on {name}")

    def _resource(self, cache: CachedContent) -> dict:
        expires = time.time() + (cache.expires - self.cache.clock())
        created = _iso(CREATED)
        return {"name": cache.name, "model": f"models/{cache.model}", "displayName": cache.display_name,
                "createTime": created, "updateTime": created, "expireTime": _iso(expires),
                "usageMetadata": {"totalTokenCount": cache.tokens}}


def _anthropic_usage(usage: Usage, output_tokens: int) -> dict:
    return {
        "input_tokens": usage.input_tokens,
        "cache_creation_input_tokens": usage.cache_write,
        "cache_read_input_tokens": usage.cache_read,
        "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write - usage.cache_write_1h,
                           "ephemeral_1h_input_tokens": usage.cache_write_1h},
        "output_tokens": output_tokens,
        "service_tier": "standard",
    }

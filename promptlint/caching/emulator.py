"""An offline prompt-cache emulator: a real HTTP server speaking the Anthropic Messages and
OpenAI Chat Completions / Responses request and response shapes closely enough that the
official SDKs work against it unchanged, with caching decided by ``promptlint.caching.model``.

Replies are deterministic: the text is a fixed acknowledgement, ids count up per server.
Usage fields carry the real names (``cache_read_input_tokens``,
``prompt_tokens_details.cached_tokens``, ``input_tokens_details.cached_tokens``). Any API key
is accepted, but one must be sent, as the real APIs require. ``stream: true`` answers with
the providers' server-sent events. Anthropic cache diagnostics (``diagnostics.previous_message_id``)
and Responses ``previous_response_id`` refer to responses this server gave.
"""

from __future__ import annotations

import itertools
from collections import OrderedDict
import json
import signal
import socket
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Iterable

import click

from promptlint import providers
from promptlint.caching.model import (
    Block, CacheModel, CacheRequestError, Usage, anthropic_blocks, cache_miss_reason, openai_blocks,
)

REPLY = "Acknowledged."
REPLY_TOKENS = 3
CREATED = 1_700_000_000  # a fixed epoch base keeps replies deterministic
KEPT_RESPONSES = 1024  # responses remembered for previous_message_id / previous_response_id


class EmulatorServer(ThreadingHTTPServer):
    """The HTTP server; ``url`` is what SDK ``base_url`` options take."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, cache: CacheModel | None = None,
                 log: bool = False):
        if ":" in host:
            self.address_family = socket.AF_INET6
        super().__init__((host, port), _Handler)
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

    @property
    def url(self) -> str:
        """``http://host:port`` (an IPv6 host in brackets)."""
        host, port = self.server_address[:2]
        host = f"[{host}]" if ":" in host else host
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests); ``shutdown()`` stops it."""
        # a short poll interval keeps shutdown() quick (it waits for the loop to notice)
        thread = threading.Thread(target=self.serve_forever, kwargs={"poll_interval": 0.05},
                                  name="promptlint-emulator", daemon=True)
        thread.start()
        return thread


class _ApiError(Exception):
    def __init__(self, status: int, kind: str, message: str, param: str | None = None, code: str | None = None):
        super().__init__(message)
        self.status, self.kind, self.param, self.code = status, kind, param, code


def _require(body: dict, *keys: str) -> None:
    for key in keys:
        if key not in body:
            raise _ApiError(400, "invalid_request_error", f"{key}: Field required", key)


class _Handler(BaseHTTPRequestHandler):
    server: EmulatorServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # the smoke prints usage itself
        if self.server.log:
            sys.stderr.write(f"emulate: {fmt % args}\n")

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        self._error(self.path, _ApiError(404, "not_found_error", f"no route for GET {self.path}"))

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0].rstrip("/")
        routes = {
            "/v1/messages": self._messages,
            "/v1/messages/count_tokens": self._count_tokens,
            "/v1/chat/completions": self._chat,
            "/chat/completions": self._chat,
            "/v1/responses": self._responses,
            "/responses": self._responses,
            "/v1/responses/input_tokens": self._input_tokens,
            "/responses/input_tokens": self._input_tokens,
        }
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        try:
            route = routes.get(path)
            if route is None:
                raise _ApiError(404, "not_found_error", f"no route for POST {path}")
            self._authenticate(path)
            try:
                body = json.loads(raw or b"{}")
            except (ValueError, UnicodeDecodeError) as exc:
                raise _ApiError(400, "invalid_request_error", f"invalid JSON body: {exc}") from None
            if not isinstance(body, dict):
                raise _ApiError(400, "invalid_request_error", "the request body must be a JSON object")
            route(body)
        except _ApiError as exc:
            self._error(path, exc)
        except CacheRequestError as exc:
            self._error(path, _ApiError(400, "invalid_request_error", str(exc), exc.param))
        except (KeyError, TypeError, ValueError) as exc:
            self._error(path, _ApiError(400, "invalid_request_error", f"malformed request: {exc}"))

    def _authenticate(self, path: str) -> None:
        if path.startswith("/v1/messages"):
            if not (self.headers.get("x-api-key") or self.headers.get("authorization")):
                raise _ApiError(401, "authentication_error", "x-api-key header is required")
        elif not (self.headers.get("authorization") or "").lower().startswith("bearer "):
            raise _ApiError(401, "invalid_request_error",
                            "You didn't provide an API key. You need to provide your API key in an Authorization header "
                            "using Bearer auth (i.e. Authorization: Bearer YOUR_KEY).")

    # ------------------------------------------------------------------ replies
    def _send(self, status: int, payload: dict) -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", "req_emulator")
        self.send_header("x-request-id", "req_emulator")
        self.end_headers()
        self.wfile.write(data)

    def _stream(self, events: Iterable[tuple[str | None, dict | str]]) -> None:
        """Server-sent events; the connection closes after the last one (no content-length)."""
        self.send_response(200)
        self.send_header("content-type", "text/event-stream")
        self.send_header("cache-control", "no-cache")
        self.send_header("connection", "close")
        self.end_headers()
        self.close_connection = True
        for name, data in events:
            text = data if isinstance(data, str) else json.dumps(data)
            self.wfile.write(((f"event: {name}\n" if name else "") + f"data: {text}\n\n").encode("utf-8"))
        self.wfile.flush()

    def _error(self, path: str, error: _ApiError) -> None:
        if path.startswith("/v1/messages"):
            self._send(error.status, {"type": "error", "error": {"type": error.kind, "message": str(error)},
                                      "request_id": "req_emulator"})
        else:
            self._send(error.status, {"error": {"message": str(error), "type": error.kind, "param": error.param,
                                                "code": error.code}})

    # ------------------------------------------------------------------ Anthropic
    def _messages(self, body: dict) -> None:
        _require(body, "model", "max_tokens", "messages")
        max_tokens = body["max_tokens"]
        if not isinstance(max_tokens, int) or max_tokens < 0:
            raise _ApiError(400, "invalid_request_error", "max_tokens: Input should be a non-negative integer", "max_tokens")
        diagnostics = body.get("diagnostics")
        if diagnostics is not None and not (isinstance(diagnostics, dict) and isinstance(
                diagnostics.get("previous_message_id"), (str, type(None)))):
            raise _ApiError(400, "invalid_request_error",
                            "diagnostics.previous_message_id: Input should be a valid string or null")
        usage = self.server.cache.anthropic(body)
        n = next(self.server.ids)
        blocks = anthropic_blocks(body)
        self.server.remember(f"msg_emulator_{n:06d}", (str(body["model"]), blocks))
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
            return self._send(200, message)
        start = {**message, "content": [], "stop_reason": None, "usage": _anthropic_usage(usage, 1)}
        events: list[tuple[str | None, dict | str]] = [("message_start", {"type": "message_start", "message": start})]
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
        self._stream(events)

    def _diagnose(self, previous_id: str | None, body: dict, blocks: list[Block], usage: Usage) -> dict | None:
        """``diagnostics`` of a response: null when nothing diverged or there is nothing to compare [A-CD]."""
        if previous_id is None:
            return None  # the first turn opts in without a message to compare
        previous = self.server.recall(previous_id)
        if previous is None:
            return {"cache_miss_reason": {"type": "previous_message_not_found"}}
        reason = cache_miss_reason(previous[0], previous[1], str(body["model"]), blocks, usage.cache_read)
        return None if reason is None else {"cache_miss_reason": reason}

    def _count_tokens(self, body: dict) -> None:
        _require(body, "model", "messages")
        total = sum(b.tokens for b in anthropic_blocks(body))
        self._send(200, {"input_tokens": total})

    # --------------------------------------------------------------------- OpenAI
    def _details(self, body: dict, usage: Usage) -> dict:
        details = {"cached_tokens": usage.cache_read}
        if providers.uses_explicit_breakpoints(str(body["model"])):
            details["cache_write_tokens"] = usage.cache_write  # GPT-5.6+ only [O-SDK]
        return details

    def _chat(self, body: dict) -> None:
        _require(body, "model", "messages")
        usage = self.server.cache.openai(body)
        n = next(self.server.ids)
        prompt = usage.input_tokens + usage.cache_read + usage.cache_write  # both are parts of the prompt
        stats = {"prompt_tokens": prompt, "completion_tokens": REPLY_TOKENS, "total_tokens": prompt + REPLY_TOKENS,
                 "prompt_tokens_details": {**self._details(body, usage), "audio_tokens": 0},
                 "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}}
        head = {"id": f"chatcmpl-emulator-{n:06d}", "created": CREATED + n, "model": body["model"],
                "system_fingerprint": "fp_emulator"}
        if not body.get("stream"):
            return self._send(200, {
                **head, "object": "chat.completion",
                "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY, "refusal": None},
                             "logprobs": None, "finish_reason": "stop"}],
                "usage": stats,
            })
        chunk = {**head, "object": "chat.completion.chunk"}
        deltas = [({"role": "assistant", "content": ""}, None), ({"content": REPLY}, None), ({}, "stop")]
        events: list[tuple[str | None, dict | str]] = [
            (None, {**chunk, "choices": [{"index": 0, "delta": d, "logprobs": None, "finish_reason": f}]})
            for d, f in deltas]
        if (body.get("stream_options") or {}).get("include_usage"):
            events.append((None, {**chunk, "choices": [], "usage": stats}))
        self._stream([*events, (None, "[DONE]")])

    def _with_history(self, body: dict) -> tuple[dict, list]:
        """The Responses body with ``previous_response_id`` resolved, and its full item list."""
        items = body.get("input") or []
        items = [{"role": "user", "content": items}] if isinstance(items, str) else list(items)
        previous_id = body.get("previous_response_id")
        if previous_id is None:
            return body, items
        # the earlier turn's input and output come first; its instructions do not carry over [O-SDK]
        earlier = self.server.recall(str(previous_id))
        if not isinstance(earlier, list):
            raise _ApiError(400, "invalid_request_error", f"Previous response with id '{previous_id}' not found.",
                            "previous_response_id", "previous_response_not_found")
        items = earlier + items
        return {**{k: v for k, v in body.items() if k != "previous_response_id"}, "input": items}, items

    def _input_tokens(self, body: dict) -> None:
        _require(body, "model")
        body, _ = self._with_history(body)
        self._send(200, {"object": "response.input_tokens", "input_tokens": sum(b.tokens for b in openai_blocks(body))})

    def _responses(self, body: dict) -> None:
        _require(body, "model")
        body, items = self._with_history(body)
        usage = self.server.cache.openai(body)
        n = next(self.server.ids)
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
            self.server.remember(response["id"], [*items, item])
        if not body.get("stream"):
            return self._send(200, response)
        pending = {**response, "status": "in_progress", "output": [], "usage": None}
        self._stream([
            ("response.created", {"type": "response.created", "sequence_number": 0, "response": pending}),
            ("response.output_text.delta", {"type": "response.output_text.delta", "sequence_number": 1,
                                            "item_id": item["id"], "output_index": 0, "content_index": 0,
                                            "delta": REPLY, "logprobs": []}),
            ("response.completed", {"type": "response.completed", "sequence_number": 2, "response": response}),
        ])


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


@click.command("emulate")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (loopback by default).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
@click.option("--verbose", is_flag=True, help="Log each request to stderr.")
def emulate_command(host: str, port: int, verbose: bool) -> None:
    """Run the offline prompt-cache emulator (Anthropic Messages, OpenAI Chat and Responses).

    Prints its URL (the SDKs' base URL, for both providers) on the first line of stdout, then
    serves until SIGINT or SIGTERM and exits 0. Exit 2 when it cannot listen.
    """
    try:
        server = EmulatorServer(host, port, log=verbose)
    except OSError as exc:
        click.echo(f"promptlint emulate: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    stop = threading.Event()

    def _stop(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    thread = server.start()
    click.echo(server.url)
    sys.stdout.flush()
    while not stop.wait(0.2):  # a timed wait lets the signal handler run promptly
        pass
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)

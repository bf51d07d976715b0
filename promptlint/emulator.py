"""An offline prompt-cache emulator: a real HTTP server speaking the Anthropic Messages and
OpenAI Chat Completions / Responses request and response shapes closely enough that the
official SDKs work against it unchanged, with caching decided by ``promptlint.cachemodel``.

Replies are deterministic: the text is a fixed acknowledgement, ids count up per server.
Usage fields carry the real names (``cache_read_input_tokens``,
``prompt_tokens_details.cached_tokens``, ``input_tokens_details.cached_tokens``).
"""

from __future__ import annotations

import itertools
import json
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import click

from promptlint import providers
from promptlint.cachemodel import CacheModel, CacheRequestError, anthropic_blocks

REPLY = "Acknowledged."


class EmulatorServer(ThreadingHTTPServer):
    """The HTTP server; ``url`` is what SDK ``base_url`` options take."""

    daemon_threads = True
    allow_reuse_address = True

    def __init__(self, host: str = "127.0.0.1", port: int = 0, cache: CacheModel | None = None):
        super().__init__((host, port), _Handler)
        self.cache = cache or CacheModel()
        self.ids = itertools.count(1)

    @property
    def url(self) -> str:
        host, port = self.server_address[:2]
        return f"http://{host}:{port}"

    def start(self) -> threading.Thread:
        """Serve on a background thread (tests); ``shutdown()`` stops it."""
        thread = threading.Thread(target=self.serve_forever, name="promptlint-emulator", daemon=True)
        thread.start()
        return thread


class _Handler(BaseHTTPRequestHandler):
    server: EmulatorServer
    protocol_version = "HTTP/1.1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the smoke prints usage itself
        return

    def do_POST(self) -> None:  # noqa: N802 - http.server's naming
        path = self.path.split("?", 1)[0].rstrip("/")
        length = int(self.headers.get("content-length") or 0)
        try:
            body = json.loads(self.rfile.read(length) or b"{}")
            if not isinstance(body, dict):
                raise ValueError("the request body must be a JSON object")
        except (ValueError, UnicodeDecodeError) as exc:
            return self._error(path, 400, f"invalid JSON body: {exc}")
        routes = {
            "/v1/messages": self._messages,
            "/v1/messages/count_tokens": self._count_tokens,
            "/v1/chat/completions": self._chat,
            "/chat/completions": self._chat,
            "/v1/responses": self._responses,
            "/responses": self._responses,
        }
        route = routes.get(path)
        if route is None:
            return self._error(path, 404, f"no route for POST {path}")
        try:
            route(body)
        except CacheRequestError as exc:
            self._error(path, 400, str(exc))
        except (KeyError, TypeError, ValueError) as exc:
            self._error(path, 400, f"malformed request: {exc}")

    # ------------------------------------------------------------------ replies
    def _send(self, status: int, payload: dict, request_id: str = "req_emulator") -> None:
        data = json.dumps(payload).encode("utf-8")
        self.send_response(status)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(data)))
        self.send_header("request-id", request_id)
        self.send_header("x-request-id", request_id)
        self.end_headers()
        self.wfile.write(data)

    def _error(self, path: str, status: int, message: str) -> None:
        kind = "invalid_request_error" if status == 400 else "not_found_error"
        if path.startswith("/v1/messages"):
            self._send(status, {"type": "error", "error": {"type": kind, "message": message}, "request_id": "req_emulator"})
        else:
            self._send(status, {"error": {"message": message, "type": kind, "param": None, "code": None}})

    def _messages(self, body: dict) -> None:
        for key in ("model", "max_tokens", "messages"):
            if key not in body:
                raise KeyError(key)
        usage = self.server.cache.anthropic(body)
        n = next(self.server.ids)
        out_tokens = 0 if body["max_tokens"] == 0 else min(int(body["max_tokens"]), 3)
        content = [] if out_tokens == 0 else [{"type": "text", "text": REPLY}]
        self._send(200, {
            "id": f"msg_emulator_{n:06d}", "type": "message", "role": "assistant", "model": body["model"],
            "content": content, "stop_reason": "max_tokens" if out_tokens == 0 else "end_turn", "stop_sequence": None,
            "usage": {
                "input_tokens": usage.input_tokens,
                "cache_creation_input_tokens": usage.cache_write,
                "cache_read_input_tokens": usage.cache_read,
                "cache_creation": {"ephemeral_5m_input_tokens": usage.cache_write - usage.cache_write_1h,
                                   "ephemeral_1h_input_tokens": usage.cache_write_1h},
                "output_tokens": out_tokens,
                "service_tier": "standard",
            },
        })

    def _count_tokens(self, body: dict) -> None:
        total = sum(b.tokens for b in anthropic_blocks(body))
        self._send(200, {"input_tokens": total})

    def _chat(self, body: dict) -> None:
        for key in ("model", "messages"):
            if key not in body:
                raise KeyError(key)
        usage = self.server.cache.openai(body)
        n = next(self.server.ids)
        prompt = usage.input_tokens + usage.cache_read
        details = {"cached_tokens": usage.cache_read, "audio_tokens": 0}
        if providers.uses_explicit_breakpoints(str(body["model"])):
            details["cache_write_tokens"] = usage.cache_write
        self._send(200, {
            "id": f"chatcmpl-emulator-{n:06d}", "object": "chat.completion", "created": 1_700_000_000 + n,
            "model": body["model"], "system_fingerprint": "fp_emulator",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": REPLY, "refusal": None},
                         "logprobs": None, "finish_reason": "stop"}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": 3, "total_tokens": prompt + 3,
                      "prompt_tokens_details": details,
                      "completion_tokens_details": {"reasoning_tokens": 0, "audio_tokens": 0}},
        })

    def _responses(self, body: dict) -> None:
        if "model" not in body:
            raise KeyError("model")
        usage = self.server.cache.openai(body)
        n = next(self.server.ids)
        prompt = usage.input_tokens + usage.cache_read
        details = {"cached_tokens": usage.cache_read}
        if providers.uses_explicit_breakpoints(str(body["model"])):
            details["cache_write_tokens"] = usage.cache_write
        self._send(200, {
            "id": f"resp_emulator_{n:06d}", "object": "response", "created_at": 1_700_000_000 + n,
            "status": "completed", "model": body["model"], "error": None, "incomplete_details": None,
            "instructions": body.get("instructions"), "metadata": {}, "parallel_tool_calls": True,
            "temperature": 1.0, "top_p": 1.0, "tool_choice": "auto", "tools": body.get("tools") or [],
            "output": [{"type": "message", "id": f"msg_emulator_{n:06d}", "status": "completed", "role": "assistant",
                        "content": [{"type": "output_text", "text": REPLY, "annotations": []}]}],
            "usage": {"input_tokens": prompt, "input_tokens_details": details, "output_tokens": 3,
                      "output_tokens_details": {"reasoning_tokens": 0}, "total_tokens": prompt + 3},
        })


@click.command("emulate")
@click.option("--host", default="127.0.0.1", show_default=True, help="Interface to listen on (loopback by default).")
@click.option("--port", default=0, show_default=True, type=click.IntRange(0, 65535), help="Port; 0 picks a free one.")
def emulate_command(host: str, port: int) -> None:
    """Run the offline prompt-cache emulator (Anthropic Messages, OpenAI Chat and Responses).

    Prints its URL, which works as the SDKs' base URL, then serves until SIGINT or SIGTERM.
    """
    try:
        server = EmulatorServer(host, port)
    except OSError as exc:
        click.echo(f"promptlint emulate: cannot listen on {host}:{port}: {exc.strerror or exc}", err=True)
        sys.exit(2)
    stop = threading.Event()

    def _stop(signum, frame) -> None:  # noqa: ARG001 - signal handler signature
        stop.set()

    signal.signal(signal.SIGTERM, _stop)
    signal.signal(signal.SIGINT, _stop)
    thread = server.start()
    click.echo(server.url, nl=True)
    sys.stdout.flush()
    stop.wait()
    server.shutdown()
    server.server_close()
    thread.join(timeout=5)

"""The emulator under load and hostile clients: every answer is the provider's JSON, nothing hangs,
nothing grows without bound (issue 13). Figures (p99 latency) come from scripts/bench_emulator.py."""

from __future__ import annotations

import http.client
import json
import socket
import threading
import tracemalloc
from concurrent.futures import ThreadPoolExecutor
from io import BytesIO

import pytest

from promptlint.caching.emulator import MAX_BODY_BYTES, Emulator
from promptlint.caching.server import EmulatorServer

SYSTEM = [{"type": "text", "text": "policy line. " * 2500, "cache_control": {"type": "ephemeral"}}]
ANTHROPIC = {"model": "claude-haiku-4-5", "max_tokens": 8, "system": SYSTEM, "messages": [{"role": "user", "content": "hi"}]}
KEYS = {"x-api-key": "k", "authorization": "Bearer k", "content-type": "application/json"}


@pytest.fixture()
def server():
    emulator = EmulatorServer(idle_seconds=1.0, connection_limit=64)
    emulator.start()
    yield emulator
    emulator.shutdown()
    emulator.server_close()


def request(server, method: str, path: str, body: bytes | None = None, headers: dict | None = None):
    host, port = server.server_address
    conn = http.client.HTTPConnection(host, port, timeout=20)
    try:
        conn.request(method, path, body=body, headers={**KEYS, **(headers or {})})
        response = conn.getresponse()
        return response.status, response.getheader("content-type"), response.read()
    finally:
        conn.close()


def raw_exchange(server, data: bytes, timeout: float = 20.0) -> bytes:
    """Send raw bytes, read until the server closes (or the deadline: a hang fails the test)."""
    with socket.create_connection(server.server_address, timeout=timeout) as sock:
        sock.sendall(data)
        chunks = []
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                break
            chunks.append(chunk)
    return b"".join(chunks)


def json_reply(raw: bytes) -> tuple[int, dict]:
    head, _, body = raw.partition(b"\r\n\r\n")
    status = int(head.split(b" ", 2)[1])
    assert b"application/json" in head.lower(), head
    return status, json.loads(body)


def test_two_hundred_concurrent_requests_all_get_200_without_a_reset(server):
    body = json.dumps(ANTHROPIC).encode()
    with ThreadPoolExecutor(max_workers=200) as pool:
        results = list(pool.map(lambda _: request(server, "POST", "/v1/messages", body)[0], range(200)))
    assert results == [200] * 200


@pytest.mark.parametrize("length", ["abc", "-1", "1e3", "9" * 40])
def test_a_bad_content_length_is_a_json_400_and_never_hangs(server, length):
    raw = raw_exchange(server, f"POST /v1/messages HTTP/1.1\r\nHost: x\r\nx-api-key: k\r\n"
                               f"Content-Length: {length}\r\n\r\n{{}}".encode())
    status, body = json_reply(raw)
    assert status in (400, 413) and body["type"] == "error"


def test_a_body_over_32_mb_is_a_json_413_before_it_is_read(server):
    raw = raw_exchange(server, f"POST /v1/chat/completions HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer k\r\n"
                               f"Content-Length: {MAX_BODY_BYTES + 1}\r\n\r\n".encode())
    status, body = json_reply(raw)
    assert status == 413 and set(body["error"]) == {"message", "type", "param", "code"}


def test_deeply_nested_json_is_a_json_400(server):
    status, kind, data = request(server, "POST", "/v1/messages", b"[" * 200_000 + b"]" * 200_000)
    assert status == 400 and "json" in kind and "nested too deeply" in json.loads(data)["error"]["message"]
    nested = {**ANTHROPIC, "metadata": json.loads("[" * 900 + "]" * 900)}
    status, _, data = request(server, "POST", "/v1/messages", json.dumps(nested).encode())
    assert status in (200, 400), data


@pytest.mark.parametrize("path,body,param", [
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "hi"}], "stream": True,
                              "stream_options": 5}, "stream_options"),
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": 5}, "messages"),
    ("/v1/chat/completions", {"model": "gpt-4o", "messages": [{"role": "user", "content": "x"}], "tools": "abc"}, "tools"),
    ("/v1/responses", {"model": "gpt-4o", "input": 5}, "input"),
])
def test_wrong_typed_openai_fields_are_the_real_400(server, path, body, param):
    status, _, data = request(server, "POST", path, json.dumps(body).encode())
    assert status == 400 and json.loads(data)["error"]["param"] == param


@pytest.mark.parametrize("method", ["PUT", "DELETE", "PATCH", "GET"])
def test_other_methods_get_a_json_error(server, method):
    status, kind, data = request(server, method, "/v1/messages", b"{}")
    assert status == 405 and kind == "application/json"
    assert json.loads(data)["error"]["type"] == "invalid_request_error"


def test_head_gets_json_headers_and_no_body(server):
    status, kind, data = request(server, "HEAD", "/v1/chat/completions")
    assert status == 405 and kind == "application/json" and data == b""


def test_an_idle_connection_is_closed_by_the_server(server):
    with socket.create_connection(server.server_address, timeout=20) as sock:
        sock.sendall(b"POST /v1/messages HTTP/1.1\r\nHost: x\r\n")  # a slow client that never finishes
        assert sock.recv(1024) == b""  # closed by the server (the socket timeout would fail the test)


def test_idle_connections_past_the_cap_use_no_threads_and_do_not_block_a_real_client(server):
    threads_before = threading.active_count()
    idle = [socket.create_connection(server.server_address, timeout=20) for _ in range(150)]  # cap is 64
    try:
        assert threading.active_count() <= threads_before + 1
        status, _, _ = request(server, "POST", "/v1/messages", json.dumps(ANTHROPIC).encode())
        assert status == 200  # served once idle ones time out, instead of being reset
    finally:
        for sock in idle:
            sock.close()


def call(app: Emulator, path: str, body: dict) -> int:
    """One request straight through the WSGI application (the rules without the transport)."""
    data = json.dumps(body).encode()
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_LENGTH": str(len(data)),
               "wsgi.input": BytesIO(data), "HTTP_AUTHORIZATION": "Bearer k", "QUERY_STRING": ""}
    status = []
    b"".join(app(environ, lambda s, h: status.append(s)))
    return int(status[0].split()[0])


def test_memory_stays_bounded_over_ten_thousand_distinct_prompt_cache_keys():
    app = Emulator()
    messages = [{"role": "system", "content": "rule. " * 900}, {"role": "user", "content": "hi"}]
    tracemalloc.start()
    try:
        for n in range(2_000):
            assert call(app, "/v1/chat/completions", {"model": "gpt-4o", "messages": messages,
                                                      "prompt_cache_key": f"tenant-{n}"}) == 200
        after_2k = tracemalloc.get_traced_memory()[0]
        for n in range(2_000, 10_000):
            call(app, "/v1/chat/completions", {"model": "gpt-4o", "messages": messages, "prompt_cache_key": f"tenant-{n}"})
        after_10k = tracemalloc.get_traced_memory()[0]
    finally:
        tracemalloc.stop()
    assert app.cache.size()["keys"] <= app.cache.max_keys
    assert after_10k < after_2k * 1.25, (after_2k, after_10k)  # five times the keys, not five times the memory

"""Generated request bodies through the emulator's rules and through simulate: every answer is a
JSON reply or a clear error, never a traceback or a hang. Small by default; set
PROMPTLINT_FUZZ_EXAMPLES (e.g. 5000) for a larger campaign."""

from __future__ import annotations

import json
import os
from io import BytesIO

from hypothesis import HealthCheck, given, settings, strategies as st

from promptlint.caching.emulator import Emulator
from promptlint.caching.simulate import simulate

EXAMPLES = int(os.environ.get("PROMPTLINT_FUZZ_EXAMPLES", "150"))
FUZZ = settings(max_examples=EXAMPLES, deadline=None, suppress_health_check=list(HealthCheck))

scalars = st.none() | st.booleans() | st.integers(-5, 5000) | st.floats(allow_nan=False, allow_infinity=False) \
    | st.text(max_size=20)
json_values = st.recursive(scalars, lambda inner: st.lists(inner, max_size=4)
                           | st.dictionaries(st.text(max_size=8), inner, max_size=4), max_leaves=20)
texts = st.text(max_size=60)
blocks = st.fixed_dictionaries({"type": st.sampled_from(["text", "input_text", "image", "tool_use", "tool_result", 5]),
                                "text": texts | json_values},
                               optional={"cache_control": st.sampled_from([{"type": "ephemeral"}, {"type": "x"}, {},
                                                                           {"type": "ephemeral", "ttl": "1h"}, 5]),
                                         "prompt_cache_breakpoint": json_values, "id": texts, "tool_use_id": texts})
messages = st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant", "system", "tool", "x", 3]),
                                           "content": texts | st.lists(blocks, max_size=3) | json_values}), max_size=4)
models = st.sampled_from(["claude-haiku-4-5", "claude-sonnet-4-6", "gpt-4o", "gpt-5.6-luna", "gemini-2.5-flash",
                          "nope", 7])
anthropic_bodies = st.fixed_dictionaries(
    {"model": models, "max_tokens": st.integers(-1, 50) | json_values, "messages": messages | json_values},
    optional={"system": texts | st.lists(blocks, max_size=3) | json_values, "tools": json_values,
              "cache_control": json_values, "stream": st.booleans(), "tool_choice": json_values, "speed": json_values})
openai_bodies = st.fixed_dictionaries(
    {"model": models},
    optional={"messages": messages | json_values, "input": texts | messages | json_values, "tools": json_values,
              "prompt_cache_key": texts | json_values, "prompt_cache_options": json_values,
              "prompt_cache_retention": st.sampled_from(["in_memory", "24h", "1d"]) | json_values,
              "stream": st.booleans() | json_values, "stream_options": json_values, "instructions": json_values})
gemini_bodies = st.fixed_dictionaries(
    {"contents": texts | st.lists(st.fixed_dictionaries({"role": st.sampled_from(["user", "model", "x"]),
                                                           "parts": st.lists(st.fixed_dictionaries({"text": texts}),
                                                                             max_size=3) | json_values}), max_size=3)
     | json_values},
    optional={"systemInstruction": json_values, "tools": json_values, "cachedContent": texts | json_values})
ROUTES = {"/v1/messages": anthropic_bodies, "/v1/chat/completions": openai_bodies, "/v1/responses": openai_bodies,
          "/v1beta/models/gemini-2.5-flash:generateContent": gemini_bodies, "/v1beta/cachedContents": gemini_bodies}
APP = Emulator()


def call(path: str, data: bytes) -> tuple[int, dict]:
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": path, "CONTENT_LENGTH": str(len(data)),
               "wsgi.input": BytesIO(data), "HTTP_AUTHORIZATION": "Bearer k", "HTTP_X_API_KEY": "k",
               "HTTP_X_GOOG_API_KEY": "k", "QUERY_STRING": ""}
    status: list[str] = []
    body = b"".join(APP(environ, lambda s, h: status.append(s)))
    code = int(status[0].split()[0])
    return code, (json.loads(body) if body and not body.startswith(b"event:") and not body.startswith(b"data:") else {})


@FUZZ
@given(route=st.sampled_from(sorted(ROUTES)), data=st.data())
def test_generated_bodies_get_a_reply_never_an_internal_error(route, data):
    body = data.draw(ROUTES[route])
    code, payload = call(route, json.dumps(body).encode())
    assert code in (200, 400, 403, 404, 429), (code, payload)
    if code != 200:
        assert "error" in payload


@FUZZ
@given(raw=st.binary(max_size=200) | st.text(max_size=200).map(str.encode))
def test_arbitrary_bytes_get_a_json_error(raw):
    code, payload = call("/v1/messages", raw)
    assert code in (200, 400) and ("error" in payload or code == 200)


@FUZZ
@given(bodies=st.lists(anthropic_bodies | openai_bodies | gemini_bodies, min_size=1, max_size=4),
       interval=st.floats(0, 5000))
def test_simulate_reports_every_body_as_a_turn_or_an_error(bodies, interval):
    rows = simulate(bodies, interval=interval)
    assert len(rows) == len(bodies)
    assert all("error" in r or r["input_tokens"] >= 0 for r in rows)

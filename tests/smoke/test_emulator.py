"""The emulator speaks the real wire shapes: the official SDKs, unchanged, against a loopback server."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import urllib.error
import urllib.request

import anthropic
import openai
import pytest

from promptlint.caching.model import CacheModel
from promptlint.caching.server import EmulatorServer

BIG = "policy line. " * 2500
MARK = {"type": "ephemeral"}
SYSTEM = [{"type": "text", "text": BIG, "cache_control": MARK}]
USER = [{"role": "user", "content": "hi"}]
OPENAI_MESSAGES = [{"role": "system", "content": "rule. " * 900}, {"role": "user", "content": "hi"}]


@pytest.fixture()
def server():
    now = [0.0]
    emulator = EmulatorServer(cache=CacheModel(clock=lambda: now[0]))
    emulator.start()
    emulator.now = now
    yield emulator
    emulator.shutdown()
    emulator.server_close()


def claude(server) -> anthropic.Anthropic:
    return anthropic.Anthropic(api_key="dummy", base_url=server.url, max_retries=0, timeout=10)


def gpt(server) -> openai.OpenAI:
    return openai.OpenAI(api_key="dummy", base_url=server.url + "/v1", max_retries=0, timeout=10)


def post(url: str, body: dict, headers: dict | None = None) -> tuple[int, dict]:
    request = urllib.request.Request(url, data=json.dumps(body).encode(), method="POST",
                                     headers={"content-type": "application/json", **(headers or {})})
    try:
        with urllib.request.urlopen(request, timeout=10) as response:
            return response.status, json.load(response)
    except urllib.error.HTTPError as error:
        return error.code, json.load(error)


def test_anthropic_usage_fields_carry_the_real_names_and_add_up(server):
    usage = claude(server).messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER).usage
    assert usage.cache_creation_input_tokens > 0 and usage.cache_read_input_tokens == 0
    assert usage.cache_creation.ephemeral_5m_input_tokens == usage.cache_creation_input_tokens
    assert usage.cache_creation.ephemeral_1h_input_tokens == 0


def test_anthropic_streaming_reports_the_cache_read_in_message_start(server):
    client = claude(server)
    client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER)
    with client.messages.stream(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER) as stream:
        text = "".join(stream.text_stream)
        final = stream.get_final_message()
    assert text == "Acknowledged."
    assert final.usage.cache_read_input_tokens > 0


def test_anthropic_replies_are_deterministic(server):
    client = claude(server)
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=16, messages=USER)
    second = client.messages.create(model="claude-haiku-4-5", max_tokens=16, messages=USER)
    assert first.content[0].text == second.content[0].text == "Acknowledged."
    assert (first.id, second.id) == ("msg_emulator_000001", "msg_emulator_000002")


def test_anthropic_pre_warm_with_max_tokens_zero_returns_no_content(server):
    message = claude(server).messages.create(model="claude-haiku-4-5", max_tokens=0, system=SYSTEM, messages=USER)
    assert message.content == [] and message.stop_reason == "max_tokens"
    assert message.usage.cache_creation_input_tokens > 0


def test_count_tokens_answers_input_tokens(server):
    count = claude(server).messages.count_tokens(model="claude-haiku-4-5", system=SYSTEM, messages=USER)
    assert count.input_tokens > 4096


def test_the_injected_clock_expires_entries_served_over_http(server):
    client = claude(server)
    client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER)
    server.now[0] = 301.0
    usage = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER).usage
    assert usage.cache_read_input_tokens == 0 and usage.cache_creation_input_tokens > 0


def test_a_request_without_an_api_key_gets_the_real_401_shapes(server):
    status, body = post(server.url + "/v1/messages", {"model": "m", "max_tokens": 1, "messages": USER})
    assert status == 401 and body["error"]["type"] == "authentication_error" and body["type"] == "error"
    status, body = post(server.url + "/v1/chat/completions", {"model": "gpt-4o", "messages": USER})
    assert status == 401 and set(body["error"]) == {"message", "type", "param", "code"}


def test_a_missing_field_is_a_400_naming_it(server):
    status, body = post(server.url + "/v1/chat/completions", {"model": "gpt-4o"}, {"authorization": "Bearer k"})
    assert status == 400 and body["error"]["param"] == "messages"
    status, body = post(server.url + "/v1/messages", {"model": "m", "messages": USER}, {"x-api-key": "k"})
    assert status == 400 and body["error"]["message"] == "max_tokens: Field required"


def test_openai_chat_reports_cached_tokens_on_the_second_request(server):
    client = gpt(server)
    client.chat.completions.create(model="gpt-4o", messages=OPENAI_MESSAGES)
    usage = client.chat.completions.create(model="gpt-4o", messages=OPENAI_MESSAGES).usage
    assert usage.prompt_tokens_details.cached_tokens >= 1024
    assert usage.prompt_tokens_details.cache_write_tokens is None  # the field exists for GPT-5.6+ only


def test_openai_chat_streaming_sends_usage_when_asked(server):
    chunks = list(gpt(server).chat.completions.create(model="gpt-4o", messages=OPENAI_MESSAGES, stream=True,
                                                       stream_options={"include_usage": True}))
    assert "".join(c.choices[0].delta.content or "" for c in chunks if c.choices) == "Acknowledged."
    assert chunks[-1].usage.prompt_tokens > 1024


def test_openai_responses_report_writes_and_reads_for_gpt_5_6(server):
    client = gpt(server)
    request = {"model": "gpt-5.6-luna", "prompt_cache_key": "k",
               "input": [{"role": "developer", "content": [{"type": "input_text", "text": "rule. " * 900}]},
                         {"role": "user", "content": "hi"}]}
    first = client.responses.create(**request)
    second = client.responses.create(**request)
    assert first.output_text == "Acknowledged."
    assert first.usage.input_tokens_details.cache_write_tokens > 0
    assert second.usage.input_tokens_details.cached_tokens == first.usage.input_tokens_details.cache_write_tokens


def test_openai_errors_use_the_real_error_body_with_param(server):
    marked = {"type": "text", "text": "x", "prompt_cache_breakpoint": {"mode": "explicit"}}
    with pytest.raises(openai.BadRequestError) as info:
        gpt(server).chat.completions.create(model="gpt-5.6-luna", messages=[{"role": "assistant", "content": [marked]}])
    assert info.value.param == "messages[0].content[0].prompt_cache_breakpoint"
    assert info.value.type == "invalid_request_error"


def test_emulate_shuts_down_cleanly_on_sigint(start_emulator):
    proc, _ = start_emulator()
    try:
        proc.send_signal(signal.SIGINT)
        assert proc.wait(timeout=10) == 0
        assert proc.stderr.read() == ""
    finally:
        if proc.poll() is None:
            proc.kill()


def test_emulate_on_a_busy_port_exits_2_with_a_message(server):
    port = server.server_address[1]
    run = subprocess.run([sys.executable, "-m", "promptlint", "emulate", "--port", str(port)],
                         capture_output=True, text=True, timeout=30)
    assert run.returncode == 2 and "cannot listen" in run.stderr


def test_openai_prompt_tokens_include_the_cached_and_written_parts(server):
    client = gpt(server)
    request = {"model": "gpt-5.6-luna", "prompt_cache_key": "k", "messages": OPENAI_MESSAGES}
    first = client.chat.completions.create(**request).usage
    second = client.chat.completions.create(**request).usage
    assert first.prompt_tokens == second.prompt_tokens
    assert first.prompt_tokens >= first.prompt_tokens_details.cache_write_tokens > 0  # a subset of the prompt
    assert second.prompt_tokens_details.cached_tokens == first.prompt_tokens_details.cache_write_tokens


def test_cache_diagnostics_name_the_changed_level(server):
    client = claude(server)
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER,
                                   diagnostics={"previous_message_id": None})
    assert first.diagnostics is None  # opted in, nothing to compare yet
    changed = [{**SYSTEM[0], "text": BIG + "Now: 12:00"}]
    second = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=changed, messages=USER,
                                    diagnostics={"previous_message_id": first.id})
    reason = second.diagnostics.cache_miss_reason
    assert reason.type == "system_changed"
    assert reason.cache_missed_input_tokens == first.usage.cache_creation_input_tokens


def test_cache_diagnostics_are_null_when_messages_were_only_appended(server):
    client = claude(server)
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER)
    follow_up = [*USER, {"role": "assistant", "content": "Acknowledged."}, {"role": "user", "content": "more"}]
    second = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=follow_up,
                                    diagnostics={"previous_message_id": first.id})
    assert second.diagnostics is None and second.usage.cache_read_input_tokens > 0


def test_cache_diagnostics_report_a_model_change_and_an_unknown_message(server):
    client = claude(server)
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER)
    other = client.messages.create(model="claude-sonnet-4-6", max_tokens=16, system=SYSTEM, messages=USER,
                                   diagnostics={"previous_message_id": first.id})
    assert other.diagnostics.cache_miss_reason.type == "model_changed"
    lost = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER,
                                  diagnostics={"previous_message_id": "msg_unknown"})
    assert lost.diagnostics.cache_miss_reason.type == "previous_message_not_found"


def test_previous_response_id_puts_the_earlier_turn_in_front_and_reads_its_prefix(server):
    client = gpt(server)
    developer = {"role": "developer", "content": "rule. " * 900}
    first = client.responses.create(model="gpt-4o", input=[developer, {"role": "user", "content": "q1"}])
    second = client.responses.create(model="gpt-4o", input="q2", previous_response_id=first.id)
    assert second.usage.input_tokens > first.usage.input_tokens  # the earlier turn is part of the prompt
    assert second.usage.input_tokens_details.cached_tokens >= 1024


def test_an_unknown_or_unstored_previous_response_is_the_real_400(server):
    client = gpt(server)
    unstored = client.responses.create(model="gpt-4o", input="q1", store=False)
    for missing in ("resp_unknown", unstored.id):
        with pytest.raises(openai.BadRequestError) as info:
            client.responses.create(model="gpt-4o", input="q2", previous_response_id=missing)
        assert info.value.code == "previous_response_not_found" and info.value.param == "previous_response_id"


def test_cache_diagnostics_cannot_diagnose_a_tool_choice_change(server):
    client = claude(server)
    tools = [{"name": "lookup", "description": "Look up an account.", "input_schema": {"type": "object"}}]
    first = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER, tools=tools)
    second = client.messages.create(model="claude-haiku-4-5", max_tokens=16, system=SYSTEM, messages=USER, tools=tools,
                                    tool_choice={"type": "any"}, diagnostics={"previous_message_id": first.id})
    assert second.diagnostics.cache_miss_reason.type == "unavailable"


def test_responses_input_tokens_counts_without_touching_the_cache(server):
    client = gpt(server)
    items = [{"role": "developer", "content": "rule. " * 900}, {"role": "user", "content": "q1"}]
    count = client.responses.input_tokens.count(model="gpt-4o", input=items)
    first = client.responses.create(model="gpt-4o", input=items)
    assert count.input_tokens == first.usage.input_tokens
    assert first.usage.input_tokens_details.cached_tokens == 0  # counting wrote nothing

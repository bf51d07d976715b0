"""Property tests: volatile inputs never move the stable prefix; stable changes always do."""

from __future__ import annotations

import json

from hypothesis import HealthCheck, given, settings, strategies as st

from promptlint.contract import Layer, PromptContract, Skill, SkillBudget

RENDERERS = ("anthropic", "openai", "openai-responses", "gemini")
PROPERTY = settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])

text = st.text(max_size=80)
message = st.fixed_dictionaries({"role": st.sampled_from(["user", "assistant"]), "content": text})
USER = {"role": "user", "content": "What changed?"}
skill = st.builds(Skill, name=st.from_regex(r"[a-z][a-z0-9-]{0,12}", fullmatch=True), description=text, body=text)


def contract_with(identity: str = "You are a careful assistant.", tool_description: str = "Search the docs.") -> PromptContract:
    return PromptContract(
        name="prop",
        version="v1",
        layers=[
            Layer("identity", text=identity, stability="global"),
            Layer("tools", tools=[{"name": "search", "description": tool_description,
                                   "parameters": {"type": "object", "properties": {"q": {"type": "string"}}}}],
                  stability="project"),
            Layer("workspace", stability="session"),
            Layer("memory", stability="turn"),
            Layer("retrieved", stability="turn"),
        ],
        skill_budget=SkillBudget(max_activations=10_000, warn_tokens=10**9, max_tokens=10**9),
    )


CONTRACT = contract_with()


@PROPERTY
@given(provider=st.sampled_from(RENDERERS), memory=text, retrieved=text,
       history=st.lists(message, max_size=6), skills=st.lists(skill, max_size=3, unique_by=lambda s: s.name),
       rolling=st.integers(0, 4))
def test_turn_inputs_never_change_the_prefix_bytes(provider, memory, retrieved, history, skills, rolling):
    session = CONTRACT.session(workspace="/srv/repo", family="root")
    baseline = session.render(provider, messages=[USER]).prefix
    rendered = session.render(provider, turn={"memory": memory, "retrieved": retrieved},
                              messages=[*history, USER], skills=skills, rolling_breakpoints=rolling)
    assert rendered.prefix.data == baseline.data and rendered.prefix.sha256 == baseline.sha256


@PROPERTY
@given(workspace=text, family=text)
def test_session_inputs_never_change_the_shared_contract_prefix(workspace, family):
    shared = CONTRACT.session(workspace="/a", family="f").render("anthropic", messages=[USER])
    rendered = CONTRACT.session(workspace=workspace, family=family).render("anthropic", messages=[USER])
    assert rendered["tools"] == shared["tools"] and rendered["system"][0] == shared["system"][0]


@PROPERTY
@given(provider=st.sampled_from(RENDERERS), memory=text, history=st.lists(message, max_size=4))
def test_rendering_is_deterministic(provider, memory, history):
    first = CONTRACT.session(workspace="/w").render(provider, turn={"memory": memory}, messages=[*history, USER])
    second = CONTRACT.session(workspace="/w").render(provider, turn={"memory": memory}, messages=[*history, USER])
    assert json.dumps(dict(first), sort_keys=True) == json.dumps(dict(second), sort_keys=True)


@PROPERTY
@given(provider=st.sampled_from(RENDERERS), identity=text.filter(lambda t: t != "You are a careful assistant."))
def test_any_change_to_a_stable_text_layer_changes_the_hash_and_that_layer_hash(provider, identity):
    changed = contract_with(identity=identity or " ").prefix_report(provider)
    original = CONTRACT.prefix_report(provider)
    assert changed.sha256 != original.sha256
    assert changed.layers["identity"] != original.layers["identity"]
    assert changed.layers["tools"] == original.layers["tools"]


@PROPERTY
@given(provider=st.sampled_from(RENDERERS), description=text.filter(lambda t: t != "Search the docs."))
def test_any_change_to_a_tool_changes_the_hash_and_the_tool_layer_hash(provider, description):
    changed = contract_with(tool_description=description).prefix_report(provider)
    original = CONTRACT.prefix_report(provider)
    assert changed.sha256 != original.sha256
    assert changed.layers["tools"] != original.layers["tools"]
    assert changed.layers["identity"] == original.layers["identity"]


@PROPERTY
@given(workspace_a=text, workspace_b=text)
def test_a_session_layer_change_changes_the_session_prefix(workspace_a, workspace_b):
    a = CONTRACT.session(workspace=workspace_a).render("anthropic", messages=[USER]).prefix
    b = CONTRACT.session(workspace=workspace_b).render("anthropic", messages=[USER]).prefix
    assert (a.sha256 == b.sha256) == (workspace_a == workspace_b)


@PROPERTY
@given(provider=st.sampled_from(RENDERERS), model=st.sampled_from([None, "gpt-5.6-luna"]),
       replies=st.lists(st.tuples(text, text), min_size=1, max_size=3), rolling=st.integers(0, 4))
def test_history_fed_back_renders_like_the_plain_conversation(provider, model, replies, rolling):
    # A turn rendered from the previous request's history() equals one rendered from the
    # plain strings: no marker, system message or context leaks into what is persisted.
    model = model if provider.startswith("openai") else None
    session = CONTRACT.session(workspace="/w")
    history = plain = [{"role": "user", "content": "start"}]
    for answer, question in replies:
        request = session.render(provider, model, turn={"memory": answer}, messages=history, rolling_breakpoints=rolling)
        reply = [{"role": "assistant", "content": answer}, {"role": "user", "content": question}]
        history, plain = request.history() + reply, plain + reply
        again = session.render(provider, model, turn={"memory": question}, messages=history, rolling_breakpoints=rolling)
        assert dict(again) == dict(session.render(provider, model, turn={"memory": question}, messages=plain,
                                                  rolling_breakpoints=rolling))

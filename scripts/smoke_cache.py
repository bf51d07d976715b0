#!/usr/bin/env python3
"""Prove that the stable prefix is cached: N turns against the real API, every turn after the first must read.

The conversation is built with the reference assembler from a contract (``--contract
path/to/module.py:attr``; default the example fixtures/contracts/support_bot.py:contract),
padded above the model's cache floor. Turn one writes the cache (or reads it when warm), every
later turn must read it. A run costs at most $0.05; a model whose worst case could cost more, or
that has no recorded price, is refused before anything is sent. See docs/smoke.md.

Exit codes: 0 cached from turn two on; 1 not cached (with the likely reason); 2 cannot run (no
API key, bad arguments, unknown model, over budget, network error after a bounded deadline).

    python scripts/smoke_cache.py                        # Anthropic, needs ANTHROPIC_API_KEY
    python scripts/smoke_cache.py --provider openai      # Chat Completions, needs OPENAI_API_KEY
    python scripts/smoke_cache.py --provider openai-responses
    python scripts/smoke_cache.py --provider gemini [--gemini-cache explicit]   # needs GEMINI_API_KEY
    python scripts/smoke_cache.py --contract my_app/prompts.py:contract --turns 4
    python scripts/smoke_cache.py --dry-run              # print requests and the predicted outcome
    promptlint emulate &                                 # offline: prints its URL
    python scripts/smoke_cache.py --base-url http://127.0.0.1:PORT
    python scripts/smoke_cache.py --break-prefix         # a timestamp in a stable layer: exits 1
"""

from __future__ import annotations

import argparse
import dataclasses
import importlib.util
import json
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from promptlint import providers  # noqa: E402
from promptlint.contract import ContractError, PromptContract  # noqa: E402
from promptlint.caching.errors import CacheRequestError  # noqa: E402
from promptlint.caching.model import CacheModel  # noqa: E402
from promptlint.caching.prefix import first_difference  # noqa: E402
from promptlint.caching.request_blocks import anthropic_blocks, gemini_blocks, gemini_request, openai_blocks  # noqa: E402
from promptlint.caching.usage import Usage, cache_metrics, cost_usd  # noqa: E402

DEFAULT_MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1", "gemini": "gemini-3.5-flash"}
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY", "gemini": "GEMINI_API_KEY"}
PROVIDER_CHOICES = ("anthropic", "openai", "openai-responses", "gemini")
DEFAULT_CONTRACT = "fixtures/contracts/support_bot.py:contract"
QUESTIONS = ("My March invoice looks doubled. Can you check account acc_123?",
             "Thanks. And when would a refund show up on my card?",
             "One more thing: can I switch to annual billing this month?")
BUDGET_USD = 0.05
MAX_RETRIES = 1
RESPONSES_MIN_OUTPUT = 16  # the Responses API rejects max_output_tokens below 16
TOKEN_MARGIN = 1.5  # our token counts are estimates (lower bounds for Claude); bill as if 50% more


class CannotRun(Exception):
    """Exit 2: the smoke could not run (not a cache verdict)."""


def load_contract(target: str = DEFAULT_CONTRACT):
    """The contract ``path/to/module.py:attr`` names (relative paths from the current folder,
    then from the repository). Importing the file runs it, as pytest runs a test module."""
    path_text, _, attr = target.rpartition(":")
    if not path_text or not attr:
        raise CannotRun(f"--contract takes path/to/module.py:attribute, got {target!r}")
    path = Path(path_text)
    if not path.is_file() and not path.is_absolute() and (ROOT / path).is_file():
        path = ROOT / path
    if not path.is_file():
        raise CannotRun(f"--contract: no such file {path_text!r}")
    spec = importlib.util.spec_from_file_location(f"smoke_contract_{path.stem}", path)
    module = importlib.util.module_from_spec(spec)
    try:
        spec.loader.exec_module(module)
    except Exception as exc:  # noqa: BLE001 - the user's module failing is "cannot run", with its message
        raise CannotRun(f"--contract: importing {path_text} failed: {type(exc).__name__}: {exc}") from None
    contract = getattr(module, attr, None)
    if not isinstance(contract, PromptContract):
        raise CannotRun(f"--contract: {path_text} has no PromptContract named {attr!r}")
    return contract


def broken(contract):
    """The contract with a timestamp in its first stable text layer (what the linter forbids)."""
    layers, done = [], False
    for layer in contract.layers:
        if not done and layer.text and layer.stability == "global":
            layer = dataclasses.replace(layer, text=f"{layer.text}\nCurrent time: {time.time_ns()}")
            done = True
        layers.append(layer)
    return PromptContract(name=contract.name, version=contract.version, layers=layers)


def render(contract, provider: str, model: str, messages: list[dict]) -> dict:
    """SDK kwargs for one turn of the smoke's session (session layers get a fixed sample value)."""
    values = {layer.name: f"Sample {layer.name} for the cache smoke: Acme Corp, account acc_123, plan Pro."
              for layer in contract.layers_of("session")}
    session = contract.session(family="smoke", values=values)
    return session.render(provider, model, messages=messages)  # a dict that also carries .prefix


def data_provider(renderer: str) -> str:
    """The provider whose data and cache rules apply to a renderer (``openai-responses`` -> ``openai``)."""
    return "openai" if renderer.startswith("openai") else renderer


def _sdk(provider: str):
    try:
        if provider == "anthropic":
            import anthropic

            return anthropic
        if provider == "gemini":
            from google import genai

            return genai
        import openai

        return openai
    except ImportError as exc:
        raise CannotRun(f"the {provider} SDK is not installed: pip install '.[smoke]' ({exc})") from None


def _client(provider: str, base_url: str | None, timeout: float):
    """An SDK client with a bounded timeout and one retry, so a run never hangs."""
    key = os.environ.get(KEY_VARS[provider])
    if not key and not base_url:
        raise CannotRun(f"skipped: {KEY_VARS[provider]} is not set (or pass --base-url of `promptlint emulate`)")
    key = key or "emulator-dummy-key"  # the emulator accepts any key, but the SDKs need one
    sdk = _sdk(provider)
    if provider == "anthropic":
        return sdk.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=MAX_RETRIES)
    if provider == "gemini":
        from google.genai import types

        options = {"timeout": int(timeout * 1000),
                   "retry_options": types.HttpRetryOptions(attempts=MAX_RETRIES + 1, initial_delay=0.5)}
        if base_url:
            options["base_url"] = base_url
        return sdk.Client(api_key=key, http_options=types.HttpOptions(**options))
    if base_url and not base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/") + "/v1"  # the openai SDK's base URL includes the version
    return sdk.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=MAX_RETRIES)


def _send(client, renderer: str, kwargs: dict) -> tuple[Usage, int, str]:
    """Send one turn; every SDK error becomes :class:`CannotRun` (it is not a cache verdict)."""
    provider = data_provider(renderer)
    if provider == "gemini":
        return _send_gemini(client, kwargs)
    sdk = _sdk(provider)
    try:
        if provider == "anthropic":
            response = client.messages.create(**kwargs)
            u = response.usage
            usage = Usage(u.input_tokens, u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0,
                          getattr(u.cache_creation, "ephemeral_1h_input_tokens", 0) or 0)
            text = "".join(getattr(b, "text", "") for b in response.content) or "(no text)"
            return usage, u.output_tokens, text
        if renderer == "openai-responses":
            response = client.responses.create(**kwargs)
            u = response.usage
            details = u.input_tokens_details
            cached = (details.cached_tokens or 0) if details else 0
            write = (getattr(details, "cache_write_tokens", 0) or 0) if details else 0
            usage = Usage(u.input_tokens - cached - write, cached, write)
            return usage, u.output_tokens, response.output_text or "(no text)"
        response = client.chat.completions.create(**kwargs)
        u = response.usage
        details = u.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details else 0
        write = (getattr(details, "cache_write_tokens", 0) or 0) if details else 0
        return Usage(u.prompt_tokens - cached - write, cached, write), u.completion_tokens, response.choices[0].message.content or ""
    except sdk.APIConnectionError as exc:  # includes APITimeoutError
        raise CannotRun(f"network error talking to {provider} after {MAX_RETRIES + 1} attempts: {exc}") from None
    except (sdk.AuthenticationError, sdk.PermissionDeniedError) as exc:
        raise CannotRun(f"{provider} rejected the API key: {exc}") from None
    except sdk.APIStatusError as exc:
        raise CannotRun(f"{provider} answered {exc.status_code}: {exc}") from None


def _gemini_errors(action: str, call):
    from google.genai import errors

    try:
        return call()
    except errors.APIError as exc:
        raise CannotRun(f"gemini answered {exc.code} to {action}: {exc.message}") from None
    except Exception as exc:  # noqa: BLE001 - httpx connection and timeout errors, whatever their class
        raise CannotRun(f"network error talking to gemini after {MAX_RETRIES + 1} attempts: "
                        f"{type(exc).__name__}: {exc}") from None


def _send_gemini(client, kwargs: dict) -> tuple[Usage, int, str]:
    response = _gemini_errors("generate_content", lambda: client.models.generate_content(**kwargs))
    meta = response.usage_metadata
    prompt, cached = meta.prompt_token_count or 0, meta.cached_content_token_count or 0
    return Usage(prompt - cached, cached, 0), meta.candidates_token_count or 0, response.text or "(no text)"


def _explicit_cache(kwargs: dict, name: str) -> dict:
    """Gemini turn kwargs that read the explicit cache ``name`` (and so may not repeat its parts)."""
    return {"model": kwargs["model"], "contents": kwargs["contents"], "config": {"cached_content": name}}


def predict(renderer: str, requests: list[dict], explicit: dict | None = None) -> list[Usage]:
    """The cache model's prediction for the requests, in order (a fresh, offline cache)."""
    model = CacheModel(clock=lambda: 0.0)
    provider = data_provider(renderer)
    if provider == "gemini" and explicit is not None:
        name = model.create_cached_content(explicit).name
        requests = [_explicit_cache(r, name) for r in requests]
    return [getattr(model, provider)(r) for r in requests]


def changed_layer(requests: list[dict]) -> str | None:
    """The first contract layer whose bytes differ between the two turns (None when unknown)."""
    reports = [getattr(r, "prefix", None) for r in requests[:2]]
    if any(report is None for report in reports):
        return None
    before, after = (report.layers for report in reports)
    return next((name for name in after if before.get(name) != after[name]), None)


def _blocks(provider: str, request: dict):
    if provider == "gemini":
        return gemini_blocks(gemini_request(request))
    return anthropic_blocks(request) if provider == "anthropic" else openai_blocks(request)


def reason(renderer: str, requests: list[dict], predicted: list[Usage]) -> str:
    """Why a later turn did not read: prefix bytes differed (where), no breakpoint, or under the floor."""
    provider = data_provider(renderer)
    first, second = _blocks(provider, requests[0]), _blocks(provider, requests[1])
    marked = [i for i, b in enumerate(second) if b.breakpoint]
    reasons = []
    diff = first_difference(first, second)
    # Anthropic caches only up to the last breakpoint; OpenAI's automatic prefix runs to the end.
    if diff is not None and (provider != "anthropic" or (marked and diff["index"] <= marked[-1])):
        layer = changed_layer(requests)
        where = f"{diff['block']} byte {diff['byte_offset']}" + (f" (layer {layer!r})" if layer else "")
        reasons.append(f"prefix bytes differed between turns at {where}: {diff['before']!r} -> {diff['after']!r}")
    if provider == "anthropic" and not marked:
        reasons.append("no cache breakpoint in the request (no cache_control on any block)")
    reasons += [note for note in (predicted[0].note, predicted[1].note) if note and note not in reasons]
    if not reasons:
        reasons.append("the provider did not report a cache read although the model predicts one (the entry may "
                       "have been evicted, or the requests reached different machines); run it again")
    return "; also ".join(reasons)


LIMITS = {"anthropic": "max_tokens", "openai": "max_completion_tokens", "openai-responses": "max_output_tokens"}


def conversation(contract, args, model: str, send=None) -> tuple[list[dict], list[tuple[Usage, int]]]:
    """Every turn's request; with ``send``, each is sent and its reply goes into the next turn
    (without, a placeholder reply stands in). Returns the requests and the (usage, output) per turn."""
    renderer = args.provider
    history = [{"role": "user", "content": QUESTIONS[0]}]
    requests, results = [], []
    for turn in range(args.turns):
        kwargs = render(broken(contract) if args.break_prefix else contract, renderer, model, history)
        kwargs.pop("max_tokens", None)
        if renderer == "gemini":
            kwargs["config"] = {**kwargs.get("config", {}), "max_output_tokens": output_limit(args)}
        else:
            kwargs[LIMITS[renderer]] = output_limit(args)
        requests.append(kwargs)
        reply = "(reply)"
        if send is not None:
            usage, output, reply = send(kwargs)
            results.append((usage, output))
        question = QUESTIONS[(turn + 1) % len(QUESTIONS)] if turn + 1 < len(QUESTIONS) else \
            f"Follow-up {turn + 1}: {QUESTIONS[(turn + 1) % len(QUESTIONS)]}"
        history = [*history, {"role": "assistant", "content": reply}, {"role": "user", "content": question}]
        if args.break_prefix:
            time.sleep(0.001)  # distinct timestamps even on coarse clocks
    return requests, results


def output_limit(args: argparse.Namespace) -> int:
    """The output token limit sent per turn (``--max-tokens``, raised to the Responses minimum)."""
    if args.provider == "openai-responses":
        return max(args.max_tokens, RESPONSES_MIN_OUTPUT)
    return args.max_tokens


def check_model(renderer: str, model: str) -> None:
    """An unknown model, or one without a recorded price, is an error before anything is sent."""
    provider = data_provider(renderer)
    if not providers.known_model(provider, model):
        raise CannotRun(f"unknown {provider} model {model!r} (provider data of {providers.DATA_DATE}); "
                        "pick one from promptlint/providers/providers.yaml")
    try:
        providers.price(provider, model)
    except providers.UnknownPriceError:
        raise CannotRun(f"no price recorded for {provider} model {model!r}, so the ${BUDGET_USD:.2f} budget cannot be "
                        "checked; pick a priced model from promptlint/providers/providers.yaml") from None


def worst_case_cost(renderer: str, model: str, requests: list[dict], max_tokens: int) -> float:
    """Every turn billed as a cold write at the full output limit, padded for token-count error."""
    provider = data_provider(renderer)
    cold = getattr(CacheModel(clock=lambda: 0.0), provider)(requests[-1])
    whole = Usage(0, 0, cold.input_tokens + cold.cache_read + cold.cache_write)
    return len(requests) * (cost_usd(provider, model, whole, max_tokens) or 0.0) * TOKEN_MARGIN


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=PROVIDER_CHOICES, default="anthropic",
                        help="which API: anthropic (Messages), openai (Chat Completions), openai-responses, gemini")
    parser.add_argument("--openai-api", choices=["chat", "responses"],
                        help="with --provider openai: Chat Completions (default) or the Responses API")
    parser.add_argument("--gemini-cache", choices=["implicit", "explicit"], default="implicit",
                        help="with --provider gemini: implicit caching, or an explicit cachedContent of the prefix")
    parser.add_argument("--contract", default=DEFAULT_CONTRACT,
                        help=f"the prompt contract to send, path/to/module.py:attribute (default {DEFAULT_CONTRACT})")
    parser.add_argument("--turns", type=int, default=2, help="turns in the conversation, 2-20 (default 2)")
    parser.add_argument("--model", help="model id (default: " + " / ".join(DEFAULT_MODELS.values()) + ")")
    parser.add_argument("--base-url", help="send to this URL instead (e.g. the one `promptlint emulate` prints)")
    parser.add_argument("--max-tokens", type=int, default=16, help="output limit per turn (1-256)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request, 1-120 (the run never hangs)")
    parser.add_argument("--dry-run", action="store_true", help="print the requests and the prediction; send nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--break-prefix", action="store_true", help="put a timestamp into a stable layer on purpose")
    args = parser.parse_args(argv)
    if args.openai_api and args.provider != "openai":
        parser.error("--openai-api applies to --provider openai only")
    if args.openai_api == "responses":
        args.provider = "openai-responses"
    if args.gemini_cache == "explicit" and args.provider != "gemini":
        parser.error("--gemini-cache applies to --provider gemini only")
    if not 2 <= args.turns <= 20:
        parser.error("--turns must be between 2 and 20")
    if not 1 <= args.max_tokens <= 256:
        parser.error("--max-tokens must be between 1 and 256")
    if not 1 <= args.timeout <= 120:
        parser.error("--timeout must be between 1 and 120 seconds")
    return args


def main(argv: list[str] | None = None) -> int:
    """Run the smoke; returns the exit code (0 cached, 1 not cached, 2 cannot run)."""
    try:
        args = _arguments(argv)
    except SystemExit as exc:  # argparse already printed the usage error
        return 2 if exc.code else 0
    renderer = args.provider
    provider = data_provider(renderer)
    api = {"anthropic": "messages", "openai": "chat", "openai-responses": "responses", "gemini": "generateContent"}[renderer]
    model = args.model or DEFAULT_MODELS[provider]
    explicit = None
    try:
        check_model(renderer, model)
        contract = load_contract(args.contract)
        planned, _ = conversation(contract, args, model)
        if renderer == "gemini" and args.gemini_cache == "explicit":
            explicit = planned[0].cache_create
            planned = [_explicit_cache(r, "cachedContents/planned") for r in planned]
        worst = worst_case_cost(renderer, model, planned if explicit is None else
                                [{**r, "config": {**explicit["config"], "ttl": None}} for r in planned], output_limit(args))
        if worst > BUDGET_USD:
            raise CannotRun(f"a run with {model} could cost up to ${worst:.4f}, over the ${BUDGET_USD:.2f} budget; "
                            "pick a cheaper --model or fewer --turns")
        if args.dry_run:
            requests, turns = planned, []
        else:
            client = _client(provider, args.base_url, args.timeout)
            send = lambda kwargs: _send(client, renderer, kwargs)  # noqa: E731
            cache_name = None
            if explicit is not None:
                cache_name = _gemini_errors("caches.create", lambda: client.caches.create(**explicit)).name
                send = lambda kwargs: _send(client, renderer, _explicit_cache(kwargs, cache_name))  # noqa: E731
            try:
                requests, turns = conversation(contract, args, model, send)
            finally:
                if cache_name is not None:
                    _gemini_errors("caches.delete", lambda: client.caches.delete(name=cache_name))
            if explicit is not None:
                requests = [_explicit_cache(r, cache_name) for r in requests]
    except (CannotRun, ContractError, CacheRequestError, OSError) as exc:
        message = str(exc) if isinstance(exc, CannotRun) else f"cannot build the conversation: {exc}"
        print(f"smoke_cache: {message}", file=sys.stderr)
        if args.json:  # --json promises one object on stdout, a skip included
            print(json.dumps({"provider": renderer, "model": model, "cached": None, "error": message}))
        return 2
    if explicit is not None and args.dry_run:
        predicted = predict(renderer, [{**r, "config": {}} | {"contents": r["contents"], "model": r["model"]}
                                       for r in requests], explicit)
    elif explicit is not None:
        predicted = [u for u, _ in turns]
    else:
        predicted = predict(renderer, requests)
    if args.dry_run:
        cached = all(u.cache_read > 0 for u in predicted[1:])
        out = {"provider": renderer, "model": model, "requests": requests,
               "predicted": [dataclasses.asdict(u) for u in predicted], "cached": cached,
               "metrics": cache_metrics(predicted),
               "worst_case_cost_usd": round(worst, 6), "budget_usd": BUDGET_USD}
        if not cached:
            out["reason"] = reason(renderer, requests, predicted)
        print(json.dumps(out, indent=None if args.json else 2, default=str))
        return 0 if cached else 1
    rows = []
    for n, (usage, output) in enumerate(turns, 1):
        cost = cost_usd(provider, model, usage, output)
        rows.append({"turn": n, "input": usage.input_tokens, "cache_write": usage.cache_write,
                     "cache_read": usage.cache_read, "output": output, "cost_usd": cost})
    total = sum(r["cost_usd"] or 0.0 for r in rows)
    metrics = cache_metrics([u for u, _ in turns])
    first = turns[0][0]
    # Turn one must write (or read, when warm); automatic caches (OpenAI before 5.6, Gemini) write silently.
    silent_writes = provider == "gemini" or (provider == "openai" and not providers.uses_explicit_breakpoints(model))
    turn_one_ok = silent_writes or first.cache_write > 0 or first.cache_read > 0
    cached = turn_one_ok and all(u.cache_read > 0 for u, _ in turns[1:])
    why = None if cached else reason(renderer, requests, predicted)
    if args.json:
        print(json.dumps({"provider": renderer, "api": api, "model": model, "base_url": args.base_url,
                          "contract": args.contract, "turns": rows, "cached": cached,
                          "hit_rate": metrics["hit_rate"], "cache_write_share": metrics["cache_write_share"],
                          "total_cost_usd": round(total, 6), "budget_usd": BUDGET_USD, "reason": why}))
    else:
        print(f"{provider} {api} {model}" + (f" via {args.base_url}" if args.base_url else "") + f" ({args.contract})")
        print(f"{'turn':>4} {'input':>7} {'cache write':>11} {'cache read':>10} {'output':>6} {'cost USD':>10}")
        for r in rows:
            print(f"{r['turn']:>4} {r['input']:>7} {r['cache_write']:>11} {r['cache_read']:>10} {r['output']:>6} "
                  f"{r['cost_usd']:>10.6f}")
        print(f"total ${total:.6f} (the worst case was ${worst:.6f}, within the ${BUDGET_USD:.2f} budget)")
        print(f"hit_rate {metrics['hit_rate']:.3f}, cache_write_share {metrics['cache_write_share']:.3f} "
              f"(at most 1/{len(turns)} = {1 / len(turns):.3f} means the prefix is not churning)")
        missed = next((n for n, (u, _) in enumerate(turns[1:], 2) if u.cache_read == 0), 2)
        print("cached from turn 2 on: yes" if cached else f"NOT cached on turn {missed}: {why}")
    return 0 if cached else 1


if __name__ == "__main__":
    try:
        sys.exit(main())
    except BrokenPipeError:  # the reader went away (`| head`): no verdict was delivered, so "cannot run"
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())  # so the exit flush cannot fail again
        print("smoke_cache: the output was closed before the report was written", file=sys.stderr)
        sys.exit(2)

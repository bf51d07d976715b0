#!/usr/bin/env python3
"""Prove that the stable prefix is cached: two turns against the real API, turn two must read.

The conversation is built with the reference assembler from the example contract
(fixtures/contracts/support_bot.py), padded above the model's cache floor. Turn one writes
the cache (or reads it when warm), turn two must read it. A run costs at most $0.05: about
$0.006 with claude-haiku-4-5, and a model whose worst case could cost more is refused before
anything is sent. See docs/smoke.md.

Exit codes: 0 cached on turn two; 1 not cached (with the likely reason); 2 cannot run (no API
key, bad arguments, over budget, network error after a bounded deadline).

    python scripts/smoke_cache.py                        # Anthropic, needs ANTHROPIC_API_KEY
    python scripts/smoke_cache.py --provider openai      # needs OPENAI_API_KEY
    python scripts/smoke_cache.py --provider openai --openai-api responses
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
from promptlint.caching.model import (  # noqa: E402
    CacheModel, Usage, anthropic_blocks, cost_usd, first_difference, openai_blocks,
)

DEFAULT_MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1"}
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
QUESTIONS = ("My March invoice looks doubled. Can you check account acc_123?",
             "Thanks. And when would a refund show up on my card?")
BUDGET_USD = 0.05
MAX_RETRIES = 1
RESPONSES_MIN_OUTPUT = 16  # the Responses API rejects max_output_tokens below 16
TOKEN_MARGIN = 1.5  # our token counts are estimates (lower bounds for Claude); bill as if 50% more


class CannotRun(Exception):
    """Exit 2: the smoke could not run (not a cache verdict)."""


def load_contract():
    """The example contract the smoke sends (a realistic support bot)."""
    path = ROOT / "fixtures" / "contracts" / "support_bot.py"
    spec = importlib.util.spec_from_file_location("support_bot_contract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.contract


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
    """SDK kwargs for one turn of the smoke's session."""
    session = contract.session(family="smoke", customer="Acme Corp, account acc_123, plan Pro")
    return session.render(provider, model, messages=messages)  # a dict that also carries .prefix


def _sdk(provider: str):
    try:
        if provider == "anthropic":
            import anthropic

            return anthropic
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
    if base_url and not base_url.rstrip("/").endswith("/v1"):
        base_url = base_url.rstrip("/") + "/v1"  # the openai SDK's base URL includes the version
    return sdk.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=MAX_RETRIES)


def _send(client, provider: str, api: str, kwargs: dict) -> tuple[Usage, int, str]:
    """Send one turn; every SDK error becomes :class:`CannotRun` (it is not a cache verdict)."""
    sdk = _sdk(provider)
    try:
        if provider == "anthropic":
            response = client.messages.create(**kwargs)
            u = response.usage
            usage = Usage(u.input_tokens, u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0,
                          getattr(u.cache_creation, "ephemeral_1h_input_tokens", 0) or 0)
            text = "".join(getattr(b, "text", "") for b in response.content) or "(no text)"
            return usage, u.output_tokens, text
        if api == "responses":
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


def predict(provider: str, requests: list[dict]) -> list[Usage]:
    """The cache model's prediction for the requests, in order (a fresh, offline cache)."""
    model = CacheModel(clock=lambda: 0.0)
    return [model.anthropic(r) if provider == "anthropic" else model.openai(r) for r in requests]


def changed_layer(requests: list[dict]) -> str | None:
    """The first contract layer whose bytes differ between the two turns (None when unknown)."""
    reports = [getattr(r, "prefix", None) for r in requests[:2]]
    if any(report is None for report in reports):
        return None
    before, after = (report.layers for report in reports)
    return next((name for name in after if before.get(name) != after[name]), None)


def reason(provider: str, requests: list[dict], predicted: list[Usage]) -> str:
    """Why turn two did not read: prefix bytes differed (where), no breakpoint, or under the floor."""
    blocks = anthropic_blocks if provider == "anthropic" else openai_blocks
    first, second = blocks(requests[0]), blocks(requests[1])
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


def conversation(contract, args, provider: str, model: str, send=None) -> tuple[list[dict], list[tuple[Usage, int]]]:
    """Both turns' requests; with ``send``, each is sent and its reply goes into turn two
    (without, a placeholder reply stands in). Returns the requests and the (usage, output) per turn."""
    renderer = {"anthropic": "anthropic", "chat": "openai", "responses": "openai-responses"}[
        "anthropic" if provider == "anthropic" else args.openai_api]
    history = [{"role": "user", "content": QUESTIONS[0]}]
    requests, results = [], []
    for _ in range(2):
        kwargs = render(broken(contract) if args.break_prefix else contract, renderer, model, history)
        kwargs.pop("max_tokens", None)
        limit = {"anthropic": "max_tokens", "openai": "max_completion_tokens", "openai-responses": "max_output_tokens"}
        kwargs[limit[renderer]] = output_limit(args)
        requests.append(kwargs)
        reply = "(reply)"
        if send is not None:
            usage, output, reply = send(kwargs)
            results.append((usage, output))
        history = [*history, {"role": "assistant", "content": reply}, {"role": "user", "content": QUESTIONS[1]}]
        if args.break_prefix:
            time.sleep(0.001)  # distinct timestamps even on coarse clocks
    return requests, results


def output_limit(args: argparse.Namespace) -> int:
    """The output token limit sent per turn (``--max-tokens``, raised to the Responses minimum)."""
    if args.provider == "openai" and args.openai_api == "responses":
        return max(args.max_tokens, RESPONSES_MIN_OUTPUT)
    return args.max_tokens


def worst_case_cost(provider: str, model: str, requests: list[dict], max_tokens: int) -> float | None:
    """Both turns billed as cold writes at the full output limit, padded for token-count error."""
    cold = predict(provider, requests[:1])[0]
    one = cost_usd(provider, model, cold, max_tokens)
    return None if one is None else 2 * one * TOKEN_MARGIN


def _arguments(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=sorted(DEFAULT_MODELS), default="anthropic")
    parser.add_argument("--openai-api", choices=["chat", "responses"],
                        help="with --provider openai: Chat Completions (default) or the Responses API")
    parser.add_argument("--model", help="model id (default: claude-haiku-4-5 / gpt-4.1)")
    parser.add_argument("--base-url", help="send to this URL instead (e.g. the one `promptlint emulate` prints)")
    parser.add_argument("--max-tokens", type=int, default=16, help="output limit per turn (1-256)")
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request, 1-120 (the run never hangs)")
    parser.add_argument("--dry-run", action="store_true", help="print both requests and the prediction; send nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--break-prefix", action="store_true", help="put a timestamp into a stable layer on purpose")
    args = parser.parse_args(argv)
    if args.openai_api and args.provider != "openai":
        parser.error("--openai-api applies to --provider openai only")
    args.openai_api = args.openai_api or "chat"
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
    provider = args.provider
    api = "messages" if provider == "anthropic" else args.openai_api
    model = args.model or DEFAULT_MODELS[provider]
    try:
        contract = load_contract()
        planned, _ = conversation(contract, args, provider, model)
        worst = worst_case_cost(provider, model, planned, output_limit(args))
        if worst is None and not args.base_url:
            raise CannotRun(f"no price recorded for {provider} model {model!r}, so the ${BUDGET_USD:.2f} budget "
                            "cannot be checked; pick a model from promptlint/providers/providers.yaml")
        if worst is not None and worst > BUDGET_USD:
            raise CannotRun(f"a run with {model} could cost up to ${worst:.4f}, over the ${BUDGET_USD:.2f} budget; "
                            "pick a cheaper --model")
        if args.dry_run:
            requests, turns = planned, []
        else:
            client = _client(provider, args.base_url, args.timeout)
            requests, turns = conversation(contract, args, provider, model,
                                           lambda kwargs: _send(client, provider, args.openai_api, kwargs))
    except (CannotRun, ContractError, OSError) as exc:
        message = str(exc) if isinstance(exc, CannotRun) else f"cannot build the conversation: {exc}"
        print(f"smoke_cache: {message}", file=sys.stderr)
        if args.json:  # --json promises one object on stdout, a skip included
            print(json.dumps({"provider": provider, "model": model, "cached": None, "error": message}))
        return 2
    predicted = predict(provider, requests)
    if args.dry_run:
        cached = predicted[1].cache_read > 0
        out = {"provider": provider, "model": model, "requests": requests,
               "predicted": [dataclasses.asdict(u) for u in predicted], "cached": cached,
               "worst_case_cost_usd": None if worst is None else round(worst, 6), "budget_usd": BUDGET_USD}
        if not cached:
            out["reason"] = reason(provider, requests, predicted)
        print(json.dumps(out, indent=None if args.json else 2, default=str))
        return 0 if cached else 1
    rows = []
    for n, (usage, output) in enumerate(turns, 1):
        cost = cost_usd(provider, model, usage, output)
        rows.append({"turn": n, "input": usage.input_tokens, "cache_write": usage.cache_write,
                     "cache_read": usage.cache_read, "output": output, "cost_usd": cost})
    total = sum(r["cost_usd"] or 0.0 for r in rows)
    first = turns[0][0]
    # Turn one must write (or read, when warm); OpenAI before GPT-5.6 writes without reporting it.
    silent_writes = provider == "openai" and not providers.uses_explicit_breakpoints(model)
    turn_one_ok = silent_writes or first.cache_write > 0 or first.cache_read > 0
    cached = turn_one_ok and turns[1][0].cache_read > 0
    why = None if cached else reason(provider, requests, predicted)
    if args.json:
        print(json.dumps({"provider": provider, "api": api, "model": model, "base_url": args.base_url, "turns": rows,
                          "cached": cached, "total_cost_usd": round(total, 6), "budget_usd": BUDGET_USD,
                          "reason": why}))
    else:
        print(f"{provider} {api} {model}" + (f" via {args.base_url}" if args.base_url else ""))
        print(f"{'turn':>4} {'input':>7} {'cache write':>11} {'cache read':>10} {'output':>6} {'cost USD':>10}")
        for r in rows:
            cost = "n/a" if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"
            print(f"{r['turn']:>4} {r['input']:>7} {r['cache_write']:>11} {r['cache_read']:>10} {r['output']:>6} {cost:>10}")
        print(f"total ${total:.6f} (a run stays within the ${BUDGET_USD:.2f} budget)")
        print("cached on turn 2: yes" if cached else f"NOT cached on turn 2: {why}")
    return 0 if cached else 1


if __name__ == "__main__":
    sys.exit(main())

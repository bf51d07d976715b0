#!/usr/bin/env python3
"""Prove that the stable prefix is cached: two turns against the real API, turn two must read.

The conversation is built with the reference assembler from the example contract
(fixtures/contracts/support_bot.py), padded above the model's cache floor. Turn one writes
the cache (or reads it when warm), turn two must read it. A run costs well under $0.05 with
the default models (about $0.01 with claude-haiku-4-5).

Exit codes: 0 cached on turn two; 1 not cached (with the likely reason); 2 cannot run (no API
key, bad arguments, network error after a bounded deadline).

    python scripts/smoke_cache.py                        # Anthropic, needs ANTHROPIC_API_KEY
    python scripts/smoke_cache.py --provider openai      # needs OPENAI_API_KEY
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

from promptlint.cachemodel import (  # noqa: E402
    CacheModel, Usage, anthropic_blocks, cost_usd, first_difference, openai_blocks,
)

DEFAULT_MODELS = {"anthropic": "claude-haiku-4-5", "openai": "gpt-4.1"}
KEY_VARS = {"anthropic": "ANTHROPIC_API_KEY", "openai": "OPENAI_API_KEY"}
QUESTIONS = ("My March invoice looks doubled. Can you check account acc_123?",
             "Thanks. And when would a refund show up on my card?")
BUDGET_USD = 0.05


class CannotRun(Exception):
    """Exit 2: the smoke could not run (not a cache verdict)."""


def load_contract():
    path = ROOT / "fixtures" / "contracts" / "support_bot.py"
    spec = importlib.util.spec_from_file_location("support_bot_contract", path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.contract


def broken(contract):
    """The contract with a timestamp in its first stable text layer (what the linter forbids)."""
    from promptlint.contract import PromptContract

    layers, done = [], False
    for layer in contract.layers:
        if not done and layer.text and layer.stability == "global":
            layer = dataclasses.replace(layer, text=f"{layer.text}\nCurrent time: {time.time_ns()}")
            done = True
        layers.append(layer)
    return PromptContract(name=contract.name, version=contract.version, layers=layers)


def render(contract, provider: str, model: str, messages: list[dict]) -> dict:
    session = contract.session(family="smoke", customer="Acme Corp, account acc_123, plan Pro")
    return dict(session.render(provider, model, messages=messages))


def _client(provider: str, base_url: str | None, timeout: float):
    key = os.environ.get(KEY_VARS[provider])
    if not key and not base_url:
        raise CannotRun(f"skipped: {KEY_VARS[provider]} is not set (or pass --base-url of `promptlint emulate`)")
    key = key or "emulator"
    try:
        if provider == "anthropic":
            import anthropic

            return anthropic.Anthropic(api_key=key, base_url=base_url, timeout=timeout, max_retries=1)
        import openai

        if base_url and not base_url.rstrip("/").endswith("/v1"):
            base_url = base_url.rstrip("/") + "/v1"
        return openai.OpenAI(api_key=key, base_url=base_url, timeout=timeout, max_retries=1)
    except ImportError as exc:
        raise CannotRun(f"the {provider} SDK is not installed: pip install '.[smoke]' ({exc})") from None


def _send(client, provider: str, kwargs: dict) -> tuple[Usage, int, str]:
    try:
        if provider == "anthropic":
            response = client.messages.create(**kwargs)
            u = response.usage
            usage = Usage(u.input_tokens, u.cache_read_input_tokens or 0, u.cache_creation_input_tokens or 0)
            text = "".join(getattr(b, "text", "") for b in response.content) or "(no text)"
            return usage, u.output_tokens, text
        response = client.chat.completions.create(**kwargs)
        u = response.usage
        details = u.prompt_tokens_details
        cached = (details.cached_tokens or 0) if details else 0
        write = (getattr(details, "cache_write_tokens", 0) or 0) if details else 0
        return Usage(u.prompt_tokens - cached, cached, write), u.completion_tokens, response.choices[0].message.content or ""
    except Exception as exc:  # the SDKs' connection, timeout and status errors
        name = type(exc).__name__
        if "Connection" in name or "Timeout" in name:
            raise CannotRun(f"network error talking to {provider}: {exc}") from None
        if "Authentication" in name or "PermissionDenied" in name:
            raise CannotRun(f"{provider} rejected the API key: {exc}") from None
        if hasattr(exc, "status_code"):
            raise CannotRun(f"{provider} answered {exc.status_code}: {exc}") from None
        raise


def predict(provider: str, requests: list[dict]) -> list[Usage]:
    """The cache model's prediction for the requests, in order (a fresh, offline cache)."""
    model = CacheModel(clock=lambda: 0.0)
    return [model.anthropic(r) if provider == "anthropic" else model.openai(r) for r in requests]


def reason(provider: str, requests: list[dict], predicted: list[Usage]) -> str:
    """Why turn two did not read: under the floor, no breakpoint, or where the prefix differed."""
    blocks = anthropic_blocks if provider == "anthropic" else openai_blocks
    first, second = blocks(requests[0]), blocks(requests[1])
    if provider == "anthropic" and not any(b.breakpoint for b in second):
        return "no cache breakpoint in the request"
    diff = first_difference(first, second)
    stable = [b for b in second if b.breakpoint] or second
    if diff is not None and diff["index"] < len(stable) - 1 + (0 if provider == "anthropic" else 1):
        return (f"prefix bytes differed between turns at {diff['block']} byte {diff['byte_offset']}: "
                f"{diff['before']!r} -> {diff['after']!r}")
    note = predicted[1].note or predicted[0].note
    if note:
        return note
    if diff is not None:
        return (f"prefix bytes differed between turns at {diff['block']} byte {diff['byte_offset']}: "
                f"{diff['before']!r} -> {diff['after']!r}")
    return "the provider did not report a cache read (the entry may have been evicted, or requests went to different machines)"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--provider", choices=sorted(DEFAULT_MODELS), default="anthropic")
    parser.add_argument("--model", help="model id (default: claude-haiku-4-5 / gpt-4.1)")
    parser.add_argument("--base-url", help="send to this URL instead (e.g. the one `promptlint emulate` prints)")
    parser.add_argument("--max-tokens", type=int, default=16)
    parser.add_argument("--timeout", type=float, default=30.0, help="seconds per request (the run never hangs)")
    parser.add_argument("--dry-run", action="store_true", help="print both requests and the prediction; send nothing")
    parser.add_argument("--json", action="store_true", help="print one JSON object instead of a table")
    parser.add_argument("--break-prefix", action="store_true", help="put a timestamp into a stable layer on purpose")
    try:
        args = parser.parse_args(argv)
    except SystemExit as exc:
        return 2 if exc.code else 0
    provider = args.provider
    model = args.model or DEFAULT_MODELS[provider]
    renderer = "anthropic" if provider == "anthropic" else "openai"
    contract = load_contract()

    def turn_contract():
        return broken(contract) if args.break_prefix else contract

    history = [{"role": "user", "content": QUESTIONS[0]}]
    turns, requests = [], []
    try:
        client = None if args.dry_run else _client(provider, args.base_url, args.timeout)
        for turn in range(2):
            kwargs = render(turn_contract(), renderer, model, history)
            if provider == "anthropic":
                kwargs["max_tokens"] = args.max_tokens
            else:
                kwargs["max_completion_tokens"] = args.max_tokens
                kwargs.pop("max_tokens", None)
            requests.append(kwargs)
            if args.dry_run:
                reply, usage, output = "(reply)", None, 0
            else:
                usage, output, reply = _send(client, provider, kwargs)
                turns.append((usage, output))
            history = [*history, {"role": "assistant", "content": reply}, {"role": "user", "content": QUESTIONS[1]}]
            if args.break_prefix:
                time.sleep(0.001)  # distinct timestamps even on coarse clocks
    except CannotRun as exc:
        print(f"smoke_cache: {exc}", file=sys.stderr)
        return 2
    predicted = predict(provider, requests)
    if args.dry_run:
        cached = predicted[1].cache_read > 0
        out = {"provider": provider, "model": model, "requests": requests,
               "predicted": [dataclasses.asdict(u) for u in predicted], "cached": cached}
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
    cached = turns[1][0].cache_read > 0
    why = None if cached else reason(provider, requests, predicted)
    if args.json:
        print(json.dumps({"provider": provider, "model": model, "base_url": args.base_url, "turns": rows,
                          "cached": cached, "total_cost_usd": round(total, 6), "budget_usd": BUDGET_USD,
                          "reason": why}))
    else:
        print(f"{provider} {model}" + (f" via {args.base_url}" if args.base_url else ""))
        print(f"{'turn':>4} {'input':>7} {'cache write':>11} {'cache read':>10} {'output':>6} {'cost USD':>10}")
        for r in rows:
            cost = "n/a" if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"
            print(f"{r['turn']:>4} {r['input']:>7} {r['cache_write']:>11} {r['cache_read']:>10} {r['output']:>6} {cost:>10}")
        print(f"total ${total:.6f} (budget ${BUDGET_USD:.2f} a run)")
        print("cached on turn 2: yes" if cached else f"NOT cached on turn 2: {why}")
    return 0 if cached else 1


if __name__ == "__main__":
    sys.exit(main())

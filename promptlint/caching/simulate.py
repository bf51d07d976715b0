"""``promptlint simulate REQUESTS.jsonl``: predict cache reads, writes and cost per turn.

Each line is one request body as sent to the SDK (``messages.create`` kwargs for Anthropic,
``chat.completions.create`` / ``responses.create`` kwargs for OpenAI, ``generate_content``
kwargs or the REST body for Gemini). The requests go through the same cache model as the emulator
(``promptlint.caching.model``) with a clock that advances ``--interval`` seconds per turn.

Turns are grouped into conversations (same provider and model, and the same
``prompt_cache_key`` or, without one, the same first message). Every turn after a
conversation's first that reads less than it could is explained with its real cause: the
entry expired (TTL), the model changed, the prefix changed (field, block, byte), the prefix is
under the model's floor, or there is no breakpoint. The run and each conversation report
``hit_rate`` and ``cache_write_share``.

Exit codes: 0 every turn after a conversation's first read from the cache; 1 some turn missed
or would be rejected by the API; 2 usage error or unreadable input.
"""

from __future__ import annotations

import hashlib
import json
import math
import sys
from typing import Any, Iterable

import click

from promptlint import providers
from promptlint.caching.errors import CacheRequestError
from promptlint.caching.model import CacheModel
from promptlint.caching.prefix import Block, first_difference
from promptlint.caching.request_blocks import anthropic_blocks, gemini_blocks, gemini_request, openai_blocks
from promptlint.caching.usage import Usage, cache_metrics, cost_usd

PROVIDERS = ("anthropic", "openai", "gemini")


class UnreadableInput(ValueError):
    """Exit 2: the input is not a list of request bodies (the message names the line)."""


def detect_provider(body: dict) -> str | None:
    """Which API a recorded request body was written for, or None for no known shape."""
    if "contents" in body:
        return "gemini"
    if any(key in body for key in ("input", "instructions", "prompt_cache_key", "max_completion_tokens",
                                   "prompt_cache_options", "prompt_cache_retention", "response_format")):
        return "openai"
    messages = body.get("messages")
    if isinstance(messages, list) and any(isinstance(m, dict) and m.get("role") in ("system", "developer", "tool")
                                          for m in messages):
        return "openai"
    if "system" in body or "cache_control" in body or "max_tokens" in body:
        return "anthropic"
    if "messages" in body:
        return "openai"
    return None


def read_bodies(lines: Iterable[str], provider: str | None = None) -> list[dict]:
    """One request body per non-blank line; :class:`UnreadableInput` names the line of the first
    that is not a JSON object (its own line number, and the column inside it) or, without
    ``provider``, whose shape is no known API's."""
    bodies = []
    for number, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            body = json.loads(line, parse_constant=lambda name: _not_json(name))
        except json.JSONDecodeError as exc:
            raise UnreadableInput(f"line {number} column {exc.colno}: {exc.msg}") from None
        except RecursionError:
            raise UnreadableInput(f"line {number}: JSON nested too deeply") from None
        except ValueError as exc:
            raise UnreadableInput(f"line {number}: {exc}") from None
        if not isinstance(body, dict):
            raise UnreadableInput(f"line {number}: expected a JSON object (a request body), got {type(body).__name__}")
        if provider is None and detect_provider(body) is None:
            raise UnreadableInput(f"line {number}: not a request body of a known API: expected 'messages' (Anthropic, "
                                  "OpenAI Chat), 'input' (OpenAI Responses) or 'contents' (Gemini); or pass --provider")
        bodies.append(body)
    return bodies


def _not_json(name: str) -> None:
    raise ValueError(f"{name} is not valid JSON")


def _blocks(kind: str, body: dict) -> list[Block]:
    if kind == "anthropic":
        return anthropic_blocks(body)
    if kind == "gemini":
        return gemini_blocks(gemini_request(body))
    return openai_blocks(body)


def _conversation_key(kind: str, body: dict, blocks: list[Block]) -> tuple:
    """A conversation is one provider's requests with the same ``prompt_cache_key`` or, without
    one, the same first message (a model switch stays in the conversation, to be explained)."""
    key = body.get("prompt_cache_key")
    if key:
        return (kind, "key", str(key))
    first = next((b for b in blocks if b.where.startswith(("messages", "input", "contents"))), None)
    return (kind, "first", hashlib.sha256(first.data if first else b"").hexdigest())


def _breakpoint_based(kind: str, model: str) -> bool:
    return kind == "anthropic" or (kind == "openai" and providers.uses_explicit_breakpoints(model))


def explain(kind: str, usage: Usage, previous: dict, blocks: list[Block], model: str) -> dict | None:
    """Why this turn read less than the conversation's previous turn had cached, or None.

    ``previous`` holds the previous turn's ``model``, ``blocks`` and ``usage``. The cause is the
    real one, in this order: ``model_changed``, ``ttl_expired`` (an entry that would have been
    read had expired or been evicted), ``below_floor``, ``no_breakpoint``, ``prefix_changed``
    (the field, block and byte where the prefix first differs inside what was cached), else
    ``unknown``. A partial read (some tokens, fewer than available) is explained too.
    """
    before: Usage = previous["usage"]
    if _breakpoint_based(kind, model):
        reachable = before.cache_read + before.cache_write  # what the previous turn left in the cache
    else:  # automatic caching reads the shared prefix, in whole steps from the floor on
        reachable = _cached_extent(previous["blocks"], blocks)
        floor = providers.cache_floor(kind, model)
        step = (providers.prefix_step(kind) or 1) if kind == "openai" else 1
        reachable = floor + ((reachable - floor) // step) * step if reachable >= floor else 0
    available = reachable
    if usage.cache_read > 0 and usage.cache_read >= reachable:
        return None
    partial = usage.cache_read > 0
    note = usage.note
    if previous["model"] != model:
        return {"cause": "model_changed", "partial": partial,
                "detail": f"model changed from {previous['model']} to {model}: each model has its own cache"}
    if "expired" in note or "evicted" in note:
        return {"cause": "ttl_expired", "partial": partial, "detail": note}
    if "minimum" in note:
        return {"cause": "below_floor", "partial": partial, "detail": note}
    if "no cache breakpoint" in note:
        return {"cause": "no_breakpoint", "partial": partial, "detail": note}
    diff = first_difference(previous["blocks"], blocks)
    if diff is not None and diff["index"] < len(previous["blocks"]):
        return {"cause": "prefix_changed", "partial": partial, "first_difference": diff,
                "detail": f"the prefix differs at {diff['block']} ({diff['level']} level), byte {diff['byte_offset']}"}
    if not partial and available == 0:
        return None  # nothing was cacheable before either (e.g. the first turn under every floor)
    return {"cause": "unknown", "partial": partial, "detail": "the prefix is unchanged; nothing in the model explains it"}


def _cached_extent(previous: list[Block], current: list[Block]) -> int:
    """Tokens of the blocks the two requests share from the start (an upper bound on a read)."""
    total = 0
    for a, b in zip(previous, current):
        if a.data != b.data:
            break
        total += b.tokens
    return total


def simulate(bodies: list[dict], provider: str | None = None, model: str | None = None,
             interval: float = 1.0) -> list[dict]:
    """One report per request: usage, cost, its conversation and, for a turn that read less than
    it could, the explained miss (``miss``; ``previous_turn`` and ``first_difference`` too)."""
    now = [0.0]
    cache = CacheModel(clock=lambda: now[0])
    rows: list[dict] = []
    conversations: dict[tuple, str] = {}
    latest: dict[str, dict] = {}  # conversation -> previous accepted turn
    for turn, body in enumerate(bodies, 1):
        if model:
            body = {**body, "model": model}
        kind = provider or detect_provider(body)
        row: dict[str, Any] = {"turn": turn, "provider": kind}
        try:
            if kind is None:
                raise CacheRequestError("not a request body of a known API: expected 'messages' (Anthropic, OpenAI "
                                        "Chat), 'input' (OpenAI Responses) or 'contents' (Gemini)")
            usage = getattr(cache, kind)(body)
            blocks = _blocks(kind, body)
        except CacheRequestError as exc:
            rows.append({**row, "error": str(exc)})
            now[0] += interval
            continue
        except RecursionError:
            rows.append({**row, "error": "the request is nested too deeply"})
            now[0] += interval
            continue
        name = gemini_request(body)["model"] if kind == "gemini" else str(body.get("model"))
        conversation = conversations.setdefault(_conversation_key(kind, {**body, "model": name}, blocks),
                                                f"c{len(conversations) + 1}")
        row.update({"conversation": conversation, "model": name, "input_tokens": usage.input_tokens,
                    "cache_write": usage.cache_write, "cache_read": usage.cache_read,
                    "cost_usd": cost_usd(kind, name, usage), "note": usage.note})
        previous = latest.get(conversation)
        if previous is not None:
            miss = explain(kind, usage, previous, blocks, name)
            if miss is not None:
                row["miss"] = miss
                row["previous_turn"] = previous["turn"]
                if "first_difference" in miss:
                    row["first_difference"] = miss["first_difference"]
        row["_usage"] = usage
        rows.append(row)
        latest[conversation] = {"turn": turn, "model": name, "blocks": blocks, "usage": usage}
        now[0] += interval
    return rows


def summary(rows: list[dict]) -> dict:
    """``hit_rate`` and ``cache_write_share`` for the run and for each conversation."""
    accepted = [r for r in rows if "error" not in r]
    per = {}
    for name in dict.fromkeys(r["conversation"] for r in accepted):
        per[name] = cache_metrics([r["_usage"] for r in accepted if r["conversation"] == name])
    return {"run": cache_metrics([r["_usage"] for r in accepted]), "conversations": per,
            "errors": len(rows) - len(accepted), "missed_turns": sum(1 for r in accepted if "miss" in r)}


def public(row: dict) -> dict:
    """A row without its internal fields (what ``--json`` prints)."""
    return {k: v for k, v in row.items() if not k.startswith("_")}


def _finite_interval(ctx: click.Context, param: click.Parameter, value: float) -> float:
    if not math.isfinite(value) or value < 0:
        raise click.BadParameter(f"{value} is not a finite number of seconds >= 0")
    return value


@click.command("simulate")
@click.argument("requests", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--provider", type=click.Choice(PROVIDERS), help="Default: detected per request.")
@click.option("--model", help="Override the model of every request.")
@click.option("--interval", default=1.0, show_default=True, type=float, callback=_finite_interval,
              help="Seconds between turns (TTL expiry); finite, >= 0.")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per turn, then one summary object.")
@click.option("--html", "html_path", type=click.Path(dir_okay=False), help="Also write a per-turn HTML report here.")
def simulate_command(requests: str, provider: str | None, model: str | None, interval: float, as_json: bool,
                     html_path: str | None) -> None:
    """Predict per-turn cache writes, reads and cost for recorded request bodies (JSON lines).

    Explains every turn that reads less than it could (TTL expiry, model switch, prefix change
    with block and byte, floor, no breakpoint) and reports hit_rate and cache_write_share for the
    run and per conversation. Exit 0 when every later turn reads, 1 when one misses, 2 for
    unreadable input.
    """
    try:
        handle = sys.stdin if requests == "-" else open(requests, encoding="utf-8")
        with handle:
            bodies = read_bodies(handle, provider)
    except (OSError, UnicodeDecodeError, UnreadableInput) as exc:
        click.echo(f"promptlint simulate: cannot read {requests}: {exc}", err=True)
        sys.exit(2)
    if not bodies:
        click.echo(f"promptlint simulate: {requests} holds no request (one JSON object per line)", err=True)
        sys.exit(2)
    rows = simulate(bodies, provider, model, interval)
    totals = summary(rows)
    missed = totals["errors"] > 0 or totals["missed_turns"] > 0
    if html_path:
        from promptlint.caching.report import write_html

        try:
            write_html(html_path, [public(r) for r in rows], totals)
        except OSError as exc:
            click.echo(f"promptlint simulate: cannot write {html_path}: {exc.strerror or exc}", err=True)
            sys.exit(2)
    if as_json:
        for row in rows:
            click.echo(json.dumps(public(row)))
        click.echo(json.dumps({"summary": totals}))
        sys.exit(1 if missed else 0)
    click.echo(f"{'turn':>4} {'conv':<4} {'provider':<9} {'input':>7} {'write':>7} {'read':>7} {'cost USD':>10}")
    for r in rows:
        if "error" in r:
            click.echo(f"{r['turn']:>4} {'':<4} {r['provider'] or '?':<9} error: {r['error']}")
            continue
        cost = "n/a" if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"
        click.echo(f"{r['turn']:>4} {r['conversation']:<4} {r['provider']:<9} {r['input_tokens']:>7} "
                   f"{r['cache_write']:>7} {r['cache_read']:>7} {cost:>10}")
        miss = r.get("miss")
        if miss:
            kind = "partial read" if miss["partial"] else "miss"
            click.echo(f"     {kind} ({miss['cause']}) against turn {r['previous_turn']}: {miss['detail']}")
            diff = r.get("first_difference")
            if diff:
                click.echo(f"       before: {diff['before']!r}")
                click.echo(f"       after:  {diff['after']!r}")
        elif r.get("note"):
            click.echo(f"     {r['note']}")
    total = sum(r.get("cost_usd") or 0.0 for r in rows)
    run = totals["run"]
    click.echo(f"total ${total:.6f}; hit_rate {_fraction(run['hit_rate'])}, cache_write_share "
               f"{_fraction(run['cache_write_share'])} over {run['turns']} turns")
    if len(totals["conversations"]) > 1:
        for name, figures in totals["conversations"].items():
            click.echo(f"  {name}: hit_rate {_fraction(figures['hit_rate'])}, cache_write_share "
                       f"{_fraction(figures['cache_write_share'])} over {figures['turns']} turns")
    sys.exit(1 if missed else 0)


def _fraction(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.3f}"

"""``promptlint simulate REQUESTS.jsonl``: predict cache reads, writes and cost per turn.

Each line is one request body as sent to the SDK (``messages.create`` kwargs for Anthropic,
``chat.completions.create`` / ``responses.create`` kwargs for OpenAI). The requests go through
the same cache model as the emulator (``promptlint.caching.model``) with a clock that advances
``--interval`` seconds per turn. For a turn that reads nothing while an earlier turn exists, the
report names the first position where its prefix differs from the previous request to the same
provider: the block and its prefix level, the byte offset inside it, and both snippets.

Exit codes: 0 every turn after the first read from the cache; 1 some turn missed; 2 usage
error or unreadable input.
"""

from __future__ import annotations

import json
import sys

import click

from promptlint.caching.model import CacheModel, CacheRequestError, anthropic_blocks, cost_usd, first_difference, openai_blocks


def detect_provider(body: dict) -> str:
    """Which API a recorded request body was written for ("anthropic" or "openai")."""
    if any(key in body for key in ("input", "instructions", "prompt_cache_key", "max_completion_tokens",
                                   "prompt_cache_options", "response_format")):
        return "openai"
    messages = [m for m in body.get("messages") or [] if isinstance(m, dict)]
    if any(m.get("role") in ("system", "developer", "tool") for m in messages):
        return "openai"
    if "system" in body or "cache_control" in body or "max_tokens" in body:
        return "anthropic"
    return "openai"


def simulate(bodies: list[dict], provider: str | None = None, model: str | None = None,
             interval: float = 1.0) -> list[dict]:
    """One report per request: usage, cost, and where a miss differs from the previous request
    to the same provider (``previous_turn``, ``first_difference``)."""
    now = [0.0]
    cache = CacheModel(clock=lambda: now[0])
    rows: list[dict] = []
    previous: dict[str, tuple[int, list]] = {}  # provider -> (turn, blocks) of its latest accepted request
    for turn, body in enumerate(bodies, 1):
        if model:
            body = {**body, "model": model}
        kind = provider or detect_provider(body)
        try:
            usage = cache.anthropic(body) if kind == "anthropic" else cache.openai(body)
        except CacheRequestError as exc:
            rows.append({"turn": turn, "provider": kind, "error": str(exc)})
            now[0] += interval
            continue
        blocks = anthropic_blocks(body) if kind == "anthropic" else openai_blocks(body)
        row = {"turn": turn, "provider": kind, "model": body.get("model"), "input_tokens": usage.input_tokens,
               "cache_write": usage.cache_write, "cache_read": usage.cache_read,
               "cost_usd": cost_usd(kind, str(body.get("model")), usage), "note": usage.note}
        if kind in previous and usage.cache_read == 0:
            row["previous_turn"], earlier = previous[kind]
            row["first_difference"] = first_difference(earlier, blocks)
        rows.append(row)
        previous[kind] = (turn, blocks)
        now[0] += interval
    return rows


@click.command("simulate")
@click.argument("requests", type=click.Path(dir_okay=False, allow_dash=True))
@click.option("--provider", type=click.Choice(["anthropic", "openai"]), help="Default: guessed per request.")
@click.option("--model", help="Override the model of every request.")
@click.option("--interval", default=1.0, show_default=True, type=click.FloatRange(min=0), help="Seconds between turns (TTL expiry).")
@click.option("--json", "as_json", is_flag=True, help="One JSON object per turn instead of a table.")
def simulate_command(requests: str, provider: str | None, model: str | None, interval: float, as_json: bool) -> None:
    """Predict per-turn cache writes, reads and cost for recorded request bodies (JSON lines).

    For a turn that misses, names the block and byte where its prefix left the previous one.
    Exit 0 when every turn after the first reads, 1 when one misses, 2 for unreadable input.
    """
    bodies = []
    try:
        handle = sys.stdin if requests == "-" else open(requests, encoding="utf-8")
        with handle:
            for number, line in enumerate(handle, 1):
                if not line.strip():
                    continue
                body = json.loads(line)
                if not isinstance(body, dict):
                    raise ValueError(f"line {number}: expected a JSON object")
                bodies.append(body)
    except (OSError, UnicodeDecodeError, ValueError) as exc:
        click.echo(f"promptlint simulate: cannot read {requests}: {exc}", err=True)
        sys.exit(2)
    if not bodies:
        click.echo(f"promptlint simulate: {requests} holds no request (one JSON object per line)", err=True)
        sys.exit(2)
    rows = simulate(bodies, provider, model, interval)
    missed = any("error" in r or (r["turn"] > 1 and r["cache_read"] == 0) for r in rows)
    if as_json:
        for row in rows:
            click.echo(json.dumps(row))
        sys.exit(1 if missed else 0)
    click.echo(f"{'turn':>4} {'provider':<9} {'input':>7} {'write':>7} {'read':>7} {'cost USD':>10}")
    for r in rows:
        if "error" in r:
            click.echo(f"{r['turn']:>4} {r['provider']:<9} error: {r['error']}")
            continue
        cost = "n/a" if r["cost_usd"] is None else f"{r['cost_usd']:.6f}"
        click.echo(f"{r['turn']:>4} {r['provider']:<9} {r['input_tokens']:>7} {r['cache_write']:>7} {r['cache_read']:>7} {cost:>10}")
        if r.get("note"):
            click.echo(f"     {r['note']}")
        diff = r.get("first_difference")
        if diff:
            click.echo(f"     miss: differs from turn {r['previous_turn']} at {diff['block']} ({diff['level']} level), "
                       f"byte {diff['byte_offset']}")
            click.echo(f"       before: {diff['before']!r}")
            click.echo(f"       after:  {diff['after']!r}")
    total = sum(r.get("cost_usd") or 0.0 for r in rows)
    click.echo(f"total ${total:.6f}")
    sys.exit(1 if missed else 0)

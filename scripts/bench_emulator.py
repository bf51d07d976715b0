#!/usr/bin/env python3
"""Load figures for `promptlint emulate` (a benchmark prints; it asserts nothing).

    python scripts/bench_emulator.py [--concurrency 200] [--rounds 3] [--keys 10000]

Starts the emulator on loopback in this process, sends ``--concurrency`` requests at once (each on
its own connection, through http.client) ``--rounds`` times, and prints the status counts,
connection errors and latency percentiles; then sends ``--keys`` requests with distinct
``prompt_cache_key``s and prints the process's peak RSS before and after. Only loopback traffic.
"""

from __future__ import annotations

import argparse
import http.client
import json
import resource
import statistics
import sys
import time
from collections import Counter
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from promptlint.caching.server import EmulatorServer  # noqa: E402

BODY = json.dumps({"model": "claude-haiku-4-5", "max_tokens": 8,
                   "system": [{"type": "text", "text": "policy line. " * 2500, "cache_control": {"type": "ephemeral"}}],
                   "messages": [{"role": "user", "content": "hi"}]}).encode()


def one(address: tuple[str, int], path: str, body: bytes) -> tuple[int | str, float]:
    started = time.perf_counter()
    conn = http.client.HTTPConnection(*address, timeout=30)
    try:
        conn.request("POST", path, body=body, headers={"x-api-key": "k", "authorization": "Bearer k",
                                                       "content-type": "application/json"})
        response = conn.getresponse()
        response.read()
        return response.status, time.perf_counter() - started
    except OSError as exc:
        return type(exc).__name__, time.perf_counter() - started
    finally:
        conn.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--concurrency", type=int, default=200)
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--keys", type=int, default=10_000)
    args = parser.parse_args()
    server = EmulatorServer()
    server.start()
    try:
        address = server.server_address
        one(address, "/v1/messages", BODY)  # warm the token-count cache
        for round_ in range(1, args.rounds + 1):
            with ThreadPoolExecutor(max_workers=args.concurrency) as pool:
                results = list(pool.map(lambda _: one(address, "/v1/messages", BODY), range(args.concurrency)))
            latencies = sorted(t for _, t in results)
            p99 = latencies[max(0, int(len(latencies) * 0.99) - 1)]
            print(f"round {round_}: {args.concurrency} concurrent: statuses {dict(Counter(s for s, _ in results))}, "
                  f"p50 {statistics.median(latencies) * 1000:.0f} ms, p99 {p99 * 1000:.0f} ms, "
                  f"max {latencies[-1] * 1000:.0f} ms")
        before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        messages = [{"role": "system", "content": "rule. " * 900}, {"role": "user", "content": "hi"}]
        started = time.perf_counter()
        statuses = Counter()
        conn = http.client.HTTPConnection(*address, timeout=30)  # one keep-alive connection
        for n in range(args.keys):
            body = json.dumps({"model": "gpt-4o", "messages": messages, "prompt_cache_key": f"tenant-{n}"})
            conn.request("POST", "/v1/chat/completions", body=body,
                         headers={"authorization": "Bearer k", "content-type": "application/json"})
            response = conn.getresponse()
            response.read()
            statuses[response.status] += 1
        conn.close()
        after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
        print(f"{args.keys} distinct prompt_cache_keys in {time.perf_counter() - started:.1f} s: statuses "
              f"{dict(statuses)}; peak RSS {before:.0f} MB before, {after:.0f} MB after; cache holds {server.cache.size()}")
    finally:
        server.shutdown()
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())

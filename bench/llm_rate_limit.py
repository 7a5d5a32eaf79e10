"""A judge-like LLM run against a rate-limited server: adaptive concurrency vs a fixed one.

    python bench/llm_rate_limit.py [--requests 2000 --rpm 2400 --tpm 1260000 --latency 0.2 --concurrency 64]

The fake OpenAI server runs in its own process and enforces requests and tokens per minute
(token buckets with a one-second burst, 429 + Retry-After beyond them, ``x-ratelimit-*`` headers on
every answer). The same number of judge-sized requests (two responses to compare, up to 512
answer tokens) is sent twice through the LLM client, each time as fresh requests (nothing from
the cache): first with the concurrency fixed at ``--concurrency`` (``LLM_ADAPTIVE_CONCURRENCY``
off), then with the adaptive controller (``llm/rate_limits.py``). For each it prints the achieved
rate over the allowed rate (target >= 0.9) and the failed calls (target 0), and the 429s the
server sent. Uses a throw-away SQLite database.
"""
from __future__ import annotations

import argparse
import logging
import sys
import time

from llm_batch import server_stats, start_fake_server, throwaway_django  # bench/ is on the path of its scripts

TARGET_RATE_RATIO = 0.9

WORDS = ("the image shows a small red house beside a river with two boats and a dog on the bank while "
         "clouds gather over distant hills and a child waves from the window").split()


def response_text(seed: int, words: int) -> str:
    return " ".join(WORDS[(seed * 7 + k) % len(WORDS)] for k in range(words))


def judge_requests(count: int, tag: str):
    from llm.client import chat_request

    system = ("You compare two responses to an instruction about an image, described by a caption. "
              "Think step by step, then end with 'Overall, Response A is better.' or 'Overall, Response B is better.'")
    requests = []
    for i in range(count):
        prompt = (f"Run {tag}, item {i}.\nCaption: {response_text(i, 30)}\nInstruction: describe the scene.\n\n"
                  f"Response A: {response_text(i + 1, 40 + i % 20)}\n\nResponse B: {response_text(i + 2, 35 + i % 25)}\n\n"
                  "Which response is better?")
        requests.append(chat_request(prompt, system=system, max_tokens=512, temperature=0, purpose="bench_judge"))
    return requests


def run(label: str, *, base_url: str, requests, adaptive: bool, concurrency: int, rpm: float, tpm: float) -> dict:
    from llm.client import LLMClient

    before = server_stats(base_url)["rate_limits"]
    client = LLMClient(base_url=base_url, api_key="bench-key", model="fake-model", max_concurrency=concurrency,
                       adaptive_concurrency=adaptive)
    started = time.perf_counter()
    results = client.run_batch(requests)
    wall = time.perf_counter() - started
    after = server_stats(base_url)["rate_limits"]
    accepted = after["accepted"] - before["accepted"]
    tokens_per_request = (after["charged_tokens"] - before["charged_tokens"]) / max(accepted, 1)
    allowed = min(rpm / 60, tpm / 60 / tokens_per_request)
    ok = sum(result.ok for result in results)
    failed = len(results) - ok
    achieved = ok / wall
    print(f"{label}")
    print(f"  {len(results)} calls in {wall:.1f} s: {achieved:.1f} calls/s; allowed {allowed:.1f}/s "
          f"(min of {rpm:g} rpm and {tpm:g} tpm / {tokens_per_request:.0f} tokens per call)")
    print(f"  achieved / allowed  {achieved / allowed:.3f}  (target >= {TARGET_RATE_RATIO})")
    print(f"  failed calls        {failed}  (target 0); 429s from the server {after['rate_limited'] - before['rate_limited']}, "
          f"retries {results.stats.retries}")
    if adaptive:
        print(f"  controller          {client.rate_controller.describe()}")
    return {"ratio": achieved / allowed, "failed": failed}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--rpm", type=float, default=2400)
    parser.add_argument("--tpm", type=float, default=1_260_000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=64)
    args = parser.parse_args()

    workdir = throwaway_django("llm-rate-bench-", log_level="ERROR")
    logging.getLogger("kernel.retry").setLevel(logging.ERROR)  # the baseline's 429s are counted, not logged

    server, base_url = start_fake_server(args.latency, "--responder", "judge", "--rpm", str(args.rpm),
                                         "--tpm", str(args.tpm))
    try:
        common = dict(base_url=base_url, concurrency=args.concurrency, rpm=args.rpm, tpm=args.tpm)
        baseline = run(f"fixed concurrency {args.concurrency} (baseline)",
                       requests=judge_requests(args.requests, "fixed"), adaptive=False, **common)
        time.sleep(1.5)  # let the server's buckets fill again
        adaptive = run(f"adaptive concurrency (at most {args.concurrency})",
                       requests=judge_requests(args.requests, "adaptive"), adaptive=True, **common)
    finally:
        server.terminate()
        server.wait(timeout=10)
        workdir.cleanup()
    print(f"adaptive vs fixed: rate ratio {adaptive['ratio']:.3f} vs {baseline['ratio']:.3f}, "
          f"failed {adaptive['failed']} vs {baseline['failed']}")
    passed = adaptive["ratio"] >= TARGET_RATE_RATIO and adaptive["failed"] == 0
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

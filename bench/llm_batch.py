"""Throughput of the LLM client layer against the fake server, then the same batch from the cache.

    python bench/llm_batch.py [--requests 2000 --latency 0.2 --concurrency 32]

Uses a throw-away SQLite database (never the development one) and runs the fake server in its own
process, as a real server would be. The target is a wall time within 15 % of the ideal
requests x latency / concurrency; the second run must send nothing.
"""
from __future__ import annotations

import argparse
import json
import os
import socket
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parent.parent
TARGET_RATIO = 1.15


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def server_stats(base_url: str) -> dict:
    with urllib.request.urlopen(base_url.removesuffix("/v1") + "/_fake/stats") as response:
        return json.loads(response.read())


def start_fake_server(latency: float, *options: str) -> tuple[subprocess.Popen, str]:
    """The fake server in its own process; ``options`` are more command-line options."""
    port = free_port()
    process = subprocess.Popen(
        [sys.executable, "-m", "fakes.openai_server", "--port", str(port), "--latency", str(latency), *options],
        cwd=REPO_ROOT,
        stdout=subprocess.DEVNULL,
    )
    base_url = f"http://127.0.0.1:{port}/v1"
    for _ in range(100):
        try:
            server_stats(base_url)
            return process, base_url
        except OSError:
            time.sleep(0.05)
    process.terminate()
    raise RuntimeError("the fake server did not start")


def throwaway_django(prefix: str, *, log_level: str) -> tempfile.TemporaryDirectory:
    """Django set up on a new SQLite database in a temporary folder (never the development one)."""
    sys.path.insert(0, str(REPO_ROOT))
    workdir = tempfile.TemporaryDirectory(prefix=prefix)
    os.environ["DJANGO_SETTINGS_MODULE"] = "crowdbench.settings"
    os.environ["DATABASE_URL"] = f"sqlite:///{Path(workdir.name) / 'bench.sqlite3'}"
    os.environ.setdefault("LOG_LEVEL", log_level)

    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)
    return workdir


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--requests", type=int, default=2000)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=32)
    args = parser.parse_args()

    workdir = throwaway_django("llm-bench-", log_level="WARNING")

    from llm.client import LLMClient, chat_request
    from llm.models import LLMCall
    from llm.services import create_run

    server, base_url = start_fake_server(args.latency)
    try:
        client = LLMClient(
            base_url=base_url,
            api_key="bench-key",
            model="fake-model",
            max_concurrency=args.concurrency,
            prices={"fake-model": {"input": 0.15, "output": 0.6}},
        )
        requests = [
            chat_request(f"Request {i}: describe image {i} for a blind reader.", max_tokens=32, purpose="bench")
            for i in range(args.requests)
        ]
        ideal = args.requests * args.latency / args.concurrency

        run = create_run(name="bench", budget_usd=100)
        first = client.run_batch(requests, run=run)
        after_first = server_stats(base_url)
        sent_first = after_first["by_path"].get("/v1/chat/completions", 0)
        ratio = first.stats.wall_seconds / ideal
        run.refresh_from_db()
        print(f"run 1: {args.requests} requests, latency {args.latency}s, concurrency {args.concurrency}")
        print(f"  wall time        {first.stats.wall_seconds:.2f} s")
        print(f"  ideal            {ideal:.2f} s  ({args.requests} x {args.latency} / {args.concurrency})")
        print(f"  ratio            {ratio:.3f}  (target <= {TARGET_RATIO})")
        print(
            f"  sent to server   {sent_first}  ok {first.stats.ok}  failed {first.stats.failed}  "
            f"(at most {after_first['peak_in_flight']} in flight)"
        )
        print(
            f"  database         {first.stats.db_flushes} group commits, {first.stats.db_seconds:.2f} s "
            f"in the DB thread, {LLMCall.objects.count()} rows; run spent ${run.spent_usd}"
        )

        second = client.run_batch(requests, run=run)
        sent_second = server_stats(base_url)["by_path"].get("/v1/chat/completions", 0) - sent_first
        print("run 2: the same requests again")
        print(f"  wall time        {second.stats.wall_seconds:.2f} s")
        print(f"  sent to server   {sent_second}  (from cache: {second.stats.cache_hits})")
        same = [a.text for a in first] == [b.text for b in second]
        print(f"  same answers     {same}")
    finally:
        server.terminate()
        server.wait(timeout=10)
        workdir.cleanup()

    passed = ratio <= TARGET_RATIO and sent_second == 0 and same and first.stats.ok == args.requests
    print("PASS" if passed else "FAIL")
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main())

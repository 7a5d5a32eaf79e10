"""Load bench of the worker API: many workers looping "submit-and-next" against gunicorn on PostgreSQL.

What it does, in one run:

1. creates a fresh PostgreSQL database (dropped at the end, also after a failure) and migrates it;
2. builds a pairwise round of ``--items`` items × ``--overlap`` judgments and ``--workers`` local
   workers, all with the same password;
3. starts a private Redis as the cache every server process shares (sessions, workers' users and rate
   limits are read from it; the deployment guide asks for one with several processes), and gunicorn
   with the repository's ``gunicorn.conf.py`` (``DEBUG`` off, rate limits on: each simulated worker
   sends its own address in ``X-Real-IP``, which the server reads as ``RATE_LIMIT_ADDRESS_HEADER``, and
   the per-worker limits are raised to ``--worker-rate-limit``, since a simulated worker is much
   faster than a person: every request is still counted in Redis);
4. measures a trivial view on the same server: ``GET /health/`` (one ``SELECT 1`` and a cache
   round trip) from ``--workers`` clients, just before and again just after the closed loop (step 5),
   and pools the two (the machine's speed drifts; a baseline from one side only moved the ratio by
   as much as a change of the code);
5. logs every worker in through the login form (one ``httpx.Client`` and session each, one thread
   each), then each asks ``POST next`` once and loops ``POST submit-and-next`` (the answer carries the
   next task: one request per task) until the round has nothing left for them (a closed loop: the
   capacity).
   Both measurements use the same client: threads spread over ``--client-processes`` processes, so
   the client's own GIL is not what is measured;
6. prints throughput, p50 / p99 latency, tasks completed per second over the trivial view's request
   rate (the target: ``TARGET_TASK_SHARE``), the mean latency the closed loop implies (workers /
   throughput), the machine's load average, the CPU time per trivial request and per task of the
   server, PostgreSQL, Redis and the client (``harness.cpu``, from when every worker has logged in)
   with the ceiling it sets and what the target leaves the server, then checks the database: every
   acknowledged submission stored exactly once, no item over-assigned, none lost, every item complete;
7. has the same workers work a second round (``--paced-items``) at a fixed request rate,
   ``--paced-share`` of the trivial view's request rate (not of the code's own throughput, so a slower
   submit path cannot lower its own bar), each latency counted from when its request was due, not
   from when it was sent (no coordinated omission: a server falling behind shows in it), prints
   apart the latency of each worker's last request (its submission, then nothing left: near a
   round's end they all come at once), and checks that round the same way.

Run from the repository root: ``python bench/load.py`` (PostgreSQL at ``TEST_POSTGRES_URL``,
default ``postgres://postgres@127.0.0.1:5432/postgres``). ``--items 200`` for a quick look.
The exit status is 1 when a target is missed or the integrity check fails.
"""
from __future__ import annotations

import argparse
import multiprocessing
import os
import random
import secrets
import shutil
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from harness import cpu  # noqa: E402
from harness.crowd import build_round, check_integrity, intact, log_in  # noqa: E402
from harness.processes import (  # noqa: E402
    PrivateRedis, create_database, database_url, drop_database, free_port, manage, server_environment, start_gunicorn,
    stop_group, wait_until_up,
)

# Tasks completed per second in the closed loop, over the trivial view's requests per second.
TARGET_TASK_SHARE = 0.2
# p99 of the paced loop, offered ``--paced-share`` (0.2) of the trivial view's request rate.
TARGET_P99_MS = 250.0


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=2000)
    parser.add_argument("--overlap", type=int, default=3, help="judgments per item")
    parser.add_argument("--workers", type=int, default=64, help="simulated workers (one session and thread each)")
    parser.add_argument("--client-processes", type=int, default=4,
                        help="client processes the simulated workers (and the trivial view's clients) are spread over")
    parser.add_argument("--trivial-requests", type=int, default=4000)
    parser.add_argument("--paced-items", type=int, default=400,
                        help="items of a second round worked at a fixed request rate (0: no paced run)")
    parser.add_argument("--paced-share", type=float, default=0.2,
                        help="the paced run's request rate, as a share of the trivial view's request rate")
    parser.add_argument("--worker-rate-limit", default="6000/m",
                        help="per-worker limit of task requests and submissions (simulated workers are fast)")
    parser.add_argument("--processes", type=int, default=None, help="gunicorn processes (WEB_CONCURRENCY)")
    parser.add_argument("--threads", type=int, default=None, help="threads per process (GUNICORN_THREADS)")
    parser.add_argument("--postgres", default=os.environ.get(
        "TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"))
    parser.add_argument("--cache-url", default=None,
                        help="the shared cache, e.g. redis://127.0.0.1:6379/1 (default: a private redis-server); "
                             "'' for each process's memory, where sessions are read from the database")
    args = parser.parse_args()
    if args.paced_items < 0 or not 0 < args.paced_share <= 1:
        parser.error("--paced-items must be 0 or more and --paced-share within (0, 1]")
    return args


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q / 100 * (len(ordered) - 1))))]


def summary(latencies: list[float], seconds: float) -> dict:
    return {"requests": len(latencies), "rate": len(latencies) / seconds,
            "p50": percentile(latencies, 50) * 1000, "p99": percentile(latencies, 99) * 1000}


# --- the simulated crowd --------------------------------------------------------------------------


def post(client: httpx.Client, url: str, label: str, latencies: list, errors: Counter, *, due: float | None = None,
         **kwargs) -> httpx.Response:
    """POST, timed from ``due`` (when a paced request was meant to go) or from now; a request that fails
    in transport (a timeout, a dropped connection) is sent again, as a real client would: next and
    submit-and-next are both safe to repeat (the same open task, the same stored submission)."""
    for _attempt in range(5):
        start = time.perf_counter() if due is None else due
        due = None
        try:
            return client.post(url, **kwargs)
        except httpx.TransportError as error:
            errors[f"{label} {type(error).__name__}"] += 1
        finally:
            latencies.append(time.perf_counter() - start)
    raise RuntimeError(f"{label}: five transport failures in a row")


def address_of(username: str) -> str:
    """The simulated worker's own client address (``X-Real-IP``): rate limits count per address."""
    number = int(username.removeprefix("load"))
    return f"10.{number // 65536 % 256}.{number // 256 % 256}.{number % 256}"


def work(base_url: str, username: str, round_id: int, interval: float | None, barrier: threading.Barrier, out: dict,
         lock) -> None:
    """One simulated worker: "next task", then "submit-and-next" until the round has nothing left for
    it (one request per task). With
    ``interval`` (seconds) its requests go on a fixed schedule, one every ``interval``, and each
    latency counts from when the request was due, so a server falling behind shows in it (an open
    loop); without, each request goes as soon as the last one is answered (a closed loop)."""
    rng = random.Random(username)
    latencies, acknowledged, errors = [], [], Counter()
    last = []  # the latency of the request that found nothing left (the round's end comes to all at once)

    def send(url: str, label: str, **kwargs) -> httpx.Response:
        nonlocal due
        if interval is None:
            return post(client, url, label, latencies, errors, **kwargs)
        time.sleep(max(0.0, due - time.perf_counter()))
        response = post(client, url, label, latencies, errors, due=due, **kwargs)
        due += interval
        return response

    try:
        with httpx.Client(base_url=base_url, timeout=60, follow_redirects=False,
                          headers={"X-Real-IP": address_of(username)}) as client:
            log_in(client, username)
            barrier.wait()
            # Paced workers start spread over one interval, not all at once.
            due = time.perf_counter() + rng.random() * (interval or 0)
            headers = {"X-CSRFToken": client.cookies["csrftoken"]}
            assignment, failures = None, 0
            while assignment is None and failures < 20:
                response = send(f"/api/work/rounds/{round_id}/next/", "next", headers=headers)
                if response.status_code == 200:
                    assignment = response.json()["assignment"] or {}
                else:
                    errors[f"next {response.status_code}"] += 1
                    failures += 1
            while assignment and failures < 20:
                # The same answer on every attempt: a repeat is recognised as the stored submission.
                answer = {"choice": rng.choice(["left", "right"])}
                response = send(assignment["submit_and_next_url"], "submit-and-next", json=answer, headers=headers)
                if response.status_code in (200, 201):
                    body = response.json()
                    acknowledged.append(body["assignment"])
                    assignment = body["next"]["assignment"]
                    if assignment is None:
                        last.append(latencies[-1])
                else:
                    errors[f"submit-and-next {response.status_code}"] += 1
                    failures += 1
            if failures >= 20:
                errors["workers that gave up"] += 1
    finally:
        # Also when the worker gave up: what it was told still counts in the integrity check.
        with lock:
            out["latencies"].extend(latencies)
            out["last"].extend(last)
            out["acknowledged"].extend(acknowledged)
            out["errors"].update(errors)


def hammer(base_url: str, path: str, per_thread: int, threads: int, barrier, results) -> None:
    """``threads`` clients, one connection each, each sending ``per_thread`` GETs of ``path`` once
    ``barrier`` opens; the latencies go to ``results``."""
    latencies, lock = [], threading.Lock()

    def run():
        mine = []
        with httpx.Client(base_url=base_url, timeout=60) as client:
            client.get(path)  # connect before the clock starts
            barrier.wait()
            for _ in range(per_thread):
                start = time.perf_counter()
                response = client.get(path)
                mine.append(time.perf_counter() - start)
                if response.status_code != 200:
                    raise RuntimeError(f"{path}: {response.status_code}")
        with lock:
            latencies.extend(mine)

    pool = [threading.Thread(target=run) for _ in range(threads)]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    results.put(latencies)


def crowd(base_url: str, usernames: list[str], round_id: int, interval: float | None, barrier, results) -> None:
    """One thread per simulated worker (``work``); everything they measured goes to ``results``."""
    out, lock = {"latencies": [], "last": [], "acknowledged": [], "errors": Counter()}, threading.Lock()
    pool = [threading.Thread(target=work, args=(base_url, name, round_id, interval, barrier, out, lock))
            for name in usernames]
    for thread in pool:
        thread.start()
    for thread in pool:
        thread.join()
    results.put(out)


def _client(target, arguments: tuple, barrier, results, may_exit) -> None:
    target(*arguments, barrier, results)
    may_exit.wait(600)  # alive until the bench has read its CPU time


def in_processes(target, argument_lists: list[tuple], parties: int, measure=None) -> tuple[list, float, dict]:
    """Run ``target(*arguments, barrier, results)`` in one client process per argument list: a
    single Python process cannot drive 64 connections without its own GIL becoming what is measured.
    The clock runs from the moment all ``parties`` reached the barrier until the last process
    reported; returns what each reported, the seconds, and, with ``measure`` (client pids -> a
    ``harness.cpu.CpuSample``), the CPU seconds by role over the same span (log-ins before the
    barrier left out)."""
    context = multiprocessing.get_context("fork")
    barrier, results, may_exit = context.Barrier(parties + 1, timeout=600), context.Queue(), context.Event()
    processes = [context.Process(target=_client, args=(target, arguments, barrier, results, may_exit))
                 for arguments in argument_lists]
    for process in processes:
        process.start()
    pids = tuple(process.pid for process in processes)
    barrier.wait()
    before = measure(pids) if measure else None
    start = time.perf_counter()
    reports = [results.get(timeout=3600) for _ in processes]
    seconds = time.perf_counter() - start
    used = measure(pids).minus(before) if measure else {}
    may_exit.set()
    for process in processes:
        process.join()
        if process.exitcode != 0:
            raise RuntimeError(f"a client process failed (exit status {process.exitcode})")
    return reports, seconds, used


def split(values: list, parts: int) -> list[list]:
    return [chunk for chunk in (values[n::parts] for n in range(parts)) if chunk]


def run_crowd(base_url: str, usernames: list[str], round_id: int, interval: float | None, clients: int,
              measure=None):
    """Every simulated worker on the round (``crowd`` in ``clients`` processes): what they saw together,
    the seconds it took and the CPU it used (``in_processes``)."""
    reports, seconds, used = in_processes(
        crowd, [(base_url, chunk, round_id, interval) for chunk in split(usernames, clients)], len(usernames),
        measure)
    out = {"latencies": [], "last": [], "acknowledged": [], "errors": Counter()}
    for report in reports:
        out["latencies"].extend(report["latencies"])
        out["last"].extend(report["last"])
        out["acknowledged"].extend(report["acknowledged"])
        out["errors"].update(report["errors"])
    return out, seconds, used


def rate_limits_on(per_worker: str) -> dict:
    """Rate limits on, each simulated worker counted by its own address (``X-Real-IP``), the
    per-worker limits of task requests and submissions at ``per_worker``."""
    return {"RATE_LIMITS_ENABLED": "1", "RATE_LIMIT_ADDRESS_HEADER": "HTTP_X_REAL_IP",
            "RATE_LIMIT_TASKS_PER_WORKER": per_worker, "RATE_LIMIT_SUBMISSIONS_PER_WORKER": per_worker,
            "RATE_LIMIT_TASKS_PER_ADDRESS": per_worker, "RATE_LIMIT_SUBMISSIONS_PER_ADDRESS": per_worker}


def print_cpu(*, trivial: dict, task: dict, trivial_rate: float) -> None:
    """Where the CPU goes, per trivial request and per task of the closed loop, and what the target
    leaves a task: with every role on the same cores, tasks per second cannot pass the cores' CPU
    seconds over a task's CPU seconds, whatever the concurrency."""
    roles = ("server", "postgres", "redis", "client", "total")
    print(f"{'CPU ms per request':<28}" + "".join(f"{role:>10}" for role in roles))
    for label, row in (("trivial view (/health/)", trivial), ("task (submit-and-next)", task)):
        print(f"{label:<28}" + "".join(f"{row[role]:>10.2f}" for role in roles))
    cores = os.cpu_count() or 1
    budget = cores * 1000 / (TARGET_TASK_SHARE * trivial_rate)
    others = task["total"] - task["server"]
    print(f"CPU ceiling on {cores} cores: {cores * 1000 / task['total']:.0f} tasks/s "
          f"({cores * 1000 / task['total'] / trivial_rate:.2f} x the trivial view's request rate); the target "
          f"({TARGET_TASK_SHARE} x) leaves a task {budget:.1f} ms of CPU in all, of which PostgreSQL, Redis and "
          f"the client now take {others:.1f} ms, leaving the server {budget - others:.1f} ms "
          f"(it takes {task['server']:.1f} ms)")


def main() -> int:
    args = parse_args()
    name = f"cb_load_{os.getpid()}_{secrets.token_hex(3)}"
    url = database_url(args.postgres, name)
    env = server_environment(database_url=url, cache_url=args.cache_url or "",
                             static_root=tempfile.mkdtemp(prefix="cb-load-static-"),
                             **rate_limits_on(args.worker_rate_limit))
    if args.processes:
        env["WEB_CONCURRENCY"] = str(args.processes)
    if args.threads:
        env["GUNICORN_THREADS"] = str(args.threads)
    create_database(args.postgres, name)
    server = redis = None
    try:
        if args.cache_url is None:
            redis = PrivateRedis()
            redis.start()
            env["CACHE_URL"] = redis.url(1)
        manage(env, "migrate", "-v", "0")
        manage(env, "collectstatic", "--noinput", "-v", "0")
        os.environ.update({"DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "crowdbench.settings", "DEBUG": "1"})
        os.environ.pop("TEST_DATABASE_NAME", None)
        sys.path.insert(0, str(ROOT))
        import django

        django.setup()
        from django.db import connection

        round, usernames = build_round(items=args.items, overlap=args.overlap, workers=args.workers)
        connection.close()

        port = free_port()
        base_url = f"http://127.0.0.1:{port}"
        server = start_gunicorn(env, port)
        wait_until_up(base_url, server)

        clients = max(1, min(args.client_processes, args.workers))
        per_process = split(list(range(args.workers)), clients)
        per_thread = max(1, args.trivial_requests // args.workers)
        hammer_args = [(base_url, "/health/", 4, len(chunk)) for chunk in per_process]
        in_processes(hammer, hammer_args, args.workers)  # warm every server process and connection
        hammer_args = [(base_url, "/health/", per_thread, len(chunk)) for chunk in per_process]
        redis_pid = redis.process.pid if redis is not None else None

        def measure(client_pids):
            return cpu.sample(server_group=server.pid, redis_pid=redis_pid, client_pids=client_pids)

        # The trivial view is measured just before and just after the closed loop, and the two pooled:
        # the machine's speed drifts over a minute (it shares its host), and a baseline taken on one
        # side only moves the ratio by as much as the code does.
        reports, trivial_seconds, trivial_cpu = in_processes(hammer, hammer_args, args.workers, measure)
        trivial_latencies = [value for report in reports for value in report]
        trivial_before = len(trivial_latencies) / trivial_seconds

        out, seconds, task_cpu = run_crowd(base_url, usernames, round.pk, None, clients, measure)
        submit_path = summary(out["latencies"], seconds)
        accepted = len(out["acknowledged"]) / seconds
        load = os.getloadavg()

        reports, after_seconds, after_cpu = in_processes(hammer, hammer_args, args.workers, measure)
        after_latencies = [value for report in reports for value in report]
        trivial_after = len(after_latencies) / after_seconds
        trivial = summary(trivial_latencies + after_latencies, trivial_seconds + after_seconds)
        trivial_cpu = {role: trivial_cpu[role] + after_cpu[role] for role in trivial_cpu}
        integrity = check_integrity(round_id=round.pk, acknowledged=out["acknowledged"], overlap=args.overlap,
                                    items=args.items)

        paced = paced_integrity = None
        if args.paced_items:
            paced_round, _ = build_round(items=args.paced_items, overlap=args.overlap, workers=0, name="Paced")
            connection.close()
            offered = args.paced_share * trivial["rate"]
            paced_out, paced_seconds, _ = run_crowd(base_url, usernames, paced_round.pk, args.workers / offered,
                                                    clients)
            paced = {**summary(paced_out["latencies"], paced_seconds), "offered": offered,
                     "last": summary(paced_out["last"], paced_seconds) if paced_out["last"] else None}
            paced_integrity = check_integrity(round_id=paced_round.pk, acknowledged=paced_out["acknowledged"],
                                              overlap=args.overlap, items=args.paced_items)
            out["errors"].update(paced_out["errors"])
        connection.close()
    finally:
        if server is not None:
            stop_group(server)
        if redis is not None:
            redis.kill()
        drop_database(args.postgres, name)
        shutil.rmtree(env["STATIC_ROOT"], ignore_errors=True)

    share = accepted / trivial["rate"]
    server_errors = sum(n for key, n in out["errors"].items() if key.split()[-1].startswith("5"))
    refused_for_rate = sum(n for key, n in out["errors"].items() if key.endswith(" 429"))
    print(f"\n{args.workers} workers, pairwise round of {args.items} items x {args.overlap}, gunicorn "
          f"({env.get('WEB_CONCURRENCY', 'default')} processes x {env.get('GUNICORN_THREADS', 'default')} threads) "
          f"on PostgreSQL, cache {'Redis' if env['CACHE_URL'] else 'per process'}; clients in {clients} processes; {os.cpu_count()} cores, load average {load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"{'':<28}{'requests':>10}{'req/s':>10}{'p50 ms':>10}{'p99 ms':>10}")
    rows = [("trivial view (/health/)", trivial), ("submit-and-next", submit_path)]
    if paced:
        rows.append(("submit-and-next, paced", paced))
    for label, row in rows:
        print(f"{label:<28}{row['requests']:>10}{row['rate']:>10.1f}{row['p50']:>10.1f}{row['p99']:>10.1f}")
    print(f"tasks completed per second: {accepted:.1f} ({len(out['acknowledged'])} in {seconds:.1f} s), "
          f"{share:.2f} x the trivial view's request rate (target >= {TARGET_TASK_SHARE})")
    # A closed loop: each simulated worker sends its next request when the last one is answered, so
    # the mean latency is the number of workers over the throughput (Little's law), whatever the code:
    # the closed loop measures capacity, the paced loop latency.
    print(f"closed loop of {args.workers} workers: mean latency {args.workers / submit_path['rate'] * 1000:.0f} ms "
          f"at this throughput (the trivial view: {trivial['rate']:.0f} requests/s, p99 {trivial['p99']:.0f} ms; "
          f"{trivial_before:.0f} before the loop, {trivial_after:.0f} after it)")
    print_cpu(trivial=cpu.per_request_ms(trivial_cpu, trivial["requests"]),
              task=cpu.per_request_ms(task_cpu, len(out["acknowledged"])), trivial_rate=trivial["rate"])
    if out["errors"]:
        print("refused requests:", dict(out["errors"]))
    if paced:
        print(f"paced: {paced['offered']:.1f} requests/s offered ({args.paced_share:.2f} x the trivial view's "
              f"request rate), each latency counted from when its request was due, on a round of {args.paced_items} "
              f"items x {args.overlap}; p99 {paced['p99']:.0f} ms (target <= {TARGET_P99_MS:.0f})")
        if paced["last"]:
            last = paced["last"]
            print(f"  of which each worker's last request (its submission, then nothing left), {last['requests']} "
                  f"near the round's end: p50 {last['p50']:.0f} ms, p99 {last['p99']:.0f} ms")
    print("integrity:", ", ".join(f"{key} {value}" for key, value in integrity.items()))
    if paced_integrity:
        print("integrity (paced):", ", ".join(f"{key} {value}" for key, value in paced_integrity.items()))
    stored_once = all(check is None or intact(check) for check in (integrity, paced_integrity))
    met = {"tasks per second": share >= TARGET_TASK_SHARE,
           "paced p99": paced is not None and paced["p99"] <= TARGET_P99_MS,
           "integrity": stored_once, "no 5xx": server_errors == 0, "no rate-limit refusals": refused_for_rate == 0}
    print("targets:", ", ".join(f"{key} {'met' if ok else 'MISSED'}" for key, ok in met.items()))
    return 0 if all(met.values()) else 1


if __name__ == "__main__":
    sys.exit(main())

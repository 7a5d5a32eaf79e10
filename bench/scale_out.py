"""Scale-out run of the worker API: two gunicorn instances, one PostgreSQL, one Redis, media in an
S3-compatible bucket, and one instance killed while the crowd works.

What it does, in one run:

1. creates a fresh PostgreSQL database (dropped at the end, also after a failure) and migrates it;
   starts a private Redis (sessions, workers' users and rate-limit counters, shared by both
   instances) and moto's S3-compatible server (``MEDIA_STORAGE=s3``, as in the tests);
2. builds a pairwise round of ``--items`` items x ``--overlap`` judgments whose instances show one
   image stored in the bucket, and ``--workers`` local workers;
3. starts two gunicorn instances ("hosts") on two ports with the same settings, rate limits on
   (each simulated worker has its own address, ``X-Real-IP``);
4. checks that rate limits are shared: failed sign-ins for one name, alternating between the two
   instances, are refused from the one past the limit on;
5. each simulated worker logs in on one instance (half on each), fetches its first task's image from
   the bucket, then loops "submit-and-next"; when its instance stops answering it goes on with the
   same session on the other one (no new login: sessions are shared) and sends the same request
   again (safe to repeat: the same open task, the same stored submission);
6. ``--kill-after`` seconds into the run, kills the second instance (SIGKILL of its process group:
   requests in flight are lost to the client);
7. prints throughput and latency, how many workers moved to the other instance and how many logins
   that took (0), and checks the database as ``bench/load.py`` does: every acknowledged submission
   stored exactly once, none lost, no item over-assigned, every item complete.

Run from the repository root: ``python bench/scale_out.py`` (PostgreSQL at ``TEST_POSTGRES_URL``).
The exit status is 1 when the integrity check fails or a request was answered 5xx other than by
the killed instance.
"""
from __future__ import annotations

import argparse
import io
import os
import random
import secrets
import shutil
import signal
import sys
import tempfile
import threading
import time
from collections import Counter
from pathlib import Path

import httpx

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

from harness.crowd import PASSWORD, build_round, check_integrity, intact  # noqa: E402
from harness.processes import (  # noqa: E402
    PrivateRedis, create_database, database_url, drop_database, free_port, manage, server_environment, start_gunicorn,
    stop_group, wait_until_up,
)
from load import address_of, percentile, rate_limits_on, split  # noqa: E402

BUCKET = "crowdbench-media"
S3_KEYS = {"MEDIA_S3_ACCESS_KEY_ID": "media-key", "MEDIA_S3_SECRET_ACCESS_KEY": "media-secret"}


def parse_args():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--items", type=int, default=600)
    parser.add_argument("--overlap", type=int, default=3)
    parser.add_argument("--workers", type=int, default=32)
    parser.add_argument("--client-processes", type=int, default=2)
    parser.add_argument("--kill-after", type=float, default=4.0, help="seconds into the run the second instance dies")
    parser.add_argument("--processes", type=int, default=2, help="gunicorn processes per instance")
    parser.add_argument("--postgres", default=os.environ.get(
        "TEST_POSTGRES_URL", "postgres://postgres@127.0.0.1:5432/postgres"))
    return parser.parse_args()


class Worker:
    """One simulated worker's HTTP client over both instances, moving on to the other when its own
    stops answering."""

    def __init__(self, hosts: list[str], first: int, username: str, stats: dict):
        self.hosts, self.current, self.stats = hosts, first, stats
        self.client = httpx.Client(timeout=30, follow_redirects=False, headers={"X-Real-IP": address_of(username)})

    def request(self, method: str, path: str, **kwargs) -> httpx.Response:
        for _attempt in range(50):
            start = time.perf_counter()
            try:
                response = self.client.request(method, self.hosts[self.current] + path, **kwargs)
            except httpx.TransportError:
                self.stats["errors"][f"{path.split('/')[3] if path.startswith('/api/') else path} transport"] += 1
                self._move_on()
                continue
            if response.status_code in (502, 503, 504):
                self.stats["errors"][f"retried {response.status_code}"] += 1
                self._move_on()
                continue
            self.stats["latencies"].append(time.perf_counter() - start)
            return response
        raise RuntimeError(f"{path}: no instance answered")

    def _move_on(self) -> None:
        self.current = (self.current + 1) % len(self.hosts)
        self.stats["moved"] += 1
        time.sleep(0.05)


def work(hosts: list[str], username: str, first: int, round_id: int, out: dict, lock) -> None:
    rng = random.Random(username)
    stats = {"latencies": [], "errors": Counter(), "moved": 0}
    acknowledged, logins, images = [], 0, Counter()
    worker = Worker(hosts, first, username, stats)
    try:
        worker.request("GET", "/accounts/login/")
        response = worker.request("POST", "/accounts/login/", data={
            "username": username, "password": PASSWORD, "csrfmiddlewaretoken": worker.client.cookies["csrftoken"]})
        logins += 1
        if response.status_code != 302:
            raise RuntimeError(f"login of {username}: {response.status_code}")
        out["barrier"].wait()
        headers = {"X-CSRFToken": worker.client.cookies["csrftoken"]}
        response = worker.request("POST", f"/api/work/rounds/{round_id}/next/", headers=headers)
        assignment = response.json()["assignment"] if response.status_code == 200 else None
        if response.status_code != 200:
            stats["errors"][f"next {response.status_code}"] += 1
        if assignment:
            for image in assignment["task"]["instance"]["images"]:
                images[httpx.get(image["url"], timeout=30).status_code] += 1
        failures = 0
        while assignment and failures < 20:
            answer = {"choice": rng.choice(["left", "right"])}
            response = worker.request("POST", assignment["submit_and_next_url"], json=answer, headers=headers)
            if response.status_code in (200, 201):
                body = response.json()
                acknowledged.append(body["assignment"])
                assignment = body["next"]["assignment"]
            else:
                stats["errors"][f"submit-and-next {response.status_code}"] += 1
                failures += 1
    finally:
        worker.client.close()
        with lock:
            out["latencies"].extend(stats["latencies"])
            out["errors"].update(stats["errors"])
            out["acknowledged"].extend(acknowledged)
            out["moved"] += int(stats["moved"] > 0)
            out["logins"] += logins
            out["images"].update(images)


def crowd(hosts: list[str], usernames: list[tuple[str, int]], round_id: int, barrier, results) -> None:
    out = {"latencies": [], "errors": Counter(), "acknowledged": [], "moved": 0, "logins": 0, "images": Counter(),
           "barrier": barrier}
    lock = threading.Lock()
    threads = [threading.Thread(target=work, args=(hosts, name, first, round_id, out, lock))
               for name, first in usernames]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    out.pop("barrier")
    results.put(out)


def run_and_kill(argument_lists: list[tuple], parties: int, victim, kill_after: float):
    """``crowd`` in one client process per argument list (as ``load.in_processes``); ``kill_after``
    seconds after every worker is logged in, ``victim`` is killed. (reports, seconds, killed at)."""
    import multiprocessing

    context = multiprocessing.get_context("fork")
    barrier, results = context.Barrier(parties + 1, timeout=600), context.Queue()
    processes = [context.Process(target=crowd, args=(*arguments, barrier, results)) for arguments in argument_lists]
    for process in processes:
        process.start()
    barrier.wait()
    start = time.perf_counter()
    killed = {}

    def kill():
        killed["at"] = time.perf_counter() - start
        stop_group(victim, signal.SIGKILL)

    killer = threading.Timer(kill_after, kill)
    killer.start()
    reports = [results.get(timeout=3600) for _ in processes]
    seconds = time.perf_counter() - start
    killer.cancel()
    for process in processes:
        process.join()
    return reports, seconds, killed.get("at")


def rate_limits_shared(hosts: list[str], attempts: int = 12) -> int | None:
    """Failed sign-ins for one user name from one address, alternating between the instances: the
    attempt (1-based) the first 429 came on. With counters shared through Redis it is the one past the
    per-user limit (10 a minute), though neither instance saw that many; None if none came."""
    with httpx.Client(timeout=30, headers={"X-Real-IP": "10.255.255.1"}) as client:
        for n in range(attempts):
            host = hosts[n % len(hosts)]
            client.get(host + "/accounts/login/")
            response = client.post(host + "/accounts/login/", data={
                "username": "nobody-here", "password": "wrong", "csrfmiddlewaretoken": client.cookies["csrftoken"]})
            if response.status_code == 429:
                return n + 1
    return None


def attach_image(round) -> None:
    """One image, stored in the bucket through the media storage, shown on every instance of the round."""
    from PIL import Image as PILImage

    from datasets_app.models import InstanceImage
    from datasets_app.services import store_image
    from projects.services import unassigned_project

    buffer = io.BytesIO()
    PILImage.new("RGB", (64, 48), "teal").save(buffer, format="PNG")
    image = store_image(project=unassigned_project(), content=buffer.getvalue(), license="CC-BY-4.0")
    instances = {item.output_a.instance_id for item in round.items.select_related("output_a")}
    InstanceImage.objects.bulk_create([InstanceImage(instance_id=pk, image=image, position=0) for pk in instances])


def main() -> int:
    args = parse_args()
    from moto.server import ThreadedMotoServer
    import boto3

    import logging

    logging.getLogger("werkzeug").setLevel(logging.ERROR)  # moto's server logs every request otherwise
    s3 = ThreadedMotoServer(ip_address="127.0.0.1", port=0, verbose=False)
    s3.start()
    host, port = s3.get_host_and_port()
    endpoint = f"http://{host}:{port}"
    boto3.client("s3", endpoint_url=endpoint, region_name="us-east-1", aws_access_key_id="media-key",
                 aws_secret_access_key="media-secret").create_bucket(Bucket=BUCKET)
    media = {"MEDIA_STORAGE": "s3", "MEDIA_S3_BUCKET": BUCKET, "MEDIA_S3_ENDPOINT_URL": endpoint,
             "MEDIA_S3_REGION": "us-east-1", **S3_KEYS}

    name = f"cb_scale_{os.getpid()}_{secrets.token_hex(3)}"
    url = database_url(args.postgres, name)
    redis = PrivateRedis()
    redis.start()
    env = server_environment(database_url=url, cache_url=redis.url(1),
                             static_root=tempfile.mkdtemp(prefix="cb-scale-static-"),
                             WEB_CONCURRENCY=str(args.processes), **rate_limits_on("6000/m"), **media)
    create_database(args.postgres, name)
    servers = []
    try:
        manage(env, "migrate", "-v", "0")
        manage(env, "collectstatic", "--noinput", "-v", "0")
        os.environ.update({"DATABASE_URL": url, "DJANGO_SETTINGS_MODULE": "crowdbench.settings", "DEBUG": "1", **media})
        os.environ.pop("TEST_DATABASE_NAME", None)
        import django

        django.setup()
        from django.db import connection

        round, usernames = build_round(items=args.items, overlap=args.overlap, workers=args.workers, name="Scale")
        attach_image(round)
        connection.close()

        hosts = []
        for _ in range(2):
            port = free_port()
            server = start_gunicorn(env, port)
            servers.append(server)
            hosts.append(f"http://127.0.0.1:{port}")
        for host, server in zip(hosts, servers):
            wait_until_up(host, server)

        limited_at = rate_limits_shared(hosts)
        assigned = [(username, n % 2) for n, username in enumerate(usernames)]
        clients = max(1, min(args.client_processes, args.workers))
        reports, seconds, killed_at = run_and_kill(
            [(hosts, chunk, round.pk) for chunk in split(assigned, clients)], len(usernames), servers[1],
            args.kill_after)
        out = {"latencies": [], "errors": Counter(), "acknowledged": [], "moved": 0, "logins": 0, "images": Counter()}
        for report in reports:
            for key in ("latencies", "acknowledged"):
                out[key].extend(report[key])
            for key in ("errors", "images"):
                out[key].update(report[key])
            out["moved"] += report["moved"]
            out["logins"] += report["logins"]
        integrity = check_integrity(round_id=round.pk, acknowledged=out["acknowledged"], overlap=args.overlap,
                                    items=args.items)
        connection.close()
    finally:
        for server in servers:
            if server.poll() is None:
                stop_group(server)
        redis.kill()
        s3.stop()
        drop_database(args.postgres, name)
        shutil.rmtree(env["STATIC_ROOT"], ignore_errors=True)

    load = os.getloadavg()
    latencies = out["latencies"]
    print(f"\n{args.workers} workers over 2 gunicorn instances ({args.processes} processes each), one PostgreSQL, "
          f"one Redis, media in an S3-compatible bucket (moto); {os.cpu_count()} cores, load average "
          f"{load[0]:.2f} {load[1]:.2f} {load[2]:.2f}")
    print(f"second instance killed (SIGKILL) {killed_at:.1f} s into a run of {seconds:.1f} s" if killed_at is not None
          else f"the run ended ({seconds:.1f} s) before the kill: use a larger --items or a smaller --kill-after")
    print(f"tasks completed: {len(out['acknowledged'])} ({len(out['acknowledged']) / seconds:.1f} per second); "
          f"requests answered: {len(latencies)}, p50 {percentile(latencies, 50) * 1000:.0f} ms, "
          f"p99 {percentile(latencies, 99) * 1000:.0f} ms")
    print(f"workers that moved to the other instance: {out['moved']}; logins: {out['logins']} "
          f"for {args.workers} workers (sessions shared: none logged in again)")
    print("first task's image from the bucket:", dict(out["images"]))
    print(f"rate limits shared: failed sign-ins alternating between the instances were refused (429) from "
          f"attempt {limited_at} on (limit: 10 a minute per user name)" if limited_at else
          "rate limits NOT shared: no sign-in attempt was refused")
    if out["errors"]:
        print("failed or retried requests:", dict(out["errors"]))
    print("integrity:", ", ".join(f"{key} {value}" for key, value in integrity.items()))
    server_errors = sum(n for key, n in out["errors"].items() if key.split()[-1] in ("500",))
    ok = (killed_at is not None and limited_at == 11 and intact(integrity) and server_errors == 0
          and out["logins"] == args.workers and set(out["images"]) == {200})
    print("integrity held with one instance killed" if ok else "FAILED")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())

"""A pairwise round with local workers, simulated workers over HTTP, and the integrity check.

``build_round`` and ``check_integrity`` run in the caller's process with Django set up against the
database the server uses; the simulated workers only speak HTTP.
"""
from __future__ import annotations

import random
import threading
import time
from collections import Counter
from dataclasses import dataclass, field

import httpx

PASSWORD = "load-bench-pass-12345"
# Answers a client waits out and then asks again: a server restarting, a database or cache coming back.
RETRIED_STATUSES = (502, 503, 504)


def build_round(*, items: int, overlap: int, workers: int, name: str = "Load"):
    """A pairwise round of ``items`` × ``overlap`` judgments named ``name``, open, and ``workers`` new
    local workers (``load0``, ``load1``, ...; 0 for none, to reuse those of an earlier round)."""
    from django.conf import settings
    from django.contrib.auth.hashers import make_password
    from django.contrib.auth.models import Group, User

    from annotation.services.rounds import add_items, create_round, open_round
    from datasets_app.instance_status import new_instance
    from datasets_app.models import Instance, InstructionFamily, ModelOutput, Source

    from projects.services import unassigned_project

    family = InstructionFamily.objects.create(project=unassigned_project(), name=f"{name} family", description="Load bench.",
                                              seed_instruction="Describe the scene.", seed_response="A scene.")
    instances = Instance.objects.bulk_create([
        new_instance(family=family, instruction=f"Describe scene {n}.", source=Source.RESEARCHER,
                     status=Instance.Status.AWAITING_VERIFICATION,
                     content_key=Instance.compute_content_key(family.name, f"Describe scene {n}.", []))
        for n in range(items)
    ])
    outputs = ModelOutput.objects.bulk_create([
        ModelOutput(instance=instance, model_name=model, text=f"{model} answers scene {instance.pk}.")
        for instance in instances for model in ("model-a", "model-b")
    ])
    pairs = [(outputs[2 * n], outputs[2 * n + 1]) for n in range(items)]
    round = create_round(name=f"{name} round", task_type="pairwise", workers_per_item=overlap,
                                  time_limit_seconds=600)
    add_items(round=round, targets=pairs)
    open_round(round=round)
    group, _ = Group.objects.get_or_create(name=settings.ANNOTATION_WORKER_GROUP)
    hashed = make_password(PASSWORD)
    users = User.objects.bulk_create([User(username=f"load{n}", password=hashed) for n in range(workers)])
    group.user_set.add(*users)
    return round, [user.username for user in users]


def check_integrity(*, round_id: int, acknowledged: list[int], overlap: int, items: int) -> dict:
    from django.db.models import Count

    from annotation.models import Assignment, WorkItem

    submitted = Assignment.objects.filter(round_id=round_id, status=Assignment.Status.SUBMITTED)
    stored = set(submitted.values_list("pk", flat=True))
    acked = Counter(acknowledged)
    per_item_worker = (submitted.values("item", "worker").annotate(n=Count("pk")).filter(n__gt=1).count())
    over_assigned = (Assignment.objects.holding_a_slot().filter(round_id=round_id).values("item")
                     .annotate(n=Count("pk")).filter(n__gt=overlap).count())
    return {
        "acknowledged": len(acked),
        "acknowledged twice": sum(1 for n in acked.values() if n > 1),
        "stored": len(stored),
        "lost (acknowledged, not stored)": len(set(acked) - stored),
        "stored, not acknowledged": len(stored - set(acked)),
        "stored twice (item, worker)": per_item_worker,
        "items over-assigned": over_assigned,
        "items complete": WorkItem.objects.filter(round_id=round_id, completed_at__isnull=False).count(),
        "items": items,
    }


def intact(integrity: dict) -> bool:
    """Every acknowledged submission stored once, nothing stored unacknowledged, every item complete."""
    return (integrity["lost (acknowledged, not stored)"] == 0 and integrity["stored twice (item, worker)"] == 0
            and integrity["items over-assigned"] == 0 and integrity["acknowledged twice"] == 0
            and integrity["stored, not acknowledged"] == 0 and integrity["items complete"] == integrity["items"])


def log_in(client: httpx.Client, username: str) -> None:
    client.get("/accounts/login/")
    response = client.post("/accounts/login/", data={
        "username": username, "password": PASSWORD, "csrfmiddlewaretoken": client.cookies["csrftoken"]})
    if response.status_code != 302:
        raise RuntimeError(f"login of {username} failed: {response.status_code}")


# --- a crowd that rides out faults ----------------------------------------------------------------


@dataclass
class CrowdReport:
    """What the simulated workers saw, shared by their threads."""

    acknowledged: list[int] = field(default_factory=list)
    # "next 503", "submit transport", ...: answers and failures that were waited out and retried.
    retried: Counter = field(default_factory=Counter)
    # Answers no retry can fix (a 500, a refused submission): each is a failure of the server.
    refused: Counter = field(default_factory=Counter)
    failures: list[str] = field(default_factory=list)
    lock: threading.Lock = field(default_factory=threading.Lock)

    def count_acknowledged(self) -> int:
        with self.lock:
            return len(self.acknowledged)


class GaveUp(RuntimeError):
    pass


def _send(client: httpx.Client, report: CrowdReport, what: str, deadline: float, method: str, url: str, **kwargs):
    """One request, sent again after a connection failure or a 502/503/504 until ``deadline``.

    Sending again is what a worker's browser does after a lost answer: the server must treat a repeat
    of "next" or of the same submission as the same request."""
    while True:
        try:
            response = client.request(method, url, **kwargs)
        except httpx.TransportError as error:
            key = f"{what} {type(error).__name__}"
        else:
            if response.status_code not in RETRIED_STATUSES:
                return response
            key = f"{what} {response.status_code}"
        with report.lock:
            report.retried[key] += 1
        if time.monotonic() > deadline:
            raise GaveUp(f"{what}: still failing at the deadline ({key})")
        time.sleep(0.1)


def _resilient_worker(base_url: str, username: str, round_id: int, report: CrowdReport, deadline: float) -> None:
    rng = random.Random(username)
    with httpx.Client(base_url=base_url, timeout=30, follow_redirects=False) as client:
        response = _send(client, report, "login page", deadline, "GET", "/accounts/login/")
        response = _send(client, report, "login", deadline, "POST", "/accounts/login/", data={
            "username": username, "password": PASSWORD, "csrfmiddlewaretoken": client.cookies.get("csrftoken", "")})
        if response.status_code != 302:
            with report.lock:
                report.refused[f"login {response.status_code}"] += 1
            raise GaveUp(f"login of {username} refused: {response.status_code}")
        while True:
            headers = {"X-CSRFToken": client.cookies["csrftoken"]}
            response = _send(client, report, "next", deadline, "POST", f"/api/work/rounds/{round_id}/next/",
                             headers=headers)
            if response.status_code != 200:
                with report.lock:
                    report.refused[f"next {response.status_code}"] += 1
                raise GaveUp(f"next task for {username}: {response.status_code} {response.text[:200]}")
            assignment = response.json()["assignment"]
            if assignment is None:
                return
            # The same answer on every attempt: a repeat must be recognised as the stored submission.
            answer = {"choice": rng.choice(["left", "right"])}
            response = _send(client, report, "submit", deadline, "POST", assignment["submit_url"], json=answer,
                             headers=headers)
            with report.lock:
                if response.status_code in (200, 201):
                    report.acknowledged.append(response.json()["assignment"])
                else:
                    report.refused[f"submit {response.status_code}"] += 1
                    raise GaveUp(f"submit of {assignment['id']}: {response.status_code} {response.text[:200]}")


class Crowd:
    """``usernames`` working a round in threads, each logging in, then "next → submit" until nothing is
    left, retrying through faults; ``start``, then ``join`` for the report."""

    def __init__(self, base_url: str, usernames: list[str], round_id: int, *, seconds: float = 240):
        self.report = CrowdReport()
        deadline = time.monotonic() + seconds
        self.threads = [threading.Thread(target=self._run, args=(base_url, name, round_id, deadline), daemon=True)
                        for name in usernames]

    def _run(self, base_url: str, username: str, round_id: int, deadline: float) -> None:
        try:
            _resilient_worker(base_url, username, round_id, self.report, deadline)
        except Exception as error:  # noqa: BLE001 - reported to the test, which fails on it
            with self.report.lock:
                self.report.failures.append(f"{username}: {type(error).__name__}: {error}")

    def start(self) -> Crowd:
        for thread in self.threads:
            thread.start()
        return self

    def wait_for_acknowledged(self, count: int, *, seconds: float = 180) -> None:
        deadline = time.monotonic() + seconds
        while self.report.count_acknowledged() < count:
            if not any(thread.is_alive() for thread in self.threads):
                raise AssertionError(f"the crowd stopped after {self.report.count_acknowledged()} submissions: "
                                     f"{self.report.failures[:3]}")
            if time.monotonic() > deadline:
                raise TimeoutError(f"fewer than {count} acknowledged submissions within {seconds:g} s")
            time.sleep(0.05)

    def join(self, *, seconds: float = 300) -> CrowdReport:
        deadline = time.monotonic() + seconds
        for thread in self.threads:
            thread.join(max(0.0, deadline - time.monotonic()))
        if any(thread.is_alive() for thread in self.threads):
            raise TimeoutError(f"simulated workers still running after {seconds:g} s")
        return self.report

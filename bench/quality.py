"""Benchmark: quality control and adaptive overlap on a simulated crowd, through the real engine.

A throw-away SQLite database gets pairwise rounds of 200 items with known answers (plus 50 gold
items among them, one in five, for the quality-control runs). A crowd of 40 local workers — 70 %
careful (right with probability 0.9) and 30 % random clickers — takes tasks in turns through
``annotation.services.engine.request_assignment`` / ``submit_assignment``, exactly as the worker pages do.

Four runs, same crowd and seed:

- fixed 5 workers per item, no quality control (the paper's set-up);
- fixed 5 with quality control: the round's policy stops a worker after 3 failed gold checks, and
  between passes the researcher's review (``providers.review.review_submissions``, the one review
  path) rejects the work of workers stopped by the policy, below 75 % gold accuracy or below 0.7
  Dawid–Skene reliability (``quality.services.recompute_round_quality``), and blocks them
  (``providers.services.block_worker``); rejected slots reopen for other workers;
- adaptive overlap 3 → 5 (``min_workers_per_item``), with and without the same quality control.

Reported: majority accuracy on the 200 real items (a tie or an item without votes counts as wrong),
judgments submitted (what is paid, rejected work included) and what adaptive overlap saved.
Targets: with quality control >= 0.97 (about 0.93 without); adaptive 3 -> 5 saves >= 25 % of the
submitted judgments at an accuracy within one point of fixed 5.

Run from the repository root: ``python bench/quality.py`` (``--seed N`` for another crowd).
"""
from __future__ import annotations

import argparse
import os
import random
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

ITEMS, GOLD_EVERY, WORKERS, CAREFUL_SHARE, CAREFUL_ACCURACY = 200, 4, 40, 0.7, 0.9
STOP_AFTER_FAILED_CHECKS, MIN_GOLD_ACCURACY, MIN_GOLD_ANSWERS = 3, 0.75, 4
MIN_RELIABILITY, MIN_JUDGMENTS_FOR_RELIABILITY = 0.7, 10
TARGET_QC_ACCURACY, TARGET_SAVED, TARGET_ACCURACY_GAP = 0.97, 0.25, 0.01


def setup_django() -> None:
    # One connection, one thread: an in-memory SQLite database that vanishes with the process.
    os.environ["DATABASE_URL"] = "sqlite://:memory:"
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "crowdbench.settings")
    import django

    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0)


def build_pairs(n: int):
    """``n`` (output, output) pairs of distinct instances, with one family and image."""
    from datasets_app.instance_status import new_instance
    from datasets_app.models import Image, Instance, InstanceImage, InstructionFamily, ModelOutput, Source

    from projects.services import unassigned_project

    project = unassigned_project()
    family = InstructionFamily.objects.create(project=project, name=f"Bench family {InstructionFamily.objects.count()}")
    image = Image.objects.create(project=project, url=f"https://images.example.org/bench-{family.pk}.png",
                                 license="CC0-1.0")
    start = Instance.objects.count()
    instances = Instance.objects.bulk_create(
        new_instance(family=family, instruction=f"What is shown in scene {start + k}?",
                     status=Instance.Status.VERIFIED, source=Source.RESEARCHER, content_key=f"bench-{start + k}")
        for k in range(n))
    InstanceImage.objects.bulk_create(InstanceImage(instance=i, image=image, position=0) for i in instances)
    outputs = ModelOutput.objects.bulk_create(
        ModelOutput(instance=i, model_name=name, text=f"{name} on {i.pk}")
        for i in instances for name in ("model-x", "model-y"))
    return [(outputs[2 * k], outputs[2 * k + 1]) for k in range(n)]


def crowd(rng: random.Random, tag: str):
    from django.contrib.auth import get_user_model

    from annotation.services.workers import get_or_create_local_worker

    careful = round(WORKERS * CAREFUL_SHARE)
    kinds = ["careful"] * careful + ["random"] * (WORKERS - careful)
    rng.shuffle(kinds)
    users = get_user_model()
    return [(get_or_create_local_worker(user=users.objects.create_user(f"{tag}-{n}")), kind)
            for n, kind in enumerate(kinds)]


def simulate(*, adaptive: bool, quality_control: bool, seed: int) -> dict:
    from annotation.eligibility import failed_checks
    from annotation.errors import NotQualified
    from annotation.models import Assignment
    from annotation.services.engine import request_assignment
    from annotation.services.rounds import add_items, create_round, open_round, overlap_savings
    from annotation.services.submissions import submit_assignment
    from providers.review import REJECT, review_submissions
    from providers.services import block_worker
    from quality.models import WorkerQuality
    from quality.services import recompute_round_quality

    rng = random.Random(seed)  # the order in which workers come, and the sides shown
    tag = f"{'adaptive' if adaptive else 'fixed'}-{'qc' if quality_control else 'plain'}"
    total = ITEMS + (ITEMS // (GOLD_EVERY) if quality_control else 0)
    truth = [rng.choice("ab") for _ in range(total)]
    gold = {p for p in range(total) if quality_control and p % (GOLD_EVERY + 1) == GOLD_EVERY}
    rules = ({"stop_after_failed_checks": STOP_AFTER_FAILED_CHECKS} if quality_control
             else {"stop_after_failed_checks": 0, "warn_after_failed_checks": 0})
    round = create_round(name=tag, task_type="pairwise", workers_per_item=5,
                                  min_workers_per_item=3 if adaptive else None, qualification_rules=rules)
    add_items(round=round, targets=build_pairs(total),
                       gold_answers={p: {"winner": truth[p]} for p in gold})
    open_round(round=round)
    workers = crowd(random.Random(seed), tag)  # the same crowd in every run
    active = list(workers)
    # Common random numbers: what each worker answers on each item is drawn once per seed, so the
    # runs differ only in who gets which item, not in how the workers answer.
    draws = random.Random(seed + 1)
    answers = [[draws.random() for _ in range(total)] for _ in workers]
    index = {worker.pk: n for n, (worker, _kind) in enumerate(workers)}

    def work_until_nothing_left():
        while True:
            handed_out = 0
            rng.shuffle(active)
            for worker, kind in list(active):
                try:
                    assignment = request_assignment(round=round, worker=worker, rng=rng)
                except NotQualified:  # stopped by the round's policy, or blocked
                    active.remove((worker, kind))
                    continue
                if assignment is None:
                    continue
                position = assignment.item.position
                right = truth[position]
                wrong = "b" if right == "a" else "a"
                draw = answers[index[worker.pk]][position]
                wanted = right if draw < (CAREFUL_ACCURACY if kind == "careful" else 0.5) else wrong
                choice = "left" if assignment.presentation["left"] == wanted else "right"
                submit_assignment(assignment_id=assignment.pk, worker=worker, data={"choice": choice})
                handed_out += 1
            if not handed_out:
                return

    work_until_nothing_left()
    while quality_control:
        recompute_round_quality(round=round)
        stopped = {w.pk for w, _kind in workers
                   if failed_checks(round=round, worker=w) >= STOP_AFTER_FAILED_CHECKS}
        scored = WorkerQuality.objects.filter(round=round)
        poor = set(scored.filter(gold_answers__gte=MIN_GOLD_ANSWERS, gold_accuracy__lt=MIN_GOLD_ACCURACY)
                   .values_list("worker", flat=True))
        poor |= set(scored.filter(judgments__gte=MIN_JUDGMENTS_FOR_RELIABILITY, reliability__lt=MIN_RELIABILITY)
                    .values_list("worker", flat=True))
        to_review = Assignment.objects.filter(
            round=round, worker__in=stopped | poor, status=Assignment.Status.SUBMITTED,
            review_status=Assignment.ReviewStatus.SUBMITTED)
        if not to_review.exists():
            break
        review_submissions(assignments=list(to_review.order_by("pk")), decision=REJECT,
                           feedback="Too many wrong answers to check questions.")
        for worker, _kind in workers:
            if worker.pk in stopped | poor and not worker.is_blocked:
                block_worker(worker=worker, reason="Too many wrong answers to check questions.")
        work_until_nothing_left()

    right = 0
    for item in round.items.filter(is_gold=False):
        votes = Counter(r["winner"] for r in Assignment.objects.counted().filter(item=item)
                        .values_list("result", flat=True))
        top = votes.most_common(2)
        if top and (len(top) == 1 or top[0][1] > top[1][1]) and top[0][0] == truth[item.position]:
            right += 1
    submitted = Assignment.objects.filter(round=round, status=Assignment.Status.SUBMITTED).count()
    counted = Assignment.objects.counted().filter(round=round).count()
    return {"run": tag, "accuracy": right / ITEMS, "submitted": submitted, "counted": counted,
            "rejected": submitted - counted, "open_items": round.items.filter(completed_at__isnull=True).count(),
            "saved": overlap_savings(round=round)["saved"]}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)
    setup_django()
    runs = {(adaptive, qc): simulate(adaptive=adaptive, quality_control=qc, seed=args.seed)
            for qc in (False, True) for adaptive in (False, True)}
    print(f"{ITEMS} pairwise items with known answers; {WORKERS} workers: {CAREFUL_SHARE:.0%} careful "
          f"(accuracy {CAREFUL_ACCURACY}), the rest random clickers; seed {args.seed}\n")
    print(f"{'run':<14} {'accuracy':>8} {'submitted':>9} {'counted':>7} {'rejected':>8} {'open items':>10} "
          f"{'saved by adaptive':>17}")
    for run in runs.values():
        print(f"{run['run']:<14} {run['accuracy']:>8.3f} {run['submitted']:>9} {run['counted']:>7} "
              f"{run['rejected']:>8} {run['open_items']:>10} {run['saved']:>17}")
    checks = []
    plain, qc = runs[(False, False)]["accuracy"], runs[(False, True)]["accuracy"]
    checks.append((f"quality control accuracy {qc:.3f} >= {TARGET_QC_ACCURACY} (without: {plain:.3f})",
                   qc >= TARGET_QC_ACCURACY))
    for qc_on in (False, True):
        fixed, adaptive = runs[(False, qc_on)], runs[(True, qc_on)]
        saved = 1 - adaptive["submitted"] / fixed["submitted"]
        gap = fixed["accuracy"] - adaptive["accuracy"]
        label = "with" if qc_on else "without"
        checks.append((f"adaptive 3->5 {label} quality control saves {saved:.1%} of the submitted judgments "
                       f"(target >= {TARGET_SAVED:.0%})", saved >= TARGET_SAVED))
        checks.append((f"adaptive accuracy {adaptive['accuracy']:.3f} within {TARGET_ACCURACY_GAP:.0%} of fixed 5 "
                       f"({fixed['accuracy']:.3f})", gap <= TARGET_ACCURACY_GAP))
    print()
    for text, ok in checks:
        print(f"{'PASS' if ok else 'FAIL'}  {text}")
    return 0 if all(ok for _text, ok in checks) else 1


if __name__ == "__main__":
    sys.exit(main())

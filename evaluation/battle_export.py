"""Export of battles in the VisIT-Bench leaderboard's JSON-lines format (DESIGN §3.3).

One JSON object per line and battle, with the fields of the leaderboard's battle files::

    A_model, B_model, A, B, image_url, instruction, instruction_category, engine,
    evaluated_with_reference, auto_evaluation_result, auto_evaluation_cot

- ``auto_evaluation_result``: the verdicts of the two queries, query 1 showing ``A_model`` as
  Response A and query 2 showing ``B_model`` as Response A; each is the name of the preferred
  model, or ``"tie"`` when the query named neither.
- ``auto_evaluation_cot``: the two answers of the judge, each as ``{"A_model_in_cot",
  "B_model_in_cot", "cot"}`` naming the model shown as Response A and Response B in that query.
- ``image_url``: the image's URL (our stored copy's absolute URL on ``SITE_BASE_URL`` for
  uploaded files); a list of URLs for a multi-image instance.

Human judgments (``source="human"``) use the same fields, one line per judgment: ``engine`` is
``"human"``, both entries of ``auto_evaluation_result`` are the model the worker chose (so the
leaderboard's two-query rule gives that winner) and the ``cot`` entries are null. The reference
side is named as stored (``reference`` for the judge, the pairwise task's reference name for
humans) and its text is the accepted reference.
"""
from __future__ import annotations

import json
import os
import tempfile
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings

from datasets_app.models import AcceptedReference, Instance, ModelOutput
from kernel.errors import ServiceError

from .judge.services import REFERENCE
from .models import JudgedBattle
from .selectors import collected_battles, imported_battles

EXPORT_SOURCES = ("judge", "human")
HUMAN_ENGINE = "human"
TIE = "tie"


class BattleExportError(ServiceError):
    """The battles cannot be exported; nothing was written."""


@dataclass
class BattleExportReport:
    path: str
    source: str
    battles: int = 0
    left_out: int = 0  # battles whose side text is gone (output or reference deleted)

    def summary(self) -> str:
        extra = f", {self.left_out} left out (a side's text is no longer stored)" if self.left_out else ""
        return f"wrote {self.battles} {self.source} battles to {self.path}{extra}"


class _Context:
    """Instances, outputs and references of the exported battles, loaded once."""

    def __init__(self, instance_ids: Iterable[int], base_url: str):
        ids = sorted(set(instance_ids))
        self.base_url = base_url.rstrip("/") + "/"
        self.instances = {instance.pk: instance for instance in Instance.objects.filter(pk__in=ids)
                          .select_related("family").prefetch_related("image_links__image")}
        self.outputs = {(instance_id, model): text for instance_id, model, text in
                        ModelOutput.objects.filter(instance_id__in=ids).values_list("instance_id", "model_name", "text")}
        self.references = dict(AcceptedReference.objects.filter(instance_id__in=ids).values_list("instance_id", "text"))

    def text(self, instance_id: int, model: str, reference_name: str) -> str | None:
        if model == reference_name:
            return self.references.get(instance_id)
        return self.outputs.get((instance_id, model))

    def image_url(self, instance: Instance) -> str | list[str]:
        urls = [link.image.url or self.base_url + link.image.file.url.lstrip("/")
                for link in instance.image_links.all()]
        return urls if instance.is_multi_image or len(urls) != 1 else urls[0]

    def line(self, *, instance_id: int, model_a: str, model_b: str, reference_name: str, engine: str,
             with_reference: bool, results: list[str], cots: list[str | None]) -> dict | None:
        instance = self.instances[instance_id]
        text_a, text_b = (self.text(instance_id, model, reference_name) for model in (model_a, model_b))
        if text_a is None or text_b is None:
            return None
        return {
            "A_model": model_a, "B_model": model_b, "A": text_a, "B": text_b,
            "image_url": self.image_url(instance), "instruction": instance.instruction,
            "instruction_category": instance.family.name, "engine": engine,
            "evaluated_with_reference": with_reference,
            "auto_evaluation_result": results,
            "auto_evaluation_cot": [
                {"A_model_in_cot": model_a, "B_model_in_cot": model_b, "cot": cots[0]},
                {"A_model_in_cot": model_b, "B_model_in_cot": model_a, "cot": cots[1]},
            ],
        }


def _named(verdict: str, model_a: str, model_b: str) -> str:
    return {"model_a": model_a, "model_b": model_b}.get(verdict, TIE)


def judge_lines(*, project=None, include_reference: bool = True, base_url: str) -> Iterator[dict | None]:
    queryset = JudgedBattle.objects.select_related("query_call_1", "query_call_2").order_by("pk")
    if project is not None:
        queryset = queryset.filter(instance__family__project=project)
    if not include_reference:
        queryset = queryset.exclude(model_b=REFERENCE).exclude(model_a=REFERENCE)
    battles = list(queryset)
    context = _Context((battle.instance_id for battle in battles), base_url)
    for battle in battles:
        cots = [call.response_text if call is not None else None
                for call in (battle.query_call_1, battle.query_call_2)]
        yield context.line(
            instance_id=battle.instance_id, model_a=battle.model_a, model_b=battle.model_b, reference_name=REFERENCE,
            engine=battle.judge_model, with_reference=battle.with_reference,
            results=[_named(verdict, battle.model_a, battle.model_b) for verdict in (battle.verdict_1, battle.verdict_2)],
            cots=cots,
        )


def human_lines(*, project=None, include_reference: bool = True, base_url: str) -> Iterator[dict | None]:
    columns = ["instance_id", "model_a", "model_b", "winner"]
    frames = [imported_battles(project=project, columns=columns),
              collected_battles(project=project, columns=columns)]
    rows = [row for frame in frames for row in frame.itertuples(index=False)]
    reference_name = settings.ANNOTATION_REFERENCE_SIDE_NAME
    if not include_reference:
        rows = [row for row in rows if reference_name not in (row.model_a, row.model_b)]
    context = _Context((row.instance_id for row in rows), base_url)
    for row in rows:
        chosen = _named(row.winner, row.model_a, row.model_b)
        yield context.line(instance_id=row.instance_id, model_a=row.model_a, model_b=row.model_b,
                           reference_name=reference_name, engine=HUMAN_ENGINE, with_reference=False,
                           results=[chosen, chosen], cots=[None, None])


def export_battles(*, source: str, out: str | Path, project=None, include_reference: bool = True,
                   site_base_url: str | None = None) -> BattleExportReport:
    """Write the battles of ``source`` ("judge" or "human") as leaderboard JSON lines to ``out``.

    The file appears whole or not at all (written beside ``out``, then renamed). With
    ``include_reference=False`` battles against the reference are left out, as the published
    leaderboard files do.
    """
    if source not in EXPORT_SOURCES:
        raise BattleExportError(f"unknown battle source {source!r}; choose one of {', '.join(EXPORT_SOURCES)}")
    out = Path(out)
    if not out.parent.is_dir():
        raise BattleExportError(f"the folder {out.parent} does not exist")
    base_url = site_base_url if site_base_url is not None else settings.SITE_BASE_URL
    lines = (judge_lines if source == "judge" else human_lines)(
        project=project, include_reference=include_reference, base_url=base_url)
    report = BattleExportReport(path=str(out), source=source)
    handle = tempfile.NamedTemporaryFile("w", encoding="utf-8", dir=out.parent, prefix=f".{out.name}.",
                                         suffix=".tmp", delete=False)
    try:
        with handle:
            for line in lines:
                if line is None:
                    report.left_out += 1
                    continue
                handle.write(json.dumps(line, ensure_ascii=False))
                handle.write("\n")
                report.battles += 1
        os.chmod(handle.name, 0o644)
        os.replace(handle.name, out)
    except BaseException:
        Path(handle.name).unlink(missing_ok=True)
        raise
    return report

"""Import of published human pairwise preferences (VisIT-Bench's ``visit_bench_human_preferences.csv``).

One row is one crowd judgment::

    image_url, instruction, A, B, A_model, B_model, model_selection.A, model_selection.B

``A``/``B`` are the two responses, ``A_model``/``B_model`` the models that wrote them, and
``model_selection.A``/``model_selection.B`` the booleans (``TRUE``/``FALSE``) saying which one the
worker chose; exactly one is true. Other columns (``instruction_category``, …) are read when
useful and otherwise ignored.

Each row is matched to an instance of the project by its instruction (whitespace-normalised)
and image URL, and each side to the stored output of that model on that instance (the
reference name given to the import stands for the instance's accepted reference); the response
text must be the stored one. The whole file is checked before anything is written: a problem
raises ``PreferenceFileError`` naming the file, the row and the column, and nothing changes.
The imported judgments are ``ImportedPreference`` rows (origin ``imported`` in the human
battles); they are never crowd work: no worker, assignment, payment or wage.
"""
from __future__ import annotations

import csv
from collections import Counter, defaultdict
from dataclasses import dataclass
from pathlib import Path

from django.conf import settings
from django.db import transaction

from datasets_app.file_errors import parse_csv_file
from datasets_app.image_urls import match_key
from datasets_app.model_outputs import instance_image_urls, normalise_instruction
from datasets_app.models import AcceptedReference, Instance, ModelOutput
from datasets_app.visitbench_csv import VisitBenchFormatError
from kernel.errors import ServiceError
from kernel.input_checks import is_blank, text_problem

from .models import ImportedPreference
from .stored_results import judgments_changed_on_commit

PREFERENCE_COLUMNS = ["image_url", "instruction", "A", "B", "A_model", "B_model",
                      "model_selection.A", "model_selection.B"]
TRUE_VALUES = {"true", "1"}
FALSE_VALUES = {"false", "0"}
MAX_MODEL_NAME_LENGTH = 200  # ImportedPreference.model_a / model_b


class PreferenceFileError(VisitBenchFormatError):
    """A pairwise-preference file that cannot be imported; names the file, row and column."""


class PreferenceImportError(ServiceError):
    """The import cannot run (e.g. no project); nothing was written."""


@dataclass(frozen=True)
class _Judgment:
    row: int
    instance_id: int
    model_a: str
    model_b: str
    winner: str


@dataclass
class PreferenceImportReport:
    path: str
    rows: int = 0
    created: int = 0
    already_present: int = 0
    instances: int = 0
    models: tuple[str, ...] = ()

    def summary(self) -> str:
        return (f"{self.path}: {self.rows} judgments on {self.instances} instances "
                f"({', '.join(self.models)}): {self.created} imported, {self.already_present} already present")


def _flag(path: str, row: int, column: str, value: str) -> bool:
    lowered = value.strip().lower()
    if lowered in TRUE_VALUES:
        return True
    if lowered in FALSE_VALUES:
        return False
    raise PreferenceFileError(path, f"expected TRUE or FALSE, got {value[:40]!r}", row=row, column=column)


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.split()) == " ".join(b.split())


class _Matcher:
    """Instances of the project by (instruction, image URL), and their outputs and references."""

    def __init__(self, project, reference_name: str):
        self.reference_name = reference_name
        instances = (Instance.objects.filter(family__project=project)
                     .select_related("family").prefetch_related("image_links__image"))
        self.index: dict[tuple[str, tuple[str, ...]], list[Instance]] = defaultdict(list)
        for instance in instances:
            key = (normalise_instruction(instance.instruction), tuple(map(match_key, instance_image_urls(instance))))
            self.index[key].append(instance)
        ids = [instance.pk for found in self.index.values() for instance in found]
        self.outputs = {(instance_id, model): text for instance_id, model, text in
                        ModelOutput.objects.filter(instance_id__in=ids).values_list("instance_id", "model_name", "text")}
        self.references = dict(AcceptedReference.objects.filter(instance_id__in=ids).values_list("instance_id", "text"))

    def instance(self, path: str, row: int, record: dict) -> Instance:
        key = (normalise_instruction(record["instruction"]), (match_key(record["image_url"]),))
        found = self.index.get(key, [])
        category = (record.get("instruction_category") or "").strip()
        if len(found) > 1 and category:
            found = [instance for instance in found if instance.family.name == category]
        if not found:
            raise PreferenceFileError(path, "no instance of the project has this instruction and image URL",
                                      row=row, column="instruction")
        if len(found) > 1:
            ids = ", ".join(f"#{instance.pk}" for instance in found)
            raise PreferenceFileError(path, f"several instances match ({ids})", row=row, column="instruction")
        return found[0]

    def check_side(self, path: str, row: int, instance: Instance, side: str, model: str, text: str) -> None:
        if model == self.reference_name:
            stored = self.references.get(instance.pk)
            what = "the accepted reference"
        else:
            stored = self.outputs.get((instance.pk, model))
            what = f"the stored output of {model!r}"
        if stored is None:
            missing = "no accepted reference" if model == self.reference_name else f"no output of model {model!r}"
            raise PreferenceFileError(path, f"instance #{instance.pk} has {missing}", row=row, column=f"{side}_model")
        if not _same_text(stored, text):
            raise PreferenceFileError(path, f"the response differs from {what} on instance #{instance.pk}",
                                      row=row, column=side)


def read_preferences(path: str, handle, matcher: _Matcher) -> list[_Judgment]:
    reader = csv.DictReader(handle)
    header = list(reader.fieldnames or [])
    if not header:
        raise PreferenceFileError(path, "the file is empty (no header row)")
    for column in PREFERENCE_COLUMNS:
        if column not in header:
            raise PreferenceFileError(path, "the header has no such column", column=column)
    judgments = []
    for number, record in enumerate(reader, start=1):
        if None in record:
            raise PreferenceFileError(path, "more fields than header columns", row=number)
        for column in PREFERENCE_COLUMNS:
            value = record.get(column)
            if value is None:
                raise PreferenceFileError(path, "missing value (row has fewer fields than the header)",
                                          row=number, column=column)
            problem = text_problem(value, multiline=column in ("A", "B", "instruction"))
            if problem:
                raise PreferenceFileError(path, problem, row=number, column=column)
            if column not in ("A", "B") and is_blank(value):
                raise PreferenceFileError(path, "empty value", row=number, column=column)
        model_a, model_b = record["A_model"].strip(), record["B_model"].strip()
        for column, model in (("A_model", model_a), ("B_model", model_b)):
            if len(model) > MAX_MODEL_NAME_LENGTH:
                raise PreferenceFileError(path, f"model name longer than {MAX_MODEL_NAME_LENGTH} characters",
                                          row=number, column=column)
        if model_a == model_b:
            raise PreferenceFileError(path, f"both sides are model {model_a!r}", row=number, column="B_model")
        chose_a = _flag(path, number, "model_selection.A", record["model_selection.A"])
        chose_b = _flag(path, number, "model_selection.B", record["model_selection.B"])
        if chose_a == chose_b:
            raise PreferenceFileError(path, "exactly one of model_selection.A and model_selection.B must be TRUE",
                                      row=number, column="model_selection.A")
        instance = matcher.instance(path, number, record)
        matcher.check_side(path, number, instance, "A", model_a, record["A"])
        matcher.check_side(path, number, instance, "B", model_b, record["B"])
        judgments.append(_Judgment(number, instance.pk, model_a, model_b, "model_a" if chose_a else "model_b"))
    if not judgments:
        raise PreferenceFileError(path, "the file has a header but no data rows")
    return judgments


def import_pairwise_preferences(*, path: str | Path, project, reference_name: str | None = None
                                ) -> PreferenceImportReport:
    """Import the judgments of a published pairwise-preference CSV into ``project``, atomically and
    idempotently (see the module docstring). ``reference_name`` (default: the name the pairwise
    task gives the reference side, ``ANNOTATION_REFERENCE_SIDE_NAME``) is the model name that
    stands for the accepted reference."""
    if project is None:
        raise PreferenceImportError("the preferences are imported into a project: name one")
    path = str(path)
    reference_name = reference_name or settings.ANNOTATION_REFERENCE_SIDE_NAME
    matcher = _Matcher(project, reference_name)
    judgments = parse_csv_file(path, lambda name, handle: read_preferences(name, handle, matcher),
                               PreferenceFileError)
    report = PreferenceImportReport(path=path, rows=len(judgments),
                                    instances=len({j.instance_id for j in judgments}),
                                    models=tuple(sorted({m for j in judgments for m in (j.model_a, j.model_b)})))
    seen: Counter = Counter()
    rows = []
    for judgment in judgments:
        key = (judgment.instance_id, judgment.model_a, judgment.model_b, judgment.winner)
        seen[key] += 1
        rows.append(ImportedPreference(instance_id=judgment.instance_id, model_a=judgment.model_a,
                                       model_b=judgment.model_b, winner=judgment.winner, occurrence=seen[key],
                                       source_file=Path(path).name[:300], source_row=judgment.row))
    with transaction.atomic():
        present = set(ImportedPreference.objects.filter(instance_id__in={j.instance_id for j in judgments})
                      .values_list("instance_id", "model_a", "model_b", "winner", "occurrence"))
        new = [row for row in rows
               if (row.instance_id, row.model_a, row.model_b, row.winner, row.occurrence) not in present]
        ImportedPreference.objects.bulk_create(new, ignore_conflicts=True)  # a concurrent import of the same file
        if new:
            judgments_changed_on_commit(project_id=project.pk)
    report.created, report.already_present = len(new), len(rows) - len(new)
    return report

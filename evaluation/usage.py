"""What the evaluation tells the data layer about its rows: a model output is used once a judged
battle or an imported preference compared it (they name it by its instance and model name, not by
a foreign key). Registered in ``EvaluationConfig.ready`` (``datasets_app.curation.register_use_check``)."""
from __future__ import annotations

from django.db.models import Q

from datasets_app.models import ModelOutput

from .models import ImportedPreference, JudgedBattle


def output_compared(row) -> list[str]:
    if not isinstance(row, ModelOutput):
        return []
    names = Q(model_a=row.model_name) | Q(model_b=row.model_name)
    reasons = []
    for model in (JudgedBattle, ImportedPreference):
        count = model.objects.filter(names, instance=row.instance_id).count()
        if count:
            name = model._meta.verbose_name if count == 1 else model._meta.verbose_name_plural
            reasons.append(f"{count} {name} compared it")
    return reasons

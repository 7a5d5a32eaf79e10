"""What the work layer tells the evaluation above it when judgments change.

A submitted or rejected judgment of a round whose task type yields rows for the evaluation (battles,
rankings) changes the results computed from them. A signal, so that the crowd work does not import
the evaluation; ``EvaluationConfig.ready`` connects it.
"""
from __future__ import annotations

from django.db import transaction
from django.dispatch import Signal

# Judgments of a project changed (``project_id``; ``yields``: what their task type yields); sent after the commit.
judgments_changed = Signal()


def announce(*, round, handler) -> None:
    """Send ``judgments_changed`` for the round's project once the transaction commits, when its task
    type yields judgments the evaluation reads."""
    if handler.yields is None or round.project_id is None:
        return
    project_id, yields = round.project_id, handler.yields
    transaction.on_commit(lambda: judgments_changed.send(sender=None, project_id=project_id, yields=yields),
                          robust=True)

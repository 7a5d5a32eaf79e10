"""Text metrics by the name the command line and reports use: the one place that lists them.
Each class is registered under its ``name``; the order here is the order of reports."""
from __future__ import annotations

from kernel.registry import Registry

from .base import Metric
from .bertscore import BertScore
from .bleu import Bleu4
from .cider import Cider
from .length import Length
from .meteor import Meteor
from .random_baseline import RandomBaseline
from .rouge_l import RougeL

METRICS: Registry[type[Metric]] = Registry("metric")
METRICS.register(Bleu4)
METRICS.register(RougeL)
METRICS.register(Meteor)
METRICS.register(Cider)
METRICS.register(BertScore)
METRICS.register(Length)
METRICS.register(RandomBaseline)


def make_metric(name: str, *, seed: int = 0, **options) -> Metric:
    """A metric by name; ``options`` are the metric's settings (e.g. ``bertscore_model``)."""
    return METRICS.get(name)(seed=seed, **options)

"""Text metrics by the name the command line and reports use: the one place that lists them."""
from __future__ import annotations

from .base import Metric
from .bertscore import BertScore
from .bleu import Bleu4
from .cider import Cider
from .length import Length
from .meteor import Meteor
from .random_baseline import RandomBaseline
from .rouge_l import RougeL

METRICS: dict[str, type[Metric]] = {
    metric.name: metric for metric in (Bleu4, RougeL, Meteor, Cider, BertScore, Length, RandomBaseline)
}


def make_metric(name: str, *, seed: int = 0, **options) -> Metric:
    """A metric by name; ``options`` are the metric's settings (e.g. ``bertscore_model``)."""
    try:
        metric_class = METRICS[name]
    except KeyError:
        raise ValueError(f"unknown metric {name!r}; choose from {', '.join(METRICS)}") from None
    return metric_class(seed=seed, **options)

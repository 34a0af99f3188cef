"""medaudit.stats.metric_ids: ids as the tables print them, the names people write instead,
and the direction, range and prevalence dependence of every metric."""

from __future__ import annotations

import math

import pytest

from medaudit.exceptions import MedauditError
from medaudit.stats._metricspec import REGISTRY
from medaudit.stats.metric_ids import (
    ALIASES,
    depends_on_prevalence,
    higher_is_better,
    metric_range,
    metric_spec,
    parse_metric_id,
)


@pytest.mark.parametrize("text, name, options", [
    ("roc_auc", "roc_auc", {}),
    ("ece[n_bins=10]", "ece", {"n_bins": 10}),
    ("brier_score[prevalence=0.1]", "brier_score", {"prevalence": 0.1}),
    (" sensitivity [ threshold = 0.42 ] ", "sensitivity", {"threshold": 0.42}),
])
def test_ids_read_back_to_their_spec(text, name, options):
    spec = parse_metric_id(text)
    assert (spec.name, spec.options) == (name, options)
    assert parse_metric_id(spec.id).id == spec.id  # the id round-trips


@pytest.mark.parametrize("bad, match", [
    ("roc_auk", "roc_auc"), ("ece[n_bins]", "key=value"), ("ece[bins=10]", "option"),
    ("12abc", "not a metric id"), (3, "text")])
def test_bad_ids(bad, match):
    with pytest.raises(MedauditError, match=match):
        parse_metric_id(bad)


@pytest.mark.parametrize("alias", sorted(ALIASES))
def test_every_alias_points_at_a_metric_and_is_never_read_as_one(alias):
    assert ALIASES[alias] in REGISTRY
    for written in (alias, alias.upper()):
        with pytest.raises(MedauditError, match=f"is written '{ALIASES[alias]}'"):
            metric_spec(written)


def test_an_id_in_other_case_points_at_the_id():
    with pytest.raises(MedauditError, match="is written 'ece'"):
        metric_spec("ECE")


def test_direction_range_and_prevalence():
    assert higher_is_better("roc_auc") and not higher_is_better("brier_score[prevalence=0.1]")
    assert higher_is_better("cutpoint_threshold") is None
    assert depends_on_prevalence("ece") and not depends_on_prevalence("roc_auc")
    assert metric_range("sensitivity[threshold=0.3]") == (0.0, 1.0)
    assert metric_range("log_loss") == (0.0, math.inf)
    # every metric has a direction or none, and a range
    for name in REGISTRY:
        lo, hi = metric_range(name)
        assert lo < hi and higher_is_better(name) in (True, False, None)

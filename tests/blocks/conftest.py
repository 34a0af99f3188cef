"""Shared fixtures for block tests: a small simulated paper-000 study and its context."""

from __future__ import annotations

from pathlib import Path

import pandas as pd
import pytest

from medaudit.audit.spec import ModelCard, check_spec_against_table, load_spec
from medaudit.io.schema import validate_score_table
from medaudit.simulate import simulate_paper000
from tests._support import SpecContext, context

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "paper000_simulated.yaml"


def small_context(scale: float = 0.05, **overrides) -> SpecContext:
    """The embedded default spec on a small simulation with few resamples (fast)."""
    spec, _ = load_spec(EXAMPLE)
    sim = simulate_paper000(rng=spec.seed, scale=scale)
    spec = spec.model_copy(update={"n_resamples": 200, "n_permutations": 199,
                                   "models": [ModelCard(**c) for c in sim["models"]], **overrides})
    table = validate_score_table(pd.DataFrame(sim["table"]))
    check_spec_against_table(spec, table, source="test")
    return context(scores=table, spec=spec)


@pytest.fixture(scope="session")
def ctx() -> SpecContext:
    return small_context()

"""What every audit block shares: the context it reads, the result it returns, seeds, E columns.

A block is a function ``run(ctx: AuditContext) -> BlockResult``: tidy tables in,
tidy tables out, no file I/O, no printing.  Every result row carries the
evaluation specification E = (m, p, C, N, pi, tau, r) in the columns
``model, prompt, cohort, negatives, prevalence, threshold, criterion`` plus
``design, n_resamples, seed, family`` (see :data:`E_COLUMNS`, :data:`PROVENANCE_COLUMNS`).
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pandas as pd

from medaudit.exceptions import SchemaError
from medaudit.io.spec import AuditSpec

__all__ = ["AuditContext", "BlockResult", "E_COLUMNS", "PROVENANCE_COLUMNS", "spec_row", "cell_rng",
           "verdict"]

E_COLUMNS = ("model", "prompt", "cohort", "negatives", "prevalence", "threshold", "criterion")
PROVENANCE_COLUMNS = ("design", "n_resamples", "seed", "family")


def cell_rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one analysis cell, from the run seed and the cell's key.

    ``SeedSequence([seed, h1, h2, ...])`` with ``h`` the first 4 bytes of SHA-256 of each
    key part: a cell's draws do not depend on which other cells run, in which order, or
    on which backend.
    """
    words = [int(seed)] + [int.from_bytes(hashlib.sha256(str(k).encode()).digest()[:4], "little")
                           for k in key]
    return np.random.default_rng(np.random.SeedSequence(words))


def verdict(ci_low: float, ci_high: float, direction: int) -> str:
    """``a_better`` / ``b_better`` when the interval of A - B excludes 0, else ``unresolved``.

    ``direction`` is +1 when a higher metric is better (AUROC), -1 when lower is
    better (Brier).  A NaN endpoint (undefined stratum) gives ``not defined``.
    """
    if not (np.isfinite(ci_low) and np.isfinite(ci_high)):
        return "not defined"
    if ci_low > 0:
        return "a_better" if direction > 0 else "b_better"
    if ci_high < 0:
        return "b_better" if direction > 0 else "a_better"
    return "unresolved"


def spec_row(*, model: str, prompt: str, cohort: str, negatives: str = "all",
             prevalence: Any = "observed", threshold: Any = None, criterion: str,
             design: str | None = None, n_resamples: int | None = None, seed: int | None = None,
             family: str | None = None, **values: Any) -> dict[str, Any]:
    """One tidy result row: E, then provenance, then the values."""
    return {"model": model, "prompt": prompt, "cohort": cohort, "negatives": negatives,
            "prevalence": prevalence, "threshold": threshold, "criterion": criterion,
            "design": design, "n_resamples": n_resamples, "seed": seed, "family": family,
            **values}


@dataclass(frozen=True)
class BlockResult:
    """Named tidy tables produced by one block, with notes for the report."""

    name: str
    tables: dict[str, pd.DataFrame]
    notes: tuple[str, ...] = ()


@dataclass(frozen=True)
class Wide:
    """Scores of several score vectors on the same images of one cohort, aligned."""

    cohort: str
    image_id: np.ndarray
    label: np.ndarray  # float 0/1
    negative_group: np.ndarray  # '' for positives
    scores: dict[str, np.ndarray]  # key -> scores aligned with image_id
    #: soft labels in [0, 1] aligned with image_id, when the table has ``label_soft``
    label_soft: np.ndarray | None = None


@dataclass(frozen=True)
class AuditContext:
    """A validated score table with its spec; hands out aligned arrays and seeded generators."""

    scores: pd.DataFrame
    spec: AuditSpec
    #: the table before seed ensembling (rows per seed), when the input had a ``seed`` column
    seed_scores: pd.DataFrame | None = None
    #: validated raw annotations (item_id, annotator, rating), when the spec has ``annotations:``
    annotations: pd.DataFrame | None = None
    #: validated judgment table (paper 002), when the spec has ``judgments:``
    judgments: pd.DataFrame | None = None
    #: the judgment table under each uncertain-label policy (M2.12 sensitivity), when asked
    judgment_variants: dict[str, pd.DataFrame] | None = None
    #: runs independent analysis cells (``backend.map(fn, items)``); None = in order, in process
    backend: Any = field(default=None, repr=False, compare=False)
    #: called by blocks at each step (e.g. one cohort's bootstrap); drives progress bars
    progress: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    @property
    def seed(self) -> int:
        return self.spec.seed

    def rng(self, *key: Any) -> np.random.Generator:
        """A generator for one analysis cell (see :func:`cell_rng`)."""
        return cell_rng(self.seed, *key)

    def map(self, fn: Any, items: Sequence[Any]) -> list[Any]:
        """Apply ``fn`` to independent cells, locally or on the configured backend.

        Results come back in the order of ``items`` whatever the backend; each cell draws
        from its own :meth:`rng`, so the outcome does not depend on where cells ran.
        """
        items = list(items)
        if self.backend is None:
            return [fn(x) for x in items]
        return list(self.backend.map(fn, items))

    def tick(self, step: str) -> None:
        """Report progress of a long step (no-op unless a progress callback is set)."""
        if self.progress is not None:
            self.progress(step)

    def models(self) -> list[str]:
        return sorted(self.scores["model"].unique())

    def prompts(self) -> list[str]:
        fam = self.spec.prompts.families
        if fam:
            return list(fam)
        rest = sorted(set(self.scores["prompt"].unique()) - {self.spec.primary_prompt})
        return [self.spec.primary_prompt, *rest]

    def exposure(self, model: str, cohort: str) -> str:
        return self.spec.card(model).exposure.get(cohort, "")

    def wide(self, cohort: str, keys: Sequence[tuple[str, str]] | None = None) -> Wide:
        """Aligned scores for (model, prompt) keys on one cohort (default: all models, primary prompt).

        Raises :class:`SchemaError` listing the images that some key lacks: paired
        analyses refuse mismatched image sets.
        """
        if keys is None:
            keys = [(m, self.spec.primary_prompt) for m in self.models()]
        ck = (cohort, tuple(keys))
        if ck in self._cache:
            return self._cache[ck]
        sub = self.scores[self.scores["cohort"] == cohort]
        frames = {}
        for m, p in keys:
            g = sub[(sub["model"] == m) & (sub["prompt"] == p)]
            if g.empty:
                raise SchemaError(f"cohort {cohort!r} has no scores for model {m!r}, prompt {p!r}.")
            frames[(m, p)] = g.set_index("image_id")["score"]
        ids = sorted(set().union(*[set(f.index) for f in frames.values()]))
        problems = []
        for k, f in frames.items():
            missing = sorted(set(ids) - set(f.index))
            if missing:
                problems.append(f"  - model {k[0]!r}, prompt {k[1]!r} lacks {len(missing)} image(s): "
                                f"{missing[:5]}{' ...' if len(missing) > 5 else ''}")
        if problems:
            raise SchemaError(f"paired analysis on cohort {cohort!r} needs identical image sets; "
                              "mismatches:\n" + "\n".join(problems))
        meta = sub.drop_duplicates("image_id").set_index("image_id").loc[ids]
        grp = (meta["negative_group"].to_numpy(dtype=object) if "negative_group" in meta.columns
               else np.full(len(ids), "", dtype=object))
        w = Wide(cohort=cohort, image_id=np.asarray(ids, dtype=object),
                 label=meta["label"].to_numpy(dtype=np.float64), negative_group=grp,
                 scores={f"{m}|{p}": frames[(m, p)].loc[ids].to_numpy(dtype=np.float64)
                         for m, p in keys},
                 label_soft=(meta["label_soft"].to_numpy(dtype=np.float64)
                             if "label_soft" in meta.columns else None))
        self._cache[ck] = w
        return w

    def cohort_design(self, cohort: str) -> str:
        return self.spec.cohorts[cohort].design

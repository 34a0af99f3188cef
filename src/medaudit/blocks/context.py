"""What a block reads: the study, the resampling settings and the tables — never the whole spec.

A block's :meth:`~medaudit.blocks.block.Block.run` receives an :class:`AuditContext`
and its own config.  The context carries

* a :class:`Study`: the cohorts with their roles and marginal designs, the primary
  prompt, the model cards (exposure notes) and the score scale;
* a :class:`Resampling`: the run seed, B, the interval level and the permutation count
  (a block with its own B, such as ``error_structure``, keeps it in its config);
* the validated tables: scores (seed-ensembled), per-seed scores, raw annotations with
  the rules that aggregated them, the judgment table and its uncertain-label variants;
* where independent cells run (``backend``), so the same block runs in process or on Ray.

It hands out aligned score arrays (:meth:`AuditContext.wide`) and seeded generators
(:func:`cell_rng`): a cell's draws depend on the run seed and the cell's key only, not on
which other cells ran, in which order, or where.
"""

from __future__ import annotations

import dataclasses
import hashlib
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from medaudit import progress
from medaudit.exceptions import SchemaError
from medaudit.io.modelcard import ModelCard
from medaudit.io.specfile import Strict

__all__ = ["AuditContext", "CohortSpec", "Resampling", "Study", "Wide", "cell_rng"]


def cell_rng(seed: int, *key: Any) -> np.random.Generator:
    """A generator for one analysis cell, from the run seed and the cell's key.

    ``SeedSequence([seed, h1, h2, ...])`` with ``h`` the first 4 bytes of SHA-256 of each
    key part: a cell's draws do not depend on which other cells run, in which order, or
    on which backend.
    """
    words = [int(seed)] + [int.from_bytes(hashlib.sha256(str(k).encode()).digest()[:4], "little")
                           for k in key]
    return np.random.default_rng(np.random.SeedSequence(words))


class CohortSpec(Strict):
    """A cohort's role in the audit and the design of its marginal intervals."""

    role: Literal["primary", "source", "extension", "descriptive"] = "primary"
    #: bootstrap design for this cohort's marginal intervals (paper 000: VinDr within-label)
    design: Literal["ordinary", "within_label"] = "ordinary"
    #: what moving a claim to this cohort changes, in the portability matrix's words
    #: (ENHANCE's border and colour are tasks; paper 002's sites are institutions)
    kind: Literal["cohort", "institution", "task", "finding"] = "cohort"


@dataclass(frozen=True, slots=True)
class Resampling:
    """The run's resampling settings: seed, B, interval level and permutation count."""

    seed: int
    n_resamples: int = 2000
    confidence_level: float = 0.95
    n_permutations: int = 10_000

    def rng(self, *key: Any) -> np.random.Generator:
        """The generator of the cell ``key`` (see :func:`cell_rng`)."""
        return cell_rng(self.seed, *key)

    def with_resamples(self, n_resamples: int) -> Resampling:
        """The same settings with a block's own B."""
        return dataclasses.replace(self, n_resamples=int(n_resamples))


@dataclass(frozen=True)
class Study:
    """What the audit is about, as declared: cohorts, prompts, model cards, score scale."""

    #: cohort name -> role and design, in the declared order
    cohorts: Mapping[str, CohortSpec] = field(default_factory=dict)
    primary_prompt: str = "none"
    cards: tuple[ModelCard, ...] = ()
    score_scale: Literal["probabilities", "logits"] = "probabilities"
    #: level of the generated "AUROC >= L" reliability claims (None: none)
    auroc_at_least: float | None = 0.90
    #: the declared subgroup columns of the score table (``subgroups:``), in declared order
    subgroups: tuple[str, ...] = ()

    @property
    def probabilities(self) -> bool:
        """Whether scores are probabilities (calibration metrics need them)."""
        return self.score_scale == "probabilities"

    def card(self, model: str) -> ModelCard:
        """The model card for ``model`` (an empty one when the spec gives none)."""
        for c in self.cards:
            if c.name == model:
                return c
        return ModelCard(name=model)

    def cohorts_with_role(self, *roles: str) -> list[str]:
        """Declared cohorts whose role is one of ``roles``, in declared order."""
        return [k for k, v in self.cohorts.items() if v.role in roles]

    def exposure(self, model: str, cohort: str) -> str:
        """The documented exposure of ``model`` to ``cohort`` ('' when none)."""
        return self.card(model).exposure.get(cohort, "")


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

    def vectors(self, models: Sequence[str], prompt: str) -> dict[str, np.ndarray]:
        """The score vectors of ``models`` at ``prompt``, keyed by model."""
        return {m: self.scores[f"{m}|{prompt}"] for m in models}


@dataclass(frozen=True)
class AuditContext:
    """The validated tables of one audit with its study and resampling settings."""

    scores: pd.DataFrame
    study: Study = field(default_factory=Study)
    resampling: Resampling = field(default_factory=lambda: Resampling(seed=2026))
    #: the table before seed ensembling (rows per seed), when the input had a ``seed`` column
    seed_scores: pd.DataFrame | None = None
    #: validated raw annotations (item_id, annotator, rating), when the spec has ``annotations:``
    annotations: pd.DataFrame | None = None
    #: how the annotations were read and aggregated (``medaudit.labels.spec.AnnotationsSpec``)
    annotation_rules: Any = None
    #: validated judgment table (paper 002), when the spec has ``judgments:``
    judgments: pd.DataFrame | None = None
    #: the judgment table under each uncertain-label policy (M2.12 sensitivity), when asked
    judgment_variants: dict[str, pd.DataFrame] | None = None
    #: runs independent analysis cells (``backend.map(fn, items)``); None = in order, in process
    backend: Any = field(default=None, repr=False, compare=False)
    _cache: dict = field(default_factory=dict, repr=False, compare=False)

    # -- the study, for short ---------------------------------------------------------
    @property
    def seed(self) -> int:
        return self.resampling.seed

    @property
    def cohorts(self) -> list[str]:
        """Declared cohorts, in declared order."""
        return list(self.study.cohorts)

    @property
    def primary_prompt(self) -> str:
        return self.study.primary_prompt

    @property
    def probabilities(self) -> bool:
        return self.study.probabilities

    def exposure(self, model: str, cohort: str) -> str:
        return self.study.exposure(model, cohort)

    def cohort_design(self, cohort: str) -> str:
        return self.study.cohorts[cohort].design

    # -- cells ------------------------------------------------------------------------
    def rng(self, *key: Any) -> np.random.Generator:
        """A generator for one analysis cell (see :func:`cell_rng`)."""
        return cell_rng(self.seed, *key)

    def map(self, fn: Callable[[Any], Any], items: Sequence[Any]) -> list[Any]:
        """Apply ``fn`` to independent cells, locally or on the configured backend.

        Results come back in the order of ``items`` whatever the backend; each cell draws
        from its own generator, so the outcome does not depend on where cells ran.
        """
        items = list(items)
        if self.backend is None:
            return [fn(x) for x in items]
        return list(self.backend.map(fn, items))

    def parallelism(self, work: float) -> int:
        """How many cells of a map with this much estimated work run at once (1: in order,
        in process); cell runners cut large cells into replicate ranges when it is more."""
        fn = getattr(self.backend, "parallelism", None)
        return 1 if fn is None else max(1, int(fn(work)))

    def tick(self, step: str) -> None:
        """Report progress of a long step (to the listener of :mod:`medaudit.progress`)."""
        progress.step(step)

    # -- tables -----------------------------------------------------------------------
    def models(self) -> list[str]:
        return sorted(self.scores["model"].unique())

    def prompts(self, families: Sequence[str] | None = None) -> list[str]:
        """The declared prompt ``families``, or every prompt of the table, primary first."""
        if families:
            return list(families)
        rest = sorted(set(self.scores["prompt"].unique()) - {self.primary_prompt})
        return [self.primary_prompt, *rest]

    def wide(self, cohort: str, keys: Sequence[tuple[str, str]] | None = None) -> Wide:
        """Aligned scores for (model, prompt) keys on one cohort (default: all models, primary prompt).

        Raises :class:`SchemaError` listing the images that some key lacks: paired
        analyses refuse mismatched image sets.
        """
        if keys is None:
            keys = [(m, self.primary_prompt) for m in self.models()]
        ck = (cohort, tuple(keys))
        if ck in self._cache:
            return self._cache[ck]
        rows = self._cohort_rows(cohort)
        ids_of, scores_of = {}, {}
        for m, p in keys:
            at = rows.groups.get((m, p))
            if at is None:
                raise SchemaError(f"cohort {cohort!r} has no scores for model {m!r}, prompt {p!r}.")
            ids_of[(m, p)], scores_of[(m, p)] = rows.image_id[at], rows.score[at]
        # the image ids in sorted order (numpy sorts text with Python's comparison, the order
        # sorted() gives); a (model, prompt) has each image once (the score table's key)
        ids = np.unique(np.concatenate(list(ids_of.values())))
        problems = []
        for k, got in ids_of.items():
            if got.size != ids.size:
                missing = sorted(set(ids.tolist()) - set(got.tolist()))
                problems.append(f"  - model {k[0]!r}, prompt {k[1]!r} lacks {len(missing)} image(s): "
                                f"{missing[:5]}{' ...' if len(missing) > 5 else ''}")
        if problems:
            raise SchemaError(f"paired analysis on cohort {cohort!r} needs identical image sets "
                              "(every model scores every image of the cohort): score the missing "
                              "images, or leave the images some model lacks out of the score "
                              "table; mismatches:\n" + "\n".join(problems))
        meta = rows.first[np.searchsorted(rows.uniq, ids)]  # each image's first row
        w = Wide(cohort=cohort, image_id=ids.astype(object),
                 label=rows.label[meta], negative_group=rows.negative_group[meta],
                 scores={f"{m}|{p}": scores_of[(m, p)][np.argsort(ids_of[(m, p)], kind="stable")]
                         for m, p in keys},
                 label_soft=None if rows.label_soft is None else rows.label_soft[meta])
        self._cache[ck] = w
        return w

    def _cohort_rows(self, cohort: str) -> _CohortRows:
        """One cohort's rows as arrays, grouped by (model, prompt) once (cached)."""
        key = ("rows", cohort)
        if key not in self._cache:
            sub = self.scores[self.scores["cohort"] == cohort]
            image_id = sub["image_id"].to_numpy(dtype=object)
            uniq, first = np.unique(image_id, return_index=True)
            self._cache[key] = _CohortRows(
                image_id=image_id, score=sub["score"].to_numpy(dtype=np.float64),
                groups={(str(m), str(p)): np.asarray(v) for (m, p), v in
                        sub.groupby(["model", "prompt"], sort=False, observed=True).indices.items()},
                uniq=uniq, first=first, label=sub["label"].to_numpy(dtype=np.float64),
                negative_group=(sub["negative_group"].to_numpy(dtype=object)
                                if "negative_group" in sub.columns
                                else np.full(len(sub), "", dtype=object)),
                label_soft=(sub["label_soft"].to_numpy(dtype=np.float64)
                            if "label_soft" in sub.columns else None))
        return self._cache[key]


@dataclass(frozen=True)
class _CohortRows:
    """A cohort's score rows as arrays (row order of the table) for :meth:`AuditContext.wide`."""

    image_id: np.ndarray
    score: np.ndarray
    #: (model, prompt) -> the positions of its rows
    groups: dict
    #: the sorted distinct image ids and the position of each one's first row
    uniq: np.ndarray
    first: np.ndarray
    label: np.ndarray
    negative_group: np.ndarray
    label_soft: np.ndarray | None

"""Raw annotations to soft and hard labels (paper 001, M1.1).

* :class:`AnnotationTable` / :func:`validate_annotations` / :func:`read_annotations` —
  the long table ``item_id, annotator, rating`` (+ ``cohort``) checked against a declared
  :class:`RatingScale`; the crowd-tool layout ``task, worker, label`` is read too.
* :func:`aggregate_labels` — per item: soft label (normalised mean, or Dawid–Skene / GLAD
  through crowd-kit, imported lazily) and hard label (majority with a tie rule, or a
  threshold on the original scale), with a declared policy for hedged ratings; every
  dropped item is counted and listed.
* :func:`load_annotations` / :func:`attach_labels` — the spec-driven path used by
  ``medaudit audit`` (``annotations:`` section, :class:`~medaudit.labels.spec.AnnotationsSpec`).

* :func:`label_stability` — the annotation bootstrap of the labels themselves (no model
  scores; LIDC): per-item soft-label intervals and how often the hard label flips.
* readers of ENHANCE, the NIH expert readers and LIDC live in :mod:`medaudit.datasets`.

The annotation bootstrap itself (resampling annotators, M1.7) is pure numpy and lives in
:mod:`medaudit.stats.annotation_bootstrap`.
"""

from __future__ import annotations

from medaudit.labels.aggregate import AggregatedLabels, aggregate_labels, aggregate_with_spec
from medaudit.labels.annotations import (
    ANNOTATION_COLUMNS,
    AnnotationTable,
    RatingScale,
    read_annotations,
    validate_annotations,
)
from medaudit.labels.io import attach_labels, load_annotations
from medaudit.labels.stability import LabelStability, label_stability, label_stability_with_spec

__all__ = [
    "ANNOTATION_COLUMNS",
    "AnnotationTable",
    "RatingScale",
    "validate_annotations",
    "read_annotations",
    "AggregatedLabels",
    "aggregate_labels",
    "aggregate_with_spec",
    "load_annotations",
    "attach_labels",
    "LabelStability",
    "label_stability",
    "label_stability_with_spec",
]

"""Supervised source models (paper 000 M0.12) and overlap-exclusion retraining (M0.13).

``medaudit train supervised SPEC.yaml --out DIR [--resume]`` trains a torchvision
ResNet-50 with one logit on a fixed stratified split of a source cohort, over several
optimisation seeds, and writes a long ScoreTable that ``medaudit audit`` consumes.
torch and torchvision are imported only when training runs.
"""

from __future__ import annotations

from medaudit.train.data import (
                                 ImageDataset,
                                 apply_exclusion,
                                 eval_transform,
                                 load_exclusion,
                                 load_manifest,
                                 pos_weight,
                                 stratified_split,
                                 train_transform,
)
from medaudit.train.spec import ManifestSpec, SourceSpec, SupervisedSpec, load_supervised_spec
from medaudit.train.supervised import (
                                 EarlyStopping,
                                 TrainEvent,
                                 TrainingResult,
                                 ensemble_mean,
                                 retrain_excluding,
                                 train_supervised,
)

__all__ = [
    "SupervisedSpec", "SourceSpec", "ManifestSpec", "load_supervised_spec",
    "train_supervised", "retrain_excluding", "TrainingResult", "TrainEvent", "EarlyStopping",
    "ensemble_mean", "load_manifest", "load_exclusion", "apply_exclusion", "stratified_split",
    "pos_weight", "train_transform", "eval_transform", "ImageDataset",
]

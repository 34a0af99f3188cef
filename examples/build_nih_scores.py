"""Build the NIH ChestX-ray14 expert-reader score and annotation tables (paper 001 real run).

Real offline models with no downloaded weights (``medaudit.adapters.probes``): linear probes
on down-sampled pixels, HOG and a small CNN trained from scratch, scored out of fold
(5 patient-grouped folds), per finding, on the 810 images read by the same 5 radiologists
(``../shared/data/nih_cxr14_google_expert_readers``).  Writes, atomically, into OUT_DIR:

* ``scores.csv``      image_id, cohort (finding), model, prompt, score, patient_id, split
* ``annotations.csv`` item_id, annotator (reader id), rating (0/1), cohort (finding)
* ``folds.csv``       image_id, patient_id, fold (``--split holdout``: image_id, patient_id,
  split = train/test)
* ``provenance.json`` seeds, settings, library versions, counts, data citation

``--split holdout`` replaces the out-of-fold scoring with paper 001's protocol (M1.1): one
fixed-seed 30 % test split (``--test-size``), stratified and grouped by patient; models
train on the rest and only the test images are scored.

Usage (from the repository root; about 5-10 minutes on 2 CPU cores)::

    .venv/bin/python examples/build_nih_scores.py build/nih_readers
    .venv/bin/python examples/build_nih_scores.py build/nih_holdout --split holdout
    .venv/bin/python -m medaudit audit examples/nih_readers.yaml --out out/nih_readers

Data: NIH ChestX-ray14 (Wang et al. CVPR 2017; NIH Clinical Center) and the Google expert
labels (Nabulsi et al. Sci Rep 2021), research and educational use only.
"""

from __future__ import annotations

import argparse
import sys
import time

from medaudit.adapters.probes import DEFAULT_FINDINGS, EXTRACTORS, SPLITS, nih_probe_scores
from medaudit.datasets.annotations import read_nih_readers
from medaudit.io.output import atomic_directory, write_json


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output directory (created; replaced with --overwrite)")
    p.add_argument("--data", default=None, help="nih_cxr14_google_expert_readers folder "
                   "(default: ../shared/data/... from the repository root)")
    p.add_argument("--extractors", default=",".join(EXTRACTORS))
    p.add_argument("--findings", default=",".join(DEFAULT_FINDINGS))
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--folds", type=int, default=5)
    p.add_argument("--cnn-epochs", type=int, default=12)
    p.add_argument("--split", choices=SPLITS, default="out_of_fold",
                   help="out_of_fold (every image, --folds folds) or holdout (paper 001: one "
                        "fixed-seed test split, only its images scored)")
    p.add_argument("--test-size", type=float, default=0.3, help="hold-out test fraction (of patients)")
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args(argv)
    findings = tuple(f.strip() for f in a.findings.split(","))
    t0 = time.monotonic()
    readers = read_nih_readers(a.data, findings=findings)
    res = nih_probe_scores(readers.table, root=a.data, findings=findings,
                           extractors=tuple(e.strip() for e in a.extractors.split(",")),
                           n_splits=a.folds, rng=a.seed, cnn_epochs=a.cnn_epochs,
                           split=a.split, test_size=a.test_size,
                           progress=lambda s: print(f"[{time.monotonic() - t0:6.1f} s] {s}",
                                                    file=sys.stderr))
    with atomic_directory(a.out, overwrite=a.overwrite) as tmp:
        res.scores.to_csv(tmp / "scores.csv", index=False, float_format="%.17g")
        readers.core().to_csv(tmp / "annotations.csv", index=False, float_format="%.17g")
        res.folds.to_csv(tmp / "folds.csv", index=False)
        write_json(tmp / "provenance.json", {
            "probes": res.settings, "annotations": readers.to_dict(),
            "data": "NIH ChestX-ray14 (Wang et al. 2017, NIH Clinical Center); Google expert "
                    "labels (Nabulsi et al. 2021), research and educational use only"})
    print(f"wrote {a.out} in {time.monotonic() - t0:.0f} s", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())

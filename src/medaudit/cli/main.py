"""Entry point ``medaudit``.

Subcommands:

* ``medaudit audit SPEC.yaml --out DIR`` — the portability audit a spec describes
  (every table as CSV and Parquet, ``portability.csv``, ``results.json``,
  ``summary.md``, ``report.html`` and ``figures/``);
* ``medaudit report DIR [--out FILE]`` — re-render ``report.html`` (and ``figures/``)
  of a finished audit from its ``results.json``, recomputing nothing;
* ``medaudit demo --out DIR`` — audit a seeded, clearly labelled *simulated* cohort
  (the embedded default) and write its tables;
* ``medaudit summarize SCORES.csv --out DIR`` — the same audit on your own long
  score table (CSV or Parquet).

Each writes ``metrics.csv``, ``comparisons.csv``, ``spectrum.csv`` (when two
control groups exist), ``results.json`` with provenance and ``summary.md``,
atomically: a failed run leaves no partial directory.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import platform
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medaudit import __version__
from medaudit.exceptions import MedauditError

log = logging.getLogger("medaudit")


def _versions() -> dict[str, str]:
    import numpy
    import pandas
    import scipy
    import statsmodels

    return {"medaudit": __version__, "python": platform.python_version(),
            "numpy": numpy.__version__, "scipy": scipy.__version__,
            "statsmodels": statsmodels.__version__, "pandas": pandas.__version__}


def run_summary(table: Any, out: Path, *, inputs: dict[str, Any], n_resamples: int,
                n_permutations: int, seed: int, overwrite: bool, quiet: bool) -> Path:
    """Run :func:`medaudit.blocks.summarize_cohorts` and write its outputs atomically."""
    from medaudit.blocks import summarize_cohorts
    from medaudit.io import atomic_directory, write_json
    from medaudit.report.text import markdown_summary, print_table

    res = summarize_cohorts(table, n_resamples=n_resamples, n_permutations=n_permutations,
                            seed=seed)
    provenance = {"inputs": inputs, "versions": _versions(), "seed": seed,
                  "n_resamples": n_resamples, "n_permutations": n_permutations,
                  "ci_method": "percentile", "confidence_level": 0.95,
                  "designs": {"metrics": "ordinary+paired (B-ORD-PAIRED)",
                              "spectrum": "shared_positive (B-SHAREDPOS)"},
                  "multiplicity": {"comparisons": "holm within cohort x prompt",
                                   "spectrum": "holm over all spectrum tests"}}
    with atomic_directory(out, overwrite=overwrite) as tmp:
        res.metrics.to_csv(tmp / "metrics.csv", index=False, float_format="%.17g")
        res.comparisons.to_csv(tmp / "comparisons.csv", index=False, float_format="%.17g")
        if not res.spectrum.empty:
            res.spectrum.to_csv(tmp / "spectrum.csv", index=False, float_format="%.17g")
        write_json(tmp / "results.json", {
            "provenance": provenance,
            "metrics": res.metrics.to_dict("records"),
            "comparisons": res.comparisons.to_dict("records"),
            "spectrum": res.spectrum.to_dict("records"),
        })
        (tmp / "summary.md").write_text(markdown_summary(res, provenance), encoding="utf-8")
    if not quiet:
        print_table(res.metrics)
        print(f"\nwrote {out}/ (metrics.csv, comparisons.csv, results.json, summary.md)")
    return out


def _cmd_demo(args: argparse.Namespace) -> int:
    import pandas as pd

    from medaudit.simulate import simulate_cohort

    table = pd.DataFrame(simulate_cohort(rng=args.seed))
    run_summary(table, Path(args.out), inputs={"simulated": True, "generator":
                "medaudit.simulate.simulate_cohort", "generator_seed": args.seed},
                n_resamples=args.n_resamples, n_permutations=args.n_permutations,
                seed=args.seed, overwrite=args.overwrite, quiet=args.quiet)
    return 0


def _cmd_summarize(args: argparse.Namespace) -> int:
    from medaudit.io import file_sha256
    from medaudit.io.tables import read_table

    path = Path(args.scores)
    table = read_table(path)
    run_summary(table, Path(args.out), inputs={"scores": str(path), "sha256": file_sha256(path)},
                n_resamples=args.n_resamples, n_permutations=args.n_permutations,
                seed=args.seed, overwrite=args.overwrite, quiet=args.quiet)
    return 0


def _cmd_audit(args: argparse.Namespace) -> int:
    from medaudit.audit.run import audit, write_outcome
    from medaudit.cli.progress import audit_progress
    from medaudit.io.spec import load_spec

    spec, base = load_spec(args.spec)
    out = Path(args.out)
    if out.exists() and not args.overwrite:  # fail before minutes of computation, not after
        raise FileExistsError(f"output directory {str(out)!r} exists; choose another --out or "
                              "pass --overwrite.")
    from medaudit.stats._progress import replicate_progress

    with audit_progress(len(spec.blocks) + 1, quiet=args.quiet, verbose=args.verbose) as bar, \
            replicate_progress(bar.replicates):
        outcome = audit(spec, base, progress=bar.block, step=bar.step)
        bar.block("writing tables, results.json, figures and report.html")
        write_outcome(outcome, out, overwrite=args.overwrite)
    if not args.quiet:
        n_claims = outcome.claims["claim_id"].nunique() if len(outcome.claims) else 0
        n_tables = sum(len(r.tables) for r in outcome.results.values())
        n_figs = len(list((out / "figures").glob("*.png"))) if (out / "figures").exists() else 0
        print(f"wrote {out}/\n"
              f"  report.html        the self-contained report (open it in a browser)\n"
              f"  summary.md         portability matrix of {n_claims} claims, in Markdown\n"
              f"  portability.csv    the matrix in long form (also .parquet)\n"
              f"  results.json       every number at full precision with its provenance\n"
              f"  tables/            {n_tables} block tables, CSV and Parquet\n"
              f"  figures/           {n_figs} figures, PNG and SVG")
    return 0


def _cmd_report(args: argparse.Namespace) -> int:
    from medaudit.report.html import rerender

    path = rerender(Path(args.directory), None if args.out is None else Path(args.out))
    if not args.quiet:
        print(f"wrote {path}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(prog="medaudit", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"medaudit {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--out", required=True, help="output directory (written atomically)")
        sp.add_argument("--seed", type=int, default=2026, help="run seed (default 2026)")
        sp.add_argument("--n-resamples", type=int, default=2000, help="bootstrap replicates B")
        sp.add_argument("--n-permutations", type=int, default=10_000)
        sp.add_argument("--overwrite", action="store_true", help="replace an existing --out")
        sp.add_argument("--quiet", action="store_true", help="print nothing on success")
        sp.add_argument("--verbose", action="store_true", help="log progress to stderr")

    a = sub.add_parser("audit", help="run the audit described by a YAML spec")
    a.add_argument("spec", help="audit spec (YAML)")
    a.add_argument("--out", required=True, help="output directory (written atomically)")
    a.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    a.add_argument("--quiet", action="store_true", help="print nothing on success")
    a.add_argument("--verbose", action="store_true", help="log progress to stderr")
    a.set_defaults(func=_cmd_audit)
    r = sub.add_parser("report", help="re-render report.html of a finished audit from results.json")
    r.add_argument("directory", help="output directory of `medaudit audit`")
    r.add_argument("--out", default=None,
                   help="write the self-contained page here instead of DIR/report.html (and "
                        "leave DIR/figures untouched)")
    r.add_argument("--quiet", action="store_true", help="print nothing on success")
    r.add_argument("--verbose", action="store_true", help="log progress to stderr")
    r.set_defaults(func=_cmd_report)
    d = sub.add_parser("demo", help="audit the embedded simulated cohort")
    common(d)
    d.set_defaults(func=_cmd_demo)
    s = sub.add_parser("summarize", help="audit your own long score table (CSV/Parquet)")
    s.add_argument("scores", help="score table with image_id, cohort, model, prompt, score, label")
    common(s)
    s.set_defaults(func=_cmd_summarize)
    # Sub-command groups living in their own modules (each exposes ``register(sub)``); their
    # heavy dependencies are imported only when the command runs.
    for mod in _COMMAND_MODULES:
        importlib.import_module(f"medaudit.cli.{mod}").register(sub)
    return p


#: modules under ``medaudit.cli`` that add sub-commands (dicom, manifest, overlap, score, train)
_COMMAND_MODULES = ("imaging", "scoring", "training")


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input)."""
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=logging.INFO if args.verbose else logging.WARNING,
                        format="medaudit: %(message)s", stream=sys.stderr)
    try:
        return int(args.func(args))
    except (MedauditError, OSError) as exc:
        # OSError covers FileExistsError/FileNotFoundError and also IsADirectoryError,
        # NotADirectoryError, PermissionError: user-path problems whose message names the path
        print(f"medaudit: error: {exc}", file=sys.stderr)
        return 2


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

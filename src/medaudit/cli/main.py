"""Entry point ``medaudit``.

Subcommands:

* ``medaudit audit SPEC.yaml --out DIR`` — the portability audit a spec describes
  (every table as CSV and Parquet, ``portability.csv``, ``results.json``,
  ``summary.md``, ``report.html`` and ``figures/``);
* ``medaudit report DIR [--out FILE]`` — re-render ``report.html`` (and ``figures/``)
  of a finished audit from its ``results.json``, recomputing nothing;
* ``medaudit demo --out DIR`` — the audit of the embedded, seeded, clearly labelled
  *simulated* paper-000 study (what ``make demo`` runs);
* ``medaudit summarize SCORES.csv --out DIR`` — the audit of your own long score table
  with the default spec its columns imply (:mod:`medaudit.audit.defaults`).

Each is one audit with one validator and one provenance record, written atomically: a
failed run leaves no partial directory.
"""

from __future__ import annotations

import argparse
import importlib
import logging
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medaudit import __version__
from medaudit.exceptions import MedauditError

log = logging.getLogger("medaudit")


def _run_and_write(spec, base: Path, out: Path, *, overwrite: bool, quiet: bool,
                   verbose: bool, spec_path: Path | None = None) -> int:
    """Run the audit ``spec`` describes and write ``out`` (one path for every command)."""
    import shutil

    from medaudit import progress
    from medaudit.audit.context import spec_inputs
    from medaudit.audit.run import already_written, audit, checkpoint_folder, interrupted, write_outcome
    from medaudit.cli.progress import audit_progress
    from medaudit.io.output import check_output_dir

    inputs = spec_inputs(spec, base, spec_path)
    if not overwrite and (rid := already_written(spec, base, out)):
        # killed after its output was complete: the same command again has nothing to do
        if not quiet:
            print(f"{out} is already the finished output of this spec and these inputs "
                  f"(run {rid}); nothing to do. Pass --overwrite to recompute it.")
        return 0
    overwrite = overwrite or interrupted(out)  # the same command again finishes a killed run
    # refuse a destructive or unwritable --out before minutes of computation, not after
    check_output_dir(out, inputs=inputs, overwrite=overwrite)
    with audit_progress(len(spec.blocks) + 1, quiet=quiet, verbose=verbose) as bar, \
            progress.listening(bar):
        # a killed (or interrupted) run's finished blocks are read back, so rerunning the
        # command resumes; a run that fails with an error leaves nothing behind
        resume = checkpoint_folder(out)
        try:
            outcome = audit(spec, base, resume=resume)
            progress.block("writing tables, results.json, figures and report.html")
            write_outcome(outcome, out, overwrite=overwrite, inputs=inputs)
        except Exception:
            shutil.rmtree(resume, ignore_errors=True)
            raise
        shutil.rmtree(resume, ignore_errors=True)  # finished: no checkpoint survives
    if not quiet:
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


def _settings(args: argparse.Namespace) -> dict[str, Any]:
    """The resampling flags of demo / summarize as spec keys (validated by the spec)."""
    keys = {"seed": args.seed, "n_resamples": args.n_resamples, "n_permutations": args.n_permutations,
            "allow_large": args.allow_large or None}
    return {k: v for k, v in keys.items() if v is not None}


def _validated(raw: dict[str, Any], source: str):
    from medaudit.audit.spec import AuditSpec
    from medaudit.io.specfile import validate_model

    return validate_model(raw, AuditSpec, source=source, what="audit spec")


def _cmd_demo(args: argparse.Namespace) -> int:
    """The embedded default: the seeded simulated paper-000 study (as ``make demo``)."""
    from medaudit.audit.spec import DEMO_SPEC
    from medaudit.io.specfile import read_yaml_mapping

    raw = read_yaml_mapping(DEMO_SPEC, what="audit spec")
    scale = {} if args.scale is None else {"simulate_scale": args.scale}
    spec = _validated({**raw, **_settings(args), **scale}, "the embedded demo spec")
    return _run_and_write(spec, DEMO_SPEC.parent, Path(args.out), overwrite=args.overwrite,
                          quiet=args.quiet, verbose=args.verbose)


def _cmd_summarize(args: argparse.Namespace) -> int:
    """An audit of a score table with the default spec its columns imply."""
    from medaudit.audit.defaults import default_spec
    from medaudit.io.tables import read_table

    path = Path(args.scores)
    table = read_table(path)
    spec = _validated(default_spec(table, scores=path.resolve(), **_settings(args)),
                      f"the spec generated for {path}")
    return _run_and_write(spec, path.parent, Path(args.out), overwrite=args.overwrite,
                          quiet=args.quiet, verbose=args.verbose)


def _cmd_audit(args: argparse.Namespace) -> int:
    from medaudit.io.specfile import read_yaml_mapping

    raw = read_yaml_mapping(args.spec, what="audit spec")
    if args.allow_large:  # the spec's limits are checked as it is read: lift them before
        raw = {**raw, "allow_large": True}
    spec = _validated(raw, str(args.spec))
    return _run_and_write(spec, Path(args.spec).parent, Path(args.out), overwrite=args.overwrite,
                          quiet=args.quiet, verbose=args.verbose, spec_path=Path(args.spec))


def _cmd_report(args: argparse.Namespace) -> int:
    from medaudit.report.html import rerender

    path = rerender(Path(args.directory), None if args.out is None else Path(args.out))
    if not args.quiet:
        print(f"wrote {path}")
    return 0


OVERWRITE_HELP = ("replace an existing --out, but only a folder medaudit wrote (it carries "
                  ".medaudit-output); never an input, a file or a folder of yours")
ALLOW_LARGE_HELP = ("allow B above 100,000, permutations above 1,000,000 and runs estimated to "
                    "need more than 4 GiB or an hour")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = argparse.ArgumentParser(prog="medaudit", description=__doc__.splitlines()[0])
    p.add_argument("--version", action="version", version=f"medaudit {__version__}")
    sub = p.add_subparsers(dest="command", required=True)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--out", required=True, help="output directory (written atomically)")
        sp.add_argument("--seed", type=int, default=None, help="run seed (default: the spec's, 2026)")
        sp.add_argument("--n-resamples", type=int, default=None,
                        help="bootstrap replicates B (default: the spec's, 2000)")
        sp.add_argument("--n-permutations", type=int, default=None,
                        help="permutations of the spectrum tests (default: the spec's, 10000)")
        sp.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
        sp.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
        sp.add_argument("--quiet", action="store_true", help="print nothing on success")
        sp.add_argument("--verbose", action="store_true", help="log progress to stderr")

    a = sub.add_parser("audit", help="run the audit described by a YAML spec")
    a.add_argument("spec", help="audit spec (YAML)")
    a.add_argument("--out", required=True, help="output directory (written atomically)")
    a.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    a.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
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
    d = sub.add_parser("demo", help="audit the embedded simulated paper-000 study (as `make demo`)")
    common(d)
    d.add_argument("--scale", type=float, default=None,
                   help="shrink the simulated study to this fraction of its images (a quick look)")
    d.set_defaults(func=_cmd_demo)
    s = sub.add_parser("summarize", help="audit a long score table (CSV/Parquet) with the default "
                                         "spec its columns imply")
    s.add_argument("scores", help="score table with image_id, cohort, model, prompt, score, label")
    common(s)
    s.set_defaults(func=_cmd_summarize)
    # Sub-command groups living in their own modules (each exposes ``register(sub)``); their
    # heavy dependencies are imported only when the command runs.
    for mod in _COMMAND_MODULES:
        importlib.import_module(f"medaudit.cli.{mod}").register(sub)
    return p


#: modules under ``medaudit.cli`` that add sub-commands (dicom, manifest, overlap, score, train)
_COMMAND_MODULES = ("imaging", "scoring", "training", "planning", "init")


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

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
import io
import logging
import os
import signal
import sys
import threading
import warnings
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from medaudit import __version__
from medaudit._words import plural
from medaudit.cli._help import CommandParser, examples, output_flags
from medaudit.exceptions import MedauditError

log = logging.getLogger("medaudit")

#: what ``medaudit --help`` says first
DESCRIPTION = """\
medaudit audits how a medical-imaging AI model is evaluated: from a table of per-image
scores (yours, or a model's scored with `medaudit score`) it states each claim the numbers
support -- AUROC, rankings, operating points, calibration -- at its specification E (model,
prompt, cohort, negatives, prevalence, threshold, criterion), then checks whether the claim
survives a change of one element of E: another cohort, prompt, control group, prevalence,
threshold or reference standard.  Every run writes a self-contained report.html, summary.md,
every table as CSV and Parquet, and results.json with full precision and provenance.

Start with your own scores: `medaudit init scores.csv` writes a commented spec, then
`medaudit audit spec.yaml --out DIR` runs it.  Every spec key is described in docs/spec.md."""

EXAMPLES = """\
examples:
  medaudit init scores.csv                     write spec.yaml from the table's columns
  medaudit audit spec.yaml --out audit/        run the audit a spec describes
  medaudit summarize scores.csv --out audit/   audit a score table with the default spec
  medaudit demo --out demo/ --scale 0.2        a quick look at the simulated paper-000 study

`medaudit COMMAND --help` describes each command and its options."""


def _run_and_write(spec, base: Path, out: Path, *, overwrite: bool, quiet: bool,
                   verbose: bool, spec_path: Path | None = None) -> int:
    """Run the audit ``spec`` describes and write ``out`` (one path for every command)."""
    import shutil

    from medaudit import progress
    from medaudit.audit.context import spec_inputs
    from medaudit.audit.run import already_written, audit, checkpoint_folder, interrupted, write_outcome
    from medaudit.cli.progress import audit_progress
    from medaudit.io.output import check_out_name, check_output_dir

    check_out_name(out)  # before anything stats it
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
              f"  summary.md         portability matrix of {plural(n_claims, 'claim')}, in Markdown\n"
              f"  portability.csv    the matrix in long form (also .parquet)\n"
              f"  results.json       every number at full precision with its provenance\n"
              f"  tables/            {plural(n_tables, 'block table')}, CSV and Parquet\n"
              f"  figures/           {plural(n_figs, 'figure')}, PNG and SVG")
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

    if args.scale is not None and not 0.0 < args.scale <= 64.0:  # nan fails both comparisons
        raise MedauditError(f"--scale must be a fraction of the simulated study above 0 (at most "
                            f"64 with --allow-large); got {args.scale!r}.")
    raw = read_yaml_mapping(DEMO_SPEC, what="audit spec")
    scale = {} if args.scale is None else {"simulate_scale": args.scale}
    spec = _validated({**raw, **_settings(args), **scale}, "the embedded demo spec")
    return _run_and_write(spec, DEMO_SPEC.parent, Path(args.out), overwrite=args.overwrite,
                          quiet=args.quiet, verbose=args.verbose)


def _cmd_summarize(args: argparse.Namespace) -> int:
    """An audit of a score table with the default spec its columns imply."""
    from medaudit.audit.defaults import check_summarizable, default_spec, with_subgroups
    from medaudit.io.tables import read_table

    path = Path(args.scores)
    table = read_table(path)
    # summarize has no spec: its own checks name the file and the flags, not spec keys
    valid = check_summarizable(table, source=str(path), score_scale=args.score_scale)
    scale = {} if args.score_scale is None else {"score_scale": args.score_scale}
    # the spec `medaudit init` would write, subgroup columns included
    # the file as its name, read against its folder (base_dir): the outputs record no path
    # of this machine, and the same table audited from anywhere writes the same bytes
    raw = with_subgroups(default_spec(table, scores=path.name, **_settings(args), **scale),
                         valid)
    spec = _validated(raw, f"the spec generated for {path}")
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

    path = rerender(Path(args.directory), None if args.out is None else Path(args.out),
                    overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {path}")
    return 0


OVERWRITE_HELP = ("replace an existing --out, but only a folder medaudit wrote (it carries "
                  ".medaudit-output); never an input, a file or a folder of yours")
ALLOW_LARGE_HELP = ("allow B above 100,000, permutations above 1,000,000 and runs estimated to "
                    "need more than 4 GiB or an hour")


def build_parser() -> argparse.ArgumentParser:
    """The argument parser (exposed for documentation and tests)."""
    p = CommandParser(prog="medaudit", description=DESCRIPTION, epilog=EXAMPLES)
    p.add_argument("--version", action="version", version=f"medaudit {__version__}",
                   help="print the version and exit")
    sub = p.add_subparsers(dest="command", required=True, metavar="COMMAND", title="commands",
                           parser_class=CommandParser)

    def common(sp: argparse.ArgumentParser) -> None:
        sp.add_argument("--out", required=True, help="output directory (written atomically)")
        sp.add_argument("--seed", type=int, default=None, help="run seed (default: the spec's, 2026)")
        sp.add_argument("--n-resamples", type=int, default=None,
                        help="bootstrap replicates B (default: the spec's, 2000)")
        sp.add_argument("--n-permutations", type=int, default=None,
                        help="permutations of the spectrum tests (default: the spec's, 10000)")
        sp.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
        sp.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
        output_flags(sp)

    a = sub.add_parser(
        "audit", help="run the audit described by a YAML spec",
        description="Run the audit a YAML spec describes: read and check every input it names, run\n"
                    "its blocks and write the report, summary, tables and results.json into --out\n"
                    "(atomically: a failed run leaves nothing; a killed run resumes when the same\n"
                    "command is given again). docs/spec.md describes every key.",
        epilog=examples(("medaudit audit spec.yaml --out audit/", "write audit/report.html and the rest"),
                        ("medaudit audit spec.yaml --out audit/ --overwrite", "replace an earlier run"),
                        ("medaudit audit examples/kwang311_tb.yaml --out kwang/", "the real TB example")))
    a.add_argument("spec", help="audit spec (YAML); `medaudit init SCORES.csv` writes one")
    a.add_argument("--out", required=True, help="output directory (written atomically)")
    a.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    a.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
    output_flags(a)
    a.set_defaults(func=_cmd_audit)
    r = sub.add_parser(
        "report", help="re-render report.html of a finished audit from results.json",
        description="Re-render report.html and figures/ of a finished audit from its results.json,\n"
                    "recomputing nothing (the same results give the same bytes).",
        epilog=examples(("medaudit report audit/", "rewrite audit/report.html and audit/figures/"),
                        ("medaudit report audit/ --out page.html", "write only the page, elsewhere")))
    r.add_argument("directory", help="output directory of `medaudit audit`")
    r.add_argument("--out", default=None,
                   help="write the self-contained page here instead of DIR/report.html (and "
                        "leave DIR/figures untouched)")
    r.add_argument("--overwrite", action="store_true",
                   help="with --out: replace an existing FILE, but only an HTML report medaudit "
                        "wrote; never an input of the audit or a file of yours")
    output_flags(r)
    r.set_defaults(func=_cmd_report)
    d = sub.add_parser(
        "demo", help="audit the embedded simulated paper-000 study (as `make demo`)",
        description="Audit the embedded, seeded and clearly labelled SIMULATED study shaped like\n"
                    "paper 000 (four models, five prompt families, five cohorts). No real model or\n"
                    "patient is involved; the report says so on its first screen.",
        epilog=examples(("medaudit demo --out demo/", "the full simulated study (a few minutes)"),
                        ("medaudit demo --out demo/ --scale 0.2 --n-resamples 200", "a quick look")))
    common(d)
    d.add_argument("--scale", type=float, default=None,
                   help="shrink the simulated study to this fraction of its images (a quick look)")
    d.set_defaults(func=_cmd_demo)
    s = sub.add_parser(
        "summarize", help="audit a long score table (CSV/Parquet) with the default spec its "
                          "columns imply",
        description="Audit a long score table with the spec its columns imply: every cohort, the\n"
                    "primary prompt, the score scale (logits when scores are negative, or\n"
                    "--score-scale), negative-spectrum entries where negatives name two or more\n"
                    "groups. `medaudit init` writes the same spec as a file you can edit.",
        epilog=examples(("medaudit summarize scores.csv --out audit/", "audit every cohort of the table"),
                        ("medaudit summarize logits.parquet --out audit/ --score-scale logits",
                         "raw scores, not probabilities")))
    s.add_argument("scores", help="score table with image_id, cohort, model, score, label "
                                  "(optional: prompt, negative_group, label_soft, seed)")
    common(s)
    s.add_argument("--score-scale", choices=("probabilities", "logits"), default=None,
                   help="how to read the scores (default: logits when scores are negative -- "
                        "not a stray 1 %% among values in [0, 1], which are refused with their "
                        "row -- else probabilities, so non-negative scores above 1, such as "
                        "percentages, are refused unless you say logits); the spec key is "
                        "score_scale")
    s.set_defaults(func=_cmd_summarize)
    # Sub-command groups living in their own modules (each exposes ``register(sub)``); their
    # heavy dependencies are imported only when the command runs.
    for mod in _COMMAND_MODULES:
        importlib.import_module(f"medaudit.cli.{mod}").register(sub)
    return p


#: modules under ``medaudit.cli`` that add sub-commands (dicom, manifest, overlap, score, train,
#: plan, init; claims export, port and monitor at the receiving site)
_COMMAND_MODULES = ("imaging", "scoring", "training", "planning", "init", "claims", "port", "monitor")


class _Stderr(logging.Handler):
    """Log records as ``medaudit: message`` on the ``sys.stderr`` of the moment (one line each)."""

    def emit(self, record: logging.LogRecord) -> None:
        try:
            text = record.getMessage()
        except Exception:  # noqa: BLE001 - a malformed record must not end the run
            text = str(record.msg)
        who = "" if record.name.split(".")[0] == "medaudit" else f"{record.name}: "
        print(f"medaudit: {who}{text}", file=sys.stderr, flush=True)


_HANDLER = _Stderr()


def _configure_logging(verbose: bool) -> None:
    """medaudit's own messages on stderr; other libraries' only with --verbose.

    Without --verbose a library's log line (a hub download retrying, a deprecation) would
    print between our lines, labelled as ours; the error that follows says what matters.
    """
    root, ours = logging.getLogger(), logging.getLogger("medaudit")
    for lg in (root, ours):
        if _HANDLER in lg.handlers:
            lg.removeHandler(_HANDLER)
    if not any(isinstance(h, logging.NullHandler) for h in root.handlers):
        root.addHandler(logging.NullHandler())  # no "last resort" printing of other loggers
    (root if verbose else ours).addHandler(_HANDLER)
    ours.setLevel(logging.INFO if verbose else logging.WARNING)
    if verbose:
        root.setLevel(logging.INFO)


def _show_warning(message: Any, category: type, filename: str, lineno: int, file: Any = None,
                  line: str | None = None) -> None:
    """A warning as one line, ``medaudit: warning: ...`` (no file path, no source line)."""
    from medaudit.io.messages import one_line

    print(f"medaudit: warning: {one_line(str(message), limit=2000)}", file=sys.stderr, flush=True)


def _stdout_closed() -> bool:
    """Whether stdout's reader has gone; if so stdout is pointed at devnull, so that the
    interpreter's final flush does not fail again (where stdout is a real file)."""
    try:
        sys.stdout.flush()
        return False
    except BrokenPipeError:
        pass
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError, io.UnsupportedOperation):
        pass  # stdout is not a file descriptor (a notebook, pytest's capture)
    return True


class _Terminated(KeyboardInterrupt):
    """SIGTERM (``kill``, a job scheduler's time limit), unwound as Ctrl-C is: the default
    action would end the process at once, leaving its temporary output folder behind."""


#: set when SIGTERM arrived: the exception the handler raises can be lost (raised inside a
#: callback Python only reports, "Exception ignored in ..."), and the run then fails on what
#: the signal did to its workers (a BrokenProcessPool) instead of unwinding as terminated
_SIGTERM_SEEN = threading.Event()


def _on_sigterm(signum: int, frame: Any) -> None:
    _SIGTERM_SEEN.set()
    raise _Terminated()


def main(argv: Sequence[str] | None = None) -> int:
    """Run the command line; returns the exit code (0 ok, 2 bad input, 130 interrupted by
    Ctrl-C, 143 terminated by SIGTERM).

    Every error is one line on stderr, ``medaudit: error: ...`` (a message that lists several
    problems joins them with ``/``), and every warning one line, ``medaudit: warning: ...``
    (none with ``--quiet``: what a warning says is recorded in the tables' qualifications).
    """
    args = build_parser().parse_args(argv)
    _configure_logging(bool(getattr(args, "verbose", False)))
    # signal handlers can only be set from the main thread (main() called from a thread of
    # a user's program keeps that program's handling)
    ours = threading.current_thread() is threading.main_thread()
    # a handler installed outside Python reads as None: the default action is restored then
    _SIGTERM_SEEN.clear()
    previous = signal.signal(signal.SIGTERM, _on_sigterm) if ours else None
    try:
        return _run(args)
    finally:
        if ours:
            signal.signal(signal.SIGTERM, signal.SIG_DFL if previous is None else previous)


def _run(args: argparse.Namespace) -> int:
    try:
        with warnings.catch_warnings():
            if getattr(args, "quiet", False):  # --quiet: errors only (warnings live in the tables)
                warnings.simplefilter("ignore")
            else:
                warnings.showwarning = _show_warning
            code = int(args.func(args))
        # a piped stdout is buffered: flush here, where a reader that went away is seen,
        # not in the interpreter's exit (which would say "Exception ignored ...", status 120)
        sys.stdout.flush()
        return code
    except BrokenPipeError as exc:
        if not _stdout_closed():  # another pipe (a worker's, a FIFO): an error like any other
            from medaudit.io.messages import one_line

            print(f"medaudit: error: {one_line(str(exc), limit=4000)}", file=sys.stderr)
            return 2
        # stdout's reader went away (`medaudit ... | head`): stop without a message, as Unix
        # tools do, with SIGPIPE's status.  Outputs are written atomically, so whatever was
        # cut short left nothing half-written
        return 141
    except (MedauditError, OSError) as exc:
        if _SIGTERM_SEEN.is_set():  # a worker pool the signal broke, reported as an error
            return _interrupted(True, args)
        # OSError covers FileExistsError/FileNotFoundError and also IsADirectoryError,
        # NotADirectoryError, PermissionError: user-path problems whose message names the path
        from medaudit.io.messages import one_line

        print(f"medaudit: error: {one_line(str(exc), limit=4000)}", file=sys.stderr)
        return 2
    except KeyboardInterrupt as exc:
        return _interrupted(isinstance(exc, _Terminated), args)
    except Exception:
        if _SIGTERM_SEEN.is_set():  # what the signal broke, once its own exception was lost
            return _interrupted(True, args)
        raise


def _interrupted(terminated: bool, args: argparse.Namespace | None = None) -> int:
    # outputs are written atomically, so an interrupted command leaves no half-written
    # output; an audit's finished blocks are kept for the rerun to resume from, a training
    # run's finished epochs for --resume
    what, code = ("terminated (SIGTERM)", 143) if terminated else ("interrupted (Ctrl-C)", 130)
    if getattr(args, "command", None) == "train":
        how = "Run the same command with --resume to continue where it stopped."
    else:
        how = "Run the same command again to resume (audit) or redo it."
    print(f"medaudit: {what}; no output was half-written. {how}", file=sys.stderr)
    return code


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

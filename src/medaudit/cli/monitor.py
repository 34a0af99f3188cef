"""``medaudit monitor SOURCE LOCAL_SPEC.yaml --out DIR``: the source's claims at every period.

The local data has a ``period`` column (or ``--period-files``, one score table per period);
each claim a site can keep checking (AUROC ≥ L, Se or Sp ≥ x at the source's fixed τ) is
evaluated cumulatively and per period with the declared correction for repeated looks
(:func:`medaudit.monitor.monitor`), beside the score drift per period.  The output folder
is written atomically: a failed run writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register"]


def _cmd_monitor(args: argparse.Namespace) -> int:
    from medaudit.exceptions import MedauditError
    from medaudit.monitor import monitor

    if args.planned_looks is not None and args.planned_looks < 1:
        raise MedauditError(f"--planned-looks must be a positive integer; got {args.planned_looks}.")
    if args.spending is not None and args.correction != "alpha_spending":
        # monitor() refuses it too, in its keywords' words; here in the flags'
        raise MedauditError(f"--spending {args.spending} applies only with --correction "
                            f"alpha_spending (given: --correction {args.correction}); drop it or "
                            "use alpha_spending.")
    options = {} if args.confidence_level is None else {"confidence_level": args.confidence_level}
    run = monitor(args.source, spec=Path(args.spec), period=args.period_column,
                  period_files=args.period_files or None, periods=args.periods or None,
                  correction=args.correction, planned_looks=args.planned_looks,
                  spending=args.spending, cohort=args.cohort, **options)
    out = run.write(Path(args.out), overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {out}/ ({run.headline})")
        for text in run.changes["text"]:
            print(f"  {text}")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit monitor`` to the sub-command parser ``sub``."""
    from medaudit.cli._help import examples, output_flags
    from medaudit.cli.main import OVERWRITE_HELP
    from medaudit.cli.port import site_arguments

    p = sub.add_parser(
        "monitor", help="keep checking a published audit's claims as local batches arrive",
        description="Evaluate the source's claims (AUROC ≥ L, Se/Sp ≥ x at the source's τ) on the\n"
                    "local data at every period, cumulatively and per period, with a declared\n"
                    "correction for repeated looks; write the time series, the verdict change log,\n"
                    "the score drift per period and a figure per claim.",
        epilog=examples(("medaudit monitor vendor.claims.json site.yaml --out mon/",
                         "the table of site.yaml has a period column"),
                        ("medaudit monitor audit/ site.yaml --out mon/ --period-files jan.csv feb.csv",
                         "one file per period"),
                        ("medaudit monitor m.claims.json site.yaml --out mon/ --correction "
                         "alpha_spending --planned-looks 12", "a plan of 12 monthly looks")))
    site_arguments(p)
    p.add_argument("--period-column", default="period", help="the period column (default: period)")
    p.add_argument("--period-files", nargs="+", default=None, metavar="FILE",
                   help="one score table per period, in time order, instead of a period column "
                        "(the period is each file's name without suffix); they take the place of "
                        "the spec's scores: table, whose other keys still apply")
    p.add_argument("--periods", nargs="+", default=None, metavar="PERIOD",
                   help="the periods in order (default: the order of --period-files as given; "
                        "else an ordered categorical's order, numbers in number order, or text "
                        "sorted where that is time order: ISO months sort; month names, "
                        "10/15/2025 or p10 are refused without --periods)")
    p.add_argument("--correction", choices=("confseq", "alpha_spending", "none"), default="confseq",
                   help="correction for repeated looks (default confseq: anytime-valid)")
    p.add_argument("--planned-looks", type=int, default=None,
                   help="looks declared in advance: required by alpha_spending; with confseq it "
                        "sets where the rate sequences are tightest (valid either way), so "
                        "declare it before the first look")
    p.add_argument("--spending", choices=("pocock", "obrien_fleming"), default=None,
                   help="spending function of alpha_spending (default pocock)")
    p.add_argument("--confidence-level", type=float, default=None,
                   help="confidence level (default: the local spec's)")
    p.add_argument("--cohort", default=None, help="the site's cohort when the local data has several")
    p.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    output_flags(p)
    p.set_defaults(func=_cmd_monitor)

"""``medaudit port SOURCE LOCAL_SPEC.yaml --out DIR``: a published audit's claims on local data.

SOURCE is a finished audit (a folder or its ``results.json``) or a claims file; LOCAL_SPEC
is an audit spec of the site's data.  Every source claim is re-evaluated on the local
cohort with the change explicit (:func:`medaudit.port.port`) and the run writes
``port__claims.csv``, ``port.json``, ``source.claims.json``, ``summary.md`` and
``report.html`` into DIR, atomically: a failed run writes nothing.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "site_arguments"]


def _cmd_port(args: argparse.Namespace) -> int:
    from medaudit._words import plural
    from medaudit.blocks.planning import check_plan_power
    from medaudit.port import port
    from medaudit.report.port import verdict_counts

    check_plan_power(args.power, name="--power")
    options = {k: v for k, v in (("seed", args.seed), ("n_resamples", args.n_resamples),
                                 ("allow_large", args.allow_large or None)) if v is not None}
    res = port(args.source, spec=Path(args.spec), cohort=args.cohort, prevalence=args.prevalence,
               thresholds="local" if args.reestimate_thresholds else "source", power=args.power,
               **options)
    out = res.write(Path(args.out), overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {out}/ ({plural(len(res.claims), 'source claim')}: "
              f"{verdict_counts(res.claims)})\n"
              "  report.html        opens on the claims table with the site's verdicts\n"
              "  summary.md         the same, in Markdown\n"
              "  port__claims.csv   one row per source claim, full precision\n"
              "  port.json          the claims, the local claims rows and both provenances\n"
              "  source.claims.json the source claims as checked")
    return 0


def site_arguments(parser: argparse.ArgumentParser) -> None:
    """SOURCE, LOCAL_SPEC and ``--out``, worded alike in ``medaudit port`` and ``medaudit monitor``."""
    parser.add_argument("source", help="audit folder, its results.json, or a claims file (*.claims.json)")
    parser.add_argument("spec", help="audit spec (YAML) of the local data")
    parser.add_argument("--out", required=True, help="output directory (written atomically)")


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit port`` to the sub-command parser ``sub``."""
    from medaudit.cli._help import examples, output_flags
    from medaudit.cli.main import ALLOW_LARGE_HELP, OVERWRITE_HELP

    p = sub.add_parser(
        "port", help="check a published audit's claims on your own data",
        description="Re-evaluate every claim of a finished audit (its folder or results.json) or of a\n"
                    "claims file on the site's data described by LOCAL_SPEC: the cohort becomes the\n"
                    "site, the prevalence the site's, thresholds stay the source's numbers. The\n"
                    "report opens on one row per claim: source and local estimate, verdict, and the\n"
                    "local cases that would resolve an unresolved claim.",
        epilog=examples(("medaudit port vendor.claims.json site.yaml --out port/",
                         "check the vendor's claims on the site's data"),
                        ("medaudit port audit/ site.yaml --out port/ --cohort site-a --n-resamples 500",
                         "from an audit folder, on one cohort of the local data")))
    site_arguments(p)
    p.add_argument("--cohort", default=None, help="the site's cohort when the local data has several")
    p.add_argument("--prevalence", type=float, default=None,
                   help="judge prevalence-dependent claims (Brier, log loss, ECE) at this prevalence "
                        "(default: the site's observed)")
    p.add_argument("--reestimate-thresholds", action="store_true",
                   help="choose a threshold the source chose by a declared rule again on the local "
                        "data (default: the source's number, fixed)")
    p.add_argument("--power", type=float, default=0.8,
                   help="chance that the planned sample resolves an unresolved claim, in [0.5, 1) "
                        "(default 0.8)")
    p.add_argument("--seed", type=int, default=None, help="run seed (default: the local spec's)")
    p.add_argument("--n-resamples", type=int, default=None,
                   help="bootstrap replicates B (default: the local spec's)")
    # the resampling limits' refusal names this flag, as it does for `medaudit audit`
    p.add_argument("--allow-large", action="store_true", help=ALLOW_LARGE_HELP)
    p.add_argument("--overwrite", action="store_true", help=OVERWRITE_HELP)
    output_flags(p)
    p.set_defaults(func=_cmd_port)

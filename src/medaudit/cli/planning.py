"""``medaudit plan AUDIT_DIR``: how many more cases would resolve each unresolved claim.

Reads a finished audit (``results.json``, via :func:`medaudit.audit.outcome.load_outcome`;
nothing is recomputed) and, for every cell of the portability matrix whose verdict is
``unresolved``, says how many more positives and negatives would resolve it at the
observed effect (:func:`medaudit.blocks.planning.plan_claims`).  Without ``--out`` the
table is printed as Markdown; ``--out FILE.csv`` writes it at full precision, ``--out
FILE.md`` as Markdown.  A folder that is not a readable audit gives one line and exit
code 2.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from medaudit.io.output import FileKind

__all__ = ["register", "plan_table", "markdown", "is_plan_file", "PLAN_FILE"]

#: the first line of the Markdown plan
TITLE = "# Cases to resolve the unresolved claims"
#: columns every plan CSV medaudit writes has (its header starts with the first)
_PLAN_HEAD = ("claim_id", "status", "resolves_to", "additional_pos", "additional_neg")

#: columns of the Markdown table (the CSV has them all)
SHOWN = ("claim_id", "claim", "change", "changed_to", "cohort", "criterion", "estimate", "ci_low",
         "ci_high", "claim_value", "n_pos", "n_neg", "status", "resolves_to", "additional_pos",
         "additional_neg", "exact_additional")


#: the columns of SHOWN that count cases
_COUNTS = ("additional_pos", "additional_neg", "exact_additional")


def plan_table(directory: Path, *, power: float | None):
    """The plan of the audit in ``directory`` (a MedauditError naming it when unreadable)."""
    from medaudit.audit.outcome import load_outcome
    from medaudit.blocks.planning import plan_claims
    from medaudit.exceptions import MedauditError

    if not (directory / "results.json").is_file():
        raise MedauditError(f"{str(directory)!r} is not a medaudit audit (no results.json); point "
                            "at a folder written by `medaudit audit SPEC.yaml --out DIR`.")
    # load_outcome refuses a damaged or edited results.json in one line naming it
    outcome = load_outcome(directory)
    return plan_claims(outcome.claims, outcome.results, outcome.spec.study(), power=power,
                       confidence_level=outcome.spec.confidence_level)


def markdown(table, *, power: float | None) -> str:
    """The plan as a Markdown page (rounded for reading; the CSV keeps full precision)."""
    from medaudit.report.format import fmt_cell, md_table

    head = [TITLE, "",
            "At the observed effect, the half-width of each interval shrinking as 1/sqrt(n) with "
            "the class mix kept; " + ("the expected interval just excludes the claimed value."
                                      if power is None else
                                      f"a {power:g} chance that the interval excludes the claimed "
                                      "value.") + " additional_pos / additional_neg: cases beyond "
            "the audit's own (n_pos, n_neg).", ""]
    if table.empty:
        return "\n".join(head + ["No claim of this audit is unresolved.", ""])
    shown = table[[c for c in SHOWN if c in table.columns]]
    # case counts read as counts ("+226", not "226.000"): shown as the n_ columns are
    text = shown.apply(lambda col: [fmt_cell(v, "n_" + col.name if col.name in _COUNTS
                                             else col.name)[0] for v in col])
    return "\n".join(head + md_table(text) + [""])


def is_plan_file(path: Path) -> bool:
    """Whether ``path`` is a plan medaudit wrote: the Markdown title, or the CSV header's columns."""
    if path.suffix.lower() == ".md":
        return _first_line(path) == TITLE
    head = _first_line(path).split(",")
    return head[0] == _PLAN_HEAD[0] and set(_PLAN_HEAD) <= set(head)


def _first_line(path: Path) -> str:
    try:
        with open(path, "rb") as fh:
            return fh.read(4096).split(b"\n", 1)[0].decode("utf-8", "replace").rstrip("\r")
    except OSError:
        return ""


#: what ``medaudit plan DIR --out FILE --overwrite`` may replace
PLAN_FILE = FileKind("a plan file medaudit wrote (`medaudit plan --out`)", is_plan_file)


def _cmd_plan(args: argparse.Namespace) -> int:
    from medaudit.blocks.planning import check_plan_power
    from medaudit.exceptions import MedauditError
    from medaudit.io.output import atomic_write_bytes, check_output_file, recorded_inputs, write_csv

    power = check_plan_power(args.power, name="--power")
    directory = Path(args.audit_dir)
    out = None if args.out is None else Path(args.out).expanduser()
    if out is not None:
        if out.suffix.lower() not in (".csv", ".md"):
            raise MedauditError(f"--out {str(out)!r}: give a .csv or a .md file name.")
        # before reading the audit: never over its results, its inputs or a file of the user's
        paths, digests = recorded_inputs(directory)
        check_output_file(out, inputs={"audit": directory / "results.json", **paths},
                          overwrite=args.overwrite, kind=PLAN_FILE, digests=digests)
    table = plan_table(directory, power=power)
    if out is None:
        print(markdown(table, power=power), end="")
        return 0
    if out.suffix.lower() == ".csv":
        write_csv(table, out)
    else:
        atomic_write_bytes(out, markdown(table, power=power).encode("utf-8"))
    if not args.quiet:
        n = int((table["status"] == "unresolved").sum()) if len(table) else 0
        print(f"wrote {out} ({len(table)} unresolved claim cell(s), {n} with a number of cases)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit plan`` to the sub-command parser ``sub``."""
    from medaudit.cli._help import examples, output_flags

    p = sub.add_parser(
        "plan", help="cases needed to resolve each unresolved claim of a finished audit",
        description="For each claim a finished audit left unresolved (its interval spans the\n"
                    "claimed value), the number of cases a new study needs for the interval to\n"
                    "exclude the value with probability --power; printed as Markdown or written\n"
                    "to --out.",
        epilog=examples(("medaudit plan audit/", "print the table"),
                        ("medaudit plan audit/ --power 0.9 --out plan.csv", "at 90 % power, as CSV")))
    p.add_argument("audit_dir", help="output directory of `medaudit audit`")
    p.add_argument("--power", type=float, default=0.8,
                   help="chance that the resolved interval excludes the claimed value, in [0.5, "
                        "1) (default 0.8; 0.5 asks for the expected interval to just exclude it)")
    p.add_argument("--out", default=None, help="write the table here (.csv full precision, .md "
                                               "Markdown) instead of printing Markdown")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out, but only a plan file medaudit wrote; never an "
                        "input of the audit or a file of yours")
    output_flags(p)
    p.set_defaults(func=_cmd_plan)

"""``medaudit claims export AUDIT_DIR [--out FILE]``: the claims file a model developer publishes.

Reads a finished audit (its ``results.json``; nothing is recomputed) and writes the
versioned claims file of :mod:`medaudit.io.claimsfile` (``docs/claims-file.md``), validated
against ``docs/claims.schema.json`` before it is written.  The default file lies *beside*
the audit folder (``audit/`` gives ``audit.claims.json``), never inside it: the folder is
a finished output whose bytes a rerun reproduces.  The name must end in ``.json``.  An
existing file is replaced only with ``--overwrite``, and only when it is a claims file
medaudit wrote (:data:`medaudit.io.claimsfile.CLAIMS_FILE`); never an input of the source
audit.
"""

from __future__ import annotations

import argparse
from pathlib import Path

__all__ = ["register", "default_claims_path"]


def default_claims_path(source: Path) -> Path:
    """``DIR.claims.json`` beside the audit folder ``DIR`` (or beside the folder of a results.json).

    Examples
    --------
    >>> default_claims_path(Path("runs/audit")).as_posix()
    'runs/audit.claims.json'
    >>> default_claims_path(Path("runs/audit/results.json")).as_posix()
    'runs/audit.claims.json'
    """
    folder = source.parent if source.name == "results.json" else source
    folder = Path(folder.resolve().name) if folder.name in ("", ".", "..") else folder
    return folder.with_name(folder.name + ".claims.json")


def _cmd_export(args: argparse.Namespace) -> int:
    from medaudit._words import plural
    from medaudit.exceptions import MedauditError
    from medaudit.io.claimsfile import CLAIMS_FILE, export_claims, require_claims, write_claims_file
    from medaudit.io.output import check_output_file, recorded_inputs

    source = Path(args.audit_dir)
    out = Path(args.out).expanduser() if args.out is not None else default_claims_path(source)
    folder = source.parent if source.name == "results.json" else source
    if out.suffix.lower() != ".json":
        raise MedauditError(f"--out {str(out)!r}: a claims file is JSON; give a name ending in "
                            ".json (e.g. model.claims.json).")
    # refuse an existing file that is not a claims file medaudit wrote, an input of the source
    # audit, or a file inside the audit folder, before reading anything
    paths, digests = recorded_inputs(folder)
    check_output_file(out, inputs={"audit": folder, **paths}, overwrite=args.overwrite,
                      kind=CLAIMS_FILE, digests=digests)
    doc = export_claims(source)
    require_claims(doc, folder / "results.json")
    write_claims_file(doc, out)
    if not args.quiet:
        print(f"wrote {out} ({plural(len(doc['claims']), 'claim')}, schema {doc['schema_version']}, "
              f"sha256 of the source tables {doc['content_hash']['value'][:12]}…)")
    return 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit claims export`` to the sub-command parser ``sub``."""
    from medaudit.cli._help import CommandParser, examples, output_flags

    p = sub.add_parser(
        "claims", help="export the claims of a finished audit as a versioned claims file",
        description="Work with claims files (docs/claims-file.md): the claims of a finished audit,\n"
                    "with their E, thresholds as numbers, intervals and design, that a model\n"
                    "developer publishes and a receiving site checks with `medaudit port`.",
        epilog=examples(("medaudit claims export audit/", "write audit.claims.json beside audit/"),
                        ("medaudit claims export audit/ --out model.claims.json --overwrite",
                         "write (or replace) model.claims.json")))
    csub = p.add_subparsers(dest="claims_command", required=True, metavar="ACTION",
                            title="actions", parser_class=CommandParser)
    e = csub.add_parser(
        "export", help="write the claims file of a finished audit",
        description="Write the claims file of a finished audit (read from its results.json,\n"
                    "validated against docs/claims.schema.json). Default: DIR.claims.json beside\n"
                    "the audit folder; an existing file is replaced only with --overwrite.",
        epilog=examples(("medaudit claims export audit/", "write audit.claims.json"),
                        ("medaudit claims export audit/results.json --out m.claims.json",
                         "from the results file, to a name of your choice")))
    e.add_argument("audit_dir", help="output directory of `medaudit audit` (or its results.json)")
    e.add_argument("--out", default=None,
                   help="claims file to write (default: DIR.claims.json beside the audit folder; "
                        "never inside it)")
    e.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out, but only a claims file medaudit wrote; never "
                        "an input of the source audit or a file of yours")
    output_flags(e)
    e.set_defaults(func=_cmd_export)

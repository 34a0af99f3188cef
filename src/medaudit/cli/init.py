"""``medaudit init SCORES.csv [--out spec.yaml]``: a commented starter spec inferred from a score table.

The table is read (CSV or Parquet) and checked as ``medaudit audit`` will check it, then
:func:`medaudit.audit.defaults.starter_yaml` writes the spec its columns imply, with a
comment on every key and a header listing what was found (models, prompts, cohorts with
their sizes and classes, negative groups, seeds, soft labels, the score scale,
subgroup-like columns).  ``medaudit audit`` runs the file unchanged.

An existing ``--out`` is never replaced without ``--overwrite``, and then only when it is a
spec ``medaudit init`` wrote (its first line says so; edits made to it are lost with it),
never the score table or a file of the user's (:func:`medaudit.io.output.check_output_file`);
the file is written atomically.
Registered by :func:`medaudit.cli.main.build_parser`.
"""

from __future__ import annotations

import argparse
import os
import shlex
from pathlib import Path

__all__ = ["register", "run_init"]

_SUFFIXES = (".yaml", ".yml")


def _relative(target: Path, start: Path) -> str:
    """``target`` relative to the folder ``start`` (absolute where no relative path exists)."""
    try:
        return Path(os.path.relpath(os.path.abspath(target), os.path.abspath(start))).as_posix()
    except ValueError:  # another drive (Windows): keep the absolute path
        return os.path.abspath(target)


def _audit_name(scores: Path) -> str:
    """The spec's ``name:`` from the table's file name: a control or text-direction character
    (which a file name may hold but a report title may not) becomes ``_``."""
    import re

    from medaudit.io.schema import CONTROL

    return re.sub(CONTROL, "_", scores.stem).strip() or "audit"


def _is_init_spec(path: Path) -> bool:
    from medaudit.io.output import file_starts_with

    # the first line of every starter spec (audit.defaults.starter_yaml)
    return file_starts_with(path, b"# Audit spec for ") and file_starts_with(
        path, b"written by `medaudit init`.", within=8192)


def run_init(scores: str | os.PathLike[str], *, out: str | os.PathLike[str] = "spec.yaml",
             overwrite: bool = False) -> Path:
    """Write the commented starter spec for the score table ``scores`` to ``out``.

    Parameters
    ----------
    scores : path
        A long score table (``.csv`` or ``.parquet``): ``image_id, cohort, model, score,
        label``, optionally ``prompt``, ``negative_group``, ``label_soft``, ``seed``,
        ``patient_id``, ``split`` and any other per-image columns (subgroups such as sex).
    out : path, default="spec.yaml"
        The spec to write (``.yaml`` or ``.yml``); ``scores:`` in it is relative to its folder.
    overwrite : bool, default=False
        Replace an existing ``out`` that ``medaudit init`` wrote (its first line says so; an
        edited starter spec included), never the score table or any other file.

    Returns
    -------
    pathlib.Path
        The file written.

    Raises
    ------
    MedauditError
        ``out`` is not a YAML file name, is the table, a folder or a link, or cannot be
        written; the table cannot be read or fails the ScoreTable checks (the message names
        the file and the row); no cohort has both classes.
    FileExistsError
        ``out`` exists and ``overwrite`` is false.
    """
    from medaudit.audit.defaults import checked_table, starter_yaml
    from medaudit.exceptions import MedauditError
    from medaudit.io.output import FileKind, atomic_write_bytes, check_output_file
    from medaudit.io.tables import read_table

    scores, out = Path(scores), Path(out).expanduser()  # as io.output checks it
    # refuse the table itself, a folder or an existing spec before reading anything
    check_output_file(out, inputs={"score table": scores}, overwrite=overwrite,
                      kind=FileKind("a spec `medaudit init` wrote", _is_init_spec),
                      example_name="spec.yaml")
    if out.suffix.lower() not in _SUFFIXES:
        raise MedauditError(f"--out {str(out)!r} is not a YAML file name; give one ending in .yaml "
                            "(e.g. spec.yaml).")
    table = read_table(scores)
    # described as it is: prompts or none; init has no scale flag, so scores it does not take
    # for logits (none negative) but outside [0, 1] are refused with what to do instead
    valid = checked_table(table, source=str(scores), logits_hint=(
        "Write the spec's `score_scale: logits` by hand (or run `medaudit summarize "
        "--score-scale logits`)"))
    command = f"medaudit audit {shlex.quote(str(out))} --out {shlex.quote(out.stem + '-audit')}"
    text = starter_yaml(valid, scores=_relative(scores, out.parent), source=str(scores),
                        name=_audit_name(scores), command=command)
    out.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(out, text.encode("utf-8"))
    return out


def _cmd_init(args: argparse.Namespace) -> int:
    out = run_init(args.scores, out=args.out, overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {out}: a starter spec for {args.scores} (what was found is listed at its top)\n"
              f"next:  medaudit audit {shlex.quote(str(out))} --out {shlex.quote(out.stem + '-audit')}")
    return 0


_EPILOG = """examples:
  medaudit init scores.csv                       writes spec.yaml here
  medaudit init preds.parquet --out audit.yaml   then: medaudit audit audit.yaml --out report/
"""


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit init`` to the ``medaudit`` parser."""
    p = sub.add_parser(
        "init", help="write a commented starter spec inferred from a score table",
        description="Read a long score table and write the audit spec its columns imply, with a\n"
                    "comment on every key and a header listing what was found; `medaudit audit`\n"
                    "runs it unchanged. Every key is described in docs/spec.md.",
        epilog=_EPILOG, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scores", help="score table (.csv or .parquet): image_id, cohort, model, score, "
                                  "label; optional prompt, negative_group, label_soft, seed, "
                                  "patient_id and subgroup columns such as sex")
    p.add_argument("--out", default="spec.yaml",
                   help="spec file to write (.yaml; default: spec.yaml in the current folder); "
                        "its scores: path is relative to the file's folder")
    p.add_argument("--overwrite", action="store_true",
                   help="replace an existing --out that medaudit init wrote (its first line says "
                        "so; edits you made to it are lost), never the score table or any other "
                        "file")
    p.add_argument("--quiet", action="store_true", help="print nothing on success")
    p.set_defaults(func=_cmd_init, verbose=False)

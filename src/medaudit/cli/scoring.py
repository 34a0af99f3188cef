"""Sub-commands of ``medaudit`` for scoring (registered by :func:`medaudit.cli.main.build_parser`).

``medaudit score MANIFEST --model NAME [--weights PATH] --out FILE`` scores every image
of a manifest (``image_id, path, cohort, label``; paths relative to the manifest) under
the five prompt families of paper 000 and writes a ScoreTable (CSV, or Parquet when FILE
ends in ``.parquet``) plus ``FILE.card.json`` (the ModelCard and run counts), atomically.
Images that cannot be read are listed in ``FILE.failures.csv``; the others are scored and
the exit code is 1.  ``--cache DIR`` makes a killed run resume where it stopped.  The
ScoreTable is written last, so its presence marks a finished run.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
from pathlib import Path
from typing import Any

__all__ = ["register", "run_score", "WEIGHTS_NOTE"]

#: what ``medaudit score --help`` says first (the README says the same about weights)
WEIGHTS_NOTE = """\
Score every image of a manifest (image_id, path, cohort, label; paths relative to it) with a
zero-shot model under the five prompt families of paper 000 and write a ScoreTable (CSV, or
Parquet for .parquet) plus FILE.card.json, atomically.

Weights: with --weights, the model is read from that local snapshot directory or checkpoint
file and nothing is downloaded.  Without --weights, the checkpoint is downloaded from its hub
(Hugging Face): medsiglip and chexficient at their pinned revision, openclip and biomedclip
as open_clip currently serves them (recorded as revision 'unrecorded').  That needs network
access; offline, the command stops with one line naming the checkpoint and asking for
--weights."""


#: the first columns of every ScoreTable `medaudit score` writes
_TABLE_HEAD = ("image_id", "cohort", "model", "prompt", "score", "label")


def _our_table(path: Path) -> bool:
    """Whether ``path`` is a ScoreTable as `medaudit score` writes it (its first columns)."""
    if path.suffix.lower() == ".parquet":
        try:
            import pyarrow.parquet as pq

            names = pq.read_schema(path).names
        except Exception:  # noqa: BLE001 - anything unreadable is not ours
            return False
        return tuple(names[:len(_TABLE_HEAD)]) == _TABLE_HEAD
    try:
        with open(path, "rb") as fh:
            first = fh.readline(4096).rstrip(b"\r\n").split(b",")
    except OSError:
        return False
    return tuple(first[:len(_TABLE_HEAD)]) == tuple(c.encode() for c in _TABLE_HEAD)


def _our_card(path: Path) -> bool:
    from medaudit.io.output import json_object

    return json_object(path, ("card", "n_images", "manifest", "model", "weights")) is not None


def _our_failures(path: Path) -> bool:
    from medaudit.io.output import file_starts_with

    return file_starts_with(path, b"row,image_id,cohort,path,error\n")


def _kinds() -> tuple[Any, Any, Any]:
    from medaudit.io.output import FileKind

    return (FileKind("a ScoreTable `medaudit score` wrote", _our_table),
            FileKind("a model card `medaudit score` wrote", _our_card),
            FileKind("a failure list `medaudit score` wrote", _our_failures))


def _atomic(path: Path, write: Any) -> None:
    """Write via ``write(tmp_path)`` into a sibling temporary file, then rename over ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.tmp-", dir=path.parent)
    os.close(fd)
    try:
        write(Path(tmp))
        os.replace(tmp, path)
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise


def _read_manifest(path: Path, reader: Any) -> Any:
    """``reader(path)`` with a directory or an empty file reported as one clear error."""
    import pandas as pd

    from medaudit.exceptions import SchemaError

    if path.is_dir():
        raise SchemaError(f"manifest {str(path)!r} is a directory; give the manifest CSV file.")
    try:
        return reader(path)
    except pd.errors.EmptyDataError:  # a zero-byte file: pandas' message names no file
        raise SchemaError(f"manifest {str(path)!r} is empty (no header row); give a manifest CSV "
                          "with its header and one row per image.") from None


def run_score(manifest: str | os.PathLike[str], *, model: str, out: str | os.PathLike[str],
              weights: str | None = None, cache: str | None = None, batch_size: int = 32,
              device: str | None = None, families: list[str] | None = None,
              overwrite: bool = False, progress: Any = None) -> Any:
    """Score a manifest and write the ScoreTable, card and failures; returns the ScoringResult."""
    from medaudit.adapters import get_entry, get_families, load_encoder, read_manifest, score_manifest
    from medaudit.exceptions import MedauditError
    from medaudit.io.output import check_output_file, write_json
    from medaudit.io.schema import validate_score_table

    out = Path(out).expanduser()  # the path written is the one io.output checks
    if out.is_dir():
        raise MedauditError(f"--out {str(out)!r} is a directory; give a ScoreTable file name "
                            "(.csv or .parquet).")
    if out.exists() and not overwrite:
        raise FileExistsError(f"output file {str(out)!r} exists; choose another --out or pass "
                              "--overwrite.")
    # the table and the two files beside it may never be (or lie inside) what the run reads,
    # even with --overwrite, and replace only files a `medaudit score` run wrote (the card
    # and failure list of a killed run are replaced without --overwrite: the table, written
    # last, is absent): checked before a model loads or an image is read
    inputs = {"manifest": manifest, "weights": weights, "embedding cache": cache}
    table_kind, card_kind, failures_kind = _kinds()
    for p, kind in ((out, table_kind), (out.with_name(out.name + ".card.json"), card_kind),
                    (out.with_name(out.name + ".failures.csv"), failures_kind)):
        check_output_file(p, inputs=inputs, overwrite=True, kind=kind)
    if out.suffix.lower() not in (".csv", ".parquet"):
        raise MedauditError(f"--out {str(out)!r}: a ScoreTable is written as .csv or .parquet; "
                            "end the file name with one of them.")
    get_entry(model)  # an unknown name fails before any file is read
    chosen = get_families(families)  # so does an unknown prompt family (before the model loads)
    manifest = Path(manifest)
    table = _read_manifest(manifest, read_manifest)
    encoder = load_encoder(model, weights=weights, device=device)
    res = score_manifest(table, encoder, base_dir=manifest.parent, families=chosen,
                         batch_size=batch_size, cache=cache, progress=progress)
    scores = validate_score_table(res.scores, source=f"scores of {manifest}")
    # the ScoreTable is written last: its presence means the card and failure list beside it
    # belong to the same finished run (a killed run leaves no --out and reruns without --overwrite)
    fail = out.with_name(out.name + ".failures.csv")
    if len(res.failures):
        _atomic(fail, lambda p: res.failures.to_csv(p, index=False, lineterminator="\n"))
    elif fail.exists():
        fail.unlink()  # a stale list from an earlier run would misreport this one
    card = out.with_name(out.name + ".card.json")
    payload = {**res.to_dict(), "manifest": str(manifest), "model": model,
               "weights": None if weights is None else str(weights)}
    _atomic(card, lambda p: write_json(p, payload))
    if out.suffix.lower() == ".parquet":
        _atomic(out, lambda p: scores.to_parquet(p, index=False))
    else:
        _atomic(out, lambda p: scores.to_csv(p, index=False, float_format="%.17g",
                                             lineterminator="\n"))
    return res


class _Bar:
    """Images encoded so far: a rich bar on a terminal, plain lines with --verbose, else nothing."""

    def __init__(self, quiet: bool, verbose: bool):
        self.quiet, self.verbose, self.progress, self.task = quiet, verbose, None, None

    def __enter__(self) -> _Bar:
        if not self.quiet and sys.stderr.isatty():
            from rich.progress import BarColumn, MofNCompleteColumn, Progress, TimeElapsedColumn

            self.progress = Progress("[bold]medaudit score[/]", BarColumn(), MofNCompleteColumn(),
                                     TimeElapsedColumn(), transient=False)
            self.progress.__enter__()
            self.task = self.progress.add_task("encoding images", total=None)
        return self

    def __call__(self, done: int, total: int) -> None:
        if self.progress is not None:
            self.progress.update(self.task, completed=done, total=total)
        elif self.verbose and not self.quiet:
            print(f"medaudit: encoded {done}/{total} images", file=sys.stderr, flush=True)

    def __exit__(self, *exc: Any) -> None:
        if self.progress is not None:
            self.progress.__exit__(*exc)


def _cmd_score(args: argparse.Namespace) -> int:
    with _Bar(args.quiet, args.verbose) as bar:
        res = run_score(args.manifest, model=args.model, out=args.out, weights=args.weights,
                        cache=args.cache, batch_size=args.batch_size, device=args.device,
                        families=args.families, overwrite=args.overwrite, progress=bar)
    n_fail = len(res.failures)
    if n_fail:
        print(f"medaudit: {n_fail} of {res.n_images} images could not be scored (listed in "
              f"{args.out}.failures.csv), e.g. {res.failures['path'].iloc[0]}: "
              f"{res.failures['error'].iloc[0]}", file=sys.stderr)
    if not args.quiet:
        print(f"wrote {args.out} ({len(res.scores)} scores: {res.scores['image_id'].nunique()} images x "
              f"{res.scores['prompt'].nunique()} prompt families; {res.n_encoded} encoded, "
              f"{res.n_cached} from cache) and {args.out}.card.json")
    return 1 if n_fail else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``medaudit score`` to the ``medaudit`` parser."""
    from medaudit.cli._help import examples, output_flags

    s = sub.add_parser(
        "score", help="zero-shot TB scores of a manifest's images (paper 000 M0.4-M0.6)",
        description=WEIGHTS_NOTE,
        epilog=examples(("medaudit score manifest.csv --model openclip --weights ckpt/ --out s.csv",
                         "local weights, no network"),
                        ("medaudit score manifest.csv --model medsiglip --out s.parquet",
                         "downloads the pinned revision"),
                        ("medaudit score manifest.csv --model openclip --weights ckpt/ --out s.csv "
                         "--cache cache/", "resumable")))
    s.add_argument("manifest", help="CSV with image_id, path, cohort, label (paths relative to it; "
                                    "a `medaudit manifest` file works: its dataset is the cohort)")
    s.add_argument("--model", required=True,
                   help="registry name: openclip, biomedclip, medsiglip, chexficient")
    s.add_argument("--weights", default=None,
                   help="local snapshot directory or checkpoint file; without it the checkpoint "
                        "is downloaded from its hub (network needed; see above)")
    s.add_argument("--out", required=True, help="ScoreTable file (.csv or .parquet), written atomically")
    s.add_argument("--cache", default=None, help="embedding cache directory (resumable runs)")
    s.add_argument("--batch-size", type=int, default=32, help="images per forward pass (default 32)")
    s.add_argument("--device", default=None, help="torch device (default: cuda when available)")
    s.add_argument("--families", nargs="+", default=None,
                   help="prompt families (default: clinical photo report presence normal)")
    s.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    output_flags(s)
    s.set_defaults(func=_cmd_score)

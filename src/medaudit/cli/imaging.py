"""Sub-commands of ``medaudit`` for imaging (registered by :func:`medaudit.cli.main.build_parser`).

* ``medaudit dicom convert IN OUT`` — DICOM → 8-bit PNG with a sidecar per image (resumable);
  exit code 0 when every file converted, 1 when some could not be (each is listed with the reason),
  2 on bad input;
* ``medaudit manifest DATASET ROOT --out FILE`` — a cohort manifest (CSV + JSON counts);
* ``medaudit overlap MANIFEST... --out DIR`` — the SHA-256 + pHash overlap screen and exclusions.
"""

from __future__ import annotations

import argparse
import dataclasses
import inspect
import os
import sys
from pathlib import Path

__all__ = ["register", "DATASETS"]

#: keys of :data:`medaudit.datasets.manifests.BUILDERS` (kept here so that building the parser does
#: not import pandas; a test keeps the two equal)
DATASETS = ("kermany", "mimic_cxr", "montgomery", "nih_810", "openi", "padchest", "shenzhen", "tbx11k",
            "tbx11k_tb_subset", "vindr_cxr")


def _cmd_dicom_convert(args: argparse.Namespace) -> int:
    from medaudit.cli.progress import audit_progress
    from medaudit.exceptions import MedauditError
    from medaudit.imaging.dicom import convert_folder, list_inputs

    src = Path(args.input)
    if not src.exists():
        raise MedauditError(f"input {str(src)!r} does not exist; give a folder of DICOM files.")
    total = len(list_inputs(src)) if src.is_dir() else 1
    with audit_progress(total, quiet=args.quiet, verbose=args.verbose) as bar:
        report = convert_folder(src, Path(args.output), progress=lambda i, n, name: bar.block(name))
    if not args.quiet or report.failures:
        print(f"converted {len(report.converted)}, skipped {len(report.skipped)} already finished, "
              f"failed {len(report.failures)} (report: {Path(args.output) / 'conversion_report.json'})")
    for source, reason in report.failures:
        print(f"  could not convert {source}: {reason}", file=sys.stderr)
    return 1 if report.failures else 0


def _cmd_manifest(args: argparse.Namespace) -> int:
    from medaudit.datasets.manifests import BUILDERS, build_manifest, write_manifest

    options = {}
    params = inspect.signature(BUILDERS[args.dataset]).parameters if args.dataset in BUILDERS else {}
    for flag, key, value in (("--no-expect-counts", "expect_counts", not args.no_expect_counts),
                             ("--no-require-files", "require_files", not args.no_require_files),
                             ("--n-studies", "n_studies", args.n_studies), ("--seed", "rng", args.seed)):
        given = value is not None and value is not True
        if given and key not in params:
            from medaudit.exceptions import MedauditError

            raise MedauditError(f"option {flag} does not apply to dataset {args.dataset!r}.")
        if given:
            options[key] = value
    from medaudit.datasets.manifests import is_manifest_file
    from medaudit.exceptions import MedauditError
    from medaudit.io.output import FileKind, check_output_file

    if args.out.endswith(("/", os.sep)):
        raise MedauditError(f"--out {args.out!r} names a folder; give the manifest's file name, e.g. "
                            f"{os.path.join(args.out, args.dataset + '.csv')!r}.")
    # the manifest never lands on or inside the dataset it describes, and replaces only one
    # medaudit wrote (its counts file is checked as it is written)
    out = Path(args.out).expanduser()  # the path written is the one io.output checks
    check_output_file(out, inputs={"dataset root": args.root}, overwrite=args.overwrite,
                      kind=FileKind("a manifest medaudit wrote (`medaudit manifest --out`)",
                                    is_manifest_file))
    manifest = build_manifest(args.dataset, args.root, **options)
    write_manifest(manifest, out, overwrite=args.overwrite)
    if not args.quiet:
        print(f"wrote {args.out} ({len(manifest.table)} images of {manifest.dataset})")
        for c in manifest.counts:
            print(f"  {c['step']}: {c['n_before']} -> {c['n_after']}")
    return 0


def _cmd_overlap(args: argparse.Namespace) -> int:
    import pandas as pd

    from medaudit.cli.scoring import _read_manifest
    from medaudit.datasets.manifests import read_manifest
    from medaudit.imaging.overlap import screen_overlap, write_overlap
    from medaudit.io.output import check_output_dir
    from medaudit.io.schema import stack_files

    out = Path(args.out).expanduser()
    check_output_dir(out, inputs={"manifest": [Path(p) for p in args.manifests]},
                     overwrite=args.overwrite)
    def located(p: Path, m: pd.DataFrame) -> pd.DataFrame:
        # a relative image path is relative to its manifest, as `medaudit score` reads it
        # (not to the folder the command happens to run in)
        # (an empty cell stays empty, for the screen to refuse: joined, it would be the
        # manifest's folder)
        return m.assign(path=[q if os.path.isabs(q) or not q.strip() else str(p.parent / q)
                              for q in m["path"].astype(str)])

    read = [(Path(p), _read_manifest(Path(p), read_manifest)) for p in args.manifests]
    # one image listed by two manifests (the same file given twice?): say which
    from medaudit.exceptions import MedauditError

    seen: dict[tuple[str, str], Path] = {}
    for p, m in read:  # read_manifest refused a manifest without these columns
        for key in dict.fromkeys(zip(m["dataset"].astype(str), m["image_id"].astype(str),
                                     strict=True)):
            if key in seen:
                raise MedauditError(f"{str(seen[key])!r} and {str(p)!r} both list image "
                                    f"{key[1]!r} of dataset {key[0]!r}; give each manifest once "
                                    "(an image belongs to one manifest).")
            seen[key] = p
    # stacked so that a message names the file and line of a row
    table = stack_files([located(p, m) for p, m in read], [str(p) for p, _ in read],
                        source="manifests")
    res = screen_overlap(table, max_distance=args.max_distance, group_by=args.group_by)
    # the outputs name each image by the path its manifest gives (relative to the manifest),
    # not as read from the folder the command ran in: the same inputs write the same bytes
    as_given = {(str(d), str(i)): str(q) for _, m in read
                for d, i, q in zip(m["dataset"], m["image_id"], m["path"], strict=True)}

    def restored(t: pd.DataFrame) -> pd.DataFrame:
        if "path" not in t.columns or t.empty:
            return t
        keys = list(zip(t["dataset"].astype(str), t["image_id"].astype(str), strict=True))
        out = t.assign(path=[as_given.get(k, q) for k, q in zip(keys, t["path"], strict=True)])
        if "error" in out.columns:  # a reader's message quotes the path it opened
            out["error"] = [e.replace(str(q), as_given.get(k, str(q))) if isinstance(e, str) else e
                            for k, q, e in zip(keys, t["path"], out["error"], strict=True)]
        return out

    res = dataclasses.replace(res, hashes=restored(res.hashes), excluded=restored(res.excluded))
    write_overlap(res, out, overwrite=args.overwrite)
    unhashed = res.unhashed_message()
    if not args.quiet:
        print(f"wrote {out}/ ({len(res.hashes)} images, {len(res.pairs)} candidate pairs, "
              f"{len(res.excluded)} images excluded; Pillow {res.versions['pillow']}, "
              f"imagehash {res.versions['imagehash']})")
    if unhashed:
        print(f"medaudit: {unhashed}; the full list is in {out / 'overlap.json'}", file=sys.stderr)
    return 1 if unhashed else 0


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``dicom convert``, ``manifest`` and ``overlap`` to the ``medaudit`` parser."""
    from medaudit.cli._help import examples, output_flags

    d = sub.add_parser(
        "dicom", help="DICOM conversion",
        description="DICOM utilities (paper 000 M0.3). `medaudit dicom convert --help` for details.",
        epilog=examples(("medaudit dicom convert dicoms/ pngs/", "convert a folder, resumable"),
                        ("medaudit dicom convert scan.dcm pngs/", "one file")))
    dsub = d.add_subparsers(dest="dicom_command", required=True, metavar="SUBCOMMAND",
                            title="subcommands")
    c = dsub.add_parser(
        "convert", help="convert a folder of DICOM files to 8-bit PNG (resumable)",
        description="Convert DICOM files to 8-bit PNG as paper 000 M0.3: modality LUT, VOI LUT or\n"
                    "window, padding and non-finite pixels excluded, MONOCHROME1 inverted after\n"
                    "VOI; a provenance sidecar per image, no patient-identifying value in any\n"
                    "output. Exit code 1 when some files could not be converted (each is listed).",
        epilog=examples(("medaudit dicom convert dicoms/ pngs/", "mirror dicoms/ as PNG under pngs/"),
                        ("medaudit dicom convert scan.dcm pngs/", "one file")))
    c.add_argument("input", metavar="IN", help="folder of DICOM files (or one file)")
    c.add_argument("output", metavar="OUT", help="output folder (mirrors IN; reruns skip finished files)")
    output_flags(c)
    c.set_defaults(func=_cmd_dicom_convert)

    m = sub.add_parser(
        "manifest", help="build a cohort manifest from a dataset's on-disk layout",
        description="Build a tidy image manifest (image_id, path, cohort, label, ...) of one of the\n"
                    "papers' cohorts from its standard layout, with the counts of every filtering\n"
                    "step (written beside it as JSON); published counts are checked by default.",
        epilog=examples(("medaudit manifest montgomery data/MontgomerySet --out montgomery.csv",
                         "the Montgomery cohort"),
                        ("medaudit manifest shenzhen data/ChinaSet --out s.csv --no-expect-counts",
                         "a subset of the layout (counts not checked)")))
    m.add_argument("dataset", choices=DATASETS, metavar="DATASET", help=f"one of: {', '.join(DATASETS)}")
    m.add_argument("root", metavar="ROOT", help="dataset folder (padchest: its labels CSV; openi: reports)")
    m.add_argument("--out", required=True, help="manifest CSV to write (counts go to .json beside it)")
    m.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    m.add_argument("--no-expect-counts", action="store_true", help="do not check the published counts")
    m.add_argument("--no-require-files", action="store_true", help="do not require image files to exist")
    m.add_argument("--n-studies", type=int, default=None, help="paper 002 corpora: studies to sample")
    m.add_argument("--seed", type=int, default=None, help="paper 002 corpora: sampling seed (default 42)")
    output_flags(m)
    m.set_defaults(func=_cmd_manifest)

    o = sub.add_parser(
        "overlap", help="SHA-256 + pHash overlap screen across manifests",
        description="Screen images of several manifests for exact (SHA-256) and near (64-bit pHash,\n"
                    "Hamming distance <= --max-distance) duplicates across datasets; writes the\n"
                    "candidate pairs and a role-preserving exclusion list (paper 000 M0.13).",
        epilog=examples(("medaudit overlap train.csv test.csv --out overlap/", "screen two manifests"),
                        ("medaudit overlap *.csv --out overlap/ --max-distance 2", "a stricter screen")))
    o.add_argument("manifests", nargs="+", metavar="MANIFEST",
                   help="manifest CSV files (image paths relative to their manifest)")
    o.add_argument("--out", required=True, help="output directory (written atomically)")
    o.add_argument("--max-distance", type=int, default=4, help="largest Hamming distance (default 4)")
    o.add_argument("--group-by", default="dataset", help="column whose values must differ (default dataset)")
    o.add_argument("--overwrite", action="store_true", help="replace an existing --out")
    output_flags(o)
    o.set_defaults(func=_cmd_overlap)

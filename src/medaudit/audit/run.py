"""``medaudit audit``: run the blocks a spec names, build claims, write every output atomically."""

from __future__ import annotations

import dataclasses
import hashlib
import json
import logging
import os
import pickle
import shutil
import tempfile
from pathlib import Path
from typing import Any

from medaudit import progress
from medaudit._versions import AUDIT_MODULES
from medaudit._versions import versions as _versions
from medaudit.audit.claims import build_claims
from medaudit.audit.context import build_context
from medaudit.audit.outcome import AuditOutcome, load_outcome, results_text, write_results
from medaudit.audit.spec import AuditSpec, load_spec
from medaudit.blocks import BLOCKS
from medaudit.blocks.block import BlockResult
from medaudit.blocks.context import AuditContext
from medaudit.blocks.rows import stamp_seed
from medaudit.exceptions import MedauditError
from medaudit.io.limits import check_resampling_budget
from medaudit.io.output import atomic_directory, atomic_write_bytes
from medaudit.io.schema import describe

__all__ = ["run_blocks", "run_block", "run_audit", "audit", "versions", "AuditOutcome",
           "write_outcome", "load_outcome", "checkpoint_folder", "interrupted"]

log = logging.getLogger("medaudit")


def versions() -> dict[str, str]:
    """Versions of everything that can move an audit's numbers (recorded in results.json)."""
    return _versions(*AUDIT_MODULES)


def run_block(spec: AuditSpec, name: str, ctx: AuditContext) -> BlockResult:
    """Run block ``name`` of ``spec`` on ``ctx``; its own provenance travels with its tables."""
    block = BLOCKS[name]
    config = spec.block_config(name)
    reason = block.skip(ctx, config)
    if reason is not None:  # the report says why the block did not run; no empty tables
        return BlockResult(name=name, tables={}, notes=(f"Did not run: {reason}.",),
                           provenance={"skipped": reason})
    res = block.run(ctx, config)
    # a table without rows is not written at all (one rule for every block): a header-only
    # or one-byte CSV tells a reader nothing and some readers cannot open it; the run seed
    # is stamped here, once, on every row a block left without a seed of its own
    own_seeds = {t.name for t in block.tables if not t.run_seed}
    res = dataclasses.replace(res, tables={k: v if k in own_seeds else stamp_seed(v, ctx.seed)
                                           for k, v in res.tables.items() if len(v)})
    own = block.provenance(ctx, config)
    return dataclasses.replace(res, provenance={**own, **res.provenance}) if own else res


def run_blocks(spec: AuditSpec, ctx: AuditContext, *, checkpoints: Path | None = None
               ) -> dict[str, BlockResult]:
    """Run the spec's blocks in the spec's order; each block is pure (tables in, tables out).

    With ``checkpoints`` (a folder that belongs to this spec and these inputs, see
    :func:`checkpoint_folder`), each finished block's result is saved there and a block
    whose result is already there is read back instead of run: a killed audit rerun with
    the same command resumes where it stopped, with byte-identical outputs.
    """
    results: dict[str, BlockResult] = {}
    for name in spec.blocks:
        progress.block(name)
        saved = None if checkpoints is None else checkpoints / f"{name}.pickle"
        if saved is not None and saved.is_file():
            log.info("block %s: read from the checkpoint of an interrupted run", name)
            results[name] = pickle.loads(saved.read_bytes())
            continue
        log.info("running block %s", name)
        results[name] = run_block(spec, name, ctx)
        if saved is not None:
            atomic_write_bytes(saved, pickle.dumps(results[name], protocol=5))
    skipped = {n: r.provenance["skipped"] for n, r in results.items() if "skipped" in r.provenance}
    if results and len(skipped) == len(results):
        # an audit in which no block ran would "succeed" with an empty report (exit 0)
        why = "; ".join(f"{n}: {reason}" for n, reason in skipped.items())
        raise MedauditError(f"no block of this audit could run on its inputs ({why}); give what "
                            "the block needs or list other blocks in `blocks:` (nothing was "
                            "written).")
    return results


def _checkpoint_key(spec: AuditSpec, inputs: dict[str, Any]) -> str:
    """What a block result depends on: the spec, the inputs (their hashes) and the versions."""
    text = json.dumps({"spec": spec.model_dump(mode="json", exclude={"execution"}),
                       "inputs": inputs, "versions": versions()}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:20]


_CHECKPOINT_MARK = b'{"tool": "medaudit", "kind": "block checkpoints"}\n'


def checkpoint_folder(out: str | Path) -> Path:
    """Where block results of a run writing ``out`` are kept until it finishes (beside it).

    Raises
    ------
    OutputPathError
        Something of the user's already has that name (a file, a link, or a folder that is
        not medaudit's checkpoints): the run would fill it and then delete it.
    """
    from medaudit.io.output import MARKER, OutputPathError

    out = Path(out)
    root = out.parent / f".{out.name}.resume"
    if root.is_symlink() or (root.exists() and not (
            root.is_dir() and (root / MARKER).is_file() and not (root / MARKER).is_symlink()
            and (root / MARKER).read_bytes() == _CHECKPOINT_MARK)):
        raise OutputPathError(
            f"{str(root)!r} exists and is not medaudit's checkpoint folder: a run writing "
            f"{str(out)!r} keeps its block checkpoints there and removes the folder when it "
            "finishes, so medaudit will not use it. Move or rename it, or choose another --out "
            "(nothing was written).")
    return root


def interrupted(out: str | Path) -> bool:
    """Whether ``out`` was written by a run that was killed before it cleaned up.

    The checkpoints beside a medaudit output folder mean its last run did not finish
    (it may have been killed between writing the folder and removing them): the same
    command may then replace that folder without ``--overwrite``.
    """
    from medaudit.io.output import is_medaudit_output

    out = Path(out)
    return checkpoint_folder(out).is_dir() and out.is_dir() and is_medaudit_output(out)


def already_written(spec: AuditSpec, base_dir: str | Path, out: str | Path) -> str | None:
    """The run id when ``out`` is already the finished output of this spec and these inputs.

    A run killed after its output was complete and its checkpoints removed (the process
    was still exiting) leaves exactly what an uninterrupted run writes; the same command
    again then has nothing to do, and says so instead of refusing the folder.  Only a
    complete medaudit folder whose marker carries the run id of ``spec`` on the inputs as
    they are now counts: any other existing folder is refused as before.

    Raises
    ------
    OutputPathError
        The marker carries this run id but the folder is not what that run wrote: a file
        of its manifest is missing or changed (up to five named; ``--overwrite`` rebuilds
        it), or the marker keeps no manifest to check it against (an earlier medaudit's).
    """
    from medaudit.io.output import OutputPathError, _read_marker, changed_files, named_paths

    out = Path(out)
    if not out.is_dir() or out.is_symlink() or interrupted(out):
        return None
    marker = _read_marker(out)
    if marker is None or marker.get("state") is not None or not marker.get("run_id"):
        return None
    try:
        ctx, inputs, spec = build_context(spec, base_dir)
    except Exception:  # the run itself reports a bad input with its own message
        return None
    rid = _run_id(spec.model_dump(mode="json", exclude={"execution"}), inputs)
    if rid != marker["run_id"]:
        return None
    # the same run, but only the files as it wrote them make the folder its finished output
    changed = changed_files(out)
    if changed is None:
        raise OutputPathError(
            f"{str(out)!r} holds an earlier medaudit's output of this spec, whose "
            ".medaudit-output does not list the files it wrote, so medaudit cannot check that it "
            "is complete; move anything you want to keep out of it and delete the folder, or "
            "choose another --out.")
    if changed:
        raise OutputPathError(
            f"{str(out)!r} is the output of this spec and these inputs, but it is incomplete or "
            f"changed: {named_paths(changed)} missing or not as medaudit wrote them; pass --overwrite "
            "to rebuild it (nothing was written).")
    return rid


def _checkpoints(root: Path, key: str) -> Path:
    """The folder of this run's key under ``root``; checkpoints of any other key are stale."""
    from medaudit.io.output import MARKER

    if not root.exists():
        # made whole, marker inside, then renamed into place: a run killed here leaves either
        # no folder or one that checkpoint_folder recognises, never one it must refuse
        from medaudit.io.output import OutputPathError

        try:
            root.parent.mkdir(parents=True, exist_ok=True)
            tmp = Path(tempfile.mkdtemp(prefix=f"{root.name}.tmp-", dir=root.parent))
        except OSError as exc:  # /proc, a read-only mount: one line naming the place
            raise OutputPathError(
                f"cannot write in {str(root.parent)!r}, where --out goes ({exc.strerror}); "
                "choose another --out (nothing was written).") from None
        try:
            (tmp / MARKER).write_bytes(_CHECKPOINT_MARK)
            os.rename(tmp, root)
        except OSError:
            shutil.rmtree(tmp, ignore_errors=True)
            if not root.is_dir():  # not another run of ours that got there first
                raise
    for old in root.iterdir():
        if old.is_dir() and old.name != key:  # another spec or other inputs: never reused
            shutil.rmtree(old, ignore_errors=True)
    (root / key).mkdir(exist_ok=True)
    return root / key


def _provenance(spec: AuditSpec, ctx: AuditContext, inputs: dict[str, Any]) -> dict[str, Any]:
    return {
        "spec": spec.model_dump(mode="json"),
        "inputs": inputs,
        "cohorts": describe(ctx.scores),
        "versions": versions(),
        "seed": spec.seed,
        "seed_derivation": "per cell: SeedSequence([seed, sha256(key part)[:4] ...])",
        "n_resamples": spec.n_resamples,
        "n_permutations": spec.n_permutations,
        "confidence_level": spec.confidence_level,
        "ci_method": "percentile (numpy linear interpolation), point estimate on the full sample",
        "designs": {c: v.design for c, v in spec.cohorts.items()},
        "multiplicity": {**{name: family for name, b in BLOCKS.items()
                            if (family := b.multiplicity(spec.block_config(name)))},
                         "other": "descriptive (no correction)"},
    }


def audit(spec: AuditSpec, base_dir: str | Path = ".", *, resume: str | Path | None = None,
          table: Any = None) -> AuditOutcome:
    """Run a whole audit in memory (progress goes to the :mod:`medaudit.progress` listener).

    ``resume``: a folder for block checkpoints (:func:`checkpoint_folder` of the output);
    checkpoints written there for the same spec, inputs and versions are read back instead
    of recomputed.  ``table``: the score table in memory (``scores: "<DataFrame>"``).
    """
    from medaudit.backends import make_backend

    ctx, inputs, spec = build_context(spec, base_dir, table=table)
    # the table is read, so the cost of B is known: refuse an absurd one before computing
    check_resampling_budget(max(len(ctx.scores), 1), spec.n_resamples, allow_large=spec.allow_large)
    saved = None if resume is None else _checkpoints(Path(resume), _checkpoint_key(spec, inputs))
    backend = make_backend(spec.execution)
    try:
        # where cells ran goes to the log only: results.json is the same on every backend
        log.info("execution backend: %s", backend.describe())
        results = run_blocks(spec, dataclasses.replace(ctx, backend=backend), checkpoints=saved)
    finally:
        backend.close()
    claims = build_claims(results, spec)
    provenance = _provenance(spec, ctx, inputs)
    provenance["spec"].pop("execution", None)
    return AuditOutcome(spec, results, claims, provenance)


def run_id(outcome: AuditOutcome) -> str:
    """A deterministic id of a run: the hash of its spec and inputs (reruns stay identical)."""
    return _run_id(outcome.provenance.get("spec"), outcome.provenance.get("inputs"))


def _run_id(spec: Any, inputs: Any) -> str:
    text = json.dumps({"spec": spec, "inputs": inputs}, sort_keys=True, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


def write_outcome(outcome: AuditOutcome, out: str | Path, *, overwrite: bool = False,
                  inputs: Any = ()) -> Path:
    """Write tables (CSV + Parquet), results.json, summary.md, report.html and figures atomically.

    The report and figures are rendered from the ``results.json`` just written (via
    :func:`load_outcome`), so ``medaudit report DIR`` reproduces them byte for byte.
    ``out`` may not be, contain or lie inside any of ``inputs`` (see
    :func:`medaudit.io.output.check_output_dir`), and an existing ``out`` is replaced only
    when medaudit wrote it.
    """
    from medaudit.report.html import start_figures, write_report
    from medaudit.report.summary import audit_summary

    out = Path(out).expanduser()
    with atomic_directory(out, overwrite=overwrite, inputs=inputs, run_id=run_id(outcome)) as tmp:
        # the outcome as load_outcome(tmp) will read it, from the results.json text itself
        text, loaded = results_text(outcome)
        # the figures are drawn by worker processes while the tables, results.json,
        # summary.md and the page's tables are written here (each figure is a pure function
        # of the tables, drawn whole by one process: the same bytes)
        drawing = start_figures(loaded)
        try:
            write_results(outcome, tmp, text=text)
            (tmp / "summary.md").write_text(audit_summary(outcome), encoding="utf-8")
        except BaseException:
            getattr(drawing, "close", lambda: None)()
            raise
        write_report(loaded, tmp, figures=drawing)
    return out


def run_audit(spec_path: str | Path, out: str | Path, *, overwrite: bool = False) -> AuditOutcome:
    """Load ``spec_path``, run it, and write ``out``; nothing is written if anything fails."""
    from medaudit.audit.context import spec_inputs
    from medaudit.io.output import check_output_dir

    spec, base = load_spec(spec_path)
    inputs = spec_inputs(spec, base, spec_path)
    if not overwrite and already_written(spec, base, out):
        return load_outcome(out)  # a finished run of this very spec: nothing to redo
    overwrite = overwrite or interrupted(out)
    check_output_dir(out, inputs=inputs, overwrite=overwrite)  # before minutes of computation
    resume = checkpoint_folder(out)
    try:
        outcome = audit(spec, base, resume=resume)
        write_outcome(outcome, out, overwrite=overwrite, inputs=inputs)
    except Exception:  # an error, not an interruption: nothing is left behind
        shutil.rmtree(resume, ignore_errors=True)
        raise
    shutil.rmtree(resume, ignore_errors=True)  # finished: no checkpoint survives
    return outcome

"""Output folders and files: nothing a user owns is replaced, and a failed run leaves nothing.

The output directory contract
-----------------------------
* A run writes into a temporary sibling folder ``.DIR.tmp-PID-XXXXXXXX`` that is renamed to
  ``DIR`` only when the run succeeds; a failed run removes it, so nothing half-done appears.
* Every output folder medaudit creates carries a marker file :data:`MARKER`
  (``.medaudit-output``: the tool, its version, the caller's run id and the manifest, every
  folder and file written there with its size and SHA-256; deterministic, so two identical
  runs give byte-identical folders, and no other file changes with it).  A folder directly
  inside a marked folder (``DIR/figures``) belongs to that output and needs no marker of its
  own: replacing it updates the manifest of the folder above (:func:`record_written`).
* ``overwrite=True`` replaces only a folder that carries the marker and holds nothing but
  what its manifest lists (or one that is empty).  Refused, with one line and nothing touched
  (:class:`OutputPathError`): an ``out`` that is, contains or is inside an input of the run, a
  plain file, a symbolic link, the current directory (or a folder containing it), a folder
  without the marker that is not empty, a marked folder holding files medaudit did not write
  there (:func:`foreign_files` names up to five), a marked folder whose marker keeps no
  manifest (written before manifests existed: medaudit cannot tell its files from the user's,
  so it replaces none of them), a folder under a regular file or in an unwritable place.
  :func:`check_output_dir` runs these checks alone, touching nothing, so a command can call
  it before minutes of computation; :func:`atomic_directory` runs them again before it
  creates anything and once more before the final swap.
* :func:`changed_files` compares a folder with its manifest (missing or altered files), so a
  command never takes a damaged folder for its finished output.
* A single output file (``--out FILE``) that exists is replaced only with ``overwrite=True``
  and, when the caller names a :class:`FileKind`, only when its content shows medaudit wrote
  a file of that kind; never when it is an input (by path, or by the SHA-256 an audit's
  provenance records: :func:`recorded_inputs`).
* Temporary folders of a killed run (``.DIR.tmp-*`` and ``.DIR.old-*`` carrying the marker,
  whose process is gone) are removed by the next run for the same ``DIR``; a live run's
  temporary folder is left alone.
* A full disk (or quota) is reported with the path being written, after the partial output is
  removed.
* Folders and files are created with the user's umask (``tempfile.mkdtemp``/``mkstemp`` would
  make them 0700/0600 whatever the umask).

CSV files
---------
:func:`write_csv` writes floats with the shortest representation that reads back to the same
number (``repr``: ``0.95``, not ``0.94999999999999996``), NaN as an empty cell and infinities as
``inf``/``-inf``, and keeps spreadsheets from evaluating text (see :func:`neutralise_formulas`).
"""

from __future__ import annotations

import contextlib
import errno
import glob
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import socket
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path
from typing import Any, NamedTuple

from medaudit.exceptions import MedauditError
from medaudit.io.messages import quote

__all__ = ["MARKER", "OutputPathError", "FileKind", "check_output_dir", "check_not_audit",
           "check_output_file", "check_out_name",
           "atomic_directory", "atomic_write_bytes", "write_json", "write_csv", "neutralise_formulas",
           "file_sha256", "is_medaudit_output", "foreign_files", "changed_files", "record_written",
           "recorded_inputs", "file_starts_with", "named_paths", "remove_stale_temps",
           "atomic_write_temps", "default_file_mode",
           "check_results_unchanged", "json_object"]

#: name of the marker file in every output folder medaudit creates
MARKER = ".medaudit-output"
_FULL = (errno.ENOSPC, errno.EDQUOT)
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}$")
#: the most of a marker that is read: its manifest lists every file (about 120 bytes each)
_MARKER_LIMIT = 64 << 20
#: how many paths a message names
_NAMED = 5


class OutputPathError(MedauditError, OSError):
    """An output path medaudit refuses (nothing was touched) or could not write (path named)."""


# --------------------------------------------------------------------------- helpers

def _umask() -> int:
    """The process umask, read without changing it where the system allows."""
    try:
        with open("/proc/self/status", encoding="ascii") as fh:
            for line in fh:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    old = os.umask(0o022)  # no way to read it without setting it elsewhere
    os.umask(old)
    return old


def default_file_mode() -> int:
    """The mode a new file gets under the current umask (``0o666 & ~umask``).

    For a temporary file made with ``tempfile.mkstemp`` (always 0600): ``os.fchmod(fd,
    default_file_mode())`` gives the output file the permissions the user expects.
    """
    return 0o666 & ~_umask()


def _real(p: str | os.PathLike[str]) -> Path:
    return Path(os.path.realpath(os.fspath(p)))


def _inside(a: Path, b: Path) -> bool:
    """``a`` lies strictly inside ``b`` (both real paths)."""
    return b in a.parents


def _named_inputs(inputs: Any) -> list[tuple[str, str]]:
    if inputs is None:
        return []
    if isinstance(inputs, (str, os.PathLike)):
        inputs = [inputs]
    if isinstance(inputs, Mapping):
        items = list(inputs.items())
    else:
        items = [x if isinstance(x, tuple) else ("input", x) for x in inputs]
    out = []
    for name, value in items:
        values = value if isinstance(value, (list, tuple)) else [value]
        out += [(str(name), os.fspath(v)) for v in values if v is not None and os.fspath(v) != ""]
    return out


def _read_marker(folder: Path) -> dict[str, Any] | None:
    try:
        with open(folder / MARKER, "rb") as fh:
            data = json.loads(fh.read(_MARKER_LIMIT).decode("utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("medaudit_output") == 1 else None


def _manifest(marker: Mapping[str, Any] | None) -> tuple[dict[str, Any], set[str]] | None:
    """The files and folders a finished marker lists; None for a marker that keeps no manifest."""
    if marker is None or marker.get("state") is not None:
        return None
    files, folders = marker.get("files"), marker.get("folders")
    if not isinstance(files, dict) or not isinstance(folders, list):
        return None
    return files, {str(f) for f in folders}


def _owner(folder: Path) -> tuple[Path, str, dict[str, Any]] | None:
    """The marked folder ``folder`` belongs to, the prefix of its paths there, and the marker."""
    marker = _read_marker(folder)
    if marker is not None:
        return folder, "", marker
    marker = _read_marker(folder.parent)
    if marker is not None:  # DIR/figures belongs to DIR
        return folder.parent, folder.name + "/", marker
    return None


def named_paths(paths: list[str]) -> str:
    """Up to :data:`_NAMED` paths, quoted, and how many more there are."""
    more = len(paths) - _NAMED
    return quote(paths[:_NAMED]) + (f" and {more} more" if more > 0 else "")


def is_medaudit_output(folder: str | os.PathLike[str]) -> bool:
    """Whether ``folder`` is a folder medaudit wrote: it, or the folder holding it, has the marker.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_directory(Path(d) / "out") as tmp:
    ...         _ = (tmp / "a.txt").write_text("x")
    ...     print(is_medaudit_output(Path(d) / "out"), is_medaudit_output(d))
    True False
    """
    folder = Path(folder)
    if not folder.is_dir() or folder.is_symlink():
        return False
    return _read_marker(folder) is not None or _read_marker(folder.parent) is not None


def _marker_bytes(run_id: str | None, **extra: Any) -> bytes:
    from medaudit import __version__

    data = {"medaudit_output": 1, "tool": "medaudit", "version": __version__, "run_id": run_id,
            **extra}
    return _marker_text(data)


def _marker_text(data: Mapping[str, Any]) -> bytes:
    return (json.dumps(data, sort_keys=True) + "\n").encode("utf-8")


def foreign_files(folder: str | os.PathLike[str]) -> list[str] | None:
    """What ``folder`` holds that medaudit did not write there, relative to it and sorted.

    The manifest in the folder's marker (or, for ``DIR/figures``, in the marker of ``DIR``)
    says what medaudit wrote; anything else is the user's: a file or symbolic link it does
    not list, or a folder it does not list (named once, with a final ``/``, not descended).
    Every entry of a folder with no marker is foreign.

    Returns
    -------
    list of str or None
        None when the marker keeps no manifest (an output of a medaudit from before
        manifests, or an unfinished one): what is medaudit's there cannot be told.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_directory(Path(d) / "out") as tmp:
    ...         _ = (tmp / "a.csv").write_text("x")
    ...     _ = (Path(d) / "out" / "notes.txt").write_text("mine")
    ...     print(foreign_files(Path(d) / "out"))
    ['notes.txt']
    """
    folder = Path(folder)
    owner = _owner(folder)
    if owner is None:
        return sorted(e + "/" if (folder / e).is_dir() and not (folder / e).is_symlink() else e
                      for e in os.listdir(folder))
    _root, prefix, marker = owner
    listed = _manifest(marker)
    if listed is None:
        return None
    files, folders = listed
    foreign: list[str] = []
    for root, dirs, names in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        keep = []
        for d in sorted(dirs):
            rel = (rel_root / d).as_posix()
            if os.path.islink(os.path.join(root, d)) or prefix + rel not in folders:
                foreign.append(rel if os.path.islink(os.path.join(root, d)) else rel + "/")
            else:
                keep.append(d)
        dirs[:] = keep  # a folder of the user's is named once, not walked
        for name in names:
            rel = (rel_root / name).as_posix()
            if not prefix and rel == MARKER:
                continue
            if prefix + rel not in files or os.path.islink(os.path.join(root, name)):
                foreign.append(rel)
    return sorted(foreign)


def changed_files(folder: str | os.PathLike[str], only: Sequence[str] | None = None
                  ) -> list[str] | None:
    """What of the manifest of ``folder`` is missing or not as medaudit wrote it (sorted).

    A file counts when it is gone, is no longer a plain file, or differs in size or SHA-256
    from the manifest; a listed folder that is gone is named once (``figures/``) for all it
    held.  ``only``: compare just these listed files (``["results.json"]``), so a caller that
    needs one file does not hash the whole folder.  None when the marker keeps no manifest
    (nothing to compare with).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_directory(Path(d) / "out") as tmp:
    ...         _ = (tmp / "a.csv").write_text("x")
    ...         _ = (tmp / "b.csv").write_text("y")
    ...     Path(d, "out", "a.csv").unlink()
    ...     print(changed_files(Path(d) / "out"))
    ['a.csv']
    """
    folder = Path(folder)
    listed = _manifest(_read_marker(folder))
    if listed is None:
        return None
    files, folders = listed
    if only is not None:
        files = {k: v for k, v in files.items() if k in set(only)}
        folders = {f for f in folders if any(k.startswith(f + "/") for k in files)}
    gone = sorted(f for f in folders if not (folder / f).is_dir() or (folder / f).is_symlink())
    changed = [f + "/" for f in gone if not any(f.startswith(g + "/") for g in gone)]
    for rel, meta in sorted(files.items()):
        if any(rel.startswith(g + "/") for g in gone):
            continue
        p = folder / rel
        try:
            st = p.lstat()
        except OSError:
            changed.append(rel)
            continue
        if (not os.path.isfile(p) or p.is_symlink() or not isinstance(meta, dict)
                or st.st_size != meta.get("bytes") or file_sha256(p) != meta.get("sha256")):
            changed.append(rel)
    return sorted(changed)


def check_results_unchanged(results: str | os.PathLike[str]) -> None:
    """Refuse a ``results.json`` changed since medaudit wrote it (its folder's manifest records
    its size and SHA-256): whatever reads it (the report, a claims file, a port, a plan) would
    present edited numbers as the audit's.  A results.json whose folder keeps no manifest (an
    earlier medaudit's, or one copied elsewhere) cannot be checked and is read as it is.

    Raises
    ------
    SchemaError
        The manifest lists results.json and the file differs from it.
    """
    from medaudit.exceptions import SchemaError

    results = Path(results)
    if results.is_file() and changed_files(results.parent, only=[results.name]):
        raise SchemaError(f"{results}: results.json was changed after medaudit wrote it (its "
                          "size or SHA-256 differs from the record in .medaudit-output), so its "
                          "numbers are not the ones the audit computed. Rerun the audit.")


def record_written(folder: str | os.PathLike[str], paths: list[str]) -> None:
    """Bring the manifest of the finished output ``folder`` up to date for ``paths`` (relative).

    For a command that rewrites part of its own output in place (``medaudit report DIR``
    replaces ``report.html`` and ``figures/``): each path is listed again as it now is on
    disk (a folder with everything under it), or dropped when it is gone.  A folder whose
    marker keeps no manifest, or a run's unfinished folder (its manifest is written when it
    completes), is left as it is.
    """
    folder = Path(folder)
    marker = _read_marker(folder)
    listed = _manifest(marker)
    if marker is None or listed is None:
        return
    files, folders = dict(listed[0]), set(listed[1])
    for rel in paths:
        rel = Path(rel).as_posix()
        for f in [f for f in files if f == rel or f.startswith(rel + "/")]:
            del files[f]
        folders -= {f for f in folders if f == rel or f.startswith(rel + "/")}
        p = folder / rel
        if p.is_dir() and not p.is_symlink():
            sub = _seal(p, sync=False)
            folders |= {rel} | {f"{rel}/{f}" for f in sub["folders"]}
            files.update({f"{rel}/{f}": m for f, m in sub["files"].items()})
        elif p.is_file() and not p.is_symlink():
            files[rel] = _file_entry(p, sync=False)
    atomic_write_bytes(folder / MARKER, _marker_text({**marker, "files": files,
                                                     "folders": sorted(folders)}))


def _nearest_existing(p: Path) -> Path:
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


#: bytes medaudit adds to an output's name for the work files it keeps beside it
#: (``.NAME.tmp-PID-HEX``, ``.NAME.resume.tmp-XXXXXXXX``)
_SIBLING_MARGIN = 32


def _check_name_lengths(real: Path, anc: Path, label: str) -> None:
    """Every folder still to be made, and ``real``'s name with medaudit's work-file suffixes
    around it, fit the file system's limit on one name (255 bytes on most)."""
    try:
        name_max = os.pathconf(anc, "PC_NAME_MAX")
    except (OSError, ValueError, AttributeError):  # no pathconf (Windows) or no answer
        name_max = 255
    try:
        todo = real.relative_to(anc).parts
    except ValueError:
        todo = (real.name,)
    for i, part in enumerate(todo):
        size = len(os.fsencode(part)) + (_SIBLING_MARGIN if i == len(todo) - 1 else 0)
        if size > name_max:
            raise OutputPathError(
                f"{label}: the name {part[:40]!r}... is {len(os.fsencode(part))} bytes long; "
                f"this file system allows {name_max} per name"
                + (f" and medaudit keeps work files named '.NAME.tmp-...' beside it (up to "
                   f"{name_max - _SIBLING_MARGIN} bytes for NAME)" if i == len(todo) - 1 else "")
                + "; choose a shorter --out.")


def check_out_name(out: str | os.PathLike[str]) -> None:
    """Refuse an ``--out`` whose name (or a folder still to be made for it) is longer than
    the file system allows, in one line, before anything stats it (``lstat`` of such a
    path fails with a bare ``[Errno 36] File name too long``)."""
    out = Path(out).absolute()
    _check_name_lengths(out, _nearest_existing(out.parent), f"--out {str(out)!r}")


def _check_writable_place(real: Path, label: str) -> None:
    """The folder that will hold ``real`` exists or can be made, and can be written."""
    anc = _nearest_existing(real.parent)
    if not anc.is_dir():
        raise OutputPathError(f"cannot create {label}: {str(anc)!r} is a file, not a folder; "
                              "choose another --out.")
    if not os.access(anc, os.W_OK | os.X_OK):
        raise OutputPathError(f"cannot write {label}: the folder {str(anc)!r} is not writable "
                              "(permissions or a read-only disk); choose another --out.")


def _check_inputs(real: Path, label: str, inputs: Any, *, folder: bool) -> None:
    for name, p in _named_inputs(inputs):
        rp = _real(p)
        if rp == real or (os.path.exists(real) and os.path.exists(rp)
                          and os.path.samefile(real, rp)):
            raise OutputPathError(f"{label} is the {name} {p!r}, an input of this run; choose "
                                  "another --out.")
        if folder and _inside(rp, real):
            raise OutputPathError(f"{label} contains the {name} {p!r}, an input of this run; "
                                  "choose another --out.")
        if _inside(real, rp) and os.path.isdir(rp):
            raise OutputPathError(f"{label} is inside the {name} folder {p!r}, an input of this "
                                  "run; choose another --out.")


def _out_path(out: Any, noun: str) -> tuple[Path, str, Path]:
    """``out`` as a Path, its label for messages and its real path; refuse empty and symlinks."""
    if out is None or os.fspath(out) == "":
        raise OutputPathError(f"--out is empty; give the {noun} to write.")
    # "~/out" is the user's home, as pandas and the shell read it (a quoted or Python path
    # reaches here unexpanded: it made a folder named "~" in the working one)
    out = Path(out).expanduser()
    label = f"--out {str(out)!r}"
    # first: a name past the file system's limit makes even lstat() fail (ENAMETOOLONG)
    check_out_name(out)
    if out.is_symlink():
        raise OutputPathError(f"{label} is a symbolic link; give the {noun} it points to, or "
                              "another --out.")
    return out, label, _real(out)


def _refuse_foreign(out: Path, label: str) -> None:
    """Refuse to replace ``out`` unless all it holds is what medaudit wrote there (or nothing)."""
    try:
        marked = _owner(out) is not None
        foreign = foreign_files(out)
    except OSError as exc:
        raise OutputPathError(f"cannot read {label}: {exc.strerror}; choose another --out.") from None
    if not marked:
        if foreign:
            raise OutputPathError(
                f"{label} holds files medaudit did not write (e.g. {quote(foreign[:3])}); "
                f"--overwrite replaces only a folder medaudit made (it carries {MARKER}). Choose "
                "another --out or empty that folder.")
        return
    if foreign is None:
        # an output of a medaudit from before manifests: its files cannot be told from the
        # user's, so none is replaced (the user decides what to keep)
        raise OutputPathError(
            f"{label} was written by an earlier medaudit whose {MARKER} does not list the files "
            "it wrote, so --overwrite cannot tell them from files of yours; move anything you "
            "want to keep out of it and delete the folder, or choose another --out.")
    if foreign:
        raise OutputPathError(
            f"{label} holds files medaudit did not write there: {named_paths(foreign)}; --overwrite "
            "replaces only what medaudit wrote. Move them out of the folder, or choose another "
            "--out.")


# --------------------------------------------------------------------------- folders

def check_not_audit(out: str | os.PathLike[str], *, what: str) -> None:
    """Refuse to let a ``what`` run (port, monitor) replace an audit's folder.

    An audit folder is medaudit's, so ``--overwrite`` alone would allow it; but its
    ``results.json`` is where a published claims file is verified against, so a port or a
    monitor written over it destroys the source of the very claims it checked.
    """
    p = Path(out)
    if p.is_dir() and not p.is_symlink() and (p / "results.json").is_file():
        raise OutputPathError(f"--out {str(p)!r} holds an audit (its results.json); a {what} "
                              f"replaces only an earlier {what} output, never an audit, whose "
                              "claims would lose their source. Choose another --out.")


def _refuse_inside_output(real: Path, label: str) -> None:
    """Refuse an output inside a folder medaudit wrote (an audit, a port, ...): that folder's
    manifest would not list it, so medaudit would later call it the user's (an --overwrite
    of that folder refused), or it would replace a file the folder's own run wrote."""
    for parent in real.parents:
        if _read_marker(parent) is not None:
            raise OutputPathError(f"{label} is inside {str(parent)!r}, a folder medaudit wrote "
                                  "(it carries .medaudit-output); medaudit writes there only as "
                                  "the run that made it. Choose a place outside it.")


def check_output_dir(out: str | os.PathLike[str], *, inputs: Any = (), overwrite: bool = False,
                     within_output: bool = False) -> Path:
    """Check that a run may write the folder ``out``; touch nothing.

    Call it before any computation, with every input of the run.

    Parameters
    ----------
    out : path
        The output folder (``--out``).
    inputs : mapping of name to path(s), or iterable of paths
        Everything the run reads (spec, tables, annotations, judgments, manifests, weights,
        the results being re-rendered); names label the messages (``{"score table": p}``).
    overwrite : bool, default=False
        Whether an existing ``out`` may be replaced (only a medaudit output folder can be).
    within_output : bool, default=False
        ``out`` is a part of the medaudit folder holding it (``DIR/figures``, written by the
        report of ``DIR``); otherwise a folder inside a medaudit output is refused.

    Returns
    -------
    Path
        ``out`` with symbolic links resolved.

    Raises
    ------
    OutputPathError
        ``out`` is, contains or is inside an input; is inside a folder medaudit wrote; is a
        file, a symbolic link, the current folder or a folder containing it; holds foreign
        content; or cannot be created/written.
    FileExistsError
        ``out`` exists and ``overwrite`` is false.

    Examples
    --------
    >>> import os, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     _ = Path(d, "precious.txt").write_text("mine")
    ...     try:
    ...         check_output_dir(Path(d, "precious.txt"), overwrite=True)
    ...     except OutputPathError as exc:
    ...         print(str(exc).split(" is ", 1)[1])
    a file, not a folder; medaudit writes a folder there and never replaces a file. Choose another --out.
    """  # noqa: E501
    out, label, real = _out_path(out, "folder")
    cwd = _real(os.getcwd())
    if real == cwd:
        raise OutputPathError(f"{label} is the current folder; medaudit writes into a folder of "
                              "its own. Choose a new folder, e.g. --out results.")
    if _inside(cwd, real):
        raise OutputPathError(f"{label} contains the current folder; choose a new folder for "
                              "the output.")
    _check_inputs(real, label, inputs, folder=True)
    if not within_output:
        _refuse_inside_output(real, label)
    if os.path.lexists(out):
        if not out.is_dir():
            raise OutputPathError(f"{label} is a file, not a folder; medaudit writes a folder "
                                  "there and never replaces a file. Choose another --out.")
        # a folder holding files of the user's is refused with or without --overwrite: say
        # so first, instead of suggesting a flag that would then be refused too
        _refuse_foreign(out, label)
        if not overwrite:
            raise FileExistsError(f"output directory {str(out)!r} exists; choose another --out or "
                                  "pass --overwrite.")
    _check_writable_place(real, label)
    return real


def _pid_alive(pid: int) -> bool:
    if pid == os.getpid():
        return True
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    except OSError:
        return True
    return True


def remove_stale_temps(target: str | os.PathLike[str]) -> list[Path]:
    """Remove the temporary folders a killed run left beside ``target``; return what was removed.

    Only ``.NAME.tmp-PID-XXXXXXXX`` / ``.NAME.old-PID-XXXXXXXX`` folders that carry the marker are
    considered; a ``tmp`` one is removed only when it was made on this host by a process that
    no longer runs (an ``old`` one is always garbage: the run that made it had finished).
    """
    target = Path(target)
    parent = target.parent if str(target.parent) else Path(".")
    removed: list[Path] = []
    try:
        names = os.listdir(parent)
    except OSError:
        return removed
    host = socket.gethostname()
    for entry in names:
        m = _TEMP.match(entry)
        if m is None or m["name"] != target.name:
            continue
        p = parent / entry
        if p.is_symlink() or not p.is_dir() or not (p / MARKER).exists():
            continue
        if m["kind"] == "tmp":
            meta = _read_marker(p) or {}
            if meta.get("host", host) != host or _pid_alive(int(m["pid"])):
                continue
        shutil.rmtree(p, ignore_errors=True)
        removed.append(p)
    return removed


def _sibling(parent: Path, name: str, kind: str) -> Path:
    return parent / f".{name}.{kind}-{os.getpid()}-{secrets.token_hex(4)}"


def _full_disk(where: Path, exc: OSError) -> OutputPathError:
    return OutputPathError(f"no space left on the disk while writing {str(where)!r} "
                           f"({exc.strerror}); nothing was written. Free space or choose "
                           "another --out.")


@contextlib.contextmanager
def atomic_directory(target: str | os.PathLike[str], *, overwrite: bool = False, inputs: Any = (),
                     run_id: str | None = None, within_output: bool = False) -> Iterator[Path]:
    """Yield a temporary folder that becomes ``target`` only if the block succeeds.

    Parameters
    ----------
    target : path
        Final output folder.
    overwrite : bool, default=False
        Replace an existing ``target`` (only a folder medaudit wrote; see the module notes).
    inputs : mapping or iterable of paths, optional
        The run's inputs; ``target`` may not be, contain or lie inside one.
    run_id : str, optional
        Recorded in the marker (keep it deterministic, e.g. a hash of the inputs, so reruns
        stay byte-identical).
    within_output : bool, default=False
        ``target`` is a part of the medaudit folder holding it (``DIR/figures``): see
        :func:`check_output_dir`.

    Raises
    ------
    OutputPathError, FileExistsError
        As :func:`check_output_dir` (before anything is created), or on a full disk.

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     with atomic_directory(Path(d) / "out") as tmp:
    ...         _ = (tmp / "metrics.csv").write_text("a\\n1\\n")
    ...     print(sorted(p.name for p in (Path(d) / "out").iterdir()))
    ['.medaudit-output', 'metrics.csv']
    """
    target = Path(target).expanduser()  # as the check reads it
    check_output_dir(target, inputs=inputs, overwrite=overwrite, within_output=within_output)
    parent = target.parent
    # a folder inside a medaudit output (DIR/figures) belongs to it: no marker of its own
    nested = _read_marker(parent) is not None
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        if exc.errno in _FULL:
            raise _full_disk(target, exc) from None
        raise OutputPathError(f"cannot create the folder {str(parent)!r} for --out: "
                              f"{exc.strerror}.") from None
    remove_stale_temps(target)
    tmp = _sibling(parent, target.name, "tmp")
    try:
        os.mkdir(tmp, 0o777)  # the umask applies (mkdtemp would force 0700)
        # the marker goes in first: a killed run's folder is then recognisable as ours
        (tmp / MARKER).write_bytes(_marker_bytes(run_id, state="incomplete", pid=os.getpid(),
                                                 host=socket.gethostname()))
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno in _FULL:
            raise _full_disk(target, exc) from None
        raise OutputPathError(f"cannot write --out {str(target)!r}: {exc.strerror}.") from None
    try:
        yield tmp
        if nested:
            (tmp / MARKER).unlink()
            _seal(tmp)
        else:
            # the manifest: what --overwrite may replace, and what a finished folder must hold
            (tmp / MARKER).write_bytes(_marker_bytes(run_id, **_seal(tmp)))
        if os.path.lexists(target):
            # the folder may have changed during the run: check again just before the swap
            check_output_dir(target, inputs=inputs, overwrite=overwrite, within_output=within_output)
            old = _sibling(parent, target.name, "old")
            os.replace(target, old)
            try:
                os.replace(tmp, target)
            except OSError:
                os.replace(old, target)  # the previous output back in place: nothing changed
                raise
            shutil.rmtree(old, ignore_errors=True)
            if os.path.lexists(old):  # a read-only folder, another user's files: say so
                warnings.warn(f"the previous output was replaced but could not be deleted; it is "
                              f"kept at {str(old)!r}: remove it yourself.", stacklevel=3)
        else:
            os.replace(tmp, target)
        if nested:  # DIR/figures belongs to DIR: DIR's manifest now lists the new files
            record_written(parent, [target.name])
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if isinstance(exc, OutputPathError):
            raise
        if exc.errno in _FULL:
            raise _full_disk(target, exc) from exc
        name = str(exc.filename or "")
        # an error about another path (an input the caller read inside the block) is not a
        # failure to write the output: it goes on as raised
        writing = (not name or name == str(target) or name.startswith(str(target) + os.sep)
                   or name.startswith(str(parent / f".{target.name}.")))  # tmp-, old- siblings
        if exc.errno is not None and writing:
            # a file over the size limit (EFBIG), a read-only or failing disk: one line, not
            # the bare "[Errno 27] File too large"; a file inside the temporary folder is
            # named where it would have been
            inner = os.path.relpath(name, tmp) if name.startswith(str(tmp) + os.sep) else None
            what = (f"{str(target / inner)!r} of --out {str(target)!r}" if inner
                    else f"--out {str(target)!r}")
            raise OutputPathError(f"could not write {what} ({exc.strerror or exc}); nothing "
                                  "was written.") from exc
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _file_entry(path: Path, *, sync: bool) -> dict[str, Any]:
    """A file's manifest entry (size and SHA-256), fsynced first when ``sync``."""
    h = hashlib.sha256()
    fd = os.open(path, os.O_RDONLY)
    try:
        if sync:
            try:
                os.fsync(fd)
            except OSError:  # a file system without fsync: the rename still follows
                pass
        size = 0
        while chunk := os.read(fd, 1 << 20):
            h.update(chunk)
            size += len(chunk)
    finally:
        os.close(fd)
    return {"bytes": size, "sha256": h.hexdigest()}


def _seal(folder: Path, *, sync: bool = True) -> dict[str, Any]:
    """fsync every file under ``folder`` and list it, with every folder: the manifest.

    The files are synced before the folder is renamed into place; the first fsync flushes
    what all of them hold at once, so this costs about one flush, not one per file (files
    written with ``sync=False`` rely on it).  Paths are relative, with ``/``; the marker at
    the top is not listed.
    """
    files: dict[str, Any] = {}
    folders: list[str] = []
    for root, dirs, names in os.walk(folder):
        rel_root = Path(root).relative_to(folder)
        folders += [(rel_root / d).as_posix() for d in dirs]
        for name in names:
            rel = (rel_root / name).as_posix()
            if rel != MARKER:
                files[rel] = _file_entry(Path(root, name), sync=sync)
    return {"files": dict(sorted(files.items())), "folders": sorted(folders)}


class FileKind(NamedTuple):
    """A kind of single file medaudit writes, and how to recognise one it wrote by its content.

    ``what`` completes "--overwrite replaces only ..." ("an HTML report medaudit wrote");
    ``recognise(path)`` reads the file and says whether medaudit wrote it (a marker it puts
    in it, or the header and keys it writes); it must not raise.
    """

    what: str
    recognise: Callable[[Path], bool]


def file_starts_with(path: Path, *heads: bytes, within: int = 4096) -> bool:
    """Whether the first ``within`` bytes of ``path`` start with, or hold, one of ``heads``.

    A head ending in ``b"\n"`` must start the file (a first line); any other must occur in the
    first ``within`` bytes (a marker in a header).  False for anything unreadable.
    """
    try:
        with open(path, "rb") as fh:
            start = fh.read(within)
    except OSError:
        return False
    return any(start.startswith(h) if h.endswith(b"\n") else h in start for h in heads)


def json_object(path: str | os.PathLike[str], keys: Sequence[str] = ()) -> dict[str, Any] | None:
    """The JSON object in ``path`` when it holds every one of ``keys``, else None (unreadable,
    not JSON, not an object): how medaudit recognises a file of its own before replacing it."""
    try:
        data = json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and set(keys) <= set(data) else None


def recorded_inputs(audit_dir: str | os.PathLike[str]) -> tuple[dict[str, list[Path]], dict[str, str]]:
    """The inputs a finished audit records in ``results.json``: paths by role, and their hashes.

    An output written from an audit (``report --out``, ``plan --out``, ``claims export``)
    may never replace one of them.  Relative paths are read against the folder holding the
    audit folder (where a spec usually lies, beside its output) and against the current
    folder; the SHA-256 values recognise an input wherever it lies, as long as its bytes
    are those the audit read.  The spec itself is recorded by content, not by path: the
    :class:`FileKind` of each command refuses it.  An unreadable ``results.json`` gives
    nothing (the command reading it reports that in its own words).

    Returns
    -------
    paths : dict of str to list of Path
        ``{"audit's score table": [...], "audit's annotations": [...]}``.
    digests : dict of str to str
        SHA-256 hex digest → the role, for every recorded hash.
    """
    folder = Path(audit_dir)
    folder = folder.parent if folder.name == "results.json" and folder.is_file() else folder
    try:
        with open(folder / "results.json", "rb") as fh:
            data = json.loads(fh.read().decode("utf-8"))
        inputs = data["provenance"]["inputs"]
    except (OSError, ValueError, KeyError, TypeError):
        return {}, {}
    paths: dict[str, list[Path]] = {}
    digests: dict[str, str] = {}
    hexdigest = re.compile(r"[0-9a-f]{64}")

    # by the top-level key that holds it (the score table's hash sits beside "scores")
    roles = {"scores": "score table", "sha256": "score table", "scores_wide": "prediction file",
             "annotations": "annotations", "judgments": "judgment table"}

    def role(top: str) -> str:
        return "audit's " + roles.get(top, "input")

    def walk(value: Any, key: str, top: str) -> None:
        if isinstance(value, Mapping):
            for k, v in value.items():
                # {file: sha256} under a "sha256" key (annotation files) holds hashes too
                walk(v, "sha256" if key == "sha256" else str(k), top or str(k))
        elif isinstance(value, list):
            for v in value:
                walk(v, key, top)
        elif isinstance(value, str) and value:
            if key == "sha256" and hexdigest.fullmatch(value):
                digests[value] = role(top)
            elif key in ("scores", "path", "judgments") and not value.startswith(("dataset:", "<")):
                p = Path(value)
                where = [p] if p.is_absolute() else [folder.resolve().parent / p, p]
                paths.setdefault(role(top), []).extend(where)

    walk(inputs, "", "")
    return paths, digests


def check_output_file(path: str | os.PathLike[str], *, inputs: Any = (), overwrite: bool = True,
                      kind: FileKind | None = None, digests: Mapping[str, str] | None = None,
                      example_name: str | None = None) -> Path:
    """Check that a run may write the single file ``path`` (e.g. ``report --out FILE``); touch nothing.

    Refused (:class:`OutputPathError`): ``path`` is an input of the run (by path or as the same
    file, or, with ``digests``, by its SHA-256), lies inside an input folder or inside a folder
    medaudit wrote (an audit, whose manifest would not list it), is a folder or a
    symbolic link, or cannot be written; with ``overwrite=False`` an existing file is a
    ``FileExistsError``; with ``kind`` an existing file is replaced only when
    ``kind.recognise`` finds it is one medaudit wrote of that kind.

    Parameters
    ----------
    path : path
        The file to write (``--out``).
    inputs : mapping of name to path(s), or iterable of paths
        Everything the run reads (as :func:`check_output_dir`).
    overwrite : bool, default=True
        Whether an existing file may be replaced (``--overwrite``).
    kind : FileKind, optional
        What an existing file must be for ``overwrite`` to replace it.
    digests : mapping of str to str, optional
        SHA-256 hex digest → the role of an input (:func:`recorded_inputs`): an existing file
        with one of these contents is that input, wherever it lies.
    example_name : str, optional
        The file name the refusal of a folder suggests inside it (default: ``output`` with
        the folder's suffix, or ``.html``).

    Examples
    --------
    >>> import tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     results = Path(d, "results.json")
    ...     _ = results.write_text("{}")
    ...     try:
    ...         check_output_file(results, inputs={"results": results})
    ...     except OutputPathError as exc:
    ...         print("refused:", "an input of this run" in str(exc))
    refused: True
    """
    path, label, real = _out_path(path, "file")
    _check_inputs(real, label, inputs, folder=False)
    _refuse_inside_output(real, label)
    if os.path.lexists(path):
        if path.is_dir():
            # the example keeps the suffix the user gave (a .yaml spec, a .csv manifest), or
            # is the command's own kind of file (``example_name``: init's spec.yaml)
            example = path / (example_name or "output" + (path.suffix or ".html"))
            raise OutputPathError(f"{label} is a folder; give a file name, e.g. {str(example)!r}.")
        if digests:
            try:
                role = digests.get(file_sha256(path))
            except OSError:
                role = None
            if role is not None:
                raise OutputPathError(f"{label} holds the same bytes as the {role} (its SHA-256 is "
                                      "recorded in results.json): it is an input of the audit, "
                                      "never replaced. Choose another --out.")
        if not overwrite:
            raise FileExistsError(f"{str(path)!r} exists; choose another --out or pass "
                                  "--overwrite.")
        if kind is not None and not kind.recognise(path):
            raise OutputPathError(f"{label} exists and is not {kind.what}; --overwrite replaces "
                                  f"only {kind.what}, never a file of yours. Choose another --out.")
    _check_writable_place(real, label)
    return real


# --------------------------------------------------------------------------- files

def _json_default(obj: Any) -> Any:
    import numpy as np

    if isinstance(obj, np.generic):
        return obj.item()
    if isinstance(obj, np.ndarray):
        return obj.tolist()
    if isinstance(obj, Path):
        return str(obj)
    raise TypeError(f"cannot serialise {type(obj).__name__} to JSON")


def _nan_to_none(obj: Any) -> Any:
    if isinstance(obj, float) and not math.isfinite(obj):
        return None if math.isnan(obj) else ("inf" if obj > 0 else "-inf")
    if isinstance(obj, dict):
        return {str(k): _nan_to_none(v) for k, v in obj.items()}
    if isinstance(obj, (list, tuple)):
        return [_nan_to_none(v) for v in obj]
    return obj


def json_text(data: Any) -> str:
    """The text :func:`write_json` writes for ``data`` (without the final newline).

    Exactly ``json.dumps(x, sort_keys=True, indent=2, allow_nan=False)`` of ``x`` =
    ``data`` after a JSON round trip (numpy values as Python ones) with NaN as null and
    infinities as ``"inf"``/``"-inf"``; built in one pass here, because the standard
    library encodes indented JSON in pure Python, several times slower than this.

    Examples
    --------
    >>> print(json_text({"b": [1, 0.5, float("nan")], "a": {"x": float("inf"), "y": True}}))
    {
      "a": {
        "x": "inf",
        "y": true
      },
      "b": [
        1,
        0.5,
        null
      ]
    }
    """
    plain = json.loads(json.dumps(data, default=_json_default))  # the C encoder and parser
    parts: list[str] = []
    _indented(plain, 0, parts.append)
    return "".join(parts)


def _indented(o: Any, level: int, app: Any) -> None:
    """Append the sorted, 2-space indented JSON of ``o`` (a parsed JSON value)."""
    t = type(o)
    if t is str:
        app(_json_str(o))
    elif t is float:
        # what _nan_to_none makes of non-finite floats; repr is json's float text
        app("null" if o != o else ('"inf"' if o > 0 else '"-inf"') if o in _INFS
            else float.__repr__(o))
    elif t is int:
        app(int.__repr__(o))
    elif o is None:
        app("null")
    elif o is True:
        app("true")
    elif o is False:
        app("false")
    elif t is dict or t is list:
        if not o:
            app("{}" if t is dict else "[]")
            return
        ind = "\n" + "  " * (level + 1)
        sep = "," + ind
        if t is dict:
            app("{" + ind)
            for i, k in enumerate(sorted(o)):
                if i:
                    app(sep)
                app(_json_str(k) + ": ")
                _indented(o[k], level + 1, app)
            app("\n" + "  " * level + "}")
        else:
            app("[" + ind)
            for i, v in enumerate(o):
                if i:
                    app(sep)
                _indented(v, level + 1, app)
            app("\n" + "  " * level + "]")
    else:  # pragma: no cover - json.loads returns nothing else
        raise TypeError(f"cannot serialise {t.__name__} to JSON")


_INFS = (math.inf, -math.inf)


def write_json(path: str | os.PathLike[str], data: Any, *, sync: bool = True) -> None:
    """Write ``data`` as deterministic JSON (sorted keys; NaN → null, inf → "inf").

    ``sync=False``: no fsync of its own (for a file inside a folder that
    :func:`atomic_directory` syncs and renames as a whole)."""
    atomic_write_bytes(path, (json_text(data) + "\n").encode("utf-8"), sync=sync)


def atomic_write_temps(path: str | os.PathLike[str]) -> list[Path]:
    """The temporary files :func:`atomic_write_bytes` (default ``prefix`` and ``suffix``) leaves
    beside ``path`` when its process is killed mid-write: ``.NAME.XXXXXXXX.tmp``, regular files
    only.  A rerun that writes ``path`` again owns them and may remove them."""
    path = Path(path)
    return [p for p in sorted(path.parent.glob(f".{glob.escape(path.name)}.*.tmp"))
            if p.is_file() and not p.is_symlink()]


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, prefix: str | None = None,
                       suffix: str = ".tmp", durable: bool = False, sync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename.

    A reader (or a resumed run) sees the old file or the new one, never half of one.
    A missing parent folder is made (not synced even with ``durable``: a folder a crash
    loses held nothing before).  ``prefix`` names the temporary file (a cache uses it
    to tell a live writer's file from a dead one's); ``durable=True`` also syncs the folder
    so the rename survives a crash.
    The file gets the permissions of the umask (``mkstemp`` alone would make it 0600); a full
    disk is an :class:`OutputPathError` naming ``path``.  ``sync=False`` skips the fsync of
    the file (inside an :func:`atomic_directory`, which syncs its files once, together).
    """
    path = Path(path)
    try:
        # the folder a checked --out names may not exist yet (check_output_file accepts a
        # folder that "exists or can be made"): made here, for every single-file writer
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=prefix or f".{path.name}.", suffix=suffix)
    except OSError as exc:
        if exc.errno in _FULL:
            raise _full_disk(path, exc) from None
        raise
    try:
        os.fchmod(fd, default_file_mode())
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            if sync:
                fh.flush()
                os.fsync(fh.fileno())
        os.replace(tmp, path)
    except OSError as exc:
        Path(tmp).unlink(missing_ok=True)
        if exc.errno in _FULL:
            raise _full_disk(path, exc) from None
        if exc.errno is not None and not isinstance(exc, OutputPathError):
            # a file over the size limit (EFBIG), a failing disk: name the file
            raise OutputPathError(f"could not write {str(path)!r} ({exc.strerror or exc}).") from exc
        raise
    except BaseException:
        Path(tmp).unlink(missing_ok=True)
        raise
    if durable:  # make the rename itself durable (POSIX); not possible on every platform
        try:
            dfd = os.open(path.parent, os.O_RDONLY)
        except OSError:
            return
        try:
            os.fsync(dfd)
        except OSError:
            pass
        finally:
            os.close(dfd)


#: first characters that make a spreadsheet read a cell as a formula (OWASP "CSV injection")
FORMULA_TRIGGERS = ("=", "+", "-", "@", "\t", "\r")
_NUMBER = re.compile(r"[+-]?(\d+(\.\d*)?|\.\d+)([eE][+-]?\d+)?|[+-]?(inf|nan)", re.IGNORECASE)


def _guard(value: Any) -> Any:
    if (isinstance(value, str) and len(value) > 1 and value.startswith(FORMULA_TRIGGERS)
            and not _NUMBER.fullmatch(value)):
        return "'" + value
    return value


def neutralise_formulas(table: Any) -> Any:
    """A copy of ``table`` whose text cannot be evaluated as a spreadsheet formula.

    Rule: in every text column (and in the column names), a value of two or more characters
    that starts with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return and is not a plain
    number gets a leading apostrophe (``=HYPERLINK(...)`` → ``'=HYPERLINK(...)``), which
    spreadsheets show as text.  Numbers (``-0.5``, ``+3``, ``-inf``), single characters
    (``-``) and numeric columns are unchanged.  The CSV is for people; ``results.json`` and the
    Parquet tables keep every value exactly as computed.

    Examples
    --------
    >>> import pandas as pd
    >>> t = neutralise_formulas(pd.DataFrame({"model": ["=1+1", "-0.5", "@SUM(A1)", "ok", "-"],
    ...                                       "score": [0.1, -0.2, 0.3, 0.4, 0.5]}))
    >>> t["model"].tolist()
    ["'=1+1", '-0.5', "'@SUM(A1)", 'ok', '-']
    """
    import pandas as pd

    out = table.copy()
    for col in out.columns:
        s = out[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        if isinstance(s.dtype, pd.CategoricalDtype):
            s = s.astype(object)
        out[col] = s.map(_guard)
    out.columns = [_guard(c) for c in out.columns]
    return out


def csv_text(table: Any) -> str:
    """The text :func:`write_csv` writes for ``table``: ``neutralise_formulas(table)`` as CSV.

    Columns and names with nothing to neutralise are written as they are (no copy of the
    frame); only a column holding a formula-like text is copied, guarded.
    """
    import pandas as pd

    guarded = {}
    for col in table.columns:
        s = table[col]
        if pd.api.types.is_numeric_dtype(s) or pd.api.types.is_bool_dtype(s):
            continue
        if any(_guard(v) is not v for v in s):
            guarded[col] = s.astype(object) if isinstance(s.dtype, pd.CategoricalDtype) else s
    names = [_guard(c) for c in table.columns]
    if not guarded and all(n is c for n, c in zip(names, table.columns, strict=True)):
        return table.to_csv(index=False, lineterminator="\n")
    out = table.copy(deep=False)
    for col, s in guarded.items():
        out[col] = s.map(_guard)
    out.columns = names
    return out.to_csv(index=False, lineterminator="\n")


def write_csv(table: Any, path: str | os.PathLike[str], *, sync: bool = True) -> None:
    """Write a DataFrame as CSV for people: shortest round-trip floats, formulas neutralised.

    Floats are written with Python's ``repr`` (the shortest text that reads back to the same
    float: ``0.95``, ``0.3333333333333333``, ``1e-20``), NaN as an empty cell, infinities as
    ``inf``/``-inf``; text follows :func:`neutralise_formulas`; no index column; ``\\n`` line
    ends; UTF-8.  The file is replaced atomically.

    Examples
    --------
    >>> import pandas as pd, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     write_csv(pd.DataFrame({"model": ["=cmd"], "auroc": [0.95]}), Path(d, "t.csv"))
    ...     print(Path(d, "t.csv").read_text(), end="")
    model,auroc
    '=cmd,0.95
    """
    atomic_write_bytes(path, csv_text(table).encode("utf-8"), sync=sync)


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 of a file's bytes (input provenance)."""
    h = hashlib.sha256()
    with open(path, "rb") as fh:
        for chunk in iter(lambda: fh.read(1 << 20), b""):
            h.update(chunk)
    return h.hexdigest()

"""Output folders and files: nothing a user owns is replaced, and a failed run leaves nothing.

The output directory contract
-----------------------------
* A run writes into a temporary sibling folder ``.DIR.tmp-PID-XXXXXXXX`` that is renamed to
  ``DIR`` only when the run succeeds; a failed run removes it, so nothing half-done appears.
* Every output folder medaudit creates carries a marker file :data:`MARKER`
  (``.medaudit-output``: the tool, its version and the caller's run id; deterministic, so two
  identical runs give byte-identical folders).  A folder directly inside a marked folder
  (``DIR/figures``) belongs to that output and needs no marker of its own.
* ``overwrite=True`` replaces only a folder that carries the marker (or one that is empty).
  Refused, with one line and nothing touched (:class:`OutputPathError`): an ``out`` that is, contains or
  is inside an input of the run, a plain file, a symbolic link, the current directory (or a
  folder containing it), a folder holding anything else, a folder under a regular file or in
  an unwritable place.  :func:`check_output_dir` runs these checks alone, touching nothing, so
  a command can call it before minutes of computation; :func:`atomic_directory` runs them
  again before it creates anything and once more before the final swap.
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
import hashlib
import json
import math
import os
import re
import secrets
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from json.encoder import encode_basestring_ascii as _json_str
from pathlib import Path
from typing import Any

from medaudit.exceptions import MedauditError
from medaudit.io.messages import quote

__all__ = ["MARKER", "OutputPathError", "check_output_dir", "check_output_file", "atomic_directory",
           "atomic_write_bytes", "write_json", "write_csv", "neutralise_formulas", "file_sha256",
           "is_medaudit_output", "remove_stale_temps", "default_file_mode"]

#: name of the marker file in every output folder medaudit creates
MARKER = ".medaudit-output"
_FULL = (errno.ENOSPC, errno.EDQUOT)
_TEMP = re.compile(r"^\.(?P<name>.+)\.(?P<kind>tmp|old)-(?P<pid>\d+)-[0-9a-f]{8}$")


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
        with open(folder / MARKER, encoding="utf-8") as fh:
            data = json.loads(fh.read(4096))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) and data.get("medaudit_output") == 1 else None


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
    return (json.dumps(data, sort_keys=True) + "\n").encode("utf-8")


def _nearest_existing(p: Path) -> Path:
    while not os.path.lexists(p) and p != p.parent:
        p = p.parent
    return p


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
    out = Path(out)
    label = f"--out {str(out)!r}"
    if out.is_symlink():
        raise OutputPathError(f"{label} is a symbolic link; give the {noun} it points to, or "
                              "another --out.")
    return out, label, _real(out)


def _refuse_foreign(out: Path, label: str) -> None:
    if is_medaudit_output(out):
        return
    try:
        entries = sorted(os.listdir(out))
    except OSError as exc:
        raise OutputPathError(f"cannot read {label}: {exc.strerror}; choose another --out.") from None
    if entries:
        raise OutputPathError(
            f"{label} holds files medaudit did not write (e.g. {quote(entries[:3])}); --overwrite "
            f"replaces only a folder medaudit made (it carries {MARKER}). Choose another --out "
            "or empty that folder.")


# --------------------------------------------------------------------------- folders

def check_output_dir(out: str | os.PathLike[str], *, inputs: Any = (), overwrite: bool = False
                     ) -> Path:
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

    Returns
    -------
    Path
        ``out`` with symbolic links resolved.

    Raises
    ------
    OutputPathError
        ``out`` is, contains or is inside an input; is a file, a symbolic link, the current
        folder or a folder containing it; holds foreign content; or cannot be created/written.
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
    if os.path.lexists(out):
        if not out.is_dir():
            raise OutputPathError(f"{label} is a file, not a folder; medaudit writes a folder "
                                  "there and never replaces a file. Choose another --out.")
        if not overwrite:
            raise FileExistsError(f"output directory {str(out)!r} exists; choose another --out or "
                                  "pass --overwrite.")
        _refuse_foreign(out, label)
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
                     run_id: str | None = None) -> Iterator[Path]:
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
    target = Path(target)
    check_output_dir(target, inputs=inputs, overwrite=overwrite)
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
        _sync_files(tmp)
        if nested:
            (tmp / MARKER).unlink()
        else:
            (tmp / MARKER).write_bytes(_marker_bytes(run_id))
        if os.path.lexists(target):
            # the folder may have changed during the run: check again just before the swap
            check_output_dir(target, inputs=inputs, overwrite=overwrite)
            old = _sibling(parent, target.name, "old")
            os.replace(target, old)
            os.replace(tmp, target)
            shutil.rmtree(old, ignore_errors=True)
        else:
            os.replace(tmp, target)
    except OSError as exc:
        shutil.rmtree(tmp, ignore_errors=True)
        if exc.errno in _FULL and not isinstance(exc, OutputPathError):
            raise _full_disk(target, exc) from exc
        raise
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise


def _sync_files(folder: Path) -> None:
    """fsync every file under ``folder`` before it is renamed into place: the first call
    flushes what all of them hold at once, so this costs about one flush, not one per
    file (files written with ``sync=False`` rely on it)."""
    for root, _dirs, files in os.walk(folder):
        for name in files:
            try:
                fd = os.open(os.path.join(root, name), os.O_RDONLY)
            except OSError:  # removed meanwhile, or not ours to open
                continue
            try:
                os.fsync(fd)
            except OSError:
                pass
            finally:
                os.close(fd)


def check_output_file(path: str | os.PathLike[str], *, inputs: Any = (), overwrite: bool = True
                      ) -> Path:
    """Check that a run may write the single file ``path`` (e.g. ``report --out FILE``); touch nothing.

    Refused (:class:`OutputPathError`): ``path`` is an input of the run (by path or as the same
    file), lies inside an input folder, is a folder or a symbolic link, or cannot be written;
    with ``overwrite=False`` an existing file is a ``FileExistsError``.

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
    if os.path.lexists(path):
        if path.is_dir():
            raise OutputPathError(f"{label} is a folder; give a file name, e.g. "
                                  f"{str(path / 'report.html')!r}.")
        if not overwrite:
            raise FileExistsError(f"{str(path)!r} exists; choose another --out or pass "
                                  "--overwrite.")
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


def atomic_write_bytes(path: str | os.PathLike[str], data: bytes, *, prefix: str | None = None,
                       suffix: str = ".tmp", durable: bool = False, sync: bool = True) -> None:
    """Write ``data`` to ``path`` via a temporary file in the same folder and a rename.

    A reader (or a resumed run) sees the old file or the new one, never half of one.
    ``prefix`` names the temporary file (a cache uses it to tell a live writer's file from
    a dead one's); ``durable=True`` also syncs the folder so the rename survives a crash.
    The file gets the permissions of the umask (``mkstemp`` alone would make it 0600); a full
    disk is an :class:`OutputPathError` naming ``path``.  ``sync=False`` skips the fsync of
    the file (inside an :func:`atomic_directory`, which syncs its files once, together).
    """
    path = Path(path)
    try:
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

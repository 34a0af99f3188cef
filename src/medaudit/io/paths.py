"""Input paths checked at the door: one line naming the path for every way a path can be wrong.

``Path.resolve`` raises a bare ``RuntimeError`` on a symbolic-link loop (Python < 3.13) and
``open`` an ``OSError`` whose text does not say which link loops; ``Path.exists`` answers
``False`` for a loop, so "does not exist" would point the user the wrong way.  These helpers
turn each case into a :class:`~medaudit.exceptions.SchemaError` (or ``FileNotFoundError``)
whose message names the path and says what to do.
"""

from __future__ import annotations

import errno
import os
from pathlib import Path

from medaudit.exceptions import SchemaError

__all__ = ["resolve_input", "input_file"]


def _broken_link(path: Path, what: str) -> SchemaError | None:
    if not path.is_symlink():
        return None
    try:
        os.stat(path)
    except OSError as exc:
        if exc.errno == errno.ELOOP:
            return SchemaError(f"{what} {str(path)!r} is a symbolic link loop (it leads back to "
                               "itself); point it at the real file.")
        return SchemaError(f"{what} {str(path)!r} is a symbolic link to "
                           f"{os.readlink(path)!r}, which does not exist.")
    return None


def resolve_input(path: str | os.PathLike[str], *, what: str = "input") -> Path:
    """The absolute, symlink-free form of an input path, or one clear error.

    Parameters
    ----------
    path : path
        What the user gave (a spec entry or a command-line argument).
    what : str, default="input"
        How messages name it (``"score table"``, ``"audit spec"``).

    Raises
    ------
    FileNotFoundError
        Nothing exists at ``path``.
    SchemaError
        ``path`` (or a folder above it) is a symbolic-link loop or a dangling link.

    Examples
    --------
    >>> import pathlib, tempfile
    >>> with tempfile.TemporaryDirectory() as d:
    ...     loop = pathlib.Path(d, "loop")
    ...     loop.symlink_to(loop)
    ...     try:
    ...         resolve_input(loop, what="score table")
    ...     except SchemaError as exc:
    ...         print(str(exc).split("' ", 1)[1])
    is a symbolic link loop (it leads back to itself); point it at the real file.
    """
    path = Path(path)
    bad = _broken_link(path, what)
    if bad is not None:
        raise bad
    try:
        real = path.resolve(strict=True)
    except FileNotFoundError:
        # a relative path is read from the current folder: say where that was
        where = "" if path.is_absolute() else f" (looked for {str(Path.cwd() / path)!r})"
        raise FileNotFoundError(f"{what} {str(path)!r} does not exist{where}.") from None
    except (RuntimeError, OSError) as exc:  # a loop in a folder above the file
        if isinstance(exc, RuntimeError) or getattr(exc, "errno", None) == errno.ELOOP:
            raise SchemaError(f"{what} {str(path)!r} goes through a symbolic link loop; point it "
                              "at the real file.") from None
        raise
    return real


def input_file(path: str | os.PathLike[str], *, what: str = "input", noun: str = "file") -> Path:
    """``path`` as given, after checking that it is an existing regular file (else one clear line).

    ``noun`` completes the "is a folder, not a ..." message (``"table file (.csv or .parquet)"``).
    """
    path = Path(path)
    resolve_input(path, what=what)
    if not path.is_file():
        kind = "a folder" if path.is_dir() else "not a regular file"
        raise SchemaError(f"{what} {str(path)!r} is {kind}, not a {noun}.")
    return path

"""What every YAML spec shares: strict frozen models, the (0, 1) check, loading and errors.

Every spec file the project reads (the audit spec, the training spec) is validated by a
pydantic model built on :class:`Strict` and loaded by :func:`load_yaml_model`, so each
gets the same "did you mean" for unknown keys and the same one-line-per-error report.
"""

from __future__ import annotations

import difflib
import re
import typing
from pathlib import Path
from typing import Any

from pydantic import BaseModel, ConfigDict, ValidationError

from medaudit.exceptions import SchemaError
from medaudit.io.messages import quote

__all__ = ["Strict", "fraction", "format_validation_error", "load_yaml_model", "read_yaml_mapping",
           "validate_model"]


class Strict(BaseModel):
    """Unknown keys are errors (with a suggestion); a validated spec never changes."""

    model_config = ConfigDict(extra="forbid", frozen=True)


def fraction(v: float, name: str) -> float:
    """``v`` as a float strictly between 0 and 1, or a ValueError naming ``name``."""
    if not 0.0 < float(v) < 1.0:
        raise ValueError(f"{name} must lie strictly between 0 and 1; got {v!r}")
    return float(v)


def _model_in(annotation: Any) -> Any:
    """The first pydantic model inside a field annotation (``list[M] | None`` -> ``M``)."""
    if hasattr(annotation, "model_fields"):
        return annotation
    for arg in typing.get_args(annotation):
        if (found := _model_in(arg)) is not None:
            return found
    return None


#: tags of tagged unions start with this mark, so that messages can leave them out of the
#: key path (pydantic puts the tag in an error's location: ``claims.declared.0.level.at_least``)
TAG_MARK = "~"
_TAGGED: dict[str, type[BaseModel]] = {}


def tag(name: str, model: Any = None) -> Any:
    """The pydantic ``Tag`` of a union member ``name`` (marked, see :data:`TAG_MARK`).

    A ``model`` is remembered, so that an unknown key inside that member gets its
    "did you mean" from the member's own keys.
    """
    from pydantic import Tag

    if isinstance(model, type) and issubclass(model, BaseModel):
        _TAGGED[TAG_MARK + name] = model
    return Tag(TAG_MARK + name)


def _is_tag(part: Any) -> bool:
    return isinstance(part, str) and part.startswith(TAG_MARK)


def format_validation_error(exc: ValidationError, source: str, *, root: type[BaseModel],
                            what: str = "audit spec") -> str:
    """One line per pydantic error, naming the key path; unknown keys get a "did you mean".

    ``root`` is the model validated; the suggestion walks its
    field annotations down the error's key path to the sub-model that owns the key.
    """
    lines = []
    for err in exc.errors():
        # a model-level check (a combination of sections) has no key path
        loc = ".".join(str(x) for x in err["loc"] if not _is_tag(x)) or "(whole spec)"
        msg = err["msg"].removeprefix("Value error, ") if err["type"] == "value_error" else err["msg"]
        if err["type"] == "extra_forbidden":
            parent: Any = root
            for part in err["loc"][:-1]:
                if _is_tag(part):  # the member of a tagged union the entry was read as
                    parent = _TAGGED.get(part, parent)
                    continue
                if not isinstance(part, str):  # a list index: the entry is the same model
                    continue
                fld = getattr(parent, "model_fields", {}).get(part)
                parent = _model_in(getattr(fld, "annotation", None)) or parent
            close = difflib.get_close_matches(str(err["loc"][-1]), list(parent.model_fields), n=1)
            msg = "unknown key" + (f"; did you mean {close[0]!r}?" if close else "")
        elif err["type"] == "literal_error" and isinstance(err.get("input"), str):
            # the allowed values are quoted in the message: offer the closest one
            allowed = re.findall(r"'([^']*)'", str((err.get("ctx") or {}).get("expected", "")))
            close = difflib.get_close_matches(err["input"], allowed, n=1)
            if close:
                msg = f"{quote(err['input'])} is not allowed; did you mean {close[0]!r}? ({msg})"
        elif err["type"] == "string_type" and (err.get("input") is None
                                               or isinstance(err.get("input"), (bool, int, float))):
            # YAML read an unquoted no / yes / null / 007 as a boolean, None or a number (or a
            # Python caller passed one): say what was read and how to write text either way
            msg += (f" (YAML read the value as {err.get('input')!r}; if you meant text, quote it, "
                    f"e.g. 'no'; from Python, pass the text: {str(err.get('input'))!r})")
        elif err["type"] in ("list_type", "dict_type") and not isinstance(err.get("input"),
                                                                         (list, dict)):
            # `subgroups: sex` for `subgroups: [sex]`, `cohorts: s1` for a mapping
            msg += f"; got {quote(str(err.get('input')))}" + (
                f": write a list, e.g. [{err.get('input')}]" if err["type"] == "list_type"
                else ": write a mapping (key: value lines under it)")
        lines.append((loc, msg))
    if len(lines) == 1:  # the common case: one problem, one line
        loc, msg = lines[0]
        return f"{source}: {msg}" if loc == "(whole spec)" else f"{source}: {loc}: {msg}"
    return (f"{source}: the {what} is invalid ({len(lines)} problems):\n"
            + "\n".join(f"  - {loc}: {msg}" for loc, msg in lines))


def read_yaml_mapping(path: str | Path, *, what: str) -> dict[str, Any]:
    """Read a YAML file that must hold a mapping; every failure is one line naming the file.

    The hardened loader of :mod:`medaudit.io.yaml` refuses duplicate keys, tags, alias bombs,
    huge values and non-UTF-8 text, each as ``FILE:LINE:COL: what is wrong``.
    """
    from medaudit.io.yaml import load_yaml

    if Path(path).suffix.lower() in _TABLE_SUFFIXES and Path(path).is_file():
        # the commonest first step: the predictions file given where the spec goes
        hint = (f"write a spec for it with `medaudit init {path}` and pass that spec"
                if what == "audit spec" else f"pass the {what} (a YAML file) instead")
        raise SchemaError(f"{str(path)!r} looks like a score table, not a YAML {what}; {hint}.")
    return load_yaml(path, what=what)


_TABLE_SUFFIXES = (".csv", ".tsv", ".parquet", ".pq", ".xlsx")


def validate_model(raw: dict[str, Any], model: type[BaseModel], *, source: str, what: str) -> Any:
    """``model.model_validate(raw)``; an invalid mapping is one error naming ``source``."""
    try:
        return model.model_validate(raw)
    except ValidationError as exc:
        raise SchemaError(format_validation_error(exc, source, root=model, what=what)) from None


def load_yaml_model(path: str | Path, model: type[BaseModel], *, what: str) -> tuple[Any, Path]:
    """Read a YAML mapping and validate it as ``model``; return it and the file's folder.

    Every failure (missing file, malformed YAML, not a mapping, invalid keys or values)
    is one clear error naming the file.
    """
    raw = read_yaml_mapping(path, what=what)
    return validate_model(raw, model, source=str(path), what=what), Path(path).parent

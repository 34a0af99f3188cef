"""The spec reference ``docs/spec.md``, generated from the pydantic models of the audit spec.

Every key of :data:`medaudit.audit.spec.AuditSpec` and of every model nested in it (the
``scores_wide:`` entries, ``cohorts:``, ``annotations:``, ``judgments:``, ...) and every
registered block's section (:data:`medaudit.blocks.BLOCKS`) is listed with its type in
words, its default, its allowed values and what it means.  What a key means comes from
the model itself: pydantic's ``description`` where a field has one, else the ``#:``
comment lines above the field and the ``#`` comment on its line, read from the source
with :mod:`tokenize` and :mod:`ast` (nothing is written twice).  Allowed values come from
``Literal`` types, pydantic's constraints (``ge``, ``min_length``, ...), the seed and
resampling limits of :mod:`medaudit.io.limits`, and validators that call
:func:`medaudit.io.specfile.fraction`.

``python -m medaudit.audit.specdoc > docs/spec.md`` regenerates the page; a test fails when
the committed page differs from :func:`render`.  The output depends only on the code, never
on the machine, the clock or the order of a set.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import io
import re
import sys
import textwrap
import tokenize
import types
import typing
from collections.abc import Iterator
from dataclasses import dataclass
from functools import cache
from typing import Any, Literal

import annotated_types
from pydantic import BaseModel
from pydantic_core import PydanticUndefined

__all__ = ["FieldDoc", "field_comments", "describe_model", "render", "main"]

#: how the page names the command that regenerates it (checked by the test)
COMMAND = "python -m medaudit.audit.specdoc > docs/spec.md"

_WORDS = {str: "text", int: "whole number", float: "number", bool: "true or false",
          type(None): "null", Any: "any value"}
_PLURAL = {"text": "texts", "whole number": "whole numbers", "number": "numbers",
           "true or false": "true/false values", "any value": "values", "choice": "choices"}


@dataclass(frozen=True, slots=True, kw_only=True)
class FieldDoc:
    """One key of a spec section, in words."""

    key: str
    #: the type in words (``"list of texts, or null"``)
    type: str
    #: the default in YAML (``"2026"``, ``"null"``, ``"[]"``), or ``"required"``
    default: str
    #: allowed values and limits in words ("" when any value of the type is allowed)
    allowed: str
    #: what the key means ("" when the code says nothing)
    description: str
    #: the model of a nested section (a section, a list of entries, a mapping of them)
    model: type[BaseModel] | None = None


# ----------------------------------------------------------------------------- comments
def _clean_comment(text: str) -> str:
    text = re.sub(r"\s*#\s*(type:\s*ignore\S*|noqa\S*.*)$", "", text)
    return re.sub(r"^#:?\s?", "", text).rstrip()


@cache
def _class_comments(cls: type) -> dict[str, str]:
    """Field name -> the ``#:`` lines above it and the comment on its line, for one class body."""
    try:
        lines, _ = inspect.getsourcelines(cls)
    except (OSError, TypeError):  # built by create_model: no source of its own
        return {}
    source = textwrap.dedent("".join(lines))
    comments: dict[int, str] = {}
    for tok in tokenize.generate_tokens(io.StringIO(source).readline):
        if tok.type == tokenize.COMMENT:
            comments[tok.start[0]] = tok.string
    text_lines = source.splitlines()
    out: dict[str, str] = {}
    body = ast.parse(source).body[0]
    for node in getattr(body, "body", []):
        if not (isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name)):
            continue
        above = []
        i = node.lineno - 1  # 1-based line above the field
        while i >= 1 and text_lines[i - 1].strip().startswith("#:"):
            above.append(_clean_comment(text_lines[i - 1].strip()))
            i -= 1
        trailing = [_clean_comment(comments[ln]) for ln in range(node.lineno, node.end_lineno + 1)
                    if ln in comments and not text_lines[ln - 1].strip().startswith("#")]
        parts = [" ".join(reversed(above)).strip(), " ".join(t for t in trailing if t).strip()]
        text = "; ".join(p for p in parts if p)
        if text:
            out[node.target.id] = text
    return out


def field_comments(model: type[BaseModel]) -> dict[str, str]:
    """What the source says about each field of ``model``: its ``#:`` lines and line comment.

    The class that declares a field (the first in the method resolution order whose body
    has it) is read, so an inherited field keeps its comment.

    Examples
    --------
    >>> from medaudit.backends import ExecutionSpec
    >>> field_comments(ExecutionSpec)["address"]
    'Ray address ("auto", "ray://host:10001"); None starts a local Ray instance'
    """
    out: dict[str, str] = {}
    for cls in reversed(model.__mro__):
        if isinstance(cls, type) and issubclass(cls, BaseModel) and cls is not BaseModel:
            out.update(_class_comments(cls))
    return {k: out[k] for k in model.model_fields if k in out}


# ----------------------------------------------------------------------------- types in words
def _is_model(a: Any) -> bool:
    return isinstance(a, type) and issubclass(a, BaseModel)


def _models_in(a: Any) -> Iterator[type[BaseModel]]:
    if _is_model(a):
        yield a
    for x in typing.get_args(a):
        yield from _models_in(x)


def _literals(a: Any) -> list[Any]:
    if typing.get_origin(a) is Literal:
        return list(typing.get_args(a))
    return [v for x in typing.get_args(a) for v in _literals(x)]


def _words(a: Any, link: dict[type, str]) -> str:
    """The type ``a`` in words; nested models become links to their section."""
    origin, args = typing.get_origin(a), typing.get_args(a)
    if a in _WORDS:
        return _WORDS[a]
    if origin is typing.Annotated:
        return _words(args[0], link)
    if _is_model(a):
        return f"section ([{a.__name__}](#{link[a]}))" if a in link else "section"
    if origin is Literal:
        return "choice"
    if origin in (typing.Union, types.UnionType):
        parts = [_words(x, link) for x in args if x is not type(None)]
        return " or ".join(dict.fromkeys(parts)) + (", or null" if type(None) in args else "")
    if origin is list:
        inner = args[0] if args else Any
        kinds = list(dict.fromkeys(_models_in(inner)))
        if len(kinds) > 1:  # entries of several kinds (declared claims)
            return "list of entries, each one of " + ", ".join(
                f"[{k.__name__}](#{link[k]})" if k in link else k.__name__ for k in kinds)
        if _is_model(inner):
            return f"list of entries ([{inner.__name__}](#{link[inner]}))" if inner in link \
                else "list of entries"
        w = _words(inner, link)
        return f"list of {_PLURAL.get(w, w)}"
    if origin is dict:
        k, v = args if args else (str, Any)
        if _is_model(v):
            target = f" ([{v.__name__}](#{link[v]}))" if v in link else ""
            return f"mapping of {_key_words(k)} to sections{target}"
        vw = _words(v, link)
        return f"mapping of {_key_words(k)} to {_PLURAL.get(vw, vw)}"
    return getattr(a, "__name__", str(a))


def _key_words(k: Any) -> str:
    return "names" if k is str else _PLURAL.get(_WORDS.get(k, "keys"), "keys")


# ----------------------------------------------------------------------------- allowed values
def _number(v: Any) -> str:
    return f"{v:,}" if isinstance(v, int) and not isinstance(v, bool) else repr(v)


@cache
def _known_validators() -> dict[int, str]:
    """``id`` of the validator of each limit type of :mod:`medaudit.io.limits` -> its rule."""
    from medaudit.io import limits

    rules = {
        limits.Seed: f"0 to {_number(limits.MAX_SEED)}",
        limits.NResamples: f"{_number(limits.MIN_N_RESAMPLES)} to {_number(limits.MAX_N_RESAMPLES)} "
                           "(more with `allow_large: true`)",
        limits.NPermutations: f"{_number(limits.MIN_N_PERMUTATIONS)} to "
                              f"{_number(limits.MAX_N_PERMUTATIONS)} (more with `allow_large: true`)",
    }
    return {id(m): rule for t, rule in rules.items() for m in typing.get_args(t)[1:]}


def _fraction_fields(model: type[BaseModel]) -> set[str]:
    """Fields whose validator calls :func:`~medaudit.io.specfile.fraction` (strictly in (0, 1))."""
    out: set[str] = set()
    for dec in model.__pydantic_decorators__.field_validators.values():
        try:
            src = inspect.getsource(dec.func)
        except (OSError, TypeError):
            continue
        if re.search(r"\bfraction\(", src):
            out.update(dec.info.fields)
    return out


_CONSTRAINTS = ((annotated_types.Gt, "gt", "> {}"), (annotated_types.Ge, "ge", "≥ {}"),
                (annotated_types.Lt, "lt", "< {}"), (annotated_types.Le, "le", "≤ {}"),
                (annotated_types.MinLen, "min_length", "at least {} item(s)"),
                (annotated_types.MaxLen, "max_length", "at most {} item(s)"))


def _allowed(name: str, field: Any, fractions: set[str]) -> str:
    parts = []
    values = list(dict.fromkeys(_literals(field.annotation)))
    if values:
        parts.append(", ".join(_code(_yaml(v)) for v in values))
    known = _known_validators()
    for m in field.metadata:
        if id(m) in known:
            parts.append(known[id(m)])
        for kind, attr, fmt in _CONSTRAINTS:
            if isinstance(m, kind):
                parts.append(fmt.format(_number(getattr(m, attr))))
    if name in fractions:
        parts.append("strictly between 0 and 1")
    return "; ".join(parts)


# ----------------------------------------------------------------------------- defaults
def _yaml(v: Any) -> str:
    """A default as it is written in YAML (flow style; a section as the keys it sets)."""
    from medaudit.audit.defaults import yaml_flow

    if isinstance(v, BaseModel):  # {} unless the default sets keys ({min: 0, max: 1})
        return yaml_flow(v.model_dump(mode="json", exclude_defaults=True))
    return yaml_flow(list(v) if isinstance(v, tuple) else v)


def _default(field: Any) -> str:
    if field.is_required():
        return "required"
    if field.default_factory is not None:
        value = field.default_factory()
    else:
        value = field.default
    if value is PydanticUndefined:
        return "required"
    return _code(_yaml(value))


# ----------------------------------------------------------------------------- text
def _code(text: str) -> str:
    tick = "``" if "`" in text else "`"
    pad = " " if text.startswith("`") or text.endswith("`") else ""
    return f"{tick}{pad}{text}{pad}{tick}"


def _markdown(text: str) -> str:
    """reST of docstrings and comments as Markdown: ``x`` -> `x`, :role:`~a.b` -> `b`."""
    text = re.sub(r":[a-z]+:`~?([^`]+)`",
                  lambda m: f"`{m.group(1).rsplit('.', 1)[-1]}`" if m.group(0).count("~")
                  else f"`{m.group(1)}`", text)
    return re.sub(r"``(.+?)``", r"`\1`", text)


def _cell(text: str) -> str:
    return " ".join(text.split()).replace("|", "\\|")


def _docstring(obj: Any) -> str:
    doc = obj.__dict__.get("__doc__") if isinstance(obj, type) else None
    if not doc:
        return ""
    out, lines, i = [], inspect.cleandoc(doc).splitlines(), 0
    while i < len(lines):  # a reST literal block ("...::" and an indented block) becomes a fence
        line = lines[i]
        if line.rstrip().endswith("::") and i + 1 < len(lines):
            out.append(_markdown(line.rstrip()[:-1]))
            block, i = [], i + 1
            while i < len(lines) and (not lines[i].strip() or lines[i].startswith(" ")):
                block.append(lines[i])
                i += 1
            out += ["", "```yaml", *textwrap.dedent("\n".join(block)).strip("\n").splitlines(), "```",
                    ""]
            continue
        out.append(_markdown(line))
        i += 1
    return "\n".join(out).strip()


# ----------------------------------------------------------------------------- models
def describe_model(model: type[BaseModel], *, link: dict[type, str] | None = None,
                   overrides: dict[str, str] | None = None,
                   fallbacks: dict[str, str] | None = None) -> list[FieldDoc]:
    """Every field of ``model`` in words, in declaration order.

    Parameters
    ----------
    model : pydantic model class
        A spec section.
    link : dict, optional
        Model -> anchor of its section on the page (types name and link them).
    overrides : dict, optional
        Field -> description for fields the source cannot describe (the block sections of
        the composed spec take their block's summary).
    fallbacks : dict, optional
        Field -> description used only where the field has no description, no comment
        and no nested section whose docstring could say it.

    Examples
    --------
    >>> from medaudit.blocks.context import CohortSpec
    >>> d = describe_model(CohortSpec)[0]
    >>> d.key, d.type, d.default, d.allowed
    ('role', 'choice', '`primary`', '`primary`, `source`, `extension`, `descriptive`')
    """
    link = link or {}
    comments = field_comments(model)
    fractions = _fraction_fields(model)
    out = []
    for name, f in model.model_fields.items():
        nested = next(_models_in(f.annotation), None)
        description = (f.description or (overrides or {}).get(name) or comments.get(name)
                       or (_docstring(nested).split("\n\n")[0].rstrip(".") if nested is not None
                           else "")
                       or (fallbacks or {}).get(name, ""))
        out.append(FieldDoc(key=name, type=_words(f.annotation, link), default=_default(f),
                            allowed=_allowed(name, f, fractions), description=_markdown(description),
                            model=nested))
    return out


def _anchor(path: str) -> str:
    return re.sub(r"[^a-z0-9_-]+", "-", path.lower()).strip("-")


def _table(rows: list[FieldDoc]) -> list[str]:
    out = ["| key | type | default | allowed | what it means |", "|---|---|---|---|---|"]
    for r in rows:
        out.append(f"| `{r.key}` | {_cell(r.type)} | {_cell(r.default)} | {_cell(r.allowed)} | "
                   f"{_cell(r.description)} |")
    return out


def _sections(spec: type[BaseModel]) -> list[tuple[str, type[BaseModel]]]:
    """(spec path, model) of every nested section, depth first in field order (each model once)."""
    out: list[tuple[str, type[BaseModel]]] = []
    seen: set[type] = {spec}

    def walk(model: type[BaseModel], prefix: str) -> None:
        for name, f in model.model_fields.items():
            subs = list(dict.fromkeys(_models_in(f.annotation)))
            for sub in subs:
                if sub in seen:
                    continue
                seen.add(sub)
                # a field that takes one of several sections (the kinds of a declared claim)
                # gets one section per kind, named after it
                path = f"{prefix}{name}" + (f"[{sub.__name__}]" if len(subs) > 1 else "")
                out.append((path, sub))
                walk(sub, f"{path}.")

    walk(spec, "")
    return out


# ----------------------------------------------------------------------------- the page
_EXAMPLE_CSV = """\
image_id,cohort,model,score,label
img-0001,site-1,model-a,0.91,1
img-0001,site-1,model-b,0.84,1
img-0002,site-1,model-a,0.12,0
img-0002,site-1,model-b,0.30,0
img-1001,site-2,model-a,0.77,1
img-1001,site-2,model-b,0.58,1
..."""

#: the minimal spec of the page's example (a test validates it)
EXAMPLE_SPEC = """\
name: my-first-audit
scores: scores.csv
cohorts:
  site-1: {}
  site-2: {}
"""


#: what the top-level keys the source leaves without a comment mean (a ``#:`` comment or a
#: pydantic description on the field takes precedence, so these retire as the code says more)
_BASE_FALLBACKS = {
    "name": "the audit's name: the report's title and the name in results.json",
    "score_scale": "what the scores are: probabilities in [0, 1], or logits (raw model outputs; the "
                   "calibration metrics, which need probabilities, are then left out)",
    "primary_prompt": "the prompt whose scores the headline numbers use (`none` for models without "
                      "prompts)",
    "n_resamples": "bootstrap replicates B of every interval (a block with its own `n_resamples` "
                   "uses that)",
    "n_permutations": "permutations of each permutation test (the negative-spectrum block)",
    "confidence_level": "level of every interval",
}


def _intro() -> list[str]:
    return [
        "# The audit spec, key by key",
        "",
        f"<!-- generated by `{COMMAND}` from the pydantic models; do not edit by hand "
        "(tests/audit/test_specdoc.py fails when this page is out of date) -->",
        "",
        "An audit spec is a YAML file: `medaudit audit SPEC.yaml --out DIR` runs it. This page "
        "lists every key it may hold, generated from the code that reads it, so it cannot "
        "drift from what medaudit accepts. Unknown keys are errors (with the closest valid "
        "key suggested), and every cohort, model and prompt the spec names must exist in the "
        "score table.",
        "",
        "## A first audit of your own predictions",
        "",
        "A long CSV with one row per model and image (add a `prompt` column only if your "
        "models take prompts; optional columns are `negative_group`, `label_soft`, `seed`, "
        "`patient_id`, `split`, and any others are kept and listed). Intervals resample "
        "images; where `patient_id` repeats (several images of one patient) the "
        "`discrimination` notes say so, since such intervals can be too narrow: the audit has "
        "no patient-level design yet, and `medaudit.stats` functions take "
        "`design=\"cluster\", cluster=...` for one:",
        "",
        "```csv", *_EXAMPLE_CSV.splitlines(), "```",
        "",
        "and a spec beside it, `spec.yaml`:",
        "",
        "```yaml", *EXAMPLE_SPEC.splitlines(), "```",
        "",
        "Then `medaudit audit spec.yaml --out audit/` writes the report, the tables and "
        "`results.json`. `medaudit init scores.csv` writes a commented starter spec instead, "
        "with what it found in the table (models, cohorts with their sizes, negative groups, "
        "seeds, soft labels, the score scale, subgroup-like columns). Predictions in one "
        "column per model are read with [`scores_wide:`](#scores_wide).",
        "",
        "How to read the tables below: *type* is what YAML value a key takes (a *section* is "
        "a mapping of its own keys; a *choice* is one of the values under *allowed*); "
        "*default* is the value when the key is left out; *required* keys have none.",
    ]


def render() -> str:
    """The whole page ``docs/spec.md`` (Markdown text ending in a newline)."""
    from medaudit.audit.spec import AuditSpec
    from medaudit.blocks import BLOCKS
    from medaudit.blocks.block import INPUTS

    blocks = {b.key(): b for b in BLOCKS.values()}
    sections = _sections(AuditSpec)
    link: dict[type, str] = {}
    for path, model in sections:
        link.setdefault(model, _anchor(path))
    for key in blocks:  # a block's own models are linked to the block's section
        for model in _models_in(AuditSpec.model_fields[key].annotation):
            link.setdefault(model, _anchor(key))
    summaries = {key: f"block `{b.name}`: {b.summary}" if b.summary else f"block `{b.name}`"
                 for key, b in blocks.items()}
    rows = []
    for r in describe_model(AuditSpec, link=link, overrides=summaries, fallbacks=_BASE_FALLBACKS):
        if r.key in blocks:  # several blocks may share a config model: link the block's own key
            kind = "list of entries" if blocks[r.key].many else "section"
            r = dataclasses.replace(r, type=f"{kind} ([{r.key}](#{_anchor(r.key)}))")
        rows.append(r)
    out = _intro() + ["", "## Top-level keys", "", _markdown(_docstring(AuditSpec)), "",
                      *_table(rows)]
    base = [(p, m) for p, m in sections if p.split(".")[0] not in blocks]
    out += ["", "## Sections"]
    for path, model in base:
        out += _section(path, model, link)
    out += ["", "## Block sections", "",
            "One section per registered block (`medaudit.blocks.BLOCKS`), in run order. A block "
            "runs when `blocks:` names it, or, when `blocks:` is left out, when the spec gives "
            "every input it reads."]
    for key, b in blocks.items():
        out += _block(key, b, AuditSpec.model_fields[key].annotation, link, INPUTS)
        for path, model in sections:
            if path.split(".")[0] == key and "." in path:
                out += _section(path, model, link)
    return "\n".join(out).rstrip() + "\n"


def _section(path: str, model: type[BaseModel], link: dict[type, str]) -> list[str]:
    out = ["", f'<a id="{_anchor(path)}"></a>', "", f"### `{path}:`", ""]
    if doc := _docstring(model):
        out += [doc, ""]
    rows = describe_model(model, link=link)
    return out + (_table(rows) if rows else ["No keys."])


def _block(key: str, block: Any, annotation: Any, link: dict[type, str], inputs: dict[str, str]
           ) -> list[str]:
    model = next(_models_in(annotation), None)
    out = ["", f'<a id="{_anchor(key)}"></a>', "", f"### `{key}:` — {block.title}", ""]
    if block.summary:
        out += [_markdown(block.summary[0].upper() + block.summary[1:]) + ".", ""]
    needs = " and ".join(inputs.get(r, r) for r in block.requires)
    out += [f"Reads {needs}. Its tables (in `tables/`, as CSV and Parquet):", ""]
    out += [f"- `tables/{block.name}__{t.name}.csv`: {_markdown(t.description)}" for t in block.tables]
    out.append("")
    if model is None:
        return out + [f"The section is a {_words(annotation, link)}."]
    rows = describe_model(model, link=link)
    if not rows:
        return out + [f"No options yet: leave it out, or write `{key}: {{}}`."]
    if doc := _docstring(model):
        out += [doc, ""]
    if typing.get_origin(annotation) is list:
        out += [f"A list of entries (`{key}: [...]`; default `[]`, none); each entry has:", ""]
    return out + _table(rows)


def main(argv: list[str] | None = None) -> int:
    """Write the page to standard output (``python -m medaudit.audit.specdoc > docs/spec.md``)."""
    sys.stdout.write(render())
    return 0


if __name__ == "__main__":  # pragma: no cover
    sys.exit(main())

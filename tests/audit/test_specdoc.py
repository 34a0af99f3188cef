"""docs/spec.md: generated from the pydantic models, complete, and up to date.

Witnesses: the committed page against :func:`render`; every key of every model reachable from
``AuditSpec`` found by a walk written here (not the generator's); every default read back with
``yaml.safe_load`` (PyYAML, not our writer) and compared with pydantic's default; comments and
allowed values of small models defined in this file, worked by hand.
"""

from __future__ import annotations

import re
import subprocess
import sys
import typing
from pathlib import Path
from typing import Literal

import pytest
import yaml
from pydantic import BaseModel, Field, field_validator

from medaudit.audit.spec import AuditSpec
from medaudit.audit.specdoc import COMMAND, EXAMPLE_SPEC, describe_model, field_comments, render
from medaudit.blocks import BLOCKS
from medaudit.io.limits import NResamples, Seed
from medaudit.io.specfile import Strict, fraction

ROOT = Path(__file__).resolve().parents[2]
PAGE = ROOT / "docs" / "spec.md"


@pytest.fixture(scope="module")
def page() -> str:
    return render()


def test_committed_page_is_up_to_date(page):
    assert PAGE.read_text(encoding="utf-8") == page, (
        f"docs/spec.md is out of date; regenerate it with `{COMMAND}` and commit it")


def test_the_module_command_prints_the_page(page):
    src = str(ROOT / "src")
    env = {"PYTHONPATH": src, "PATH": "/usr/bin:/bin"}
    done = subprocess.run([sys.executable, "-m", "medaudit.audit.specdoc"], capture_output=True,
                          text=True, env=env, check=True, cwd=ROOT)
    assert done.stdout == page and done.stderr == ""


def _models(a) -> list[type[BaseModel]]:
    out = [a] if isinstance(a, type) and issubclass(a, BaseModel) else []
    for x in typing.get_args(a):
        out += _models(x)
    return out


def _walk(model, path="", seen=None):
    """(section path, model) of every model reachable from ``model``, each model once."""
    seen = set() if seen is None else seen
    for name, f in model.model_fields.items():
        subs = list(dict.fromkeys(_models(f.annotation)))
        for sub in subs:
            if sub not in seen:
                seen.add(sub)
                here = f"{path}{name}" + (f"[{sub.__name__}]" if len(subs) > 1 else "")
                yield here, sub
                yield from _walk(sub, f"{here}.", seen)


def _section(page: str, heading: str) -> str:
    """The text of the section whose heading starts with ``### `heading:```."""
    m = re.search(rf"^### `{re.escape(heading)}:`.*?$(.*?)(?=^### |^## |\Z)", page, re.M | re.S)
    assert m, f"no section for {heading!r}"
    return m.group(1)


def _rows(section: str) -> dict[str, list[str]]:
    """key -> [type, default, allowed, description] of a section's table."""
    out = {}
    for line in section.splitlines():
        m = re.match(r"^\| `([^`]+)` \| (.*) \|$", line)
        if m:
            out[m.group(1)] = [c.strip() for c in re.split(r"(?<!\\)\|", m.group(2))]
    return out


def test_every_key_of_every_section_is_listed(page):
    top = _rows(page.split("## Top-level keys", 1)[1].split("## Sections", 1)[0])
    assert list(top) == list(AuditSpec.model_fields)
    blocks = {b.key() for b in BLOCKS.values()}
    walked = list(_walk(AuditSpec))
    assert {p.split(".")[0] for p, _ in walked} >= {"scores_wide", "cohorts", "annotations"}
    for path, model in walked:
        if path in blocks:
            continue  # two blocks may share a config model; checked by key below
        assert list(_rows(_section(page, path))) == list(model.model_fields), path
    for key in blocks:
        sec = _section(page, key)
        fields = _models(AuditSpec.model_fields[key].annotation)[0].model_fields
        assert list(_rows(sec)) == list(fields) or (not fields and "No options yet" in sec), key


def test_sections_follow_the_spec_order(page):
    headings = re.findall(r"^### `([^`]+):`", page, re.M)
    blocks = [b.key() for b in BLOCKS.values()]
    top = [h for h in headings if "." not in h]  # a block's nested models follow its section
    assert top[-len(blocks):] == blocks  # block sections last, in registry order
    assert all(h.split(".")[0] in blocks for h in headings[headings.index(blocks[0]):])
    base = [h for h in headings if h.split(".")[0] not in blocks]
    order = list(AuditSpec.model_fields)
    assert base == sorted(base, key=lambda h: (order.index(h.split(".")[0]), h.count(".")))


def _defaults(model):
    for name, f in model.model_fields.items():
        if f.is_required():
            yield name, None, True
        else:
            yield name, f.default_factory() if f.default_factory is not None else f.default, False


def test_every_default_reads_back_as_pydantic_default(page):
    checked = 0
    sections = [("", AuditSpec)] + [(p, m) for p, m in _walk(AuditSpec)
                                    if p not in {b.key() for b in BLOCKS.values()}]
    for path, model in sections:
        text = page.split("## Top-level keys", 1)[1].split("## Sections")[0] if not path \
            else _section(page, path)
        rows = _rows(text)
        for name, default, required in _defaults(model):
            cell = rows[name][1]
            if required:
                assert cell == "required", (path, name)
                continue
            code = re.fullmatch(r"`(.*)`", cell)
            assert code, (path, name, cell)
            value = yaml.safe_load(code.group(1))
            if isinstance(default, BaseModel):  # a section: the keys its default sets
                assert type(default).model_validate(value) == default, (path, name)
            else:
                assert value == (list(default) if isinstance(default, tuple) else default), (path, name)
            checked += 1
    assert checked > 60


def test_the_minimal_example_is_a_valid_spec_and_the_csv_has_no_prompt(page):
    from medaudit.io.specfile import validate_model
    from medaudit.io.yaml import load_yaml_text

    blocks = re.findall(r"```(\w+)\n(.*?)```", page, re.S)
    csv = next(b for lang, b in blocks if lang == "csv")
    assert csv.splitlines()[0] == "image_id,cohort,model,score,label"
    spec_text = next(b for lang, b in blocks if lang == "yaml")
    assert spec_text == EXAMPLE_SPEC and len(spec_text.splitlines()) == 5
    spec = validate_model(load_yaml_text(spec_text), AuditSpec, source="docs/spec.md", what="audit spec")
    assert list(spec.cohorts) == ["site-1", "site-2"] and spec.scores == "scores.csv"
    cohorts = {line.split(",")[1] for line in csv.splitlines()[1:] if "," in line}
    assert cohorts == set(spec.cohorts)


def test_links_point_at_anchors(page):
    anchors = set(re.findall(r'<a id="([^"]+)"></a>', page))
    links = set(re.findall(r"\]\(#([^)]+)\)", page))
    assert links and links <= anchors


# ----------------------------------------------------------------------- hand-worked models
class _Base(Strict):
    #: inherited, and still described
    inherited: int = 1


class _Toy(_Base):
    """A toy section."""

    #: first line
    #: second line
    multi: str = "x"
    trailing: float | None = None  # said on its line
    # an implementation note, not documentation
    silent: bool = True
    ignored: list[str] = Field(default_factory=list)  # type: ignore[assignment]
    described: int = Field(3, ge=1, description="pydantic's own description wins")  #: not this
    choice: list[Literal["a", "b"]] = Field(default_factory=lambda: ["a"], min_length=1)
    mapping: dict[str, int] = Field(default_factory=dict)
    seed: Seed = 7
    n_resamples: NResamples = 100
    level: float = 0.5

    @field_validator("level")
    @classmethod
    def _level(cls, v: float) -> float:
        return fraction(v, "level")


def test_field_comments_read_the_source():
    assert field_comments(_Toy) == {"inherited": "inherited, and still described",
                                    "multi": "first line second line",
                                    "trailing": "said on its line",
                                    "described": "not this"}


def test_describe_model_worked_by_hand():
    rows = {r.key: r for r in describe_model(_Toy)}
    assert rows["described"].description == "pydantic's own description wins"
    assert rows["described"].allowed == "≥ 1" and rows["described"].default == "`3`"
    assert rows["silent"].description == "" and rows["silent"].type == "true or false"
    assert rows["trailing"].type == "number, or null" and rows["trailing"].default == "`null`"
    assert rows["choice"].type == "list of choices"
    assert rows["choice"].allowed == "`a`, `b`; at least 1 item(s)"
    assert rows["choice"].default == "`[a]`"
    assert rows["mapping"].type == "mapping of names to whole numbers"
    assert rows["seed"].allowed == "0 to 4,294,967,295"
    assert rows["n_resamples"].allowed == "10 to 100,000 (more with `allow_large: true`)"
    assert rows["level"].allowed == "strictly between 0 and 1"
    assert rows["multi"].default == "`x`" and rows["inherited"].default == "`1`"

"""The block registry: every block is complete, the spec and report read it, adding one is cheap."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
import sys
from pathlib import Path

import pandas as pd
import pytest
from pydantic import BaseModel

from medaudit.audit.outcome import AuditOutcome
from medaudit.audit.spec import AuditSpec
from medaudit.blocks import BLOCKS, get_block
from medaudit.blocks.block import INPUTS, Block, BlockConfig, BlockResult
from medaudit.blocks.claimkit import CLAIM_COLUMNS
from medaudit.blocks.rows import E_COLUMNS, PROVENANCE_COLUMNS
from medaudit.exceptions import MedauditError
from medaudit.report import figures as F
from medaudit.report.html import Report
from tests._support import run
from tests.blocks.conftest import small_context

ROOT = Path(__file__).resolve().parents[2]
DOC = ROOT / "docs" / "block-contract.md"


@pytest.mark.parametrize("name", list(BLOCKS))
def test_every_block_declares_its_contract(name):
    b = BLOCKS[name]
    assert isinstance(b, Block) and b.name == name
    assert b.title and b.summary
    assert issubclass(b.config, BlockConfig) and issubclass(b.config, BaseModel)
    assert b.tables and len({t.name for t in b.tables}) == len(b.tables)
    assert set(b.requires) <= set(INPUTS) and b.requires
    # the spec has its section, with its default
    assert b.key() in AuditSpec.model_fields
    assert AuditSpec.model_fields[b.key()].default_factory() == b.default_config()


def test_figures_and_registry_agree():
    """Every figure a block declares is drawn by the report, and every figure belongs to one."""
    drawn = {f.stem: f.block for f in F.FIGURES}
    declared = {f: b.name for b in BLOCKS.values() for f in b.figures}
    assert declared == drawn


def test_every_figure_reads_a_table_its_block_declares():
    """A FigureSpec row names its block's table by the name the block writes it under, and the
    figures are numbered 1, 2, ... in report order (the number is read from the stem)."""
    for f in F.FIGURES:
        assert f.table in {t.name for t in BLOCKS[f.block].tables}, (f.stem, f.table)
    assert [int(f.stem.split("_", 1)[0].removeprefix("fig")) for f in F.FIGURES] == list(
        range(1, len(F.FIGURES) + 1))
    with pytest.raises(AttributeError):
        F.FIGURES[0].table = "other"  # frozen


def test_every_block_has_a_report_section():
    spec = AuditSpec.model_validate({"name": "sections", "simulate": "paper000",
                                     "cohorts": {"c": {}}, "blocks": ["discrimination"]})
    results = {n: BlockResult(name=n, tables={t.name: pd.DataFrame() for t in b.tables},
                              notes=(f"note of {n}",)) for n, b in BLOCKS.items()}
    html = Report(AuditOutcome(spec, results, pd.DataFrame(columns=list(CLAIM_COLUMNS)), {}),
                  figures=[]).render()
    for n, b in BLOCKS.items():
        section = html.split(f'id="block-{n}"')[1].split("</section>")[0]
        assert b.title in section and f"note of {n}" in section


def test_get_block_suggests_the_closest_name():
    assert get_block("prompts") is BLOCKS["prompts"]
    with pytest.raises(MedauditError, match="Did you mean 'spectrum'"):
        get_block("spectrun")


@pytest.fixture(scope="module")
def score_results():
    ctx = small_context(scale=0.03, n_resamples=20, n_permutations=19)
    return {n: run(n, ctx) for n, b in BLOCKS.items() if b.requires == ("scores",)}


def test_score_blocks_write_only_declared_tables_with_their_columns(score_results):
    for name, res in score_results.items():
        declared = {t.name: t for t in BLOCKS[name].tables}
        assert set(res.tables) <= set(declared), name
        for tname, df in res.tables.items():
            if df.empty:
                continue
            schema = declared[tname]
            need = [*E_COLUMNS, *PROVENANCE_COLUMNS] if schema.e_columns else []
            missing = [c for c in (*need, *schema.columns) if c not in df.columns]
            assert not missing, f"{name}.{tname} lacks {missing}"


def _doc_code() -> list[str]:
    return re.findall(r"```python\n(.*?)```", DOC.read_text(encoding="utf-8"), flags=re.S)


def test_adding_a_block_is_one_module_and_one_registry_line(tmp_path):
    """The walk-through of docs/block-contract.md, done for real on a copy of the package.

    Files touched: the new module and blocks/__init__.py — nothing in the spec, the runner,
    the claims builder or the report.
    """
    module, import_line, entry = _doc_code()
    src = tmp_path / "src"
    shutil.copytree(ROOT / "src" / "medaudit", src / "medaudit",
                    ignore=shutil.ignore_patterns("__pycache__"))
    before = {p.relative_to(src): p.read_bytes() for p in src.rglob("*.py")}
    (src / "medaudit" / "blocks" / "score_summary.py").write_text(module, encoding="utf-8")
    init = src / "medaudit" / "blocks" / "__init__.py"
    text = init.read_text(encoding="utf-8")
    text = text.replace("from medaudit.blocks.spectrum import Spectrum\n",
                        "from medaudit.blocks.spectrum import Spectrum\n" + import_line, 1)
    text = text.replace("    Agreement(),\n", "    Agreement(),\n" + entry, 1)
    init.write_text(text, encoding="utf-8")
    after = {p.relative_to(src): p.read_bytes() for p in src.rglob("*.py")}
    touched = sorted(str(k) for k in after if before.get(k) != after[k])
    assert touched == ["medaudit/blocks/__init__.py", "medaudit/blocks/score_summary.py"]

    spec = tmp_path / "spec.yaml"
    spec.write_text("name: tiny\nsimulate: paper000\nsimulate_scale: 0.02\nprimary_prompt: clinical\n"
                    "n_resamples: 20\ncohorts: {montgomery: {}, shenzhen: {}}\n"
                    "blocks: [discrimination, score_summary]\n"
                    "score_summary: {statistic: median}\n", encoding="utf-8")
    out = tmp_path / "out"
    env = {"PYTHONPATH": str(src), "PATH": "/usr/bin:/bin"}
    res = subprocess.run([sys.executable, "-m", "medaudit", "audit", str(spec), "--out", str(out),
                          "--quiet"], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert res.returncode == 0, res.stderr
    summary = pd.read_csv(out / "tables" / "score_summary__summary.csv")
    assert set(summary["criterion"]) == {"median_score[positives]", "median_score[negatives]"}
    assert len(summary) == 2 * 4 * 2  # cohorts x models x classes
    data = json.loads((out / "results.json").read_text())
    assert data["provenance"]["spec"]["score_summary"] == {"statistic": "median"}
    html = (out / "report.html").read_text(encoding="utf-8")
    assert 'id="block-score_summary"' in html and "Score summary" in html
    # a typo in the new section gets the suggestion every section gets
    spec.write_text(spec.read_text().replace("statistic: median", "statistc: median"))
    res = subprocess.run([sys.executable, "-m", "medaudit", "audit", str(spec), "--out",
                          str(tmp_path / "o2"), "--quiet"], capture_output=True, text=True, env=env,
                         cwd=tmp_path)
    assert res.returncode == 2 and "did you mean 'statistic'" in res.stderr

"""Every Python example of README.md runs as pasted (in a fresh namespace, in an empty folder)."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
import yaml

README = Path(__file__).resolve().parents[1] / "README.md"
BLOCKS = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)
YAML = re.findall(r"```yaml\n(.*?)```", README.read_text(encoding="utf-8"), flags=re.S)


def test_the_readme_has_python_examples():
    assert len(BLOCKS) >= 2


@pytest.mark.parametrize("code", BLOCKS, ids=[f"python-{i}" for i in range(len(BLOCKS))])
def test_each_python_example_runs_as_pasted(code, tmp_path, monkeypatch, capsys):
    monkeypatch.chdir(tmp_path)
    exec(compile(code, str(README), "exec"), {"__name__": "__readme__"})  # noqa: S102
    assert capsys.readouterr().out  # each example prints what it shows


def test_the_claims_example_validates():
    from medaudit.audit.spec import AuditSpec

    claims = next(yaml.safe_load(y) for y in YAML if "declared:" in y)
    spec = AuditSpec.model_validate({"scores": "scores.csv", **claims})
    kinds = [type(c).__name__ for c in spec.claims.declared]
    assert kinds == ["LevelClaim", "ComparisonClaim", "ComparisonClaim", "LevelClaim",
                     "OperatingPointClaim", "OperatingPointClaim"]
    assert spec.blocks[0] == "claims"

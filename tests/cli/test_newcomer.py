"""The whole path a newcomer takes (issue 16, "How it must be shown").

A CSV written here (two models, two sites, no prompt column, a sex column), ``medaudit
init``, a spec with three declared claims added to what init wrote (a level claim, a
comparison, an operating point), ``medaudit audit``; then: the matrix rows of those claims
and their verdicts against intervals computed here with the public single-purpose
functions of ``medaudit.stats`` on the claims' own generators (and point estimates from
scikit-learn / numpy counts), the report opened in headless Chromium with the declared
claims first, and the same audit through ``medaudit.audit(df, ...)`` giving identical tables.
"""

from __future__ import annotations

import json
import shutil

import pandas as pd
import pytest
import yaml
from sklearn.metrics import roc_auc_score

import medaudit
import medaudit.exceptions
from medaudit.blocks.claims import ClaimsConfig, claim_key
from medaudit.blocks.context import cell_rng
from medaudit.cli.main import main
from medaudit.io.output import write_csv
from medaudit.stats import bootstrap_ci, paired_bootstrap
from tests.cli.test_init import _table

B = 400
SEED = 2026
CLAIMS = [
    {"model": "a", "metric": "roc_auc", "at_least": 0.75, "cohort": "site-1"},
    {"model": "a", "than": "b", "metric": "roc_auc", "cohort": "site-1"},
    {"model": "a", "sensitivity_at_least": 0.7, "specificity_at_least": 0.6, "threshold": 0.45,
     "cohort": "site-2"},
]


def _run(argv, capsys):
    rc = main([str(a) for a in argv])
    cap = capsys.readouterr()
    return rc, cap.out, cap.err.strip()


@pytest.fixture(scope="module")
def newcomer(tmp_path_factory):
    root = tmp_path_factory.mktemp("newcomer")
    df = _table()  # no prompt column; a sex column
    assert "prompt" not in df.columns and "sex" in df.columns
    (root / "data").mkdir()
    df.to_csv(root / "data" / "scores.csv", index=False)
    return root, df


@pytest.fixture(scope="module")
def audited(newcomer):
    root, df = newcomer
    spec_path = root / "spec.yaml"
    assert main(["init", str(root / "data" / "scores.csv"), "--out", str(spec_path)]) == 0
    spec = yaml.safe_load(spec_path.read_text(encoding="utf-8"))
    spec.update(n_resamples=B, seed=SEED, subgroups=["sex"], claims={"declared": CLAIMS})
    spec_path.write_text(yaml.safe_dump(spec, sort_keys=False), encoding="utf-8")
    out = root / "audit"
    assert main(["audit", str(spec_path), "--out", str(out), "--quiet"]) == 0
    return root, df, spec, out


def _key(cid):
    """The key part of a declared claim's cells: what the claim states, hashed."""
    return claim_key(ClaimsConfig.model_validate(CLAIMS).declared[int(cid[1:]) - 1])


def _claim(matrix, cid, change="at E"):
    r = matrix[(matrix["claim_id"] == cid) & (matrix["change"] == change)]
    assert len(r) >= 1, (cid, change)
    return r


def test_declared_claims_come_first_with_verdicts_from_their_own_intervals(audited):
    _, df, _, out = audited
    m = pd.read_csv(out / "portability.csv")
    assert list(dict.fromkeys(m["claim_id"]))[:3] == ["D01", "D02", "D03"]
    assert set(m["origin"]) == {"declared"}  # generated claims are off once claims are declared

    def data(cohort, model):
        g = df[(df["cohort"] == cohort) & (df["model"] == model)].sort_values("image_id")
        return g["label"].to_numpy(), g["score"].to_numpy()

    # D01: a's AUROC >= 0.75 on site-1
    y, sa = data("site-1", "a")
    r = _claim(m, "D01").iloc[0]
    ref = bootstrap_ci(y, sa, metric="roc_auc", n_resamples=B, rng=cell_rng(SEED, "claims", _key("D01"),
                                                                            "at E", ""))
    assert r["estimate"] == pytest.approx(roc_auc_score(y, sa), abs=1e-12)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((ref.ci_low, ref.ci_high), abs=1e-12)
    assert r["verdict"] == ("holds" if ref.ci_low >= 0.75 else "does not hold"
                            if ref.ci_high < 0.75 else "unresolved")
    # D02: a better than b on AUROC (site-1), the paired difference
    _, sb = data("site-1", "b")
    r = _claim(m, "D02").iloc[0]
    d = paired_bootstrap(y, {"a": sa, "b": sb}, metrics=["roc_auc"], contrasts=[("a", "b")],
                         n_resamples=B, rng=cell_rng(SEED, "claims", _key("D02"), "at E", "")
                         ).differences[("a", "b", "roc_auc")]
    assert r["estimate"] == pytest.approx(roc_auc_score(y, sa) - roc_auc_score(y, sb), abs=1e-12)
    assert (r["ci_low"], r["ci_high"]) == pytest.approx((d.ci_low, d.ci_high), abs=1e-12)
    assert r["verdict"] == ("holds" if d.ci_low > 0 else "reversed" if d.ci_high < 0
                            else "unresolved")
    # D03: Se >= 0.7 and Sp >= 0.6 at tau = 0.45 on site-2
    y2, s2 = data("site-2", "a")
    r = _claim(m, "D03").iloc[0]
    got = {r["criterion"]: (r["estimate"], r["ci_low"], r["ci_high"]),
           r["other_criterion"]: (r["other_estimate"], r["other_ci_low"], r["other_ci_high"])}
    assert got["sensitivity"][0] == pytest.approx((s2[y2 == 1] >= 0.45).mean(), abs=1e-12)
    assert got["specificity"][0] == pytest.approx((s2[y2 == 0] < 0.45).mean(), abs=1e-12)
    ref = paired_bootstrap(y2, {"a": s2}, metrics=[("sensitivity", {"threshold": 0.45}),
                                                   ("specificity", {"threshold": 0.45})],
                           n_resamples=B, rng=cell_rng(SEED, "claims", _key("D03"), "at E", ""))
    parts = []
    for rate, level in (("sensitivity", 0.7), ("specificity", 0.6)):
        b = ref.marginal[("a", f"{rate}[threshold=0.45]")]
        assert got[rate][1:] == pytest.approx((b.ci_low, b.ci_high), abs=1e-12)
        parts.append("holds" if b.ci_low >= level else "does not hold" if b.ci_high < level
                     else "unresolved")
    assert r["verdict"] == ("holds" if set(parts) == {"holds"} else "does not hold"
                            if "does not hold" in parts else "unresolved")
    # each claim moves to the other site and to each sex
    for cid, other in (("D01", "site-2"), ("D02", "site-2"), ("D03", "site-1")):
        assert set(m.loc[m["claim_id"] == cid, "change"]) == {"at E", "cohort", "subgroup"}
        assert _claim(m, cid, "cohort")["changed_to"].tolist() == [other]
        assert sorted(_claim(m, cid, "subgroup")["changed_to"]) == ["sex = F", "sex = M"]


def test_no_empty_tables_and_the_report_says_why_blocks_did_not_run(audited, tmp_path):
    import json

    _, df, _, out = audited
    for f in (out / "tables").glob("*.csv"):
        assert len(pd.read_csv(f)) > 0, f.name
    # declared claims only: the summary says nothing of generated threshold claims it lacks
    assert "Generated threshold claims" not in (out / "summary.md").read_text(encoding="utf-8")
    # the minimal spec (every block by default): blocks the table cannot feed say why, and
    # write no table
    folder = medaudit.audit(df, n_resamples=50).write(tmp_path / "minimal")
    res = json.loads((folder / "results.json").read_text())
    skipped = {b: v["provenance"]["skipped"] for b, v in res["blocks"].items()
               if "skipped" in v.get("provenance", {})}
    assert {"prompts", "prevalence", "spectrum", "transport", "retained"} <= set(skipped)
    assert all(not res["blocks"][b]["tables"] for b in skipped)
    for f in (folder / "tables").glob("*.csv"):
        assert len(pd.read_csv(f)) > 0, f.name
        assert not f.name.startswith(tuple(skipped))
    page = (folder / "report.html").read_text(encoding="utf-8")
    assert "Did not run: the score table has one prompt" in page


CHROMIUM = shutil.which("chromium") or shutil.which("chromium-browser")


@pytest.mark.skipif(CHROMIUM is None, reason="no chromium binary on PATH (Debian: apt-get install "
                                             "-y chromium)")
def test_the_report_opens_in_chromium_with_the_declared_claims_first(audited, tmp_path):
    from tests.report.test_browser import _dump_dom

    _, _, _, out = audited
    dom = _dump_dom(tmp_path, (out / "report.html").as_uri())
    first = dom.index('id="portability-matrix"')
    assert "Declared claims" in dom[dom.rfind("<h3", 0, first):first]
    rows = [dom.index(f'id="claim-{c}"') for c in ("D01", "D02", "D03")]
    assert first < rows[0] < rows[1] < rows[2]
    assert "a is better than b on AUROC" in dom and "Se ≥ 0.7 and Sp ≥ 0.6 at τ = 0.45" in dom


def test_the_python_api_gives_the_cli_tables(audited):
    root, df, spec, out = audited
    options = {k: v for k, v in spec.items() if k not in ("scores", "name")}
    res = medaudit.audit(df, name=spec.get("name"), **options)
    assert isinstance(res, medaudit.Audit)
    written = sorted(p.stem for p in (out / "tables").glob("*.csv"))
    assert sorted(k.replace(".", "__") for k in res.tables) == written
    for key, table in res.tables.items():  # the same rows, the same numbers, to the last bit
        mine = root / "api-tables" / f"{key.replace('.', '__')}.csv"
        mine.parent.mkdir(exist_ok=True)
        write_csv(table, mine)
        assert mine.read_bytes() == (out / "tables" / mine.name).read_bytes(), key
    write_csv(res.matrix, root / "api-tables" / "portability.csv")
    assert (root / "api-tables" / "portability.csv").read_bytes() == \
        (out / "portability.csv").read_bytes()
    # written from Python, the folder is the CLI's, byte for byte (same inputs, same seed)
    again = res.write(root / "from-python")
    for f in sorted((out / "tables").glob("*.csv")):
        assert (again / "tables" / f.name).read_bytes() == f.read_bytes(), f.name
    assert "<table" in res._repr_html_() and "D01" in res._repr_html_()
    page = res.report(root / "alone.html")
    assert page.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")


def test_python_api_refuses_bad_options_in_one_line(newcomer):
    _, df = newcomer
    with pytest.raises(medaudit.exceptions.MedauditError) as e:
        medaudit.audit(df, n_resample=10)
    assert "n_resample" in str(e.value) and "n_resamples" in str(e.value)
    assert "\n" not in str(e.value)
    with pytest.raises(medaudit.exceptions.MedauditError, match="DataFrame"):
        medaudit.audit(42)
    # a table given twice in one call is refused, never one of them picked silently
    with pytest.raises(medaudit.exceptions.MedauditError, match="the data is given twice"):
        medaudit.audit(df, scores="elsewhere.csv")
    dup = pd.concat([df, df[["score"]]], axis=1)  # two columns named 'score'
    with pytest.raises(medaudit.exceptions.SchemaError, match=r"\['score'\] appear more than once"):
        medaudit.audit(dup, n_resamples=20)


def test_claims_as_python_objects_give_the_same_rows_as_mappings(newcomer):
    from medaudit.api import ComparisonClaim, LevelClaim

    _, df = newcomer
    objs = [LevelClaim(model="a", at_least=0.75, cohort="site-1"),
            ComparisonClaim(model="a", than="b", cohort="site-1")]
    a = medaudit.audit(df, n_resamples=60, claims=objs, blocks=["claims"]).matrix
    b = medaudit.audit(df, n_resamples=60, claims=CLAIMS[:2], blocks=["claims"]).matrix
    pd.testing.assert_frame_equal(a, b)


def test_a_declared_subgroup_column_is_used_not_unknown(audited):
    # provenance tells the columns the audit used from those it only kept
    _, _, _, out = audited
    inputs = json.loads((out / "results.json").read_text(encoding="utf-8"))["provenance"]["inputs"]
    assert inputs["subgroup_columns"] == ["sex"] and "unknown_columns" not in inputs


def test_python_refusals_speak_of_the_call_and_repr_counts_blocks_that_ran(newcomer, tmp_path):
    # probe finding: write() into an existing folder said "choose another --out or pass
    # --overwrite" (the call's argument is overwrite=True), and repr counted every block
    # of the spec, 7, where 2 had anything to run on
    from medaudit.io.output import OutputPathError

    _, df = newcomer
    res = medaudit.audit(df, n_resamples=20, blocks=["discrimination", "operating_points",
                                                     "prompts"])
    (tmp_path / "there").mkdir()
    with pytest.raises(FileExistsError) as e:
        res.write(tmp_path / "there")
    assert str(e.value).endswith("exists; choose another directory or pass overwrite=True.")
    assert "--" not in str(e.value)
    mine = tmp_path / "mine.html"
    mine.write_text("<p>my page</p>")
    with pytest.raises(OutputPathError) as e:
        res.report(mine)
    assert "report() replaces only an HTML report medaudit wrote" in str(e.value)
    assert "--" not in str(e.value)
    ran = [n for n, r in res.outcome.results.items() if any(len(t) for t in r.tables.values())]
    assert "prompts" not in ran  # no prompt column: nothing to run on
    assert f"{len(ran)} blocks run" in repr(res)

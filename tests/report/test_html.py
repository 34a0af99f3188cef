"""``report.html``: the portability matrix first, one section per block, self-contained,
deterministic, escaped, and reproducible from ``results.json`` by ``medaudit report``."""

from __future__ import annotations

import math
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

import pandas as pd
import pytest
import yaml
from markupsafe import escape

from medaudit.audit.run import audit, load_outcome, write_outcome
from medaudit.audit.spec import AuditSpec
from medaudit.cli.main import main
from medaudit.report import format as fmt
from medaudit.report.html import Report
from tests._support import HANG

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"
EVIL_MODEL = "<script>alert(1)</script>"
EVIL_NOTE = '"><img src=x onerror=alert(2)>'


def small_spec_dict(**changes) -> dict:
    """The embedded simulated study, shrunk for tests (as in tests/audit/test_run.py)."""
    d = yaml.safe_load((EXAMPLES / "paper000_simulated.yaml").read_text())
    d.update({"simulate_scale": 0.05, "n_resamples": 100, "n_permutations": 99, **changes})
    return d


def build_small_audit(out: Path, **changes):
    """Run the small simulated audit in memory and write it (with report.html) to ``out``."""
    outcome = audit(AuditSpec.model_validate(small_spec_dict(**changes)), EXAMPLES)
    write_outcome(outcome, out)
    return outcome


@pytest.fixture(scope="module")
def small(small_audit):
    outcome, out = small_audit
    return outcome, out, (out / "report.html").read_text(encoding="utf-8")


class _Refs(HTMLParser):
    """Every attribute that can make a browser load something, and every id."""

    LOADING = {"src", "href", "srcset", "poster", "data", "action", "formaction", "background",
               "xlink:href", "manifest", "ping"}

    def __init__(self):
        super().__init__()
        self.refs: list[tuple[str, str, str]] = []
        self.ids: list[str] = []
        self.tags: list[str] = []

    def handle_starttag(self, tag, attrs):
        self.tags.append(tag)
        for k, v in attrs:
            if k == "id":
                self.ids.append(v)
            if k in self.LOADING and v is not None:
                self.refs.append((tag, k, v))


def _parse(page: str) -> _Refs:
    p = _Refs()
    p.feed(page)
    return p


# --------------------------------------------------------------------------- layout

def test_files_written(small):
    _, out, _ = small
    assert (out / "report.html").is_file()
    figs = sorted((out / "figures").glob("*")) if (out / "figures").exists() else []
    stems = {p.stem for p in figs}
    assert {p.suffix for p in figs} <= {".png", ".svg"}
    for s in stems:  # every figure in both formats
        assert (out / "figures" / f"{s}.png").is_file() and (out / "figures" / f"{s}.svg").is_file()


def test_matrix_is_the_first_section(small):
    outcome, _, page = small
    first_block = min(page.index(f'id="block-{b}"') for b in outcome.results)
    assert page.index('id="portability-matrix"') < first_block
    assert page.index('<section id="matrix"') < first_block
    # the banner precedes the matrix; every claim has a row
    assert page.index("Simulated data.") < page.index('id="portability-matrix"')
    for cid in outcome.claims["claim_id"].unique():
        assert f'id="claim-{cid}"' in page and f'id="detail-{cid}"' in page


def test_one_section_per_block_then_provenance_and_checklist(small):
    outcome, _, page = small
    ids = _parse(page).ids
    for b in outcome.results:
        assert ids.count(f"block-{b}") == 1, b
    order = [page.index(f'<section id="block-{b}"') for b in outcome.results]
    assert order == sorted(order)  # in the spec's block order
    assert order[-1] < page.index('<section id="provenance"') < page.index('<section id="checklist"')
    assert len(ids) == len(set(ids)), "duplicate element ids"


def test_matrix_columns_and_verdict_badges(small):
    outcome, _, page = small
    head = page[page.index('id="portability-matrix"'):page.index("</thead>", page.index(
        'id="portability-matrix"'))]
    # the first group holds the ranking claims: one column per change that can move them,
    # and no prevalence column (AUROC does not depend on π: no filler cells)
    for sym in ("at E", ">C<", ">p<", ">N<", ">r<", ">r + π<"):
        assert sym in head, sym
    assert ">π<" not in head and ">unaffected<" not in page
    for verdict in set(outcome.claims["verdict"]):
        assert f">{verdict}</span>" in page, verdict
    # the legend names every verdict the matrix uses, with its meaning
    legend = page[page.index('class="legend"'):page.index("</div>", page.index('class="legend"'))]
    for v in set(outcome.claims["verdict"]):
        assert re.search(rf'class="badge v-[a-z]+" title="[^"]+">{v}</span>', legend), v
    # each kind of claim has its own table, with the columns of its own changes
    groups = re.findall(r'<table class="matrix" id="(portability-matrix[^"]*)"', page)
    assert len(groups) == outcome.claims["kind"].nunique() and groups[0] == "portability-matrix"


def test_cell_titles_carry_estimate_and_qualifications(small):
    outcome, _, page = small
    c = outcome.claims
    row = c[(c["change"] == "cohort") & c["qualification"].fillna("").str.contains("exposure")].iloc[0]
    est = fmt.fmt_ci(row["estimate"], row["ci_low"], row["ci_high"])
    block = page[page.index(f'id="claim-{row["claim_id"]}"'):]
    block = block[:block.index("</tbody>", block.index('class="detail"'))]
    assert est in block  # in the hover title and in the detail row
    assert re.search(r'title="[^"]*' + re.escape(est) + r'[^"]*exposure', block)
    assert '<span class="q" title=' in block  # the E mark on the cell


def test_no_external_resources(small):
    _, _, page = small
    for needle in ("http://", "https://", 'src="//', "href=\"//", "url(", "@import", "<iframe"):
        assert needle not in page, needle
    refs = _parse(page).refs
    assert refs, "expected the data: icon, figures and in-page links"
    for tag, attr, value in refs:
        if attr == "href" and tag == "a":
            assert value.startswith("#"), (tag, attr, value)
        else:
            assert value.startswith("data:"), (tag, attr, value[:60])
    assert '<link rel="icon" href="data:,">' in page
    assert "default-src 'none'" in page  # the CSP forbids loads even if something slipped in


def test_scripts_and_styles_inline_only(small):
    _, _, page = small
    p = _parse(page)
    assert p.tags.count("script") == 1 and p.tags.count("style") == 1
    assert "<script src" not in page and "<link rel=\"stylesheet\"" not in page


def test_full_precision_in_attributes(small):
    outcome, _, page = small
    m = outcome.results["discrimination"].tables["metrics"]
    v = float(m["estimate"].iloc[0])
    assert f'data-v="{fmt.full_precision(v)}"' in page
    assert f">{fmt.fmt_estimate(v)}</td>" in page


def test_checklist_answers_come_from_the_outcome(small):
    outcome, _, page = small
    sec = page[page.index('<section id="checklist"'):]
    for comp in ("Implementation", "Population and endpoint", "Negative spectrum",
                 "Score interpretation", "Operating rule", "Uncertainty and provenance"):
        assert f">{comp}</th>" in sec
    for cohort, d in outcome.provenance["cohorts"].items():
        assert f"{cohort} (" in sec and f"{d['n']} images" in sec
    for r in outcome.results["transport"].tables["retention_counts"].itertuples():
        assert f"{r.n_retained} of {r.n_total} target constraints" in sec
    for p in outcome.spec.prevalence:
        assert ", ".join(fmt.fmt_grid(x) for x in p.grid) in sec
    assert str(escape(outcome.provenance["multiplicity"]["prompts"])) in sec
    assert "documented pretraining exposure" in sec


def test_provenance_section(small):
    outcome, _, page = small
    sec = page[page.index('<section id="provenance"'):page.index('<section id="checklist"')]
    for k, v in outcome.provenance["versions"].items():
        assert f"<th>{k}</th><td>{v}</td>" in sec
    assert str(escape(outcome.provenance["seed_derivation"])) in sec
    assert "&#34;primary_prompt&#34;: &#34;clinical&#34;" in sec  # the spec, JSON, escaped


# --------------------------------------------------------------------------- determinism

@pytest.mark.slow
def test_render_is_deterministic(small, tmp_path):
    outcome, out, page = small
    assert Report(outcome).render() == page  # in memory == written from results.json
    again = tmp_path / "again"
    build_small_audit(again)
    assert (again / "report.html").read_bytes() == (out / "report.html").read_bytes()


def test_cli_report_rerenders_identical_html(small, tmp_path):
    _, out, _ = small
    copy = tmp_path / "copy"
    shutil.copytree(out, copy)
    (copy / "report.html").unlink()
    shutil.rmtree(copy / "figures", ignore_errors=True)
    assert main(["report", str(copy), "--quiet"]) == 0
    assert (copy / "report.html").read_bytes() == (out / "report.html").read_bytes()
    for f in (out / "figures").glob("*") if (out / "figures").exists() else []:
        assert (copy / "figures" / f.name).read_bytes() == f.read_bytes(), f.name
    single = tmp_path / "elsewhere" / "page.html"
    assert main(["report", str(out), "--out", str(single), "--quiet"]) == 0
    assert single.read_bytes() == (out / "report.html").read_bytes()
    assert not (single.parent / "figures").exists()
    assert [p.name for p in single.parent.iterdir()] == ["page.html"]  # no temporary left


def test_cli_report_errors(tmp_path, capsys):
    assert main(["report", str(tmp_path / "nope")]) == 2
    assert "results.json" in capsys.readouterr().err
    other = tmp_path / "other"  # a results.json that another tool wrote
    other.mkdir()
    (other / "results.json").write_text('{"metrics": []}')
    assert main(["report", str(other)]) == 2
    assert "not the results of `medaudit audit`" in capsys.readouterr().err


def _same(a, b) -> bool:
    if fmt.is_missing(a) and fmt.is_missing(b):
        return True
    fa, fb = fmt.as_float(a), fmt.as_float(b)
    if fa is not None or fb is not None:
        return fa == fb or (fa is not None and fb is not None and math.isinf(fa) and fa == fb)
    return a == b


def test_load_outcome_round_trips_tables(small):
    outcome, out, _ = small
    loaded = load_outcome(out)
    assert loaded.spec == outcome.spec
    assert list(loaded.results) == list(outcome.results)
    for name, res in outcome.results.items():
        got = loaded.results[name]
        assert got.notes == tuple(res.notes)
        assert list(got.tables) == list(res.tables)
        for t, df in res.tables.items():
            g = got.tables[t]
            assert list(g.columns) == [str(c) for c in df.columns], (name, t)
            assert len(g) == len(df), (name, t)
            for c in df.columns:
                bad = [i for i, (a, b) in enumerate(zip(df[c], g[c], strict=True)) if not _same(a, b)]
                assert not bad, (name, t, c, df[c].iloc[bad[0]], g[c].iloc[bad[0]])
    c0, c1 = outcome.claims, loaded.claims
    assert list(c1.columns) == list(c0.columns) and len(c1) == len(c0)
    for c in c0.columns:
        assert all(_same(a, b) for a, b in zip(c0[c], c1[c], strict=True)), c
    assert loaded.provenance["spec"] == outcome.provenance["spec"]
    numeric = pd.to_numeric(loaded.results["discrimination"].tables["metrics"]["estimate"])
    assert numeric.dtype == float


# --------------------------------------------------------------------------- escaping

def test_user_strings_are_escaped(tmp_path):
    from medaudit.simulate import simulate_paper000

    sim = simulate_paper000(rng=2026, scale=0.05)
    table = pd.DataFrame(sim["table"])
    table["model"] = table["model"].replace({"sim-openclip": EVIL_MODEL})
    table.to_csv(tmp_path / "scores.csv", index=False)
    cards = []
    for c in sim["models"]:
        c = dict(c)
        if c["name"] == "sim-openclip":
            c["name"] = EVIL_MODEL
            c["exposure"] = {"vindr": EVIL_NOTE}
        cards.append(c)
    d = small_spec_dict(scores="scores.csv", models=cards, name="<b>audit & co</b>")
    del d["simulate"], d["simulate_scale"]
    (tmp_path / "spec.yaml").write_text(yaml.safe_dump(d))
    out = tmp_path / "out"
    assert main(["audit", str(tmp_path / "spec.yaml"), "--out", str(out), "--quiet"]) == 0
    page = (out / "report.html").read_text(encoding="utf-8")
    assert EVIL_MODEL not in page and "alert(1)</script>" not in page
    assert "&lt;script&gt;alert(1)&lt;/script&gt;" in page
    assert "<img src=x" not in page and "&lt;img src=x onerror=alert(2)&gt;" in page
    assert "<b>audit" not in page and "&lt;b&gt;audit &amp; co&lt;/b&gt;" in page
    p = _parse(page)
    assert p.tags.count("script") == 1
    for tag, attr, value in p.refs:  # no injected loads: only figures, the icon and anchors
        assert value.startswith(("data:image/png;base64,", "data:,", "#")), (tag, attr, value[:60])
    assert "Simulated data." not in page  # a score file is not a simulation


# --------------------------------------------------------------------------- pieces

def test_without_figures_module(small, monkeypatch):
    import sys

    outcome, _, _ = small
    monkeypatch.setitem(sys.modules, "medaudit.report.figures", None)
    page = Report(outcome).render()
    assert "<figure" not in page
    assert all(f'id="block-{b}"' in page for b in outcome.results)


def test_long_tables_are_truncated_for_display(small):
    outcome, _, _ = small
    page = Report(outcome, figures=[], max_rows=5).render()
    n = len(outcome.results["discrimination"].tables["metrics"])
    assert f"Showing the first 5 of {n} rows" in page


def test_repr_html_is_an_isolated_iframe(small):
    outcome, _, _ = small
    r = Report(outcome, figures=[])
    snippet = r._repr_html_()
    assert snippet.startswith("<iframe") and 'srcdoc="&lt;!DOCTYPE html&gt;' in snippet


def test_save_is_atomic_and_leaves_no_temporary(small, tmp_path):
    outcome, _, _ = small
    target = tmp_path / "r.html"
    target.write_text("old")
    Report(outcome, figures=[]).save(target)
    assert target.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    assert [p.name for p in tmp_path.iterdir()] == ["r.html"]


@pytest.mark.parametrize(("value", "column", "text", "full"), [
    (0.00042, "pvalue", "<0.001", "0.00042"),
    (0.0421, "pvalue_adj", "0.042", "0.0421"),
    (12.0, "n_pos", "12", "12"),
    (0.1, "prevalence", "0.1", "0.1"),
    (43.75, "share_percent", "43.8%", "43.75"),
    (-0.0001, "estimate", "0.000", "-0.0001"),
    (float("inf"), "estimate", "∞", "inf"),
    ("inf", "estimate", "∞", "inf"),
    (None, "estimate", "—", ""),
    (True, "significant", "yes", "true"),
    ("observed", "prevalence", "observed", "observed"),
])
def test_fmt_cell(value, column, text, full):
    t, f, _ = fmt.fmt_cell(value, column)
    assert (t, f) == (text, full)


def test_fmt_same_text_for_memory_and_json_forms():
    import numpy as np

    for mem, js in ((np.int64(100), 100.0), (np.float64(0.5), 0.5), (float("nan"), None),
                    (pd.NA, None), (np.bool_(True), True)):
        for col in ("estimate", "n", "pvalue", "significant"):
            assert fmt.fmt_cell(mem, col) == fmt.fmt_cell(js, col), (mem, js, col)


KWANG = ROOT.parent / "shared" / "data" / "tb_cross_cohort_predictions_kwang311"


@pytest.mark.skipif(not KWANG.exists(), reason=f"real data not found at {KWANG} (CI has it)")
def test_real_data_report(tmp_path):
    d = yaml.safe_load((EXAMPLES / "kwang311_tb.yaml").read_text())
    d.update(n_resamples=100, n_permutations=99)
    for w in d["scores_wide"]:
        w["path"] = str((EXAMPLES / w["path"]).resolve())
    outcome = audit(AuditSpec.model_validate(d), EXAMPLES)
    out = tmp_path / "out"
    write_outcome(outcome, out)
    page = (out / "report.html").read_text(encoding="utf-8")
    assert Report(outcome).render() == page
    assert main(["report", str(out), "--out", str(tmp_path / "again.html"), "--quiet"]) == 0
    assert (tmp_path / "again.html").read_text(encoding="utf-8") == page
    assert "Simulated data." not in page
    for w in outcome.provenance["inputs"]["scores_wide"]:
        assert w["sha256"] in page  # input hashes in the provenance section
    assert "prompt variation was not audited" in page
    assert page.index('id="portability-matrix"') < page.index('id="block-discrimination"')


def _sleep_long(_stem):  # a figure that never finishes (module level: the pool pickles it)
    import time

    time.sleep(600)


def test_closing_a_drawing_stops_its_workers_at_once():
    # a Ctrl-C during the figures reaches the workers too; closing the drawing must not
    # wait on a worker (it once hung for good in shutdown(wait=True))
    import time

    from medaudit.backends.local import fork_pool
    from medaudit.report.html import _Drawing

    pool = fork_pool(2)
    if pool is None:
        pytest.skip("fork is not available here")
    futures = [pool.submit(_sleep_long, s) for s in ("a", "b", "c")]
    time.sleep(0.5)  # the workers are busy
    procs = list(pool._processes.values())
    t0 = time.perf_counter()
    _Drawing(pool, futures).close()
    assert time.perf_counter() - t0 < HANG  # close() waited on no worker (they sleep 600 s)
    deadline = t0 + HANG
    while not all(_gone(p) for p in procs) and time.perf_counter() < deadline:
        time.sleep(0.01)
    assert all(_gone(p) for p in procs)  # they slept for 600 s: close() stopped them


def _gone(proc) -> bool:
    """Whether a worker process has ended.  ``is_alive()`` alone says True for ever when
    another part of the test process (a library's child reaper) reaped the worker first:
    its ``waitpid`` then fails, which multiprocessing reads as "still running"."""
    import os

    if not proc.is_alive():
        return True
    try:
        os.kill(proc.pid, 0)
    except ProcessLookupError:
        return True
    return False


def test_an_auroc_interval_past_1_is_clipped_on_the_page_only():
    # probe finding: a seed ensemble's DeLong interval (AUC ± z sqrt(var), not clipped where
    # computed, as pROC's formula before its clip) showed as [0.951, 1.009] on the page
    from medaudit.report.html import _table_view

    df = pd.DataFrame({"criterion": ["roc_auc", "roc_auc_difference", "brier_score"],
                       "estimate": [0.98, 0.02, 0.1], "ci_low": [0.951, -0.03, 0.05],
                       "ci_high": [1.0094, 0.07, 0.15]})
    html = str(_table_view("retained", "seeds", df, 10))
    assert "1.009" not in html and "0.951" in html
    assert 'data-v="1.0"' in html or 'data-v="1"' in html
    assert "-0.030" in html  # a difference may be negative: untouched
    assert df.loc[0, "ci_high"] == 1.0094  # the table itself keeps the formula's number


@pytest.mark.parametrize("edit, expect", [
    (lambda r: r["provenance"].__setitem__("cohorts", "x"), "provenance.cohorts must be an object"),
    (lambda r: r["provenance"].__setitem__("multiplicity", [1]), "provenance.multiplicity must be an object"),
    (lambda r: r["provenance"].__setitem__("seed", "abc"), "provenance.seed must be a whole number"),
    (lambda r: r["provenance"].__setitem__("n_resamples", -5),
     "provenance.n_resamples must be a whole number >= 1"),
    (lambda r: r["provenance"].__setitem__("confidence_level", 7),
     "confidence_level must be a number between 0 and 1"),
    (lambda r: r["portability"][0].__setitem__("verdict", "maybe"), "portability[0].verdict must be one of"),
    (lambda r: r["portability"][0].__setitem__("verdict", []), "portability[0].verdict must be one of"),
    (lambda r: r["portability"][0].pop("claim"), "portability[0] must be a claim row with ['claim']"),
    (lambda r: r["portability"][0].pop("change"), "portability[0] must be a claim row with ['change']"),
    (lambda r: r["portability"][0].__setitem__("ci_low", "abc"),
     "portability[0].ci_low must be a number or null"),
    (lambda r: r.__setitem__("blocks", []), "blocks must be an object"),
    (lambda r: r["blocks"].__setitem__("zzz", {}), "blocks.zzz must be a block of this medaudit"),
    (lambda r: r["blocks"]["discrimination"].__setitem__("tables", None),
     "blocks.discrimination.tables must be a JSON object"),
    (lambda r: r["blocks"]["discrimination"]["tables"].__setitem__("metrics", [1]),
     "blocks.discrimination.tables.metrics must be a list of rows"),
])
def test_report_of_a_results_file_copied_alone_checks_what_it_prints(small, tmp_path, capsys,
                                                                      edit, expect):
    """Probe finding: results.json copied without its folder (so without the manifest that
    detects edits) crashed the page's template on a wrong type, or printed "B = -5" and
    "700 % intervals": each is one line naming the key, and nothing is written."""
    import json

    _, out, _ = small
    alone = tmp_path / "alone"
    alone.mkdir()
    r = json.loads((out / "results.json").read_text(encoding="utf-8"))
    assert r["portability"], "the fixture audit has claims"
    edit(r)
    (alone / "results.json").write_text(json.dumps(r), encoding="utf-8")
    assert main(["report", str(alone)]) == 2
    err = capsys.readouterr().err
    assert expect in err and "Traceback" not in err and len(err.strip().splitlines()) == 1, err
    assert [p.name for p in alone.iterdir()] == ["results.json"]


def test_report_of_an_unedited_results_file_copied_alone_renders(small, tmp_path):
    _, out, html = small
    alone = tmp_path / "alone"
    alone.mkdir()
    (alone / "results.json").write_bytes((out / "results.json").read_bytes())
    assert main(["report", str(alone), "--quiet"]) == 0
    assert (alone / "report.html").read_text(encoding="utf-8") == html


def test_the_legend_says_when_a_cell_is_judged_on_its_point_estimate(small):
    """Probe finding: cells of changes whose table has no interval (prompt, negatives) were
    judged on the point estimate while the legend said "verdicts from the interval"; the page
    and summary.md say so wherever such a cell is in the matrix, and only there."""
    import dataclasses

    from medaudit.blocks.claimkit import POINT_ONLY
    from medaudit.report.html import Report, _matrix
    from medaudit.report.summary import audit_summary

    outcome, _, _ = small
    claims = outcome.claims
    assert not claims.empty
    plain = claims.assign(qualification="")
    marked = plain.copy()
    marked.loc[marked.index[-1], "qualification"] = POINT_ONLY
    assert _matrix(plain)["point_only"] is False and _matrix(marked)["point_only"] is True
    # agreement's and label_uncertainty's wording counts too
    other = plain.copy()
    other.loc[other.index[-1], "qualification"] = "point estimate at one held-out institution"
    assert _matrix(other)["point_only"] is True
    sentence = "qualified as a point estimate is judged on that estimate alone: its change has no interval."
    for frame, present in ((plain, False), (marked, True)):
        o = dataclasses.replace(outcome, claims=frame)
        assert (sentence in audit_summary(o)) is present
    # the page (one render: the template shows the sentence exactly where the flag is set)
    assert sentence in Report(dataclasses.replace(outcome, claims=marked)).render()

"""``medaudit monitor``: the CLI and report plumbing on simulated periods with a known drop.

The statistical guarantees (false alarms under no change, detection of a drop, 200 seeded
repetitions) are tested in tests/stats/test_monitor.py.  Here: six monthly batches where
sim-medsiglip's sensitivity at the source's τ = 0.1 is 0.95 until 2026-03 and 0.5 from
2026-04 (claim D05: Se ≥ 0.8 and Sp ≥ 0.7); the change log says Se stopped being supported
at or after 2026-04 and never before, in both scopes; the series rows are recomputed here
by hand (counts, estimate) and the drift rows with scipy's ``ks_2samp``; the page opens on
the claims table, then the change log, the series and the drift; reruns are byte-identical;
period files give the same numbers as a period column; bad inputs are one line and write
nothing.
"""

from __future__ import annotations

import json
import math

import numpy as np
import pandas as pd
import pytest
import yaml
from scipy import stats

from medaudit.cli.main import main
from medaudit.exceptions import MedauditError
from tests.port._source import claims_file, source_audit  # noqa: F401

PERIODS = [f"2026-{m:02d}" for m in range(1, 7)]
DROP = "2026-04"


def _batches(seed: int = 3, n: int = 100) -> pd.DataFrame:
    rng = np.random.default_rng(seed)
    rows = []
    for per in PERIODS:
        se = 0.95 if per < DROP else 0.5
        for lab in (1, 0):
            u = rng.uniform(size=n)
            hit = u < (se if lab == 1 else 0.1)  # score >= 0.1 for a positive hit / a false alarm
            score = np.where(hit, rng.uniform(0.1, 1.0, n), rng.uniform(0.0, 0.0999, n))
            for i in range(n):
                rows.append({"image_id": f"{per}-{lab}-{i}", "model": "sim-medsiglip",
                             "prompt": "clinical", "score": float(score[i]), "label": lab,
                             "period": per})
    return pd.DataFrame(rows)


@pytest.fixture(scope="module")
def site(tmp_path_factory):
    d = tmp_path_factory.mktemp("monitor-site")
    df = _batches()
    df.to_csv(d / "scores.csv", index=False)
    (d / "site.yaml").write_text(yaml.safe_dump({"name": "site-months", "scores": "scores.csv",
                                                 "primary_prompt": "clinical"}), encoding="utf-8")
    return d, df


@pytest.fixture(scope="module")
def monitored(site, claims_file, tmp_path_factory):  # noqa: F811
    d, _ = site
    out = tmp_path_factory.mktemp("monitor-out") / "mon"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--quiet"]) == 0
    return out


def _csv(out, name):
    return pd.read_csv(out / f"monitor__{name}.csv", keep_default_na=False, na_values=[""])


def _period_files(df, folder, names):
    """One CSV per period of ``df`` (in PERIODS order), named ``names``, without the column."""
    files = []
    for per, name in zip(PERIODS, names, strict=True):
        f = folder / f"{name}.csv"
        df[df["period"] == per].drop(columns="period").to_csv(f, index=False)
        files.append(str(f))
    return files


def test_change_log_at_or_after_the_drop_never_before(monitored):
    ch = _csv(monitored, "changes")
    se = ch[ch["claim_id"] == "D05.Se"]
    alarms = se[se["verdict"] == "does not hold"]
    assert len(alarms) and (alarms["period"] >= DROP).all()
    assert set(alarms["scope"]) == {"cumulative", "period"}
    first = alarms[alarms["scope"] == "period"].iloc[0]
    assert first["text"] == (f"sim-medsiglip: Se at τ = 0.1 ≥ 0.8 {first['event']} in "
                             f"{first['period']} (period, confseq)")
    assert (se[se["period"] < DROP]["verdict"] != "does not hold").all()


def test_series_by_hand(monitored, site):
    _, df = site
    s = _csv(monitored, "series")
    rows = s[(s["claim_id"] == "D05.Se") & (s["scope"] == "period")]
    assert list(rows["period"]) == PERIODS
    for r in rows.itertuples():
        b = df[(df["period"] == r.period) & (df["label"] == 1)]
        assert r.n_pos == len(b) and r.estimate == pytest.approx((b["score"] >= 0.1).mean(), abs=0)
        assert r.ci_low <= r.estimate <= r.ci_high
    cum = s[(s["claim_id"] == "D05.Se") & (s["scope"] == "cumulative")]
    pos = df[df["label"] == 1]
    assert cum["estimate"].iloc[-1] == pytest.approx((pos["score"] >= 0.1).mean(), abs=1e-15)
    assert set(s["correction"]) == {"confseq"} and s["family"].notna().all()


def test_drift_by_hand(monitored, site):
    _, df = site
    dr = _csv(monitored, "drift")
    ref = df[(df["period"] == PERIODS[0]) & (df["label"] == 1)]["score"]
    for per in PERIODS[1:]:
        cur = df[(df["period"] == per) & (df["label"] == 1)]["score"]
        row = dr[(dr["model"] == "sim-medsiglip") & (dr["period"] == per) & (dr["subset"] == "positives")]
        assert row["ks_statistic"].iloc[0] == pytest.approx(stats.ks_2samp(cur, ref).statistic)
    assert set(dr["subset"]) == {"all", "positives", "negatives"}


def test_drift_psi_is_read_by_its_permutation_test(monitored, site):
    # the positives' scores move at the drop: beyond chance there, and the p-values are the
    # stats function's on the same rows with the stream the monitor says it used
    from medaudit.blocks.context import cell_rng
    from medaudit.stats.drift import score_drift

    _, df = site
    dr = _csv(monitored, "drift")
    pos = dr[dr["subset"] == "positives"].set_index("period")
    for per in PERIODS:
        if per >= DROP:
            assert pos.loc[per, "psi_pvalue"] <= 0.01
            assert pos.loc[per, "psi_reading"] == pos.loc[per, "psi_band"] != "stable"
    seed = json.loads((monitored / "monitor.json").read_text(encoding="utf-8"))
    seed = seed["provenance"]["monitor"]["drift_seed"]
    want = score_drift(df["period"].to_numpy(dtype=object), df["score"].to_numpy(float),
                       y_true=df["label"].to_numpy(float), periods=PERIODS,
                       rng=cell_rng(seed, "drift", "sim-medsiglip|clinical")).to_frame()
    np.testing.assert_allclose(dr["psi_pvalue"].to_numpy(float), want["psi_pvalue"].to_numpy(float))
    assert dr["psi_reading"].fillna("").tolist() == want["psi_reading"].tolist()


def test_report_and_summary_open_on_the_claims_then_series_and_drift(monitored):
    page = (monitored / "report.html").read_text(encoding="utf-8")
    order = [page.index(k) for k in ('id="port-claims"', 'id="changes"', 'id="monitor-series"',
                                     'id="monitor-drift"', 'id="provenance"')]
    assert order == sorted(order)
    assert "Se at τ = 0.1 ≥ 0.8" in page and "data:image/png;base64," in page
    md = (monitored / "summary.md").read_text(encoding="utf-8")
    assert md.index("## The source's claims at this site") < md.index("## Verdict changes") < \
        md.index("## Time series") < md.index("## Score drift per period")
    # the change count leaves out where the log starts (each claim x scope's first verdict)
    ch = _csv(monitored, "changes")
    k = int(ch["verdict_before"].notna().sum())
    assert 0 < k < len(ch)
    head = f"{k} verdict change{'s' if k != 1 else ''} after the first look"
    assert head in md and head in page
    assert len(ch) - k == ch[["claim_id", "scope"]].drop_duplicates().shape[0]
    claims = _csv(monitored, "claims")
    assert claims.set_index("claim_id").loc["D05", "verdict"] == "does not hold"
    absent = claims.set_index("claim_id").loc["D01"]
    assert absent["verdict"] == "not assessable here" and "absent from the local data" in absent["reason"]
    figs = sorted(p.name for p in (monitored / "figures").iterdir())
    assert "monitor_D05.Se.png" in figs and "monitor_D05.Sp.svg" in figs
    prov = json.loads((monitored / "monitor.json").read_text(encoding="utf-8"))["provenance"]
    assert prov["source"]["name"] == "paper000-shenzhen-source" and prov["local"]["inputs"]["sha256"]


def test_rerun_is_byte_identical_and_period_files_agree(monitored, site, claims_file, tmp_path):  # noqa: F811
    d, df = site
    again = tmp_path / "again"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(again),
                 "--quiet"]) == 0
    for p in sorted(monitored.rglob("*")):
        if p.is_file():
            assert p.read_bytes() == (again / p.relative_to(monitored)).read_bytes(), p.name
    files = _period_files(df, tmp_path, PERIODS)
    byfile = tmp_path / "byfile"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(byfile),
                 "--period-files", *files, "--quiet"]) == 0
    a, b = _csv(monitored, "series"), _csv(byfile, "series")
    pd.testing.assert_frame_equal(a, b)


def test_alpha_spending_plan(site, claims_file, tmp_path, capsys):  # noqa: F811
    d, _ = site
    out = tmp_path / "spend"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--correction", "alpha_spending"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "planned_looks" in err and not out.exists()
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--correction", "alpha_spending", "--planned-looks", "12", "--quiet"]) == 0
    s = _csv(out, "series")
    assert set(s["correction"]) == {"alpha_spending"}


def test_planned_looks_under_confseq_is_said_and_checked(site, claims_file, tmp_path, capsys):  # noqa: F811
    # probe finding: --planned-looks with the default confseq changed the Se/Sp intervals
    # and verdicts (it tunes the rate sequences) while the help and the page said it only
    # mattered for alpha_spending; and --planned-looks 0 was refused as `planned_looks`
    d, _ = site
    out = tmp_path / "tuned"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--planned-looks", "5", "--quiet"]) == 0
    assert "confseq (rate sequences tuned for 5 planned looks)" in (
        out / "summary.md").read_text(encoding="utf-8")
    bad = tmp_path / "bad"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(bad),
                 "--planned-looks", "0"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == "medaudit: error: --planned-looks must be a positive integer; got 0."
    assert not bad.exists()


def test_spending_without_alpha_spending_is_refused(site, claims_file, tmp_path, capsys):  # noqa: F811
    # --spending was silently ignored under confseq or none (monitor.json: "spending": null)
    d, _ = site
    out = tmp_path / "conflict"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--correction", "none", "--spending", "obrien_fleming"]) == 2
    err = capsys.readouterr().err.strip()
    assert err == ("medaudit: error: --spending obrien_fleming applies only with --correction "
                   "alpha_spending (given: --correction none); drop it or use alpha_spending.")
    assert not out.exists()


def test_spending_without_alpha_spending_is_refused_by_the_api_too(site, claims_file):  # noqa: F811
    from medaudit.monitor import monitor

    _, df = site
    with pytest.raises(MedauditError, match=r"spending='obrien_fleming' applies only with "
                                            r"correction='alpha_spending' \(given: correction='confseq'\)"):
        monitor(claims_file, df, primary_prompt="clinical", spending="obrien_fleming")


def test_no_period_column_is_one_line(claims_file, tmp_path, capsys):  # noqa: F811
    df = _batches().drop(columns="period")
    df.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "s.yaml").write_text("scores: s.csv\nprimary_prompt: clinical\n", encoding="utf-8")
    assert main(["monitor", str(claims_file), str(tmp_path / "s.yaml"), "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "no 'period' column" in err and not (tmp_path / "o").exists()


def test_a_tau_moved_to_logits_says_from_what(claims_file, tmp_path):  # noqa: F811
    # the source's τ = 0.1 on probabilities is logit(0.1) on a site scoring in logits: the
    # change log says so instead of a bare "τ = -2.197..."
    df = _batches()
    df["score"] = np.log(np.clip(df["score"], 1e-6, None) / (1 - df["score"]))
    df.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "s.yaml").write_text("scores: s.csv\nprimary_prompt: clinical\nscore_scale: logits\n",
                                     encoding="utf-8")
    out = tmp_path / "logits"
    assert main(["monitor", str(claims_file), str(tmp_path / "s.yaml"), "--out", str(out),
                 "--quiet"]) == 0
    ch = _csv(out, "changes")
    tau = repr(math.log(0.1 / 0.9))
    texts = ch[ch["claim_id"] == "D05.Se"]["text"].tolist()
    assert texts and all(f"Se at τ = {tau} (logit of the source's 0.1) ≥ 0.8" in t for t in texts)


def test_late_labels_count_for_drift_only(claims_file, tmp_path):  # noqa: F811
    df = _batches()
    late = df.index[df["period"] == PERIODS[-1]][:50]
    df.loc[late, "label"] = np.nan
    df.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "s.yaml").write_text("scores: s.csv\nprimary_prompt: clinical\n", encoding="utf-8")
    out = tmp_path / "late"
    assert main(["monitor", str(claims_file), str(tmp_path / "s.yaml"), "--out", str(out),
                 "--quiet"]) == 0
    s = _csv(out, "series")
    last = s[(s["claim_id"] == "D05.Se") & (s["scope"] == "period") & (s["period"] == PERIODS[-1])]
    assert int(last["n_unlabelled"].iloc[0]) == 50 and int(last["n_pos"].iloc[0]) == 50
    dr = _csv(out, "drift")
    allrow = dr[(dr["period"] == PERIODS[-1]) & (dr["subset"] == "all")]
    assert int(allrow["n"].iloc[0]) == 200


def test_period_files_name_the_file_line_and_raw_value(claims_file, tmp_path, capsys):  # noqa: F811
    """A bad label names its period file, the file line (header = line 1) and the value as written;
    a period file with no rows is refused rather than dropped."""
    df = _batches().drop(columns="period")
    files = []
    for per in PERIODS[:2]:
        f = tmp_path / f"{per}.csv"
        df[df["image_id"].str.startswith(per)].to_csv(f, index=False)
        files.append(f)
    text = files[1].read_text(encoding="utf-8").splitlines()
    text[4] = text[4].rsplit(",", 1)[0] + ",yes"  # line 5
    files[1].write_text("\n".join(text) + "\n", encoding="utf-8")
    (tmp_path / "s.yaml").write_text("primary_prompt: clinical\n", encoding="utf-8")
    args = ["monitor", str(claims_file), str(tmp_path / "s.yaml"), "--out", str(tmp_path / "o"),
            "--period-files"]
    assert main([*args, *map(str, files)]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and f"({files[1]} line 5 has 'yes')" in err, err
    empty = tmp_path / "2026-03.csv"
    empty.write_text(text[0] + "\n", encoding="utf-8")
    assert main([*args, str(files[0]), str(empty)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"medaudit: error: {empty}: the period file has no rows.", err
    assert not (tmp_path / "o").exists()


MONTHS = ["jan", "feb", "mar", "apr", "may", "jun"]


def test_period_files_keep_the_order_they_were_given_in(monitored, site, claims_file, tmp_path):  # noqa: F811
    # probe finding: `--period-files jan.csv feb.csv mar.csv` (the README's example) was
    # monitored as feb, jan, mar (the names sorted as text): cumulative sequences and the
    # change log ran in the wrong time order
    d, df = site
    files = _period_files(df, tmp_path, MONTHS)
    out = tmp_path / "months"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--period-files", *files, "--quiet"]) == 0
    doc = json.loads((out / "monitor.json").read_text(encoding="utf-8"))
    assert doc["provenance"]["local"]["periods"] == MONTHS
    a, b = _csv(monitored, "series"), _csv(out, "series")
    b["period"] = b["period"].map(dict(zip(MONTHS, PERIODS, strict=True)))
    pd.testing.assert_frame_equal(a, b)


def test_numbered_periods_in_number_order(site, claims_file):  # noqa: F811
    # probe finding: a numeric period column (months 1..12) was sorted as text: 1, 10, 2, ...
    from medaudit.monitor import monitor

    _, df = site
    numbered = df.assign(period=df["period"].map({p: [1, 2, 3, 10, 11, 12][i]
                                                  for i, p in enumerate(PERIODS)}))
    run = monitor(claims_file, numbered, primary_prompt="clinical")
    assert run.provenance["local"]["periods"] == ["1", "2", "3", "10", "11", "12"]
    with pytest.raises(MedauditError, match=r"periods must be a list of the periods in order; "
                                            r"got the text '2026-01'"):
        monitor(claims_file, df, periods="2026-01", primary_prompt="clinical")


# ----------------------------------------------------------------------------- probe findings
def test_ordered_categorical_periods_keep_their_order(site, claims_file):  # noqa: F811
    from medaudit.monitor import monitor

    _, df = site
    months = ["Jan", "Feb", "Mar", "Apr", "May", "Jun"]  # as text, Apr < Feb < Jan < ...
    named = df.assign(period=pd.Categorical(df["period"].map(dict(zip(PERIODS, months, strict=True))),
                                            categories=months, ordered=True))
    run = monitor(claims_file, named, primary_prompt="clinical")
    assert run.provenance["local"]["periods"] == months


@pytest.mark.parametrize("blank", ["", "  "])
def test_a_blank_period_is_refused_like_a_missing_one(site, claims_file, blank):  # noqa: F811
    from medaudit.monitor import monitor

    _, df = site
    d = df.assign(period=df["period"].astype(object))
    d.loc[5, "period"] = blank
    # the rows are filtered and joined before this check: the image names the row, not a
    # row number that would not be the file's line
    with pytest.raises(MedauditError, match=(r"the 'period' column is empty for 1 row\(s\) of the "
                                             rf"local data \(first: image_id '{d.loc[5, 'image_id']}'\)")):
        monitor(claims_file, d, primary_prompt="clinical")


@pytest.mark.parametrize("column", ["label", "score", "model", "image_id"])
def test_a_column_of_the_score_table_is_not_a_period(site, claims_file, column):  # noqa: F811
    from medaudit.monitor import monitor

    _, df = site
    with pytest.raises(MedauditError, match=rf"period='{column}' names a column of the score table"):
        monitor(claims_file, df, period=column, primary_prompt="clinical")


@pytest.mark.parametrize(("bad", "message"), [
    ("abc", r"must be finite numbers; line \d+ is not \(line \d+ has 'abc'\)"),
    ("", r"must be finite numbers; line \d+ is not \(line \d+ is empty\)"),
    ("7.0", r"must be probabilities in \[0, 1\]; line \d+ is outside")])
def test_rows_without_a_label_are_validated_too(claims_file, tmp_path, capsys, bad, message):  # noqa: F811
    """Rows whose label is not known yet feed the drift of their period: a bad score there is
    one line naming the file and line, as for a labelled row (it was a traceback)."""
    df = _batches().astype({"score": object, "label": object})
    late = df.index[df["period"] == PERIODS[-1]][:3]
    df.loc[late, "label"] = ""
    df.loc[late[1], "score"] = bad
    df.to_csv(tmp_path / "s.csv", index=False)
    (tmp_path / "s.yaml").write_text("scores: s.csv\nprimary_prompt: clinical\n", encoding="utf-8")
    assert main(["monitor", str(claims_file), str(tmp_path / "s.yaml"), "--out",
                 str(tmp_path / "o")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "s.csv (rows without a label yet)" in err
    assert __import__("re").search(message, err) and not (tmp_path / "o").exists()


def test_the_moved_tau_is_named_by_the_source_number_even_where_it_has_no_inverse():
    # expit(-1000) is 0.0 on the site's probabilities: the text names the source's -1000
    from medaudit.monitor import _monitor_claims

    d = {"kind": "operating_point", "model": "a", "prompt": "p", "threshold": 0.0,
         "sensitivity_at_least": 0.8}
    (mc,) = _monitor_claims({"id": "D01"}, d, "τ = -1000 on logits, expit(τ) on the local probabilities")
    assert mc.text == "a: Se at τ = 0.0 (expit of the source's -1000) ≥ 0.8"
    (plain,) = _monitor_claims({"id": "D01"}, d, "")
    assert plain.text == "a: Se at τ = 0.0 ≥ 0.8"


def test_an_unresolved_monitored_claim_says_why_it_is_not_sized(claims_file, tmp_path):  # noqa: F811
    """port sizes a one-look interval for an unresolved claim; the monitor's intervals are
    corrected for every look, so it says why it gives no count instead of leaving it blank."""
    df = _batches(n=12)
    df = df[df["period"] <= "2026-02"]
    df.to_csv(tmp_path / "scores.csv", index=False)
    (tmp_path / "site.yaml").write_text(yaml.safe_dump({"name": "few", "scores": "scores.csv",
                                                        "primary_prompt": "clinical"}), encoding="utf-8")
    out = tmp_path / "mon"
    assert main(["monitor", str(claims_file), str(tmp_path / "site.yaml"), "--out", str(out),
                 "--quiet"]) == 0
    claims = _csv(out, "claims").set_index("claim_id")
    assert claims.loc["D05", "verdict"] == "unresolved"
    assert math.isnan(claims.loc["D05", "resolve_n_pos"])
    assert "corrected for repeated looks" in claims.loc["D05", "plan_rule"]
    assert "medaudit port on the pooled periods sizes a single look" in (
        out / "summary.md").read_text(encoding="utf-8")


def test_a_psi_pvalue_at_its_floor_reads_as_a_bound(monitored):
    """(1 + b) / (1 + B) cannot go below 1 / (1 + B): at the floor no split was as far apart,
    so the page says ``≤ 0.001``, and the p-value columns read as p-values (a KS p of 1e-12
    is ``<0.001``, not ``0.000``)."""
    dr = _csv(monitored, "drift")
    floor = dr[(dr["psi_n_resamples"] > 0) & (dr["psi_pvalue"] * (1 + dr["psi_n_resamples"]) < 1 + 1e-9)]
    assert len(floor) and (floor["psi_n_resamples"] == 999).all()
    md = (monitored / "summary.md").read_text(encoding="utf-8")
    drift_md = md.split("## Score drift per period", 1)[1]
    assert "≤ 0.001" in drift_md
    lines = [ln for ln in drift_md.splitlines() if ln.startswith("| ")]
    head = [c.strip() for c in lines[0].strip("|").split("|")]
    cells = [[c.strip() for c in ln.strip("|").split("|")] for ln in lines[1:]]
    ks = [r[head.index("ks_pvalue")] for r in cells]
    assert (dr["ks_pvalue"] < 0.0005).sum() == ks.count("<0.001") > 0
    assert "0.000" not in ks
    assert (dr.loc[dr["psi_method"] == "asymptotic", "psi_n_resamples"] == 0).all()


def test_a_closed_pipe_on_stdout_is_no_error_message(site, claims_file, tmp_path):  # noqa: F811
    """``medaudit monitor ... | head``: the reader leaves before the summary lines; the command
    stops quietly with SIGPIPE's status 141 (no 'medaudit: error: [Errno 32] Broken pipe'),
    and the outputs, written before the summary is printed, are complete."""
    import subprocess
    import sys

    d, _ = site
    out = tmp_path / "mon"
    import os

    # stdout buffered, as it is for a user's pipe (PYTHONUNBUFFERED would hide the failure
    # until the interpreter's exit flush)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONUNBUFFERED"}
    p = subprocess.Popen([sys.executable, "-m", "medaudit", "monitor", str(claims_file),
                          str(d / "site.yaml"), "--out", str(out)],
                         stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env)
    p.stdout.close()
    err = p.stderr.read().decode()
    assert p.wait(timeout=300) == 141, err
    assert "Broken pipe" not in err and "error" not in err and "Exception ignored" not in err
    assert (out / "summary.md").is_file() and (out / "monitor__changes.csv").is_file()


def test_an_operating_point_shows_both_constraints_and_counts_as_one_claim(monitored):
    """D05 (Se >= 0.8 and Sp >= 0.7) is monitored as D05.Se and D05.Sp: its row shows the
    deciding constraint and the other beside it (as port does), and the run counts it as one
    monitored claim; a claim not computed locally shows the site's counts as the site's."""
    claims = _csv(monitored, "claims").set_index("claim_id")
    series = _csv(monitored, "series")
    last = series[(series["scope"] == "cumulative") & (series["look"] == len(PERIODS))]
    last = last.set_index("claim_id")
    d05 = claims.loc["D05"]
    decided, other = ("D05.Se", "D05.Sp") if d05["criterion"] == "sensitivity" else ("D05.Sp", "D05.Se")
    assert d05["local_estimate"] == last.loc[decided, "estimate"]
    assert d05["other_criterion"] == last.loc[other, "criterion"]
    assert (d05["other_estimate"], d05["other_ci_low"], d05["other_ci_high"]) == tuple(
        last.loc[other, ["estimate", "ci_low", "ci_high"]])
    assert d05["reason"].startswith(f"judged on the cumulative interval at {PERIODS[-1]} (")
    prov = json.loads((monitored / "monitor.json").read_text(encoding="utf-8"))["provenance"]
    ids = {c.split(".")[0] for c in series["claim_id"]}
    assert sorted(prov["monitor"]["monitored_claims"]) == sorted(ids)
    md = (monitored / "summary.md").read_text(encoding="utf-8")
    counts = next(ln for ln in md.splitlines() if ln.startswith(f"{len(claims)} source claims: "))
    verdicts = claims["verdict"].value_counts()
    for v, k in verdicts.items():  # "does not hold: 1", not "1 does not hold"
        assert f"{v}: {k}" in counts
    assert "(not computed; local data n = " in md
    page = (monitored / "report.html").read_text(encoding="utf-8")
    assert "under repeated looks no one-look sample is given" in page
    assert "drift PSI p-values by permutation or chi-square" in page


def test_the_change_count_survives_a_round_trip_through_csv(monitored):
    """Read back, 'no verdict before' is NaN (default NA handling) or '' (as text): neither
    counts as a change, as records or as a frame."""
    from medaudit.stats.monitor import count_changes

    path = monitored / "monitor__changes.csv"
    as_nan = pd.read_csv(path)
    as_text = pd.read_csv(path, dtype=str, keep_default_na=False)
    k = int(as_nan["verdict_before"].notna().sum())
    assert 0 < k < len(as_nan)
    for t in (as_nan, as_text):
        assert count_changes(t) == count_changes(t.to_dict("records")) == k


def test_a_broken_pipe_that_is_not_stdout_is_an_error(monkeypatch, capsys):
    """Only a closed stdout is the quiet exit 141; a BrokenPipeError from anything else (a
    worker's pipe, a FIFO) is one error line, status 2."""
    import argparse

    import medaudit.cli.main as cli

    def parser():
        p = argparse.ArgumentParser()
        p.set_defaults(func=lambda args: (_ for _ in ()).throw(BrokenPipeError(32, "Broken pipe")))
        return p

    monkeypatch.setattr(cli, "build_parser", parser)
    assert cli.main([]) == 2
    assert capsys.readouterr().err.startswith("medaudit: error: [Errno 32] Broken pipe")


def test_the_headline_is_the_repr_and_the_last_line(site, claims_file, tmp_path, capsys):  # noqa: F811
    """One headline: source claims, monitored claims (an operating point once), periods and
    the changes after the first look, read here from the written tables."""
    from medaudit.monitor import monitor

    d, _ = site
    run = monitor(claims_file, spec=d / "site.yaml")
    ch = run.changes
    k = int(ch["verdict_before"].notna().sum())
    ids = {c.split(".")[0] for c in run.series["claim_id"]}
    want = (f"{len(run.claims)} source claims, {len(ids)} monitored over {len(PERIODS)} periods, "
            f"{k} verdict change{'s' if k != 1 else ''} after the first look")
    assert run.headline == want and repr(run) == f"<medaudit MonitorRun: {want}>"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(tmp_path / "m")]) == 0
    assert capsys.readouterr().out.splitlines()[0] == f"wrote {tmp_path / 'm'}/ ({want})"


def test_monitor_figure_draws_an_interval_that_misses_its_estimate_by_rounding():
    # probe finding: a 100 % cumulative Sp under alpha_spending had a Wilson upper bound of
    # 0.9999999999999999, and matplotlib refused the negative error bar (a traceback)
    from medaudit.report.port import monitor_figure

    series = pd.DataFrame({
        "claim_id": "K04", "period": ["2025-01", "2025-02", "2025-01", "2025-02"],
        "scope": ["cumulative", "cumulative", "period", "period"],
        "estimate": [1.0, 0.9, 1.0, 0.8], "ci_low": [0.7, 0.6, 0.6, 0.5],
        "ci_high": [0.9999999999999999, 1.0, 0.9999999999999999, 1.0],
        "level": 0.8, "criterion": "specificity", "claim": "Sp >= 0.8 at tau = 0.5",
        "correction": "alpha_spending", "method": "Wilson, O'Brien-Fleming spending"})
    fig = monitor_figure(series, claim_id="K04")
    assert fig.svg and fig.png


def test_iso_periods_declared_out_of_time_order_are_run_as_declared_with_a_warning(
        site, claims_file, tmp_path, capsys):  # noqa: F811
    # probe finding: `--period-files 2026-02.csv 2026-01.csv ...` typed by hand ran the looks
    # in that order without a word; the declared order still rules (it is the user's), said aloud
    d, df = site
    swapped = [PERIODS[1], PERIODS[0], *PERIODS[2:]]
    files = _period_files(df, tmp_path, swapped)
    out = tmp_path / "swapped"
    assert main(["monitor", str(claims_file), str(d / "site.yaml"), "--out", str(out),
                 "--period-files", *files]) == 0  # not --quiet: it keeps errors only
    err = [ln for ln in capsys.readouterr().err.splitlines() if "out of time order" in ln]
    assert err == ["medaudit: warning: the periods are declared out of time order ('2026-02' "
                   "before '2026-01'): the looks run in the order declared; if that was not "
                   "meant, give them in time order."], err
    doc = json.loads((out / "monitor.json").read_text(encoding="utf-8"))
    assert doc["provenance"]["local"]["periods"] == swapped
    # in time order, or not all year-first dates of one form: nothing is said
    import warnings

    from medaudit.stats.drift import warn_if_out_of_time_order
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        for order in (PERIODS, ["b", "a"], ["2026-01", "2026"], ["2026-Q2", "2026-Q1", "x"]):
            warn_if_out_of_time_order(order)
    with pytest.warns(UserWarning, match=r"'2026-Q2' before '2026-Q1'"):
        warn_if_out_of_time_order(["2026-Q2", "2026-Q1"])


def test_a_period_under_an_undeclared_cohort_is_listed_in_the_provenance(claims_file):  # noqa: F811
    # probe finding: the rows of one period named another cohort than the spec's, and that
    # period vanished from the series with nothing said; they are listed now
    from medaudit.monitor import monitor

    df = _batches().assign(cohort="local")
    df.loc[df["period"] == "2026-04", "cohort"] = "other"
    run = monitor(claims_file, df, primary_prompt="clinical", cohorts={"local": {}})
    left = run.provenance["local"]["inputs"]["cohorts_not_declared"]["rows_left_out"]
    assert left == {"other": 200}
    assert "2026-04" not in {r for r in run.series["period"]}


def test_a_declared_period_without_rows_is_warned_about_once(claims_file):  # noqa: F811
    import warnings

    from medaudit.monitor import monitor

    df = _batches()
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        run = monitor(claims_file, df, primary_prompt="clinical", periods=[*PERIODS, "2026-07"])
    said = [w for w in caught if "which no row has" in str(w.message)]
    assert len(said) == 1 and "['2026-07']" in str(said[0].message)
    assert "2026-07" in set(run.series["period"])

"""Label rules and the annotation bootstrap of paper 001 (methods.md M1.1, M1.5-M1.9).

Witnesses:
* hand-computed label rules on tiny sums (majority with each tie rule, ENHANCE's threshold);
* a slow loop oracle: each replicate's resampled annotation table is materialised row by
  row from the documented draw contract (one uniform per rating slot, items in sorted
  order, index floor(u k) within the item), aggregated with exact fractions, and scored
  with scikit-learn (AUROC, pooled AP), the double-sum soft oracles of tests/_oracles.py
  and scipy's spearmanr / kendalltau — compared with the vectorised engine at rtol 1e-12;
* batch-size independence (bit-identical replicates);
* min-rank against scipy.stats.rankdata(method="min"), the binomial test against
  scipy.stats.binomtest, R^2 against the published Table 2 -> Figure 1 arithmetic;
* hypothesis: strictly increasing score transforms leave every replicate unchanged.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal
from scipy import stats as ss
from sklearn.metrics import average_precision_score, roc_auc_score

from medaudit.exceptions import MedauditError
from medaudit.stats.annotation_bootstrap import (
    RANK_DECIMALS,
    _kendall_rows,
    _spearman_rows,
    annotation_bootstrap,
    labels_from_sums,
    metric_ids,
    min_rank,
    pearson_r2,
    rank_stability_test,
    resolve_hedges,
)
from tests import _oracles as oracle

RTOL = 1e-12


# ------------------------------------------------------------------ label rules
def test_majority_rule_by_hand():
    # binary votes: 2 of 3, 1 of 3, 4 of 8 (a tie), 5 of 8, 0 of 2, 2 of 2
    sums, counts = [2, 1, 4, 5, 0, 2], [3, 3, 8, 8, 2, 2]
    soft, hard = labels_from_sums(sums, counts)
    assert_allclose(soft, [2 / 3, 1 / 3, 0.5, 5 / 8, 0.0, 1.0], rtol=RTOL)
    assert hard.tolist() == [1, 0, 0, 1, 0, 1]  # default: strict majority, the tie negative
    assert labels_from_sums(sums, counts, tie="positive")[1].tolist() == [1, 0, 1, 1, 0, 1]
    excl = labels_from_sums(sums, counts, tie="exclude")[1]
    assert np.isnan(excl[2]) and np.isfinite(np.delete(excl, 2)).all()


def test_majority_on_an_ordinal_scale_normalises_first():
    # scale 0..3: ratings (1, 2) have normalised mean exactly 1/2 -> a tie; (2, 2) -> 2/3
    soft, hard = labels_from_sums([3, 4, 1], [2, 2, 1], scale=(0, 3), tie="exclude")
    assert_allclose(soft, [0.5, 2 / 3, 1 / 3], rtol=RTOL)
    assert np.isnan(hard[0]) and hard[1:].tolist() == [1.0, 0.0]


def test_enhance_threshold_rule_by_hand():
    # ENHANCE (M1.1): scale 0..2, hard = 1{mean raw rating > 1}; soft = mean / 2
    sums, counts = [3, 4, 5, 2], [3, 3, 3, 3]  # means 1, 4/3, 5/3, 2/3
    soft, hard = labels_from_sums(sums, counts, scale=(0, 2), hard_rule="threshold", threshold=1)
    assert_allclose(soft, [0.5, 2 / 3, 5 / 6, 1 / 3], rtol=RTOL)
    assert hard.tolist() == [0, 1, 1, 0]  # a mean of exactly 1 is not > 1
    ge = labels_from_sums(sums, counts, scale=(0, 2), hard_rule="threshold", threshold=1,
                          threshold_rule=">=")[1]
    assert ge.tolist() == [1, 1, 1, 0]


def test_no_ratings_gives_nan_and_rules_are_checked():
    soft, hard = labels_from_sums([0.0], [0])
    assert np.isnan(soft[0]) and np.isnan(hard[0])
    with pytest.raises(MedauditError, match="threshold="):
        labels_from_sums([1], [1], hard_rule="threshold")
    with pytest.raises(MedauditError, match="tie="):
        labels_from_sums([1], [1], tie="coin")
    with pytest.raises(MedauditError, match="min < max"):
        labels_from_sums([1], [1], scale=(1, 1))


@pytest.mark.parametrize("policy, expected", [
    ("negative", [1.0, 0.0, 0.0]), ("positive", [1.0, 0.0, 2.0]), ("half", [1.0, 0.0, 1.0]),
])
def test_hedge_policies(policy, expected):
    v, keep = resolve_hedges([1, 0, np.nan], [False, False, True], policy=policy, scale=(0, 2))
    assert v.tolist() == expected and keep.all()


def test_hedge_exclude_and_undeclared():
    v, keep = resolve_hedges([1, 0, np.nan], [False, False, True], policy="exclude", scale=(0, 1))
    assert keep.tolist() == [True, True, False]
    with pytest.raises(MedauditError, match="declare"):
        resolve_hedges([1, np.nan], [False, True], policy=None, scale=(0, 1))
    v, keep = resolve_hedges([1, 0], [False, False], policy=None, scale=(0, 1))  # no hedges: fine
    assert keep.all()


# ----------------------------------------------------------- ranks, correlations
def test_min_rank_paper_example_and_scipy():
    # M1.5: four models tied at rank 3, the next is rank 7
    x = [0.894, 0.893, 0.891, 0.891, 0.891, 0.891, 0.890]
    assert min_rank(x).tolist() == [1, 2, 3, 3, 3, 3, 7]
    assert_array_equal(min_rank(x), ss.rankdata(-np.asarray(x), method="min"))


@given(st.lists(st.integers(0, 4), min_size=2, max_size=9))
def test_min_rank_matches_scipy(values):
    x = np.asarray(values, dtype=float)
    assert_array_equal(min_rank(x), ss.rankdata(-x, method="min"))


def test_row_correlations_match_scipy():
    rng = np.random.default_rng(3)
    ref = np.array([0.9, 0.8, 0.8, 0.7, 0.6, 0.5])  # a tie in the reference too
    x = rng.integers(0, 4, size=(200, ref.size)).astype(float)  # many ties
    sp, kt = _spearman_rows(x, ref), _kendall_rows(x, ref)
    for b in range(x.shape[0]):
        if np.ptp(x[b]) == 0:  # scipy warns and returns nan on constant input
            assert np.isnan(sp[b]) and np.isnan(kt[b])
            continue
        assert sp[b] == pytest.approx(ss.spearmanr(x[b], ref).statistic, rel=RTOL, abs=1e-15)
        assert kt[b] == pytest.approx(ss.kendalltau(x[b], ref).statistic, rel=RTOL, abs=1e-15)


# ----------------------------------------------------------- published arithmetic
TABLE2 = {  # methods.md M1.9, Table 2: AUROC/AP/s-AUROC/s-AP for the four backbones
    "ENHANCE-Asymmetry": ".636/.571/.585/.592; .656/.621/.593/.618; .707/.655/.617/.625; "
                         ".635/.600/.594/.621",
    "ENHANCE-Border": ".664/.794/.569/.263; .617/.758/.556/.253; .679/.785/.579/.268; "
                      ".631/.769/.561/.253",
    "ENHANCE-Color": ".709/.890/.558/.431; .691/.878/.551/.429; .694/.886/.560/.443; "
                     ".656/.849/.533/.408",
    "VinDr-Pleural Thickening": ".864/.304/.839/.300; .870/.302/.849/.297; .886/.354/.863/.341; "
                                ".882/.329/.848/.313",
    "VinDr-Pneumothorax": ".958/.216/.903/.191; .877/.090/.866/.082; .928/.232/.924/.224; "
                          ".915/.093/.912/.096",
    "VinDr-Pulmonary Fibrosis": ".841/.292/.836/.300; .853/.272/.848/.280; .862/.349/.854/.336; "
                                ".861/.296/.851/.310",
    "CheXpert-Cardiomegaly": ".752/.531/.683/.480; .732/.427/.678/.447; .717/.493/.694/.491; "
                             ".632/.390/.616/.416",
    "CheXpert-Pleural Effusion": ".835/.504/.801/.551; .868/.560/.806/.540; .807/.494/.775/.539; "
                                 ".785/.410/.770/.467",
    "CheXpert-Pneumothorax": ".145/.012/.310/.039; .392/.020/.487/.039; .486/.019/.498/.033; "
                             ".760/.046/.581/.047",
}
FIGURE1 = {  # M1.9, Figure 1 R^2 (AUROC | AP)
    "ENHANCE-Asymmetry": (.899, .697), "ENHANCE-Border": (.966, .695), "ENHANCE-Color": (.874, .834),
    "VinDr-Pleural Thickening": (.697, .969), "VinDr-Pneumothorax": (.465, .983),
    "VinDr-Pulmonary Fibrosis": (.982, .941), "CheXpert-Cardiomegaly": (.840, .856),
    "CheXpert-Pleural Effusion": (.897, .726), "CheXpert-Pneumothorax": (.916, .659),
}


@pytest.mark.parametrize("task", sorted(FIGURE1))
def test_figure1_r2_follows_from_table2(task):
    t = np.array([[float(v) for v in m.split("/")] for m in TABLE2[task].split("; ")])
    r2_auc, r2_ap = pearson_r2(t[:, 0], t[:, 2]), pearson_r2(t[:, 1], t[:, 3])
    # numpy's correlation matrix is an independent route to the same number
    assert r2_auc == pytest.approx(np.corrcoef(t[:, 0], t[:, 2])[0, 1] ** 2, rel=1e-12)
    # M1.6: the rounded table reproduces the figure "to within 0.021" (that bound is itself
    # rounded: the worst case, CheXpert-Pneumothorax AP, is 0.0211)
    assert abs(r2_auc - FIGURE1[task][0]) <= 0.0215
    assert abs(r2_ap - FIGURE1[task][1]) <= 0.0215


def test_vindr_pneumothorax_example_of_m16():
    t = np.array([[float(v) for v in m.split("/")] for m in TABLE2["VinDr-Pneumothorax"].split("; ")])
    assert round(pearson_r2(t[:, 0], t[:, 2]), 3) == 0.461
    assert round(pearson_r2(t[:, 1], t[:, 3]), 3) == 0.984


def test_pearson_r2_undefined_cases():
    assert math.isnan(pearson_r2([1, 2], [2, 1]))  # two points: always 1, so not reported
    assert math.isnan(pearson_r2([1, 1, 1], [1, 2, 3]))


# ------------------------------------------------------------------ binomial test
@pytest.mark.parametrize("ties", ["exclude", "failure"])
def test_rank_stability_test_matches_scipy(ties):
    soft = np.array([1.0, 0.8, 0.8, np.nan, 0.9, 0.7, 1.0, 1.0, 0.6, 0.95])
    ordn = np.array([0.8, 0.8, 0.6, 0.5, 0.4, 0.9, 0.2, 1.0, 0.3, 0.1])
    r = rank_stability_test(soft, ordn, ties=ties)
    k, n_untied, n_def = 6, 7, 9  # by hand: wins; untied defined; defined
    n = n_untied if ties == "exclude" else n_def
    assert (r.statistic, r.n, r.details["n_ties"], r.details["n_undefined"]) == (k, n, 2, 1)
    assert r.pvalue == pytest.approx(ss.binomtest(k, n, 0.5, alternative="greater").pvalue,
                                     rel=RTOL)


def test_rank_stability_test_all_tied_is_undefined():
    r = rank_stability_test([1.0, 1.0], [1.0, 1.0])
    assert r.n == 0 and math.isnan(r.pvalue)


# --------------------------------------------------------- the loop oracle
def _problem(seed, n_items=14, scale_hi=1, k_range=(2, 6)):
    rng = np.random.default_rng(seed)
    k = rng.integers(*k_range, size=n_items)
    item = np.repeat(np.arange(n_items), k)
    ratings = rng.integers(0, scale_hi + 1, size=item.size).astype(float)
    perm = rng.permutation(item.size)  # the engine must not depend on the input order
    scores = {"m1": rng.random(n_items), "m2": rng.random(n_items),
              "m3": np.round(rng.random(n_items), 1)}  # m3 has tied scores
    return ratings[perm], item[perm], scores


def _labels_exact(vals, lo, hi, rule):
    """Soft and hard label of one item from its (resampled) ratings, with exact fractions."""
    mean = Fraction(sum(Fraction(v) for v in vals), len(vals))
    soft = float((mean - Fraction(lo)) / Fraction(hi - lo))
    if rule["hard_rule"] == "threshold":
        t = Fraction(rule["threshold"])
        return soft, 1.0 if (mean > t if rule.get("threshold_rule", ">") == ">" else mean >= t) else 0.0
    norm = (mean - Fraction(lo)) / Fraction(hi - lo)
    if norm == Fraction(1, 2):
        return soft, {"negative": 0.0, "positive": 1.0, "exclude": math.nan}[rule["tie"]]
    return soft, 1.0 if norm > Fraction(1, 2) else 0.0


def _metrics_by_definition(soft, hard, s):
    keep = ~np.isnan(hard)
    p, y, s = soft[keep], hard[keep], s[keep]
    two = 0 < y.sum() < y.size
    auc = roc_auc_score(y, s) if two else math.nan
    ap = average_precision_score(y, s) if y.sum() > 0 else math.nan  # pooled ties (M1.4)
    sauc = oracle.soft_auroc_strict(p, s)
    sap = oracle.soft_ap_known_self(p, s) if 0 < p.sum() < p.size else math.nan
    return auc, ap, sauc, sap


def _loop_oracle(ratings, item, scores, *, lo, hi, rule, n_resamples, seed):
    order = np.argsort(item, kind="stable")
    r, it = ratings[order], item[order]
    n_items = it.max() + 1
    k = np.bincount(it)
    offsets = np.r_[0, np.cumsum(k)[:-1]]
    gen = np.random.default_rng(seed)
    names = list(scores)

    def evaluate(rows):  # rows: list of (item, rating) - the materialised annotation table
        per = [[] for _ in range(n_items)]
        for i, v in rows:
            per[i].append(v)
        lab = np.array([_labels_exact(per[i], lo, hi, rule) for i in range(n_items)])
        return np.array([_metrics_by_definition(lab[:, 0], lab[:, 1], scores[m]) for m in names]
                        ).T, int(np.isnan(lab[:, 1]).sum())

    base, _ = evaluate(list(zip(it.tolist(), r.tolist(), strict=True)))
    reps, excluded = [], []
    for _ in range(n_resamples):
        u = gen.random(r.size)
        rows = []
        for slot in range(r.size):
            i = it[slot]
            j = offsets[i] + int(u[slot] * k[i] * (1.0 - 2.0**-52))
            rows.append((i, r[j]))
        vals, n_ex = evaluate(rows)
        reps.append(vals)
        excluded.append(n_ex)
    return base, np.array(reps), np.array(excluded)


def _corr_oracle(x, ref, fn):
    # metrics equal up to floating-point noise are ties (the engine's documented rule)
    x, ref = np.round(x, RANK_DECIMALS), np.round(ref, RANK_DECIMALS)
    if np.isnan(x).any() or np.ptp(x) == 0:
        return math.nan
    return fn(x, ref).statistic


RULES = [
    (1, {"hard_rule": "majority", "tie": "negative"}),
    (1, {"hard_rule": "majority", "tie": "exclude"}),
    (2, {"hard_rule": "threshold", "threshold": 1.0, "tie": "negative"}),
    (2, {"hard_rule": "majority", "tie": "positive"}),
]


@pytest.mark.parametrize("hi, rule", RULES)
def test_replicates_equal_the_materialised_resample(hi, rule):
    ratings, item, scores = _problem(5 + hi, scale_hi=hi)
    B, seed = 25, 99
    res = annotation_bootstrap(ratings, item, scores, scale=(0, hi), n_resamples=B, rng=seed,
                               **rule)
    base, reps, excluded = _loop_oracle(ratings, item, scores, lo=0, hi=hi, rule=rule,
                                        n_resamples=B, seed=seed)
    for i, mid in enumerate(res.metrics):
        assert_allclose(res.estimate[mid], base[i], rtol=RTOL, atol=1e-15)
        assert_allclose(res.replicates[mid], reps[:, i, :], rtol=RTOL, atol=1e-15)
        assert_array_equal(res.rank[mid],
                           ss.rankdata(-np.round(base[i], RANK_DECIMALS), method="min"))
        assert res.n_degenerate[mid] == int(np.isnan(reps[:, i, :]).any(axis=1).sum())
        sp = [_corr_oracle(reps[b, i], base[i], ss.spearmanr) for b in range(B)]
        kt = [_corr_oracle(reps[b, i], base[i], ss.kendalltau) for b in range(B)]
        assert_allclose(res.spearman[mid], sp, rtol=RTOL, atol=1e-15)
        assert_allclose(res.kendall[mid], kt, rtol=RTOL, atol=1e-15)
    assert_array_equal(res.n_excluded, excluded)
    if rule["tie"] == "exclude":
        assert excluded.sum() > 0  # the case really exercises excluded ties


def test_degenerate_replicates_are_counted():
    # one positive item (votes 1, 1, 0); it turns negative whenever its resample has <= 1 vote
    ratings = [1, 1, 0] + [0, 0] * 5
    item = [0, 0, 0] + [i for i in range(1, 6) for _ in range(2)]
    scores = {"a": np.linspace(1, 0, 6), "b": np.linspace(0, 1, 6)}
    res = annotation_bootstrap(ratings, item, scores, n_resamples=400, rng=1)
    # by the draw contract: replicates where item 0 keeps >= 2 of its 2 "1" ratings' draws
    gen = np.random.default_rng(1)
    lost = 0
    for _ in range(400):
        u = gen.random(13)
        drawn = [int(x * 3 * (1 - 2.0**-52)) for x in u[:3]]
        lost += sum(d < 2 for d in drawn) < 2
    assert lost > 0
    for mid in res.metrics[:2]:
        assert res.n_degenerate[mid] == lost
        assert np.isnan(res.spearman[mid]).sum() == lost


@pytest.mark.parametrize("batch", [1, 3, 17])
def test_results_do_not_depend_on_batch_size(batch):
    ratings, item, scores = _problem(21, n_items=30)
    ref = annotation_bootstrap(ratings, item, scores, n_resamples=40, rng=5, tie="exclude")
    got = annotation_bootstrap(ratings, item, scores, n_resamples=40, rng=5, tie="exclude",
                               batch=batch)
    for mid in ref.metrics:
        assert_array_equal(got.replicates[mid], ref.replicates[mid])
        assert_array_equal(got.spearman[mid], ref.spearman[mid])
        assert_array_equal(got.kendall[mid], ref.kendall[mid])
    assert_array_equal(got.n_excluded, ref.n_excluded)


@given(st.integers(0, 2**31 - 1), st.sampled_from(["log", "cube", "affine"]))
def test_monotone_score_transforms_change_nothing(seed, how):
    ratings, item, scores = _problem(seed % 1000, n_items=10)
    f = {"log": lambda s: np.log(s + 1e-3), "cube": lambda s: (s - 0.5) ** 3,
         "affine": lambda s: 3.0 * s - 7.0}[how]
    a = annotation_bootstrap(ratings, item, scores, n_resamples=15, rng=seed)
    b = annotation_bootstrap(ratings, item, {k: f(v) for k, v in scores.items()}, n_resamples=15,
                             rng=seed)
    for mid in a.metrics:
        assert_array_equal(a.replicates[mid], b.replicates[mid])


def test_stability_is_the_mean_defined_correlation_and_ids():
    ratings, item, scores = _problem(8, n_items=20)
    res = annotation_bootstrap(ratings, item, scores, n_resamples=30, rng=2)
    assert res.metrics == metric_ids()
    for mid in res.metrics:
        c = res.spearman[mid]
        assert res.stability(mid) == pytest.approx(float(np.mean(c[~np.isnan(c)])), rel=RTOL)
    d = res.to_dict()
    assert "replicates" not in d and d["n_resamples"] == 30 and d["seed"] == 2


def test_bad_input_is_named():
    with pytest.raises(MedauditError, match=r"no ratings \(indices \[1\]\)"):
        annotation_bootstrap([1, 0], [0, 2], {"a": [0.1, 0.2, 0.3]}, n_resamples=10)
    with pytest.raises(MedauditError, match="scale"):
        annotation_bootstrap([1, 3], [0, 1], {"a": [0.1, 0.2]}, n_resamples=10)
    with pytest.raises(MedauditError, match="one score per item"):
        annotation_bootstrap([1, 0], [0, 1], {"a": [0.1, 0.2], "b": [0.1]}, n_resamples=10)
    with pytest.raises(MedauditError, match="no score"):
        annotation_bootstrap([1, 0], [0, 5], {"a": [0.1, 0.2]}, n_resamples=10)


def test_fractional_ratings_tie_exactly_as_their_rational_values():
    """0.2 + 0.8 and 1/3 + 2/3 are ties at 1/2 (float sums miss them by an ulp)."""
    from fractions import Fraction

    from medaudit.stats.annotation_bootstrap import labels_from_sums

    cases = [[0.2, 0.8], [1 / 3, 2 / 3], [0.1, 0.2, 0.7, 1.0], [0.1, 0.2, 0.6, 1.0], [0.7, 0.1]]
    sums = [sum(c) for c in cases]
    counts = [len(c) for c in cases]
    _, hard = labels_from_sums(sums, counts, tie="exclude")
    # witness: exact rational arithmetic on the decimal ratings as written
    exact = []
    for c in cases:
        m = sum(Fraction(str(round(v, 12))) for v in c) / len(c)
        exact.append(np.nan if m == Fraction(1, 2) else float(m > Fraction(1, 2)))
    np.testing.assert_array_equal(hard, np.array(exact))

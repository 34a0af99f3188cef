"""The spectrum block's note says how its intervals were resampled, and agrees with its own
``design`` column (issue 16 item 8): the note used to say "group intervals use the
shared-positive bootstrap" while an ordinary-design cohort's group rows (B-ORD on P ∪ G, paper
000 M0.10) say ``design ordinary``; and the note was printed when the spec had no entry.

Witness of what the design really is: the block's own B-ORD path for an ordinary cohort is
re-run here by hand with :func:`medaudit.stats.bootstrap_metrics` on P ∪ G under the block's
key, and gives the group row's interval exactly.
"""

from __future__ import annotations

import re

import numpy as np
import pytest

from medaudit.blocks import spectrum
from medaudit.blocks.context import cell_rng
from medaudit.stats import bootstrap_metrics
from tests._support import run
from tests.blocks.conftest import small_context


@pytest.fixture(scope="module")
def ctx():
    return small_context()


@pytest.fixture(scope="module")
def result(ctx):
    return run(spectrum, ctx)


def _note(result) -> str:
    notes = [n for n in result.notes if n.startswith("Intervals (column design)")]
    assert len(notes) == 1, result.notes
    return notes[0]


def test_note_names_every_design_of_each_table_with_its_cohorts(result):
    note = _note(result)
    for name, what in (("groups", "Group AUROC/AURC rows"), ("contrasts", "Group contrasts"),
                       ("model_differences", "Model differences")):
        t = result.tables[name]
        t = t[~t["criterion"].astype(str).str.startswith("soft_")]
        part = re.search(rf"{re.escape(what)}: (.*?)(?:\. [A-Z]|\.$)", note).group(1)
        said = dict(re.findall(r"design (\S+) \(([^)]*)\)", part))
        truth = {d: ", ".join(dict.fromkeys(g["cohort"])) for d, g in t.groupby("design", sort=False)}
        assert said == truth, (name, said, truth)


def test_ordinary_cohort_groups_are_b_ord_as_the_column_says(ctx, result):
    g = result.tables["groups"]
    designs = dict(g.groupby("cohort")["design"].first())
    assert designs == {"tbx11k-val": "ordinary", "vindr": "shared_positive"}  # the example's two kinds
    assert "design ordinary (tbx11k-val), the ordinary bootstrap of P ∪ G" in _note(result)
    # the witness: B-ORD on P ∪ G under the block's key reproduces the row
    w = ctx.wide("tbx11k-val")
    prompt = ctx.primary_prompt
    model = ctx.models()[0]
    s = w.scores[f"{model}|{prompt}"]
    pos = w.label == 1
    grp = g[(g["cohort"] == "tbx11k-val") & (g["criterion"] == "roc_auc")]["group"].iloc[0]
    neg = (w.label == 0) & (w.negative_group == grp)
    y = np.r_[np.ones(pos.sum()), np.zeros(neg.sum())]
    res = bootstrap_metrics(y, np.r_[s[pos], s[neg]], metrics=["roc_auc", "aurc"], design="ordinary",
                            n_resamples=ctx.resampling.n_resamples,
                            confidence_level=ctx.resampling.confidence_level,
                            rng=cell_rng(ctx.seed, "spectrum", "tbx11k-val", model, "marginal", grp))
    row = g[(g["cohort"] == "tbx11k-val") & (g["model"] == model) & (g["group"] == grp)
            & (g["criterion"] == "roc_auc")].iloc[0]
    assert (row["ci_low"], row["ci_high"]) == (res["roc_auc"].ci_low, res["roc_auc"].ci_high)


def test_no_entry_no_design_note(ctx):
    spec = ctx.spec.model_copy(update={"spectrum": []})
    res = run(spectrum, ctx, spec=spec)
    assert not [n for n in res.notes if "bootstrap" in n or "design" in n], res.notes

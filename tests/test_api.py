"""medaudit.audit(...) and its Audit result as a notebook user meets them (probe findings).

Witnesses: the same table read from where the caller means it (by its AUROC, computed
with scikit-learn); the written files against the result's own tables; pydoc's page.
"""

from __future__ import annotations

import os
import pydoc
import warnings

import numpy as np
import pandas as pd
import pytest
import yaml
from sklearn.metrics import roc_auc_score

import medaudit


def _table(flip: bool = False) -> pd.DataFrame:
    rng = np.random.default_rng(0)
    y = np.repeat([1, 0], 30)
    s = 0.3 * y + rng.uniform(0, 0.7, 60)
    return pd.DataFrame({"image_id": [f"i{i}" for i in range(60)], "model": "a", "label": y,
                         "score": 1 - s if flip else s})


def _quiet(*args, **kw):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return medaudit.audit(*args, **kw)


def test_a_path_given_in_the_call_is_the_callers_not_the_spec_folders(tmp_path, monkeypatch):
    """`scores="s.csv"` beside `spec="specs/spec.yaml"` read specs/s.csv, another file of the
    same name (AUROC 0.135 where the caller's table has 0.865), without a word."""
    monkeypatch.chdir(tmp_path)
    (tmp_path / "specs").mkdir()
    _table().to_csv(tmp_path / "s.csv", index=False)
    _table(flip=True).to_csv(tmp_path / "specs" / "s.csv", index=False)
    (tmp_path / "specs" / "spec.yaml").write_text(yaml.safe_dump(
        {"scores": "s.csv", "n_resamples": 50, "blocks": ["discrimination"]}), encoding="utf-8")
    mine = _table()
    want = roc_auc_score(mine["label"], mine["score"])
    t = _quiet(spec="specs/spec.yaml", scores="s.csv").tables["discrimination.metrics"]
    assert t[t["criterion"] == "roc_auc"]["estimate"].iloc[0] == pytest.approx(want, abs=1e-12)
    # the spec's own path still starts at its folder
    t = _quiet(spec="specs/spec.yaml").tables["discrimination.metrics"]
    assert t[t["criterion"] == "roc_auc"]["estimate"].iloc[0] == pytest.approx(1 - want, abs=1e-12)


def test_home_paths_are_expanded_and_edits_to_the_result_are_not_published(tmp_path, monkeypatch):
    """`write("~/out")` made a folder named "~" in the working one (and failed in pandas);
    edits to `res.tables` reached the written CSVs and results.json."""
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir()
    monkeypatch.chdir(tmp_path)
    res = _quiet(_table(), n_resamples=50, blocks=["discrimination"])
    assert res.write("~/out") == tmp_path / "home" / "out"
    assert res.report("~/page.html") == tmp_path / "home" / "page.html"
    assert not (tmp_path / "~").exists() and (tmp_path / "home" / "page.html").is_file()
    before = res.tables["discrimination.metrics"]["estimate"].to_numpy().copy()
    res.tables["discrimination.metrics"].loc[0, "estimate"] = 99.0
    res.matrix.loc[0, "verdict"] = "edited"
    res.write(tmp_path / "again")
    written = pd.read_csv(tmp_path / "again" / "tables" / "discrimination__metrics.csv")
    np.testing.assert_array_equal(written["estimate"].to_numpy(), before)
    assert "edited" not in set(pd.read_csv(tmp_path / "again" / "portability.csv")["verdict"])


def test_help_shows_the_function_a_user_calls():
    """help(medaudit.audit) showed the package page alone, without the parameters."""
    page = pydoc.render_doc(medaudit.audit, renderer=pydoc.plaintext)
    assert "medaudit.audit(data=None, /, *, spec=None, **options)" in page
    assert "n_resamples" in page and "Returns" in page and "The package medaudit.audit" in page
    assert os.path.basename(medaudit.audit.__file__) == "__init__.py"  # still the package


@pytest.mark.parametrize("call, message", [
    (lambda df: medaudit.audit(data=df), r"pass the table as the first argument, not as data="),
    (lambda df: medaudit.audit(scores=df), r"scores= takes a file path .* pass a DataFrame as "
                                           r"the first argument"),
    (lambda df: medaudit.audit(df.set_index("image_id")), r"the table holds \['image_id'\] in its "
                                                          r"index, not as columns; pass "
                                                          r"df.reset_index\(\)"),
])
def test_the_table_passed_the_wrong_way_gets_the_python_way(call, message):
    # probe findings: "data: unknown key", pydantic's "Input should be a valid string", and
    # "missing column(s) ['image_id']" for a key held in the index
    with pytest.raises(medaudit.exceptions.MedauditError, match=message):
        call(_table())


def test_the_notebook_view_names_the_blocks_that_ran_as_repr_counts_them():
    # probe finding: _repr_html_ listed every block of the spec, also those that ran on
    # nothing, while repr() counted the blocks run
    res = _quiet(_table(), n_resamples=50)
    ran = [b for b, r in res.outcome.results.items() if any(len(t) for t in r.tables.values())]
    assert f"{len(ran)} blocks run" in repr(res)
    assert f"blocks run {', '.join(ran)};" in res._repr_html_()
    assert len(ran) < len(res.outcome.results)  # the table has no prompts: some ran on nothing


def test_an_option_replaces_the_whole_key_of_the_spec():
    """What the docstring says: claims={...} is the new claims section, not merged into the
    spec's (its auroc_at_least goes back to the default); other keys of the spec stay."""
    import medaudit

    spec = {"n_resamples": 20, "seed": 3, "blocks": ["discrimination", "claims"],
            "claims": {"auroc_at_least": 0.6, "generate": ["reliability"]}}
    same = medaudit.audit(_table(), spec=spec)
    assert same.spec.claims.auroc_at_least == 0.6 and same.spec.seed == 3
    changed = medaudit.audit(_table(), spec=spec, claims={"generate": ["rankings"]})
    assert changed.spec.claims.auroc_at_least == 0.9  # the default, not the spec's 0.6
    assert changed.spec.claims.generate == ["rankings"] and changed.spec.seed == 3

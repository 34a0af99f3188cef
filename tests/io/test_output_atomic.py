"""write_json / atomic_write_bytes never leave a half-written file."""

import json

import pytest

from medaudit.io.output import atomic_write_bytes, write_json


def test_write_json_replaces_atomically_and_leaves_no_temp(tmp_path):
    p = tmp_path / "r.json"
    write_json(p, {"b": 1, "a": float("nan")})
    write_json(p, {"b": 2})
    assert json.loads(p.read_text()) == {"b": 2}
    assert [q.name for q in tmp_path.iterdir()] == ["r.json"]


def test_failed_write_keeps_the_old_file(tmp_path):
    p = tmp_path / "r.json"
    write_json(p, {"ok": True})

    with pytest.raises(TypeError):
        atomic_write_bytes(p, object())  # not bytes: the write fails midway
    assert json.loads(p.read_text()) == {"ok": True}
    assert [q.name for q in tmp_path.iterdir()] == ["r.json"]



def test_a_missing_parent_folder_is_made(tmp_path):
    """Probe finding: `claims export --out "new dir/x.claims.json"` and `plan --out nodir/p.csv`
    gave a raw "[Errno 2] ... .x.claims.json.9vmb.tmp" naming a temporary file, where the
    output check had accepted a folder that can be made (report, init and port made it)."""
    target = tmp_path / "new dir" / "deeper" / "x.claims.json"
    atomic_write_bytes(target, b"{}\n")
    assert target.read_bytes() == b"{}\n"
    assert sorted(p.name for p in target.parent.iterdir()) == ["x.claims.json"]


def test_the_temporary_a_killed_write_leaves_is_found_by_its_one_name_rule(tmp_path, monkeypatch):
    """atomic_write_temps names what atomic_write_bytes leaves when its process dies between
    writing and renaming (the dicom converter removes them on a rerun): that file, and no other
    file or link beside it."""
    import os
    from pathlib import Path

    from medaudit.io.output import atomic_write_temps

    p = tmp_path / "a b[1].png"  # glob characters in the name are matched literally
    (tmp_path / ".a b[1].png.other").write_text("x")
    (tmp_path / ".a b1.png.XXXX.tmp").write_text("x")
    (tmp_path / ".a b[1].png.link.tmp").symlink_to(tmp_path / ".a b[1].png.other")

    def killed(*a, **k):  # the process dies after the write, before the rename and cleanup
        raise KeyboardInterrupt

    monkeypatch.setattr(os, "replace", killed)
    monkeypatch.setattr(Path, "unlink", lambda self, missing_ok=False: None)
    with pytest.raises(KeyboardInterrupt):
        atomic_write_bytes(p, b"png")
    monkeypatch.undo()
    left = atomic_write_temps(p)
    assert len(left) == 1 and left[0].read_bytes() == b"png"
    assert left[0].name.startswith(".a b[1].png.") and left[0].name.endswith(".tmp")


# ------------------------------------------------ the one-pass JSON and CSV writers
import math  # noqa: E402

import numpy as np  # noqa: E402
import pandas as pd  # noqa: E402
from hypothesis import given  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

from medaudit.io.output import _nan_to_none, csv_text, json_text, neutralise_formulas  # noqa: E402

_SCALARS = (st.none() | st.booleans() | st.integers(-2**70, 2**70)
            | st.floats(allow_nan=True, allow_infinity=True) | st.text(max_size=8))
_JSON = st.recursive(_SCALARS, lambda c: st.lists(c, max_size=4)
                     | st.dictionaries(st.text(max_size=6), c, max_size=4), max_leaves=30)


def _standard(data):
    """What write_json wrote before the one-pass encoder (the standard library's text)."""
    return json.dumps(_nan_to_none(json.loads(json.dumps(data))), sort_keys=True, indent=2,
                      allow_nan=False)


@given(_JSON)
def test_json_text_is_the_standard_librarys_text(data):
    assert json_text(data) == _standard(data)


def test_json_text_of_numpy_values_and_unicode():
    data = {"é": [np.float64(0.1), np.int64(3), np.bool_(True), np.array([1.5, np.nan])],
            "z": {"inf": -math.inf, "": "\u2603\n\"q\""}, "a": []}
    assert json_text(data) == json.dumps(_nan_to_none(json.loads(json.dumps(
        data, default=lambda o: o.item() if isinstance(o, np.generic) else o.tolist()))),
        sort_keys=True, indent=2, allow_nan=False)


_CELLS = st.sampled_from(["=1+1", "-0.5", "@SUM(A1)", "ok", "-", "+3", "\tx", "a,b", "", "=",
                          None, math.nan, 0.5, "observed"])


@given(st.lists(st.tuples(_CELLS, _CELLS, st.floats(allow_nan=True, width=32)), min_size=0,
                max_size=6), st.booleans(), st.sampled_from(["name", "=name", "-x"]))
def test_csv_text_is_neutralise_formulas_then_to_csv(rows, categorical, name):
    df = pd.DataFrame(rows, columns=["model", name, "score"])
    df["model"] = df["model"].astype(object)
    if categorical:
        df[name] = df[name].astype(str).astype("category")
    want = neutralise_formulas(df).to_csv(index=False, lineterminator="\n")
    assert csv_text(df) == want

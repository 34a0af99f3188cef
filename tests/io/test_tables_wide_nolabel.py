"""Wide prediction files without a label column (labels from annotations)."""

import pandas as pd
import pytest

from medaudit.audit.spec import WideScoresSpec
from medaudit.exceptions import SchemaError
from medaudit.io.tables import read_wide


def test_read_wide_without_label_column(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"image_id": ["a", "b"], "m1": [0.1, 0.9], "m2": [0.3, 0.4]}).to_csv(p, index=False)
    out = read_wide(p, WideScoresSpec(path=str(p), cohort="c", label_column=None))
    assert "label" not in out.columns
    assert sorted(out["model"].unique()) == ["m1", "m2"] and len(out) == 4
    assert out.loc[(out.model == "m2") & (out.image_id == "b"), "score"].item() == 0.4


def test_read_wide_with_label_column_still_requires_it(tmp_path):
    p = tmp_path / "w.csv"
    pd.DataFrame({"image_id": ["a"], "m1": [0.1]}).to_csv(p, index=False)
    with pytest.raises(SchemaError, match="'label' not found"):
        read_wide(p, WideScoresSpec(path=str(p), cohort="c"))


def test_read_table_names_folders_and_empty_files(tmp_path):
    from medaudit.io.tables import read_table

    with pytest.raises(SchemaError, match=r"manifest '.*' is a folder, not a table file"):
        read_table(tmp_path, what="manifest")
    empty = tmp_path / "e.csv"
    empty.write_text("")
    with pytest.raises(SchemaError, match=r"'.*e\.csv' is empty \(0 bytes\)"):
        read_table(empty)
    with pytest.raises(FileNotFoundError, match="manifest '.*nope.csv' does not exist"):
        read_table(tmp_path / "nope.csv", what="manifest")

"""Names a user may give (models, cohorts, subgroup values, claim ids) that are markup,
text-direction controls or path separators: summary.md, figure file names and the checks."""

from __future__ import annotations

import re

import numpy as np
import pandas as pd
import pytest

import medaudit
from medaudit.exceptions import SchemaError
from medaudit.io.schema import validate_score_table
from medaudit.report.format import md_table, md_text
from medaudit.report.port import file_safe

HOSTILE = ["<script>alert(1)</script>", '"><img src=x onerror=alert(1)>', "<svg/onload=alert(2)>"]


def _table(models):
    rng = np.random.default_rng(0)
    n = 120
    y = (rng.random(n) < 0.4).astype(int)
    rows = []
    for k, m in enumerate(models):
        s = 1 / (1 + np.exp(-(rng.normal(size=n) + (1.5 - 0.3 * k) * y)))
        rows.append(pd.DataFrame({"image_id": [f"i{i}" for i in range(n)], "model": m, "label": y,
                                  "score": s, "sex": np.where(np.arange(n) % 2, "F", "<b>M</b>")}))
    return pd.concat(rows, ignore_index=True)


def test_markdown_never_carries_a_tag_from_a_name():
    """Probe finding: summary.md copied names in as raw HTML, which Markdown viewers pass
    through (18 alert dialogs in a browser); every '<' that could open a tag is an entity,
    while 'Sp < 0.05' and medaudit's own '<br>' stay as they are."""
    assert md_text("Sp < 0.05") == "Sp < 0.05" and md_text("a<br>b") == "a<br>b"
    for h in HOSTILE:
        assert not re.search(r"<[A-Za-z/!?]", md_text(h)), h
    assert md_text("<br onmouseover=x>") == "&lt;br onmouseover=x>"
    lines = md_table(pd.DataFrame({HOSTILE[0]: HOSTILE[1:], "x": ["a|b", "c"]}))
    assert not any(re.search(r"<[A-Za-z/!?]", ln) for ln in lines) and "a\\|b" in lines[2]


def test_an_audit_of_hostile_names_writes_no_markup_into_summary_md(tmp_path):
    df = _table(HOSTILE[:2])
    res = medaudit.audit(df, n_resamples=50, subgroups=["sex"],
                         claims=[{"model": HOSTILE[0], "metric": "roc_auc", "at_least": 0.6},
                                 {"model": HOSTILE[0], "than": HOSTILE[1], "metric": "roc_auc"}])
    out = res.write(tmp_path / "out")
    text = (out / "summary.md").read_text(encoding="utf-8")
    assert "&lt;script>" in text
    tags = set(re.findall(r"<([A-Za-z/!?][^ >]*)", text))
    assert tags <= {"br"}, tags


@pytest.mark.parametrize("ch", ["\u202e", "\u202a", "\u2066", "\u2069"])
def test_text_direction_controls_in_a_name_are_refused(ch):
    """Probe finding: a model named 'alpha' + U+202E (right-to-left override, never closed)
    printed the claim after it reversed ('alphaateb naht retteb si')."""
    t = _table(["alpha" + ch, "beta"]).assign(cohort="c", prompt="p")
    with pytest.raises(SchemaError, match="column 'model' holds a control character .*text-direction"):
        validate_score_table(t, source="t")


def test_a_claim_id_with_a_control_character_is_refused():
    from medaudit.blocks.claims import ClaimsConfig

    with pytest.raises(Exception, match="control character U\\+202E"):
        ClaimsConfig.model_validate([{"id": "K\u202e1", "model": "a", "at_least": 0.5}])
    with pytest.raises(Exception, match="whitespace at either end"):
        ClaimsConfig.model_validate([{"id": "  ", "model": "a", "at_least": 0.5}])


def test_figure_file_names_from_claim_ids_are_safe_and_distinct():
    """Probe finding: `medaudit monitor` failed on the claim id 'Se/τ' (a figure path with a
    folder that does not exist)."""
    names = [file_safe(x) for x in ("Se/τ", "Se_τ", "Se:τ", "X<i>1</i>", "..", ".hidden", "D01")]
    assert names[-1] == "D01" and len(set(names)) == len(names)
    assert all(re.fullmatch(r"[A-Za-z0-9._-]+", n) and not n.startswith(".") for n in names)


def test_subgroup_values_and_the_audit_name_are_checked_as_names_are():
    """Review finding: a subgroup value 'F' + U+202E and name='audit' + U+202E reached
    summary.md (the check covered the fixed text columns only)."""
    df = _table(["a", "b"])
    with pytest.raises(SchemaError, match="column 'sex' holds a control character"):
        medaudit.audit(df.assign(sex=np.where(np.arange(len(df)) % 2, "F\u202e", "M")),
                       n_resamples=20, subgroups=["sex"])
    with pytest.raises(SchemaError, match="name: .*control character U\\+202E"):
        medaudit.audit(df, n_resamples=20, name="audit\u202eX")
    # a subgroup column the spec does not name is not printed, so not refused
    medaudit.audit(df.assign(note=np.where(np.arange(len(df)) % 2, "x\u202e", "y")), n_resamples=20)


def test_judgment_names_are_checked_as_score_table_names_are():
    from medaudit.agreement.judgments import validate_judgments
    from medaudit.simulate import simulate_paper002

    t = simulate_paper002(rng=0, scale=0.01)
    validate_judgments(t)  # as simulated: accepted
    bad = t.assign(institution=t["institution"].astype(str) + "\u202e")
    with pytest.raises(SchemaError, match="column 'institution' holds a control character"):
        validate_judgments(bad)


def test_claim_text_from_a_folded_yaml_block_is_one_line_and_empty_is_unset():
    from medaudit.blocks.claims import ClaimsConfig

    c = ClaimsConfig.model_validate([
        {"model": "a", "at_least": 0.5, "text": "AUROC of a\nat least 0.5\n"},
        {"model": "a", "at_least": 0.6, "text": "", "id": "K2"}])
    assert c.declared[0].text == "AUROC of a at least 0.5" and c.declared[1].text is None
    with pytest.raises(Exception, match="whitespace at either end"):
        ClaimsConfig.model_validate([{"id": " K1", "model": "a", "at_least": 0.5}])


def test_file_names_are_short_and_do_not_differ_only_in_case():
    long = file_safe("K" * 260)
    assert len(long) <= 60 and long != file_safe("K" * 261)
    assert file_safe("SE") == "SE" and file_safe("SE", hashed=True) != file_safe("se", hashed=True)
    assert file_safe("SE", hashed=True).lower() != file_safe("se", hashed=True).lower()


def test_no_name_becomes_a_markdown_link_or_image():
    assert md_text("![x](https://evil.example/t.png)") == "![x]\\(https://evil.example/t.png)"
    assert md_text("[click](javascript:alert(1))") == "[click]\\(javascript:alert(1))"
    assert md_text("ece[n_bins=10]") == "ece[n_bins=10]"

"""Generative-VLM verdicts (M2.2): the narrative parser, binary verdicts and the driver.

Witnesses: a catalogue of hand-written reports with hand-assigned verdicts; hypothesis
fuzzing (no input crashes the parser, the output is always a verdict per finding);
``scipy.special.expit`` for p_yes; a tiny random LLaVA built offline from transformers
configs run on real images, checked against its own forward pass and ``generate``.
"""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest
from hypothesis import given
from hypothesis import strategies as st
from scipy.special import expit

from medaudit.adapters.vlm import (
    FINDINGS,
    JUDGMENT_COLUMNS,
    NarrativeParser,
    ParserConfig,
    VLMRunner,
    answer_token_ids,
    binary_verdicts,
    evaluable_studies,
    normalise_reference,
    parse_report,
    run_binary,
    run_narrative,
)
from medaudit.exceptions import MedauditError, SchemaError

P, A, U = "present", "absent", "unparsed"
ATL, CAR, CON, EDE, EFF, PTX = FINDINGS

# (report, {finding: verdict}) -- findings not listed must be "unparsed"
CATALOGUE = [
    ("No pneumothorax or pleural effusion.", {PTX: A, EFF: A}),
    ("There is no evidence of pneumothorax, pleural effusion, or focal consolidation.",
     {PTX: A, EFF: A, CON: A}),
    ("Cardiomegaly with small bilateral pleural effusions.", {CAR: P, EFF: P}),
    ("Mild cardiomegaly. No pulmonary edema.", {CAR: P, EDE: A}),
    ("Heart size is normal. Bibasilar atelectasis.", {CAR: A, ATL: P}),
    ("No acute cardiopulmonary process.", dict.fromkeys(FINDINGS, A)),
    ("Unremarkable chest radiograph. Small left pleural effusion.",
     {**dict.fromkeys(FINDINGS, A), EFF: P}),
    ("Possible left lower lobe consolidation.", {CON: U}),
    ("Pneumothorax cannot be excluded.", {PTX: U}),
    ("Small pericardial effusion.", {}),  # never maps to pleural effusion
    ("There is no edema but there is consolidation.", {EDE: A, CON: P}),
    ("No effusion, cardiomegaly is present.", {EFF: A, CAR: P}),
    ("Atelectasis: present\nCardiomegaly: absent\nConsolidation: absent\nEdema: absent\n"
     "Pleural effusion: present\nPneumothorax: absent",
     {ATL: P, CAR: A, CON: A, EDE: A, EFF: P, PTX: A}),
    ("Pneumothorax - no. Edema - no.", {PTX: A, EDE: A}),
    ("Lungs are hyperinflated.", {}),
    ("No change in the small right pleural effusion.", {EFF: P}),
    ("Right pneumothorax. No right pneumothorax on the lateral view.", {PTX: U}),  # conflict
    ("Not a normal chest: large right pleural effusion.", {EFF: P}),  # no global-normal fallback
    ("", {}),
    # a comma ends a mention's reach: the "no" belongs to the next finding only
    ("Small right pleural effusion, no pneumothorax.", {EFF: P, PTX: A}),
    ("There is a pneumothorax, no effusion.", {PTX: P, EFF: A}),
    # a hedge belongs to the mention it is attached to, and the nearest cue in scope decides
    ("No pneumothorax, cannot exclude small effusion.", {PTX: A}),
    ("No pneumothorax, effusion may be present.", {PTX: A}),
    ("Possible consolidation but definite pleural effusion.", {EFF: P}),
    ("Possible consolidation, no effusion.", {EFF: A}),
    ("Effusion, possibly with atelectasis.", {EFF: P}),
    ("Pleural effusion has resolved.", {EFF: A}),
    ("The heart is not enlarged.", {CAR: A}),
    ("Edema - yes. Pneumothorax - no.", {EDE: P, PTX: A}),
    # one structure being normal is not a normal study: no global-normal fallback
    ("Heart size within normal limits. Bibasilar atelectasis.", {CAR: A, ATL: P}),
    ("The osseous structures are unremarkable. Small effusion.", {EFF: P}),
    ("Normal chest radiograph. Pneumothorax cannot be excluded.", {**dict.fromkeys(FINDINGS, A), PTX: U}),
    # a negation reaches over a list of bare findings (commas, and, or, nor) ...
    ("No consolidation, effusion, or pneumothorax.", {CON: A, EFF: A, PTX: A}),
    ("No focal consolidation, pleural effusion or pneumothorax.", {CON: A, EFF: A, PTX: A}),
    ("No pleural effusion, focal consolidation, or pneumothorax.", {CON: A, EFF: A, PTX: A}),
    ("Without edema, effusion and atelectasis.", {EDE: A, EFF: A, ATL: A}),
    ("No consolidation, mass, or effusion.", {CON: A, EFF: A}),  # a non-finding item keeps the list
    ("No large effusion.", {EFF: A}),  # a modifier inside the negated phrase is negated with it
    ("No pleural effusion is seen.", {EFF: A}),  # so is the phrase's predicate
    ("No pneumothorax is identified.", {PTX: A}),
    ("No edema or effusion is seen.", {EDE: A, EFF: A}),
    ("No edema or large effusion.", {EDE: A, EFF: A}),  # or/nor distribute the negation
    ("Neither edema nor large effusion.", {EDE: A, EFF: A}),
    # ... and stops at a finding that carries its own assertion, or at a clause boundary
    ("No edema and large effusion.", {EDE: A, EFF: P}),
    ("No edema, large effusion.", {EDE: A, EFF: P}),
    ("No edema. Large effusion.", {EDE: A, EFF: P}),
    ("No edema, but large effusion.", {EDE: A, EFF: P}),
    ("No edema, effusion is seen.", {EDE: A, EFF: P}),
    ("No edema, small effusion and pneumothorax.", {EDE: A, EFF: P, PTX: P}),
    ("No pneumothorax, new consolidation.", {PTX: A, CON: P}),
    ("No edema, increased bibasilar atelectasis.", {EDE: A, ATL: P}),
    ("No evidence of edema, and a moderate effusion.", {EDE: A, EFF: P}),
    ("No effusion and bilateral atelectasis.", {EFF: A, ATL: P}),
    ("No edema, heart is enlarged.", {EDE: A, CAR: P}),  # a synonym that is itself a clause
    ("No edema; effusion.", {EDE: A, EFF: P}),
    # hedges have the same reach
    ("Possible consolidation and large effusion.", {CON: U, EFF: P}),
    ("Possible consolidation or effusion.", {CON: U, EFF: U}),
]


@pytest.mark.parametrize(("report", "expected"), CATALOGUE, ids=[c[0][:40] for c in CATALOGUE])
def test_parser_catalogue(report, expected):
    got = parse_report(report)
    assert got.judgments == {f: expected.get(f, U) for f in FINDINGS}


def test_parser_configuration_and_evaluable_rule():
    rep = parse_report("Possible consolidation. No edema, effusion, pneumothorax or atelectasis.")
    assert rep.n_parsed == 4 and rep.evaluable
    assert not parse_report("No edema.").evaluable
    lenient = NarrativeParser(ParserConfig(uncertain_as="present", conflict_as="present"))
    assert lenient("Possible consolidation.").judgments[CON] == P
    # hedged, not dropped: the configured verdict shows where the default reads "unparsed"
    got = lenient("No pneumothorax, cannot exclude small effusion. Effusion, possibly with atelectasis.")
    assert (got.judgments[PTX], got.judgments[EFF], got.judgments[ATL]) == (A, P, P)
    assert lenient("Right pneumothorax. No pneumothorax.").judgments[PTX] == P
    custom = NarrativeParser(ParserConfig(global_normal=("clear lungs",)))
    assert custom("Clear lungs.").judgments == dict.fromkeys(FINDINGS, A)
    assert parse_report("no acute cardiopulmonary").global_normal
    with pytest.raises(MedauditError, match="uncertain_as"):
        ParserConfig(uncertain_as="maybe")
    with pytest.raises(MedauditError, match="must be a string"):
        parse_report(None)


@given(st.text(max_size=300))
def test_parser_never_crashes(text):
    rep = parse_report(text)
    assert set(rep.judgments) == set(FINDINGS)
    assert set(rep.judgments.values()) <= {P, A, U}
    assert parse_report(text) == rep  # deterministic


@given(st.lists(st.sampled_from(["no", "not", "pneumothorax", "effusion", "possible", ":", "absent",
                                 "present", "normal chest", ".", ",", "but", "heart size is normal"]),
                max_size=25))
def test_parser_fuzz_with_domain_words(words):
    rep = parse_report(" ".join(words))
    assert set(rep.judgments.values()) <= {P, A, U}


def test_binary_verdict_and_confidence():
    ly = np.array([2.0, -1.0, 0.5, 3.0, -40.0])
    ln = np.array([1.0, 1.0, 0.5, -3.0, 40.0])
    v = binary_verdicts(ly, ln)
    assert v.prediction.tolist() == [P, A, A, P, A]  # the tie is absent
    np.testing.assert_allclose(v.p_yes, expit(ly - ln), rtol=1e-15)
    assert v.p_yes[0] == pytest.approx(1 / (1 + np.exp(-1.0)), rel=1e-15)
    with pytest.raises(MedauditError, match="finite"):
        binary_verdicts([np.nan], [0.0])
    assert [normalise_reference(x) for x in (1, 0.0, -1, np.nan, "", "uncertain", pd.NA, None)] == \
        ["1", "0", "uncertain", "missing", "missing", "uncertain", "missing", "missing"]
    with pytest.raises(SchemaError):
        normalise_reference("maybe")


def test_evaluable_studies_counts():
    j = pd.DataFrame({"model": "m", "protocol": "narrative", "study_id": ["s1"] * 6 + ["s2"] * 6,
                      "prediction": [P, A, A, A, U, U, P, U, U, U, A, U]})
    e = evaluable_studies(j)
    assert e["n_parsed"].tolist() == [4, 2] and e["evaluable"].tolist() == [True, False]


# -- the driver on a tiny random LLaVA (vision-language) built offline -------------------------
@pytest.fixture(scope="module")
def tiny_llava():
    import torch
    from tokenizers import Tokenizer, models, pre_tokenizers
    from transformers import (
        CLIPImageProcessor,
        CLIPVisionConfig,
        LlamaConfig,
        LlavaConfig,
        LlavaForConditionalGeneration,
        LlavaProcessor,
        PreTrainedTokenizerFast,
    )

    from tests.adapters.conftest import WORDS

    specials = ["<pad>", "<unk>", "<s>", "</s>", "<image>", "USER:", "ASSISTANT:"]
    vocab = {w: i for i, w in enumerate(dict.fromkeys(specials + WORDS))}
    core = Tokenizer(models.WordLevel(vocab=vocab, unk_token="<unk>"))
    core.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tok = PreTrainedTokenizerFast(tokenizer_object=core, unk_token="<unk>", pad_token="<pad>",
                                  bos_token="<s>", eos_token="</s>",
                                  extra_special_tokens={"image_token": "<image>"})
    template = ("{% for m in messages %}{{ m['role'] | upper }}: {% if m['content'] is string %}"
                "{{ m['content'] }}{% else %}{% for c in m['content'] %}{% if c['type'] == 'image' %}"
                "<image> {% else %}{{ c['text'] }}{% endif %}{% endfor %}{% endif %} {% endfor %}"
                "{% if add_generation_prompt %}ASSISTANT: {% endif %}")
    proc = LlavaProcessor(image_processor=CLIPImageProcessor(size={"shortest_edge": 32},
                                                             crop_size={"height": 32, "width": 32}),
                          tokenizer=tok, chat_template=template, patch_size=8,
                          vision_feature_select_strategy="default", num_additional_image_tokens=1)
    cfg = LlavaConfig(
        vision_config=CLIPVisionConfig(image_size=32, patch_size=8, hidden_size=32, intermediate_size=37,
                                       num_hidden_layers=2, num_attention_heads=2, projection_dim=16),
        text_config=LlamaConfig(vocab_size=len(vocab), hidden_size=32, intermediate_size=37,
                                num_hidden_layers=1, num_attention_heads=2, num_key_value_heads=2,
                                max_position_embeddings=256, pad_token_id=0, bos_token_id=2,
                                eos_token_id=3),
        image_token_index=vocab["<image>"], vision_feature_layer=-1,
        vision_feature_select_strategy="default")
    torch.manual_seed(0)
    return LlavaForConditionalGeneration(cfg).eval(), proc


@pytest.fixture(scope="module")
def studies(real_manifest):
    _, m = real_manifest
    rows = m.iloc[[0, 3, 7]]
    return pd.DataFrame({"study_id": rows["image_id"].to_numpy(), "patient_id": ["p1", "p2", "p3"],
                         "institution": ["nih", "nih", "kermany"], "path": rows["path"].to_numpy()})


def test_binary_driver_on_tiny_llava(tiny_llava, studies):
    import torch

    model, proc = tiny_llava
    runner = VLMRunner(model=model, processor=proc, name="tiny-llava", yes=("Yes",), no=("No",))
    refs = pd.DataFrame({"study_id": [studies["study_id"][0]] * 2, "finding": [EDE, PTX],
                         "reference": [1, -1]})
    res = run_binary(studies, runner, references=refs)
    j = res.judgments
    assert list(j.columns) == list(JUDGMENT_COLUMNS) and len(j) == 3 * 6
    assert (j["protocol"] == "binary").all() and j["logit_yes"].notna().all()
    first = j[j["study_id"] == studies["study_id"][0]].set_index("finding")["reference"]
    assert (first[EDE], first[PTX], first[ATL]) == ("1", "uncertain", "missing")
    np.testing.assert_array_equal(j["prediction"], np.where(j["logit_yes"] > j["logit_no"], P, A))
    (yid, _), (nid, _) = answer_token_ids(proc.tokenizer, yes=("Yes",), no=("No",))
    # witness: the model's own forward pass and one greedy generated token, for one request
    from PIL import Image

    img = Image.open(studies["path"][1]).convert("RGB")
    q = "Is there edema in this chest x-ray ? Answer Yes or No ."
    text = proc.apply_chat_template([{"role": "user", "content": [{"type": "image"},
                                                                  {"type": "text", "text": q}]}],
                                    add_generation_prompt=True, tokenize=False)
    enc = proc(text=[text], images=[img], return_tensors="pt")
    with torch.no_grad():
        logits = model(**enc).logits[0, -1].double()
        gen = model.generate(**enc, max_new_tokens=1, do_sample=False)
    one = run_binary(studies.iloc[[1]], runner, questions={EDE: q})
    row = one.judgments.iloc[0]
    assert row["logit_yes"] == pytest.approx(float(logits[yid]), rel=1e-6)
    assert row["logit_no"] == pytest.approx(float(logits[nid]), rel=1e-6)
    assert one.raw["greedy_token_id"][0] == int(gen[0, -1])
    assert one.raw["p_yes"][0] == pytest.approx(expit(float(logits[yid] - logits[nid])), rel=1e-6)


def test_narrative_driver_and_failures(tiny_llava, studies, tmp_path):
    model, proc = tiny_llava
    runner = VLMRunner(model=model, processor=proc, name="tiny-llava")
    bad = pd.DataFrame([{"study_id": "x", "patient_id": "px", "institution": "nih",
                         "path": str(tmp_path / "missing.png")}])
    res = run_narrative(pd.concat([studies, bad], ignore_index=True), runner, max_new_tokens=12)
    assert res.failures["study_id"].tolist() == ["x"]
    j = res.judgments
    assert len(j) == 4 * 6 and (j["protocol"] == "narrative").all() and j["logit_yes"].isna().all()
    # the unreadable study stays in the table as unparsed rows (see the failure test below)
    assert (j.loc[j["study_id"] == "x", "prediction"] == U).sum() == 6
    # the parse kept in the table is the parse of the raw text kept beside it
    for r in res.raw.itertuples():
        got = j[j["study_id"] == r.study_id].set_index("finding")["prediction"].to_dict()
        assert got == parse_report(r.output).judgments
    with pytest.raises(SchemaError, match="lacks column"):
        run_narrative(studies.drop(columns=["institution"]), runner)
    # the rules that produced the verdicts travel with them, and rebuild the same parser
    rules = res.provenance["parser"]
    assert rules["min_parsed"] == 4 and "no acute cardiopulmonary" in rules["global_normal"]
    rebuilt = NarrativeParser(ParserConfig(**{k: tuple(v) if isinstance(v, list) else v
                                              for k, v in rules.items()}))
    for r in res.raw.itertuples():
        assert rebuilt(r.output).judgments == parse_report(r.output).judgments


def test_load_vlm_from_a_saved_snapshot(tiny_llava, studies, tmp_path):
    from medaudit.adapters.vlm import load_vlm

    model, proc = tiny_llava
    model.save_pretrained(tmp_path / "snap")
    proc.save_pretrained(tmp_path / "snap")
    runner = load_vlm("llava-med", weights=tmp_path / "snap", device="cpu")
    assert runner.checkpoint == "microsoft/llava-med-v1.5-mistral-7b"
    a = run_binary(studies.iloc[:1], runner, questions={EDE: "Is there edema ?"})
    b = run_binary(studies.iloc[:1], VLMRunner(model=model, processor=proc, name="llava-med"),
                   questions={EDE: "Is there edema ?"})
    np.testing.assert_allclose(a.judgments["logit_yes"], b.judgments["logit_yes"], rtol=1e-6)
    with pytest.raises(MedauditError, match="unknown VLM"):
        load_vlm("gpt")


def test_studies_and_references_are_checked(tiny_llava, studies):
    model, proc = tiny_llava
    runner = VLMRunner(model=model, processor=proc, name="tiny-llava", yes=("Yes",), no=("No",))
    q = {EDE: "Is there edema ?"}
    # a study_id names one study: the JudgmentTable keys studies by it alone
    twice = pd.concat([studies.iloc[:1], studies.iloc[:1].assign(institution="other")])
    with pytest.raises(SchemaError, match="repeat a study_id"):
        run_binary(twice, runner, questions=q)
    with pytest.raises(SchemaError, match="'patient_id' is empty"):
        run_binary(studies.assign(patient_id=[None, "p2", "p3"]), runner, questions=q)
    sid = studies["study_id"][0]
    clash = pd.DataFrame({"study_id": [sid, sid], "finding": [EDE, EDE], "reference": [1, 0]})
    with pytest.raises(SchemaError, match="contradictory labels"):
        run_binary(studies, runner, questions=q, references=clash)
    # references that match no study or finding are counted, not silently ignored
    refs = pd.DataFrame({"study_id": [sid, "nobody", sid], "finding": [EDE, EDE, "fracture"],
                         "reference": [1, 0, 1]})
    res = run_binary(studies.iloc[:1], runner, questions=q, references=refs)
    assert res.provenance["references"] == {"reference_rows": 3, "unmatched_study": 1,
                                            "unmatched_finding": 1}
    assert res.judgments["reference"].tolist() == ["1"]
    with pytest.raises(MedauditError, match="questions"):
        run_binary(studies, runner, questions={})


def test_judgment_rows_pass_the_judgment_table_validator(tiny_llava, studies):
    judgments = pytest.importorskip("medaudit.agreement.judgments")
    model, proc = tiny_llava
    runner = VLMRunner(model=model, processor=proc, name="tiny-llava")
    raw_refs = [1, 0, -1, None, 0, 1] + [0, 1, 1, 0, 1, 0] * 2
    refs = pd.DataFrame({"study_id": np.repeat(studies["study_id"].to_numpy(), 6),
                         "finding": list(FINDINGS) * 3, "reference": raw_refs})
    a = run_binary(studies, runner, references=refs).judgments
    b = run_narrative(studies, runner, references=refs, max_new_tokens=8).judgments
    both = pd.concat([a, b], ignore_index=True)
    table, report = judgments.validate_judgments(both, min_parsed_findings=1, uncertain="negative")
    # the other module reads our vocabularies as we mean them: binary rows, all parsed, lose
    # only the unmentioned reference; the uncertain one becomes 0; predictions keep their sense
    assert report.step("parse").rows_removed == int((both["prediction"] == U).sum())
    binary = table[table["protocol"] == "binary"]
    assert len(binary) == 17
    want = {(s, f): r for s, f, r in zip(refs["study_id"], refs["finding"], raw_refs, strict=True)}
    for r in binary.itertuples():
        ref = want[(r.study_id, r.finding)]
        assert r.reference == (0 if ref == -1 else ref)
        src = a[(a["study_id"] == r.study_id) & (a["finding"] == r.finding)].iloc[0]
        assert r.prediction == int(src["prediction"] == P)
        assert r.logit_yes == src["logit_yes"]


def test_unreadable_images_are_unparsed_rows_counted_by_the_filters(tiny_llava, studies, tmp_path):
    """A study whose image fails to load is not silently absent from the JudgmentTable: it is
    listed in failures and the provenance, and carried as 'unparsed' rows that the evaluable-set
    filters of medaudit.agreement.judgments count (hand-counted: 2 studies x 6 findings)."""
    judgments = pytest.importorskip("medaudit.agreement.judgments")
    model, proc = tiny_llava
    runner = VLMRunner(model=model, processor=proc, name="tiny-llava", yes=("Yes",), no=("No",))
    (tmp_path / "broken.png").write_bytes(b"not an image at all")
    bad = pd.DataFrame({"study_id": ["broken", "gone"], "patient_id": ["pb", "pg"],
                        "institution": ["nih", "kermany"],
                        "path": [str(tmp_path / "broken.png"), str(tmp_path / "gone.png")]})
    # failures interleaved with readable studies: rows must keep the input order
    allst = pd.concat([studies.iloc[:1], bad.iloc[:1], studies.iloc[1:], bad.iloc[1:]], ignore_index=True)
    ids = allst["study_id"].tolist()
    refs = pd.DataFrame({"study_id": np.repeat(ids, 6), "finding": list(FINDINGS) * 5,
                         "reference": [1, 0, 0, 1, 0, 0] * 5})
    seen = []
    res = run_binary(allst, runner, references=refs, progress=lambda k, n: seen.append((k, n)))
    assert seen[-1] == (5, 5)  # progress counts every study, failed ones included
    assert res.failures["study_id"].tolist() == ["broken", "gone"]
    assert res.failures["error"].str.startswith("UnidentifiedImageError").tolist() == [True, False]
    assert res.failures["error"].str.startswith("FileNotFoundError").tolist() == [False, True]
    prov = res.provenance["image_failures"]
    assert (prov["n_studies"], prov["rows_unparsed"], prov["prediction"]) == (2, 12, U)
    assert [(s["study_id"], s["error"]) for s in prov["studies"]] == \
        list(zip(res.failures["study_id"], res.failures["error"], strict=True))
    j = res.judgments
    assert list(j.columns) == list(JUDGMENT_COLUMNS) and len(j) == 5 * 6
    assert j["study_id"].drop_duplicates().tolist() == ids
    failed = j["study_id"].isin(["broken", "gone"]).to_numpy()
    assert (j.loc[failed, "prediction"] == U).all() and (j.loc[~failed, "prediction"] != U).all()
    assert j.loc[failed, ["logit_yes", "logit_no"]].isna().all().all()
    assert j.loc[~failed, ["logit_yes", "logit_no"]].notna().all().all()
    assert j.loc[failed, "reference"].tolist() == ["1", "0", "0", "1", "0", "0"] * 2  # carried
    assert set(res.raw["study_id"]) == set(studies["study_id"])  # no output was generated for them
    ev = evaluable_studies(j).set_index("study_id")
    assert ev.loc[["broken", "gone"], "n_parsed"].tolist() == [0, 0]
    assert not ev.loc[["broken", "gone"], "evaluable"].any() and ev["evaluable"].sum() == 3
    # the other module's filters see and count them: 12 unparsed rows, nothing else dropped there
    table, report = judgments.validate_judgments(j, min_parsed_findings=4)
    assert report.n_input_rows == 30 and report.step("parse").rows_removed == 12
    assert report.step("evaluable_study").rows_removed == 0
    assert len(table) == 18 and not table["study_id"].isin(["broken", "gone"]).any()
    by = {(r["institution"], r["protocol"]): r for r in report.by_model}
    assert (by[("nih", "binary")]["rows"], by[("nih", "binary")]["parsed"]) == (18, 12)
    assert (by[("kermany", "binary")]["rows"], by[("kermany", "binary")]["parsed"]) == (12, 6)
    # narrative: the same rows, no raw report for the failed studies
    one = pd.concat([studies.iloc[:1], bad.iloc[:1]], ignore_index=True)
    nar = run_narrative(one, runner, max_new_tokens=4)
    nj = nar.judgments
    assert (nj.loc[nj["study_id"] == "broken", "prediction"] == U).sum() == 6 and len(nj) == 12
    assert nar.raw["study_id"].tolist() == [studies["study_id"][0]]
    assert nar.provenance["image_failures"]["studies"][0]["study_id"] == "broken"
    assert nar.provenance["image_failures"]["rows_unparsed"] == 6


def test_split_parser_module_is_reexported():
    from pathlib import Path

    from medaudit.adapters import vlm, vlm_parser

    for name in vlm_parser.__all__:
        if name != "Verdict":  # a type alias, not part of vlm's public API
            assert getattr(vlm, name) is getattr(vlm_parser, name), name
    assert all(hasattr(vlm, n) for n in vlm.__all__)
    for mod in (vlm, vlm_parser):  # house rule: modules under ~600 lines
        assert len(Path(mod.__file__).read_text().splitlines()) < 600

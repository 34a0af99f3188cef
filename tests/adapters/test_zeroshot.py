"""Zero-shot scoring rule (M0.6) on tiny random open_clip / transformers models and real images.

Witnesses: a slow reimplementation straight from Eq. 2-3 (Python loops, explicit
normalisation, every image and text encoded on its own by the model itself); the
SigLIP model's own ``logits_per_image`` (scale and bias applied by transformers) for the
bias cancellation; hand-worked two-dimensional cases; hypothesis invariances.
"""

from __future__ import annotations

import math

import numpy as np
import pandas as pd
import pytest
from hypothesis import assume, given
from hypothesis import strategies as st
from hypothesis.extra.numpy import arrays

from medaudit.adapters import (
    PAPER000_FAMILIES,
    class_prototype,
    family_average,
    load_encoder,
    read_manifest,
    score_manifest,
    two_class_score,
)
from medaudit.adapters.registry import get_entry
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.schema import validate_score_table
from tests.adapters.conftest import CheXficientShaped, word_tokenizer


# -- the slow witness ---------------------------------------------------------------------------
def _unit(v):
    n = math.sqrt(math.fsum(x * x for x in v))
    return [x / n for x in v]


def _slow_prototype(vectors):
    us = [_unit(v) for v in vectors]
    return _unit([math.fsum(col) / len(us) for col in zip(*us, strict=True)])


def _slow_score(image_vec, pos_vecs, neg_vecs, scale):
    v, q1, q0 = _unit(image_vec), _slow_prototype(pos_vecs), _slow_prototype(neg_vecs)
    a = scale * math.fsum(x * y for x, y in zip(v, q1, strict=True))
    b = scale * math.fsum(x * y for x, y in zip(v, q0, strict=True))
    return math.exp(a) / (math.exp(a) + math.exp(b))


def _slow_table(images, embed_image, embed_text, scale):
    """{(image_id, family): score}: every image and every text encoded on its own."""
    img = {iid: [float(x) for x in embed_image(path)] for iid, path in images}
    out = {}
    for fam in PAPER000_FAMILIES:
        pos = [[float(x) for x in embed_text(t)] for t in fam.positive]
        neg = [[float(x) for x in embed_text(t)] for t in fam.negative]
        for iid, v in img.items():
            out[(iid, fam.name)] = _slow_score(v, pos, neg, scale)
    return out


def _compare(res, slow):
    got = {(r.image_id, r.prompt): r.score for r in res.scores.itertuples()}
    assert set(got) == set(slow)
    np.testing.assert_allclose([got[k] for k in slow], [slow[k] for k in slow], rtol=2e-5, atol=1e-6)


def _no_type_ids(enc):
    return {k: v for k, v in enc.items() if k != "token_type_ids"}


def _rgb(path):
    from PIL import Image

    with Image.open(path) as im:
        return im.convert("RGB")


# -- hand-worked cases and properties of the pure functions ------------------------------------
def test_hand_worked_prototype_and_score():
    # unit((1,0)) and unit((0,2)) average to (1/2, 1/2); renormalised (1/sqrt2, 1/sqrt2)
    np.testing.assert_allclose(class_prototype([[1.0, 0.0], [0.0, 2.0]]), [2 ** -0.5, 2 ** -0.5],
                               rtol=1e-15)
    # v=(5,0) -> (1,0); a v.q1 = ln 3, v.q0 = 0: softmax = 3 / (3 + 1)
    s = two_class_score([[5.0, 0.0]], [1.0, 0.0], [0.0, 1.0], scale=math.log(3.0))
    np.testing.assert_allclose(s, [0.75], rtol=1e-15)
    with pytest.raises(MedauditError, match="zero or non-finite norm"):
        two_class_score([[0.0, 0.0]], [1.0, 0.0], [0.0, 1.0], scale=1.0)
    with pytest.raises(MedauditError, match="positive finite"):
        two_class_score([[1.0, 0.0]], [1.0, 0.0], [0.0, 1.0], scale=-1.0)


_vec = arrays(np.float64, (4, 6), elements=st.floats(-3, 3, allow_nan=False)).filter(
    lambda a: (np.linalg.norm(a, axis=1) > 1e-3).all())


@given(_vec, _vec, st.floats(0.1, 50), st.floats(0.01, 100))
def test_score_properties(img, txt, scale, c):
    units = txt / np.linalg.norm(txt, axis=1, keepdims=True)
    assume(np.linalg.norm(units[:2].sum(0)) > 1e-3 and np.linalg.norm(units[2:].sum(0)) > 1e-3)
    q1, q0 = class_prototype(txt[:2]), class_prototype(txt[2:])
    np.testing.assert_allclose(np.linalg.norm(q1), 1.0, rtol=1e-12)
    s = two_class_score(img, q1, q0, scale=scale)
    # invariant to the image embedding's length; swapping classes gives 1 - s
    np.testing.assert_allclose(two_class_score(c * img, q1, q0, scale=scale), s, rtol=1e-9, atol=1e-15)
    np.testing.assert_allclose(two_class_score(img, q0, q1, scale=scale), 1 - s, rtol=1e-9, atol=1e-12)
    # a prototype does not depend on the lengths of its text embeddings
    np.testing.assert_allclose(class_prototype(txt[:2] * np.array([[c], [1.0]])), q1, rtol=1e-9,
                               atol=1e-12)


# -- real models on real images ----------------------------------------------------------------
class Counting:
    """Wraps an encoder and counts image-encoder calls and images (encode-once witness)."""

    def __init__(self, enc):
        self._enc, self.image_calls, self.images, self.text_calls = enc, 0, 0, 0

    def __getattr__(self, name):
        return getattr(self._enc, name)

    def encode_images(self, images):
        self.image_calls += 1
        self.images += len(images)
        return self._enc.encode_images(images)

    def encode_texts(self, texts):
        self.text_calls += 1
        return self._enc.encode_texts(texts)


def test_openclip_matches_slow_rule_and_encodes_once(tiny_openclip_dir, real_manifest):
    import open_clip
    import torch

    _, manifest = real_manifest
    enc = Counting(load_encoder("openclip", weights=tiny_openclip_dir, device="cpu"))
    res = score_manifest(manifest, enc, batch_size=5)
    n = len(manifest)
    # images encoded once, in ceil(n / 5) batches, and the text encoder called once for all families
    assert (enc.images, enc.image_calls, enc.text_calls) == (n, math.ceil(n / 5), 1)
    assert res.n_encoded == n and len(res.scores) == 5 * n
    validate_score_table(res.scores)
    # witness: the same snapshot loaded independently, one image / one text at a time
    model, _, pre = open_clip.create_model_and_transforms(f"local-dir:{tiny_openclip_dir}")
    tok = open_clip.get_tokenizer(f"local-dir:{tiny_openclip_dir}")
    model.eval()
    with torch.no_grad():
        slow = _slow_table(zip(manifest["image_id"], manifest["path"], strict=True),
                           lambda p: model.encode_image(pre(_rgb(p))[None])[0],
                           lambda t: model.encode_text(tok([t]))[0], float(model.logit_scale.exp()))
    _compare(res, slow)
    # open_clip's own logits apply its stored log-scale (exp) and any bias: for the one-text
    # families their two-class softmax is the score
    with torch.no_grad():
        for fam in PAPER000_FAMILIES[1:]:
            text = tok([fam.positive[0], fam.negative[0]])
            for iid, p in zip(manifest["image_id"], manifest["path"], strict=True):  # noqa: B007 - used by query(@iid)
                native = torch.softmax(model.get_logits(pre(_rgb(p))[None], text)[0][0].double(), 0)
                mine = res.scores.query("image_id == @iid and prompt == @fam.name")["score"].item()
                assert mine == pytest.approx(native[0].item(), rel=1e-5)
    card = res.card
    assert card.learned_scale == pytest.approx(20.0, rel=1e-6)
    assert card.revision.startswith("sha256:") and "open_clip" in card.library_versions
    assert card.checkpoint.startswith("ViT-B-32") and "M0.6" in card.score_rule


def test_medsiglip_path_slow_rule_and_bias_cancellation(tiny_siglip_dir, real_manifest):
    import torch
    from transformers import AutoTokenizer, SiglipModel

    _, manifest = real_manifest
    manifest = manifest.iloc[::2].reset_index(drop=True)
    enc = load_encoder("medsiglip", weights=tiny_siglip_dir, device="cpu")
    assert enc.logit_bias == pytest.approx(-3.0) and enc.learned_scale == pytest.approx(10.0)
    res = score_manifest(manifest, enc, batch_size=4)
    model = SiglipModel.from_pretrained(tiny_siglip_dir).eval()
    tok = AutoTokenizer.from_pretrained(tiny_siglip_dir)
    kw = dict(get_entry("medsiglip").text_kwargs)
    px = {p: enc.preprocess(images=[_rgb(p)], return_tensors="pt")["pixel_values"] for p in manifest["path"]}
    with torch.no_grad():
        slow = _slow_table(zip(manifest["image_id"], manifest["path"], strict=True),
                           lambda p: model.get_image_features(pixel_values=px[p]).pooler_output[0],
                           lambda t: model.get_text_features(**tok([t], return_tensors="pt", **kw))
                           .pooler_output[0], float(model.logit_scale.exp()))
        _compare(res, slow)
        # the model's own logits include scale AND bias; their two-class softmax is our score
        for fam in PAPER000_FAMILIES[1:]:
            texts = tok([fam.positive[0], fam.negative[0]], return_tensors="pt", **kw)
            for iid, p in zip(manifest["image_id"], manifest["path"], strict=True):  # noqa: B007 - used by query(@iid)
                logits = model(pixel_values=px[p], **texts).logits_per_image[0].double()
                native = torch.softmax(logits, 0)[0].item()
                mine = res.scores.query("image_id == @iid and prompt == @fam.name")["score"].item()
                assert mine == pytest.approx(native, rel=1e-5)
    # changing the bias changes SigLIP's per-text sigmoid but not the two-class score
    with torch.no_grad():
        model.logit_bias.fill_(7.5)
    enc2 = load_encoder("medsiglip", model=model, preprocess=enc.preprocess, tokenizer=tok, device="cpu")
    res2 = score_manifest(manifest, enc2, batch_size=4)
    np.testing.assert_allclose(res2.scores["score"], res.scores["score"], rtol=1e-6)
    # an injected model is named by its weights, never by the hub's pinned revision: the
    # bias change makes another model, hence another cache namespace and ModelCard revision
    pinned = get_entry("medsiglip").revision
    assert enc2.revision.startswith("injected sha256:") and pinned not in enc2.revision
    assert enc.revision.startswith("sha256:") and enc2.revision != res.card.revision
    with torch.no_grad():
        model.logit_bias.fill_(-3.0)
    same = load_encoder("medsiglip", model=model, preprocess=enc.preprocess, tokenizer=tok, device="cpu")
    assert same.revision != enc2.revision
    assert load_encoder("medsiglip", model=model, preprocess=enc.preprocess, tokenizer=tok,
                        device="cpu").revision == same.revision
    assert load_encoder("medsiglip", model=model, preprocess=enc.preprocess, tokenizer=tok,
                        revision=pinned, device="cpu").revision == pinned
    with pytest.raises(MedauditError, match="injected model only"):
        load_encoder("medsiglip", weights=tiny_siglip_dir, revision=pinned, device="cpu")


def test_chexficient_shaped_two_tower(tmp_path, real_manifest):
    import torch
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    _, manifest = real_manifest
    manifest = manifest.iloc[:5]
    tok = word_tokenizer(tmp_path)
    model = CheXficientShaped.build(len(tok))
    pre = SiglipImageProcessorPil(size={"height": 32, "width": 32})
    enc = load_encoder("chexficient", model=model, preprocess=pre, tokenizer=tok, device="cpu")
    res = score_manifest(manifest, enc, batch_size=2)
    with torch.no_grad():
        slow = _slow_table(zip(manifest["image_id"], manifest["path"], strict=True),
                           lambda p: model.get_image_features(
                               pre(images=[_rgb(p)], return_tensors="pt")["pixel_values"])[0],
                           lambda t: model.get_text_features(
                               **_no_type_ids(tok([t], return_tensors="pt")))[0],
                           float(model.logit_scale.exp()))
    _compare(res, slow)
    assert res.card.exposure == {"vindr": "documented pretraining exposure to VinDr-CXR"}


def test_family_average_is_equal_weight_mean_of_scores(tiny_openclip_dir, real_manifest):
    _, manifest = real_manifest
    res = score_manifest(manifest.iloc[:4], load_encoder("openclip", weights=tiny_openclip_dir,
                                                         device="cpu"))
    avg = family_average(res.scores)
    assert (avg["prompt"] == "average").all() and len(avg) == 4
    for r in avg.itertuples():
        fam = res.scores[(res.scores["image_id"] == r.image_id) & (res.scores["cohort"] == r.cohort)]
        assert len(fam) == 5
        assert r.score == pytest.approx(math.fsum(fam["score"]) / 5, rel=1e-13)
    with pytest.raises(SchemaError, match="every family"):
        family_average(res.scores.iloc[1:])
    # a repeated score or a label that differs between families is an error, not "first wins"
    with pytest.raises(SchemaError, match="repeats"):
        family_average(pd.concat([res.scores, res.scores.iloc[[0]]]))
    flipped = res.scores.copy()
    flipped.loc[flipped.index[-1], "label"] = 1 - flipped["label"].iloc[-1]
    with pytest.raises(SchemaError, match="differ between families"):
        family_average(flipped)
    with pytest.raises(MedauditError, match="already a prompt"):
        family_average(res.scores, name="clinical")
    # a declared subset averages those families only
    two = family_average(res.scores, families=["photo", "normal"], name="avg2")
    for r in two.itertuples():
        fam = res.scores[(res.scores["image_id"] == r.image_id)
                         & res.scores["prompt"].isin(["photo", "normal"])]
        assert r.score == pytest.approx(math.fsum(fam["score"]) / 2, rel=1e-13)


def test_unreadable_images_are_reported_and_the_rest_scored(tmp_path, tiny_openclip_dir, real_manifest):
    _, manifest = real_manifest
    (tmp_path / "corrupt.png").write_bytes(b"\x89PNG\r\n\x1a\n not really a png")
    bad = pd.DataFrame([{"image_id": "gone", "path": "missing.png", "cohort": "nih", "label": 0},
                        {"image_id": "junk", "path": "corrupt.png", "cohort": "nih", "label": 0}])
    m = pd.concat([manifest.iloc[:3], bad], ignore_index=True)
    res = score_manifest(m, load_encoder("openclip", weights=tiny_openclip_dir, device="cpu"),
                         base_dir=tmp_path)
    assert res.failures["image_id"].tolist() == ["gone", "junk"]
    assert "cannot read file" in res.failures["error"][0] and "cannot decode" in res.failures["error"][1]
    assert sorted(res.scores["image_id"].unique()) == sorted(manifest["image_id"].iloc[:3])
    # an empty (NaN) key is an error naming the row, not the text "nan"
    with pytest.raises(SchemaError, match="'image_id' is empty at row"):
        score_manifest(m.assign(image_id=[None, "b", "c", "d", "e"]), object())


def test_a_file_changed_after_hashing_is_not_scored_under_the_old_key(tmp_path, tiny_openclip_dir,
                                                                      real_manifest):
    import shutil

    _, manifest = real_manifest
    rows = manifest.iloc[:2].copy()
    for i, p in enumerate(rows["path"]):
        shutil.copy(p, tmp_path / f"im{i}.png")
    rows["path"] = ["im0.png", "im1.png"]
    swap = manifest["path"].iloc[5]

    def progress(done, total):  # after the first batch, the second file is replaced
        if done == 1:
            shutil.copy(swap, tmp_path / "im1.png")

    res = score_manifest(rows, load_encoder("openclip", weights=tiny_openclip_dir, device="cpu"),
                         base_dir=tmp_path, batch_size=1, cache=tmp_path / "cache", progress=progress)
    assert res.failures["image_id"].tolist() == [rows["image_id"].iloc[1]]
    assert "changed" in res.failures["error"][0]
    assert res.scores["image_id"].unique().tolist() == [rows["image_id"].iloc[0]]


def test_model_card_names_the_prompts(tiny_openclip_dir, real_manifest):
    from medaudit.adapters import PAPER000_VERSION, PromptFamily, get_families

    _, manifest = real_manifest
    enc = load_encoder("openclip", weights=tiny_openclip_dir, device="cpu")
    sub = score_manifest(manifest.iloc[:2], enc, families=get_families(["normal", "clinical"]))
    assert sub.card.score_rule.endswith(f"prompts {PAPER000_VERSION} ['normal', 'clinical']")
    # a custom family with a Table 3 name is not mistaken for Table 3: its texts are digested
    own = PromptFamily(name="clinical", positive=("tuberculosis",), negative=("normal",))
    custom = score_manifest(manifest.iloc[:2], enc, families=[own])
    assert "custom prompts ['clinical'] sha256:" in custom.card.score_rule
    assert PAPER000_VERSION not in custom.card.score_rule


def test_registry_and_device():
    import torch

    with pytest.raises(MedauditError, match="registry has: openclip.*biomedclip.*medsiglip.*chexficient"):
        get_entry("clip")
    entry = get_entry("medsiglip")
    assert (entry.revision, entry.input_size) == ("9cea28a1a1195f665105faa6e8544c112fd960a4", 448)
    assert get_entry("chexficient").revision == "34bb5ea905c4cb504d2b73c9a6687a5d5082f52a"
    assert get_entry("openclip").pretrained_tag == "laion2b_s34b_b79k"
    from medaudit.adapters.registry import default_device

    assert default_device() == ("cuda" if torch.cuda.is_available() else "cpu")
    with pytest.raises(MedauditError, match="preprocess= and tokenizer="):
        load_encoder("openclip", model=object())


def test_manifest_label_error_names_the_file_line(tmp_path):
    """A label that is not 0/1 is named by its line in the manifest file, as in a score table."""
    p = tmp_path / "m.csv"
    p.write_text("image_id,path,cohort,label\na,a.png,c,1\nb,b.png,c,yes\nd,d.png,c,0\ne,e.png,c,2\n")
    with pytest.raises(SchemaError, match=r"m\.csv: column 'label' must be 0 or 1 \(1 = TB\); "
                                          r"lines 3, 5 are not \(line 3 has 'yes'\)"):
        read_manifest(p)
    p.write_text("image_id,path,cohort,label\na,a.png,c,1\nb,b.png,c,0.0\n")
    ok = read_manifest(p)
    assert ok["label"].tolist() == [1, 0] and ok["label"].dtype == np.int64

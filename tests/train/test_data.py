"""Supervised-model data rules (paper 000 M0.12-M0.13) without training: split, pos_weight,
augmentations (no flips), evaluation transform, exclusion counts, early stopping, spec.

Witnesses: the published split arithmetic of M0.12 (600/3000/3000 -> 120/600/600 selection,
pos_weight 4,800/480 = 10.0), hand counts on the real Kermany manifest, hand-computed
ImageNet normalisation of a flat image, an asymmetric image pushed through the training
augmentation hundreds of times (with a flipped pipeline as the control that the check has
power), pandas' own groupby mean for the seed ensemble (medaudit.audit.context.ensemble_seeds).
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pandas as pd
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from medaudit.exceptions import MedauditError, SchemaError
from medaudit.train import (
    EarlyStopping,
    ManifestSpec,
    SupervisedSpec,
    apply_exclusion,
    ensemble_mean,
    eval_transform,
    load_exclusion,
    load_manifest,
    pos_weight,
    stratified_split,
    train_transform,
)
from medaudit.train.spec import load_supervised_spec

REPO = Path(__file__).resolve().parents[2]
KERMANY = REPO / ".." / "shared" / "data" / "kermany_pediatric_pneumonia_test224"


def _kermany() -> Path:
    if not (KERMANY / "labels.csv").exists():
        pytest.skip(f"real Kermany images absent at {KERMANY} (shared data not mounted)")
    return KERMANY


# ----------------------------------------------------------------------------- split
def test_split_matches_published_m012_arithmetic():
    # TBX11K-train: 600 TB, 3000 healthy, 3000 sick -> 120/600/600 selection (1,320) and
    # 480/2400/2400 optimisation (5,280), M0.12
    strata = np.array(["tb"] * 600 + ["healthy"] * 3000 + ["sick"] * 3000)
    ids = np.array([f"img{i:05d}" for i in range(strata.size)])
    sel = stratified_split(ids, strata, selection_fraction=0.2, rng=2026)
    assert int(sel.sum()) == 1320 and int((~sel).sum()) == 5280
    for s, n_sel in (("tb", 120), ("healthy", 600), ("sick", 600)):
        assert int(sel[strata == s].sum()) == n_sel
    y = (strata == "tb").astype(int)
    assert pos_weight(y[~sel]) == 10.0  # 4,800 / 480


def test_split_per_class_on_real_kermany_manifest():
    root = _kermany()
    m = load_manifest(ManifestSpec(cohort="k", manifest=str(root / "labels.csv"), id_column="path",
                                   label_column="pneumonia"), stratify_column="class")
    f = m.frame
    assert (m.counts["negatives"], m.counts["positives"]) == (234, 390)  # README counts
    sel = stratified_split(f["image_id"], f["stratum"], rng=2026)
    for cls, n in (("NORMAL", 234), ("PNEUMONIA", 390)):
        k = int(sel[f["stratum"].to_numpy() == cls].sum())
        assert abs(k - 0.2 * n) <= 1 and abs((n - k) - 0.8 * n) <= 1
        assert k == {"NORMAL": 47, "PNEUMONIA": 78}[cls]  # floor(0.2 n + 1/2) by hand
    other = stratified_split(f["image_id"], f["stratum"], rng=2027)
    assert not np.array_equal(sel, other)  # the split seed matters


@settings(max_examples=30)
@given(st.lists(st.sampled_from("abc"), min_size=2, max_size=60), st.randoms(use_true_random=False))
def test_split_ignores_row_order(strata, rnd):
    ids = [f"id{i}" for i in range(len(strata))]
    sel = stratified_split(ids, strata, rng=7)
    order = list(range(len(ids)))
    rnd.shuffle(order)
    sel2 = stratified_split([ids[i] for i in order], [strata[i] for i in order], rng=7)
    assert {ids[i] for i in np.flatnonzero(sel)} == {ids[order[j]] for j in np.flatnonzero(sel2)}


def test_split_and_pos_weight_refuse_bad_input():
    with pytest.raises(SchemaError, match="repeat"):
        stratified_split(["a", "a"], [0, 1])
    with pytest.raises(SchemaError, match="needs both"):
        pos_weight([0, 0, 0])
    with pytest.raises(SchemaError, match="0 or 1"):
        pos_weight([0, 2])
    assert pos_weight([1, 1, 0, 0, 0]) == 1.5  # 3 / 2 by hand


# ----------------------------------------------------------------------------- transforms
def _flat(tfm) -> list:
    out = []
    for t in getattr(tfm, "transforms", [tfm]):
        out += _flat(t) if hasattr(t, "transforms") else [t]
    return out


def test_training_augmentation_is_exactly_m012():
    from torchvision import transforms as T

    ts = _flat(train_transform(224))
    names = [type(t).__name__ for t in ts]
    assert names == ["RandomResizedCrop", "RandomAffine", "ColorJitter", "ToTensor", "Normalize"]
    assert not any("Flip" in n for n in names)
    rrc, aff, cj, _, norm = ts
    assert rrc.size == (224, 224) and rrc.scale == (0.85, 1.00) and rrc.ratio == (0.95, 1.05)
    assert list(aff.degrees) == [-5.0, 5.0] and aff.translate == (0.02, 0.02)
    assert aff.scale is None and aff.shear is None
    assert list(cj.brightness) == [0.9, 1.1] and list(cj.contrast) == [0.9, 1.1]
    assert cj.saturation is None and cj.hue is None
    assert tuple(norm.mean) == (0.485, 0.456, 0.406) and tuple(norm.std) == (0.229, 0.224, 0.225)
    assert isinstance(ts[0], T.RandomResizedCrop)


def _asymmetric(size: int = 96):
    from PIL import Image

    a = np.full((size, size, 3), 60, np.uint8)
    a[:, : size // 2] = 200      # left half bright
    a[: size // 3, :] += 40      # top band brighter still (vertical asymmetry)
    return Image.fromarray(a)


def _halves(x) -> tuple[float, float, float, float]:
    g = x.mean(0).numpy()
    h, w = g.shape
    return g[:, : w // 2].mean(), g[:, w - w // 2:].mean(), g[: h // 3].mean(), g[-(h // 3):].mean()


def test_augmentation_never_flips_an_asymmetric_image():
    import torch
    from torchvision import transforms as T

    img = _asymmetric()
    tfm = train_transform(64)
    state = torch.get_rng_state()
    torch.manual_seed(0)
    try:
        for _ in range(300):
            left, right, top, bottom = _halves(tfm(img))
            assert left > right and top > bottom
        # control: the same check sees flips when a flip is added (the test has power)
        flipped = T.Compose([T.RandomHorizontalFlip(0.5), tfm])
        seen = sum(_halves(flipped(img))[0] < _halves(flipped(img))[1] for _ in range(40))
        assert seen > 0
    finally:
        torch.set_rng_state(state)


def test_eval_transform_resize_crop_and_normalisation():
    from PIL import Image

    spec = SupervisedSpec.model_validate({"source": {"cohort": "s", "manifest": "m.csv"}})
    assert (spec.image_size, spec.resize) == (224, 256)  # M0.12 defaults
    names = [type(t).__name__ for t in _flat(eval_transform(224, 256))]
    assert names == ["Resize", "CenterCrop", "ToTensor", "Normalize"]
    x = eval_transform(224, 256)(Image.new("RGB", (300, 400), (128, 64, 255)))
    assert tuple(x.shape) == (3, 224, 224)
    want = [(128 / 255 - 0.485) / 0.229, (64 / 255 - 0.456) / 0.224, (255 / 255 - 0.406) / 0.225]
    np.testing.assert_allclose(x.mean((1, 2)).numpy(), want, rtol=1e-5)
    assert SupervisedSpec.model_validate({"source": {"cohort": "s", "manifest": "m.csv"},
                                          "image_size": 64}).resize == 73  # 64 * 256 / 224


# ----------------------------------------------------------------------------- manifests, exclusion
def test_manifest_errors_name_file_column_and_rows(tmp_path):
    img = tmp_path / "a.png"
    _asymmetric(8).save(img)
    bad = tmp_path / "bad.csv"
    pd.DataFrame({"image_id": ["x", "y"], "path": ["a.png", "a.png"], "label": ["1", "2"]}).to_csv(
        bad, index=False)
    with pytest.raises(SchemaError, match=r"bad\.csv.*'label'.*'y' has '2' \(line 3\)"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(bad)))
    dup = tmp_path / "dup.csv"
    pd.DataFrame({"image_id": ["x", "x"], "path": ["a.png"] * 2, "label": [0, 1]}).to_csv(dup, index=False)
    with pytest.raises(SchemaError, match=r"repeat an image id.*\(lines 2, 3\)"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(dup)))
    # lines of the file, also after `select` dropped rows before them (probe finding: a
    # 0-based row counted after the selection, as np.int64(9))
    sel = tmp_path / "sel.csv"
    pd.DataFrame({"image_id": ["w", "x", "y"], "path": ["a.png", "a.png", ""],
                  "label": [0, 1, 0], "site": ["B", "A", "A"]}).to_csv(sel, index=False)
    with pytest.raises(SchemaError, match=r"empty 'image_id'/'path' at line 4;"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(sel), select={"site": ["A"]}))
    gone = tmp_path / "gone.csv"
    pd.DataFrame({"image_id": ["x"], "path": ["nope.png"], "label": [0]}).to_csv(gone, index=False)
    with pytest.raises(FileNotFoundError, match="nope.png"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(gone)))
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['grp'\]"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(gone), select={"grp": ["a"]}))


def test_exclusion_counts_by_hand(tmp_path):
    frame = pd.DataFrame({"image_id": ["a", "b", "c", "d", "e"], "dataset": ["tbx"] * 4 + ["mc"],
                          "label": [1, 0, 0, 1, 0]})
    csv = tmp_path / "excl.csv"
    pd.DataFrame({"dataset": ["tbx", "tbx", "mc", "shenzhen"], "image_id": ["b", "b", "a", "z"],
                  "path": ["", "", "", ""], "reason": ["pair 1", "pair 2", "pair 3", "pair 4"]}
                 ).to_csv(csv, index=False)
    excl = load_exclusion(csv)
    assert len(excl) == 3  # b listed twice (two pairs) counts once
    assert excl.set_index("image_id").loc["b", "reason"] == "pair 1; pair 2"
    kept, c = apply_exclusion(frame, excl)
    # ("mc", "a") does not exist (a is tbx): only b leaves
    assert list(kept["image_id"]) == ["a", "c", "d", "e"]
    assert c == {"original": 5, "excluded": 1, "retained": 4, "positives_retained": 2,
                 "negatives_retained": 2}
    pd.DataFrame({"image_id": ["x"]}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(SchemaError, match=r"missing column\(s\) \['dataset'\]"):
        load_exclusion(tmp_path / "bad.csv")


# ----------------------------------------------------------------------------- early stopping, ensemble
def test_early_stopping_patience_and_ties():
    es = EarlyStopping(patience=5)
    seq = [0.70, 0.80, 0.80, 0.79, float("nan"), 0.75, 0.80]
    improved = [es.update(e, v) for e, v in enumerate(seq, start=1)]
    # ties and NaN never improve; five epochs after epoch 2 without a strict gain -> stop
    assert improved == [True, True, False, False, False, False, False]
    assert (es.best_epoch, es.best, es.stop) == (2, 0.80, True)
    es2 = EarlyStopping(5)
    es2.load_state_dict(es.state_dict())
    assert es2.state_dict() == es.state_dict()
    with pytest.raises(MedauditError):
        EarlyStopping(0)


def test_ensemble_mean_matches_audit_ensemble():
    from medaudit.audit.context import ensemble_seeds

    rng = np.random.default_rng(0)
    rows = [{"image_id": f"i{i}", "cohort": "c", "model": m, "prompt": "none", "seed": s,
             "score": float(rng.random()), "label": i % 2}
            for m in ("a", "b") for s in (1, 2, 3) for i in range(7)]
    t = pd.DataFrame(rows)
    mine = ensemble_mean(t).sort_values(["model", "image_id"]).reset_index(drop=True)
    ref = ensemble_seeds(t).sort_values(["model", "image_id"]).reset_index(drop=True)
    np.testing.assert_allclose(mine["score"], ref["score"], rtol=1e-15)
    by_hand = t[(t.model == "a") & (t.image_id == "i3")]["score"].sum() / 3
    assert mine.set_index(["model", "image_id"]).loc[("a", "i3"), "score"] == pytest.approx(by_hand)


# ----------------------------------------------------------------------------- spec
def test_spec_defaults_and_refusals(tmp_path):
    s = SupervisedSpec.model_validate({"source": {"cohort": "tbx_train", "manifest": "m.csv"}})
    assert s.seeds == [2026, 2027, 2028, 2029, 2030] and s.split_seed == 2026
    assert (s.max_epochs, s.patience, s.batch_size, s.lr, s.weight_decay) == (20, 5, 64, 1e-4, 1e-4)
    assert s.model_name(retrained=False) == "resnet50"
    s2 = s.model_copy(update={"exclusion": "x.csv"})
    assert (s2.model_name(retrained=False), s2.model_name(retrained=True)) == (
        "resnet50_original", "resnet50_retrained")
    p = tmp_path / "s.yaml"
    p.write_text("source: {cohort: a, manifest: m.csv}\nmax_epochs: 21\nbatchsize: 3\n")
    with pytest.raises(SchemaError, match=r"(?s)max_epochs.*batchsize: unknown key; did you mean "
                                          r"'batch_size'"):
        load_supervised_spec(p)
    with pytest.raises(ValueError, match="cohort names repeat"):
        SupervisedSpec.model_validate({"source": {"cohort": "a", "manifest": "m.csv"},
                                       "evaluation": [{"cohort": "a_selection", "manifest": "m"}]})


def test_build_model_loads_a_local_backbone_and_refuses_a_misfit():
    import torch

    from medaudit.train._engine import build_model

    torch.manual_seed(3)
    from torchvision.models import resnet18, resnet50

    donor = resnet50(weights=None).state_dict()  # 1000-class head, as IMAGENET1K_V2 files are
    m = build_model(donor)
    assert torch.equal(m.conv1.weight, donor["conv1.weight"])
    assert torch.equal(m.layer4[2].bn3.running_var, donor["layer4.2.bn3.running_var"])
    assert tuple(m.fc.weight.shape) == (1, 2048)
    with pytest.raises(MedauditError, match="do not fit"):
        build_model(resnet18(weights=None).state_dict())


@pytest.mark.parametrize(("section", "key"), [("source", "cohort"), (None, "name")])
@pytest.mark.parametrize("bad", ["", "a|b"])
def test_cohort_and_model_names_refuse_empty_and_bar(tmp_path, section, key, bad):
    """'|' joins cohort, model and prompt into one key of the score table: the spec refuses it."""
    doc = {"source": {"cohort": "s", "manifest": "m.csv"}}
    (doc[section] if section else doc)[key] = bad
    p = tmp_path / "train.json"
    p.write_text(json.dumps(doc))
    with pytest.raises(SchemaError, match=rf"{key}.*must be a non-empty name without '\|'"):
        load_supervised_spec(p)
    assert SupervisedSpec.model_validate({"source": {"cohort": "s/1", "manifest": "m.csv"},
                                          "name": "resnet-50"}).name == "resnet-50"


def test_an_image_that_cannot_be_decoded_is_refused_before_training(tmp_path):
    """Probe finding: a truncated image stopped training when an epoch reached it, after a
    whole seed had trained, leaving a half-written run folder; every image is decoded when
    the manifest is read."""
    import io

    from PIL import Image

    a = np.random.default_rng(0).integers(0, 256, (64, 64)).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="JPEG")
    (tmp_path / "cut.jpg").write_bytes(buf.getvalue()[:600])
    (tmp_path / "text.png").write_text("not an image")
    _asymmetric(8).save(tmp_path / "ok.png")
    m = tmp_path / "m.csv"
    pd.DataFrame({"image_id": ["a", "b", "c"], "path": ["ok.png", "cut.jpg", "text.png"],
                  "label": [0, 1, 0]}).to_csv(m, index=False)
    with pytest.raises(SchemaError, match=r"2 image file\(s\) cannot be decoded, e.g. .*cut\.jpg "
                                          r"\(OSError.*text\.png \(UnidentifiedImageError"):
        load_manifest(ManifestSpec(cohort="c", manifest=str(m)))
    ok = load_manifest(ManifestSpec(cohort="c", manifest=str(m)), check_files=False)
    assert len(ok.frame) == 3  # check_files=False reads no image


def test_an_image_that_cannot_be_decoded_is_named(tmp_path):
    """Probe finding: a truncated JPEG stopped training with "image file is truncated (17
    bytes not processed)" and no file name; a 16-bit PNG is mapped, not clipped at 255."""
    pytest.importorskip("torchvision")
    import io

    import numpy as np
    from PIL import Image

    from medaudit.exceptions import MedauditError
    from medaudit.train.data import ImageDataset

    a = np.random.default_rng(0).integers(0, 256, (64, 64)).astype(np.uint8)
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="JPEG")
    (tmp_path / "cut.jpg").write_bytes(buf.getvalue()[:600])
    Image.fromarray(a.astype(np.uint16) * 257).save(tmp_path / "wide.png")
    ds = ImageDataset([tmp_path / "cut.jpg", tmp_path / "wide.png"], [0, 1], transform=np.asarray)
    with pytest.raises(MedauditError, match=r"cut\.jpg: the image cannot be decoded"):
        ds[0]
    img, label, i = ds[1]
    assert np.array_equal(img[..., 0], a) and label == 1 and i == 1

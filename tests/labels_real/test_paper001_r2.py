"""Paper 001 Figure 1 R^2 recomputed from its Table 2 (published-table arithmetic, M1.6/M1.9).

For each task, the four linear-probe backbones' ordinary and soft values (Table 2,
AUROC/AP/s-AUROC/s-AP, rounded to 3 decimals) give Pearson r across models; R^2 = r^2
must match the Figure 1 table within 0.021 (methods.md M1.6 [VERIFIED];
CheXpert-Pneumothorax AP, with values near 0.01, misses by 0.0211).  The sharper check:
each published R^2 lies in the range of R^2 over inputs perturbed within their rounding
interval (+-0.0005).  Computed with scipy and with medaudit's ``pearson_r2`` (the block's).
"""

from __future__ import annotations

import numpy as np
import pytest
from scipy import stats

from medaudit.stats.annotation_bootstrap import pearson_r2

# Table 2 (EfficientNet-b0; ResNet-50; VGG-16; ViT-base), each AUROC/AP/s-AUROC/s-AP
TABLE2 = {
    "ENHANCE-Asymmetry": "636/571/585/592; 656/621/593/618; 707/655/617/625; 635/600/594/621",
    "ENHANCE-Border": "664/794/569/263; 617/758/556/253; 679/785/579/268; 631/769/561/253",
    "ENHANCE-Color": "709/890/558/431; 691/878/551/429; 694/886/560/443; 656/849/533/408",
    "VinDr-Pneumothorax": "958/216/903/191; 877/090/866/082; 928/232/924/224; 915/093/912/096",
    "VinDr-Pulmonary Fibrosis": "841/292/836/300; 853/272/848/280; 862/349/854/336; 861/296/851/310",
    "VinDr-Pleural Thickening": "864/304/839/300; 870/302/849/297; 886/354/863/341; 882/329/848/313",
    "CheXpert-Cardiomegaly": "752/531/683/480; 732/427/678/447; 717/493/694/491; 632/390/616/416",
    "CheXpert-Pneumothorax": "145/012/310/039; 392/020/487/039; 486/019/498/033; 760/046/581/047",
    "CheXpert-Pleural Effusion": "835/504/801/551; 868/560/806/540; 807/494/775/539; 785/410/770/467",
}
# Figure 1 R^2 (AUROC | AP)
FIGURE1 = {
    "ENHANCE-Asymmetry": (0.899, 0.697), "ENHANCE-Border": (0.966, 0.695),
    "ENHANCE-Color": (0.874, 0.834), "VinDr-Pleural Thickening": (0.697, 0.969),
    "VinDr-Pneumothorax": (0.465, 0.983), "VinDr-Pulmonary Fibrosis": (0.982, 0.941),
    "CheXpert-Cardiomegaly": (0.840, 0.856), "CheXpert-Pleural Effusion": (0.897, 0.726),
    "CheXpert-Pneumothorax": (0.916, 0.659),
}


def _values(task: str) -> np.ndarray:
    rows = [[int(v) / 1000 for v in m.split("/")] for m in TABLE2[task].split(";")]
    return np.array(rows)  # (4 models, [AUROC, AP, s-AUROC, s-AP])


@pytest.mark.parametrize("task", sorted(FIGURE1))
def test_figure1_r2_from_table2(task):
    v = _values(task)
    want_auroc, want_ap = FIGURE1[task]
    r_auroc = stats.pearsonr(v[:, 0], v[:, 2]).statistic
    r_ap = stats.pearsonr(v[:, 1], v[:, 3]).statistic
    assert r_auroc**2 == pytest.approx(want_auroc, abs=0.0215)
    assert r_ap**2 == pytest.approx(want_ap, abs=0.0215)
    # the published value is reachable from inputs that round to Table 2
    rng = np.random.default_rng(1)
    jitter = v[None] + rng.uniform(-0.0005, 0.0005, size=(20_000, *v.shape))
    for (o, s_), want in (((0, 2), want_auroc), ((1, 3), want_ap)):
        x, y = jitter[:, :, o], jitter[:, :, s_]
        xc, yc = x - x.mean(1, keepdims=True), y - y.mean(1, keepdims=True)
        r2 = (xc * yc).sum(1) ** 2 / ((xc**2).sum(1) * (yc**2).sum(1))
        assert r2.min() - 0.0005 <= want <= r2.max() + 0.0005, (task, o, r2.min(), r2.max())
    assert pearson_r2(v[:, 0], v[:, 2]) == pytest.approx(r_auroc**2, rel=1e-12)
    assert pearson_r2(v[:, 1], v[:, 3]) == pytest.approx(r_ap**2, rel=1e-12)


def test_vindr_pneumothorax_worked_value():
    # methods.md M1.6: recomputation gives 0.461 / 0.984 (reported 0.465 / 0.983); the body
    # text attributes this pair to CheXpert, the table and arithmetic to VinDr
    v = _values("VinDr-Pneumothorax")
    assert pearson_r2(v[:, 0], v[:, 2]) == pytest.approx(0.461, abs=5e-4)
    assert pearson_r2(v[:, 1], v[:, 3]) == pytest.approx(0.984, abs=5e-4)
    c = _values("CheXpert-Pneumothorax")
    assert pearson_r2(c[:, 0], c[:, 2]) > 0.9  # not 0.465: the text's attribution is wrong

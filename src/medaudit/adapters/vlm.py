"""Generative-VLM verdicts (methods.md M2.2): the narrative parser, binary verdicts and a driver.

Narrative protocol: one free-text report per study, parsed deterministically into
``present | absent | unparsed`` for each of the six findings, with the global-normal
fallback (a report asserting overall normality sets findings it does not otherwise
mention to *absent*).  A study is evaluable when at least 4 of its 6 findings parsed.
The parser rules are not given by the paper ([MISSING]); everything here is a
configurable default (:class:`ParserConfig`).

Binary protocol: one question per finding, one generated token; the logits of the
affirmative and negative answer tokens are recorded; verdict ``present`` iff
``logit_yes > logit_no`` (a tie is ``absent``), ``p_yes = sigmoid(logit_yes - logit_no)``.

Output rows follow the JudgmentTable layout ``study_id, patient_id, institution, model,
protocol, finding, prediction, reference, logit_yes, logit_no``; the raw generated text
travels beside it (``VLMResult.raw``) so that a parser change can be re-audited.
A study whose image cannot be read is listed in ``VLMResult.failures`` *and* kept in the
table as ``unparsed`` rows (the JudgmentTable's word for a verdict that could not be
obtained), so the evaluable-set filters count it instead of never seeing it.

The parser lives in :mod:`medaudit.adapters.vlm_parser`; its public names are re-exported here.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from medaudit.adapters.vlm_parser import (
    NarrativeParser,
    ParsedReport,
    ParserConfig,
    evaluable_studies,
    parse_report,
)
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.schema import row_places, text_columns

__all__ = ["FINDINGS", "JUDGMENT_COLUMNS", "ParserConfig", "ParsedReport", "NarrativeParser",
           "parse_report", "evaluable_studies", "binary_verdicts", "BinaryVerdicts",
           "answer_token_ids", "VLMRunner", "VLMResult", "run_binary", "run_narrative",
           "DEFAULT_QUESTIONS", "DEFAULT_NARRATIVE_PROMPT", "normalise_reference", "VLM_CHECKPOINTS",
           "load_vlm"]

FINDINGS = ("atelectasis", "cardiomegaly", "consolidation", "edema", "pleural effusion",
            "pneumothorax")
JUDGMENT_COLUMNS = ("study_id", "patient_id", "institution", "model", "protocol", "finding",
                    "prediction", "reference", "logit_yes", "logit_no")

DEFAULT_QUESTIONS = {f: f"Is there {f} in this chest X-ray? Answer Yes or No." for f in FINDINGS}
#: [MISSING] in the paper (retained by the authors, not published); a stated default
DEFAULT_NARRATIVE_PROMPT = ("Write a chest X-ray report. For each of the following findings state "
                            "explicitly whether it is present or absent: "
                            + ", ".join(FINDINGS) + ".")


@dataclass(frozen=True, slots=True, kw_only=True)
class BinaryVerdicts:
    """Binary-protocol verdicts: ``prediction`` (present/absent) and ``p_yes``."""

    prediction: NDArray[np.str_]
    p_yes: NDArray[np.float64]


def binary_verdicts(logit_yes: ArrayLike, logit_no: ArrayLike) -> BinaryVerdicts:
    """Verdict ``present`` iff ``logit_yes > logit_no`` (ties -> absent); ``p_yes = expit(diff)``."""
    ly = np.asarray(logit_yes, dtype=np.float64)
    ln = np.asarray(logit_no, dtype=np.float64)
    if ly.shape != ln.shape:
        raise MedauditError(f"logit_yes and logit_no differ in shape: {ly.shape} vs {ln.shape}.")
    bad = ~(np.isfinite(ly) & np.isfinite(ln))
    if bad.any():
        raise MedauditError(f"logits must be finite; index {np.flatnonzero(bad.ravel())[:5].tolist()} "
                            "are not.")
    return BinaryVerdicts(prediction=np.where(ly > ln, "present", "absent"), p_yes=expit(ly - ln))


def normalise_reference(value: Any) -> str:
    """Reference label as ``"1" | "0" | "uncertain" | "missing"`` (CheXpert: 1, 0, -1, blank)."""
    if value is None or (np.ndim(value) == 0 and not isinstance(value, str) and bool(pd.isna(value))):
        return "missing"  # None, NaN, pd.NA, NaT from a nullable column
    s = str(value).strip().lower()
    table = {"1": "1", "1.0": "1", "0": "0", "0.0": "0", "-1": "uncertain", "-1.0": "uncertain",
             "uncertain": "uncertain", "": "missing", "missing": "missing", "nan": "missing"}
    if s not in table:
        raise SchemaError(f"reference label {value!r} is not one of 1, 0, -1/uncertain, blank/missing.")
    return table[s]


# -- driver: transformers generative models through their chat templates ----------------------

#: M2.2 checkpoints (revisions as recorded by paper 002; short hashes only were published)
VLM_CHECKPOINTS = {
    "medgemma": {"checkpoint": "google/medgemma-4b-it", "revision": "290cda5e", "trust_remote_code": False},
    "chexagent": {"checkpoint": "StanfordAIMI/CheXagent-8b", "revision": "4934e914",
                  "trust_remote_code": True},
    "llava-med": {"checkpoint": "microsoft/llava-med-v1.5-mistral-7b", "revision": "91bb16c1",
                  "trust_remote_code": False},
}


def load_vlm(name: str, *, weights: str | os.PathLike[str] | None = None,
             device: str | None = None) -> VLMRunner:
    """A :class:`VLMRunner` for an M2.2 checkpoint (``medgemma``, ``chexagent``, ``llava-med``).

    ``weights`` is a local ``save_pretrained`` directory (model + processor with its chat
    template), read with ``local_files_only=True``; without it the hub is used at the
    recorded revision.  The model runs in bf16 on CUDA (paper 002) and float32 on CPU.
    """
    import torch
    from transformers import AutoModelForImageTextToText, AutoProcessor

    if name not in VLM_CHECKPOINTS:
        raise MedauditError(f"unknown VLM {name!r}; known: {sorted(VLM_CHECKPOINTS)}.")
    meta = VLM_CHECKPOINTS[name]
    if weights is not None and not Path(weights).exists():
        raise FileNotFoundError(f"weights {str(weights)!r} do not exist.")
    device = device or ("cuda" if torch.cuda.is_available() else "cpu")
    kw: dict[str, Any] = {"trust_remote_code": meta["trust_remote_code"]}
    kw.update({"local_files_only": True} if weights is not None else {"revision": meta["revision"]})
    src = str(weights) if weights is not None else meta["checkpoint"]
    dtype = torch.bfloat16 if device.startswith("cuda") else torch.float32
    model = AutoModelForImageTextToText.from_pretrained(src, dtype=dtype, **kw).to(device).eval()
    processor = AutoProcessor.from_pretrained(src, **kw)
    revision = meta["revision"] if weights is None else f"local: {Path(src).name}"
    return VLMRunner(model=model, processor=processor, name=name, checkpoint=meta["checkpoint"],
                     revision=revision)


def answer_token_ids(tokenizer: Any, *, yes: Sequence[str] = ("Yes", "yes", " Yes"),
                     no: Sequence[str] = ("No", "no", " No")) -> tuple[tuple[int, str], tuple[int, str]]:
    """``((yes_id, yes_text), (no_id, no_text))``: the first candidate of each that is one token.

    The paper did not record how answer tokens were resolved ([MISSING]); this rule is
    deterministic and recorded in the output (``VLMResult.provenance``).
    """
    def first(cands: Sequence[str], what: str) -> tuple[int, str]:
        for c in cands:
            ids = tokenizer.encode(c, add_special_tokens=False)
            if len(ids) == 1:
                return int(ids[0]), c
        raise MedauditError(f"none of the {what} answers {list(cands)} is a single token for this "
                            "tokenizer; pass yes=/no= candidates that are.")
    y, n = first(yes, "affirmative"), first(no, "negative")
    if y[0] == n[0]:
        raise MedauditError(f"affirmative {y[1]!r} and negative {n[1]!r} map to the same token id.")
    return y, n


@dataclass(frozen=True, slots=True, kw_only=True)
class VLMRunner:
    """A generative model, its processor and how to prompt it.

    Attributes
    ----------
    model : transformers model with ``generate`` and a ``logits`` output
    processor : processor (vision) or tokenizer (text-only) with a chat template
    name : str
        The ``model`` column of the JudgmentTable.
    vision : bool
        Whether the prompt carries the image (False: text-only model, image ignored).
    checkpoint, revision : str
        Recorded in the provenance.
    yes, no : tuple of str
        Candidate answer tokens (see :func:`answer_token_ids`).
    """

    model: Any
    processor: Any
    name: str
    vision: bool = True
    checkpoint: str = "unrecorded"
    revision: str = "unrecorded"
    yes: tuple[str, ...] = ("Yes", "yes", " Yes")
    no: tuple[str, ...] = ("No", "no", " No")

    @property
    def tokenizer(self) -> Any:
        return getattr(self.processor, "tokenizer", self.processor)

    def inputs(self, image: Any, question: str) -> dict[str, Any]:
        """Tokenised chat-template input for one (image, question) on the model's device."""
        if self.vision:
            msgs = [{"role": "user", "content": [{"type": "image"}, {"type": "text", "text": question}]}]
            text = self.processor.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            enc = self.processor(text=[text], images=[image], return_tensors="pt")
        else:
            msgs = [{"role": "user", "content": question}]
            text = self.tokenizer.apply_chat_template(msgs, add_generation_prompt=True, tokenize=False)
            enc = self.tokenizer([text], return_tensors="pt", add_special_tokens=False)
        device = next(self.model.parameters()).device
        return {k: v.to(device) for k, v in enc.items()}


@dataclass(frozen=True, slots=True, kw_only=True)
class VLMResult:
    """JudgmentTable rows, the raw generated text beside them, failures and provenance."""

    judgments: pd.DataFrame
    raw: pd.DataFrame
    failures: pd.DataFrame
    provenance: dict[str, Any]

    def to_dict(self) -> dict[str, Any]:
        return {"provenance": self.provenance, "n_rows": len(self.judgments),
                "failures": self.failures.to_dict("records")}


def _check_studies(studies: pd.DataFrame, vision: bool) -> pd.DataFrame:
    need = ["study_id", "patient_id", "institution"] + (["path"] if vision else [])
    missing = [c for c in need if c not in studies.columns]
    if missing:
        raise SchemaError(f"studies table lacks column(s) {missing}; it needs {need}.")
    t = text_columns(studies, need, source="studies")
    # the JudgmentTable keys a study by study_id alone (one institution, one patient each)
    dup = t.duplicated(["study_id"], keep=False).to_numpy()
    if dup.any():
        raise SchemaError(f"studies repeat a study_id at {row_places(studies, dup)}; "
                          "a study_id must name one study (prefix it with the institution if "
                          "two institutions reuse identifiers).")
    return t


def _reference_lookup(references: pd.DataFrame | None, studies: pd.DataFrame,
                      findings: Sequence[str]) -> tuple[dict[tuple[str, str], str], dict[str, int]]:
    """``{(study_id, finding): reference}`` and counts of reference rows that match nothing."""
    if references is None:
        return {}, {"reference_rows": 0, "unmatched_study": 0, "unmatched_finding": 0}
    need = {"study_id", "finding", "reference"}
    if not need <= set(references.columns):
        raise SchemaError(f"references lack column(s) {sorted(need - set(references.columns))}.")
    out: dict[tuple[str, str], str] = {}
    for i, (s, f, r) in enumerate(zip(references["study_id"], references["finding"],
                                      references["reference"], strict=True)):
        key, ref = (str(s), str(f)), normalise_reference(r)
        if out.get(key, ref) != ref:
            raise SchemaError(f"references: study {key[0]!r}, finding {key[1]!r} has contradictory "
                              f"labels {out[key]!r} and {ref!r} (row {i}); give one label per "
                              "study and finding.")
        out[key] = ref
    ids, fset = set(studies["study_id"]), set(findings)
    counts = {"reference_rows": len(references),
              "unmatched_study": sum(k[0] not in ids for k in out),
              "unmatched_finding": sum(k[1] not in fset for k in out)}
    return out, counts


def _iterate(studies: pd.DataFrame, runner: VLMRunner, base_dir: str | os.PathLike[str],
             failures: list[dict[str, Any]]):
    """Yield ``(row, image, failed)`` for every study, in input order.

    A study whose image cannot be read is recorded in ``failures`` and still yielded (with
    ``failed=True``) so that the caller writes its rows: nothing leaves the table unseen.
    """
    from PIL import Image

    from medaudit.imaging.pixels import to_rgb

    for i, row in studies.iterrows():
        image = None
        if runner.vision:
            path = Path(row["path"]) if Path(row["path"]).is_absolute() else Path(base_dir) / row["path"]
            try:
                with Image.open(path) as im:
                    im.load()
                    image = to_rgb(im)  # a 16-bit image mapped, not clipped at 255
            except Exception as exc:  # noqa: BLE001 - reported per study, the batch continues
                failures.append({"row": int(i), "study_id": row["study_id"], "path": str(path),
                                 "error": f"{type(exc).__name__}: {exc}"})
                yield row, None, True
                continue
        yield row, image, False


def _row(row: pd.Series, runner: VLMRunner, protocol: str, finding: str, prediction: str,
         refs: Mapping[tuple[str, str], str], logit_yes: float = np.nan,
         logit_no: float = np.nan) -> dict[str, Any]:
    return {"study_id": row["study_id"], "patient_id": row["patient_id"],
            "institution": row["institution"], "model": runner.name, "protocol": protocol,
            "finding": finding, "prediction": prediction,
            "reference": refs.get((row["study_id"], finding), "missing"),
            "logit_yes": logit_yes, "logit_no": logit_no}


def _failure_provenance(failures: list[dict[str, Any]], n_findings: int) -> dict[str, Any]:
    """What happened to studies whose image could not be read (also rows of the table)."""
    return {"n_studies": len(failures), "rows_unparsed": len(failures) * int(n_findings),
            "prediction": "unparsed",
            "studies": [{"study_id": f["study_id"], "path": f["path"], "error": f["error"]}
                        for f in failures]}


def _result(rows: list[dict[str, Any]], raw: list[dict[str, Any]], failures: list[dict[str, Any]],
            provenance: dict[str, Any]) -> VLMResult:
    j = pd.DataFrame(rows, columns=list(JUDGMENT_COLUMNS))
    j["logit_yes"] = j["logit_yes"].astype(float)
    j["logit_no"] = j["logit_no"].astype(float)
    return VLMResult(judgments=j, raw=pd.DataFrame(raw),
                     failures=pd.DataFrame(failures, columns=["row", "study_id", "path", "error"]),
                     provenance=provenance)


def run_binary(studies: pd.DataFrame, runner: VLMRunner, *,
               questions: Mapping[str, str] = DEFAULT_QUESTIONS,
               references: pd.DataFrame | None = None, base_dir: str | os.PathLike[str] = ".",
               progress: Callable[[int, int], None] | None = None) -> VLMResult:
    """Binary protocol: one request per (study, finding); one greedy token; answer logits kept.

    The greedy single token is the arg-max of the next-token logits of one forward pass,
    which is what ``generate(max_new_tokens=1, do_sample=False)`` emits.  A study whose
    image cannot be read gets one ``unparsed`` row per finding (logits empty), a line in
    ``failures`` and an entry in ``provenance["image_failures"]``; it has no ``raw`` rows.
    """
    import torch

    if not questions or not all(isinstance(q, str) and q.strip() for q in questions.values()):
        raise MedauditError(f"questions must map each finding to a non-empty question; got "
                            f"{dict(questions)!r}.")
    t = _check_studies(studies, runner.vision)
    refs, ref_counts = _reference_lookup(references, t, list(questions))
    (yid, ytxt), (nid, ntxt) = answer_token_ids(runner.tokenizer, yes=runner.yes, no=runner.no)
    rows, raw, failures = [], [], []
    runner.model.eval()
    for k, (row, image, failed) in enumerate(_iterate(t, runner, base_dir, failures)):
        for finding, q in questions.items():
            if failed:
                rows.append(_row(row, runner, "binary", finding, "unparsed", refs))
                continue
            with torch.inference_mode():
                logits = runner.model(**runner.inputs(image, q)).logits[0, -1].double().cpu()
            ly, ln = float(logits[yid]), float(logits[nid])
            greedy = int(torch.argmax(logits))
            v = binary_verdicts([ly], [ln])
            rows.append(_row(row, runner, "binary", finding, str(v.prediction[0]), refs, ly, ln))
            raw.append({"study_id": row["study_id"], "finding": finding, "protocol": "binary",
                        "prompt": q, "output": runner.tokenizer.decode([greedy]),
                        "greedy_token_id": greedy, "p_yes": float(v.p_yes[0])})
        if progress is not None:
            progress(k + 1, len(t))
    prov = {"protocol": "binary", "model": runner.name, "checkpoint": runner.checkpoint,
            "revision": runner.revision, "answer_tokens": {"yes": [yid, ytxt], "no": [nid, ntxt]},
            "verdict_rule": "present iff logit_yes > logit_no (tie -> absent); "
                            "p_yes = sigmoid(logit_yes - logit_no)", "questions": dict(questions),
            "references": ref_counts, "image_failures": _failure_provenance(failures, len(questions))}
    return _result(rows, raw, failures, prov)


def run_narrative(studies: pd.DataFrame, runner: VLMRunner, *, prompt: str = DEFAULT_NARRATIVE_PROMPT,
                  parser: NarrativeParser | None = None, max_new_tokens: int = 256,
                  references: pd.DataFrame | None = None, base_dir: str | os.PathLike[str] = ".",
                  progress: Callable[[int, int], None] | None = None) -> VLMResult:
    """Narrative protocol: one greedy report per study, parsed into one row per finding.

    A study whose image cannot be read gets one ``unparsed`` row per finding, a line in
    ``failures`` and an entry in ``provenance["image_failures"]``; it has no ``raw`` row
    (no report was generated).
    """
    import torch

    parser = parser or NarrativeParser()
    findings = list(parser.config.synonyms)
    t = _check_studies(studies, runner.vision)
    refs, ref_counts = _reference_lookup(references, t, findings)
    rows, raw, failures = [], [], []
    runner.model.eval()
    for k, (row, image, failed) in enumerate(_iterate(t, runner, base_dir, failures)):
        if failed:
            rows.extend(_row(row, runner, "narrative", f, "unparsed", refs) for f in findings)
        else:
            enc = runner.inputs(image, prompt)
            with torch.inference_mode():
                out = runner.model.generate(**enc, max_new_tokens=int(max_new_tokens), do_sample=False)
            text = runner.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
            parsed = parser(text)
            rows.extend(_row(row, runner, "narrative", f, parsed.judgments[f], refs) for f in findings)
            raw.append({"study_id": row["study_id"], "protocol": "narrative", "prompt": prompt,
                        "output": text, "n_parsed": parsed.n_parsed, "evaluable": parsed.evaluable,
                        "global_normal": parsed.global_normal})
        if progress is not None:
            progress(k + 1, len(t))
    prov = {"protocol": "narrative", "model": runner.name, "checkpoint": runner.checkpoint,
            "revision": runner.revision, "decoding": f"greedy, max_new_tokens={int(max_new_tokens)}",
            "prompt": prompt, "parser": parser.config.to_dict(), "references": ref_counts,
            "image_failures": _failure_provenance(failures, len(findings))}
    return _result(rows, raw, failures, prov)

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
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["FINDINGS", "JUDGMENT_COLUMNS", "ParserConfig", "ParsedReport", "NarrativeParser",
           "parse_report", "evaluable_studies", "binary_verdicts", "BinaryVerdicts",
           "answer_token_ids", "VLMRunner", "VLMResult", "run_binary", "run_narrative",
           "DEFAULT_QUESTIONS", "DEFAULT_NARRATIVE_PROMPT", "normalise_reference", "VLM_CHECKPOINTS",
           "load_vlm"]

FINDINGS = ("atelectasis", "cardiomegaly", "consolidation", "edema", "pleural effusion",
            "pneumothorax")
JUDGMENT_COLUMNS = ("study_id", "patient_id", "institution", "model", "protocol", "finding",
                    "prediction", "reference", "logit_yes", "logit_no")
Verdict = Literal["present", "absent", "unparsed"]

DEFAULT_QUESTIONS = {f: f"Is there {f} in this chest X-ray? Answer Yes or No." for f in FINDINGS}
#: [MISSING] in the paper (retained by the authors, not published); a stated default
DEFAULT_NARRATIVE_PROMPT = ("Write a chest X-ray report. For each of the following findings state "
                            "explicitly whether it is present or absent: "
                            + ", ".join(FINDINGS) + ".")


@dataclass(frozen=True, slots=True, kw_only=True)
class ParserConfig:
    """Rules of the narrative parser (all lower-case; matched on word boundaries).

    Attributes
    ----------
    synonyms : mapping finding -> phrases
        Phrases that mention a finding (longest matched first).
    absent_phrases : mapping finding -> phrases
        Phrases that by themselves assert the finding is absent ("heart size is normal").
    exclusions : tuple of str
        Phrases masked before matching ("pericardial effusion" never maps to pleural effusion).
    pseudo_negations : tuple of str
        Phrases containing a negation word that do not negate ("no change").
    negation_cues : tuple of str
        Cues before a mention that negate it, up to a scope terminator.
    post_negation_cues / post_affirmation_cues : tuple of str
        Cues right after a mention, optionally after a separator and a verb
        ("pneumothorax: absent", "effusion is present", "effusion has resolved").  A comma
        ends the reach of a mention: in "effusion, no pneumothorax" the "no" is not the
        effusion's.
    post_negation_answers / post_affirmation_answers : tuple of str
        One-word answers that count only after a separator ("pneumothorax: no",
        "edema - yes").
    uncertainty_cues : tuple of str
        Hedges ("possible", "cannot be excluded") right after a mention or in scope before
        it; such mentions become ``uncertain_as``.  Before a mention, the nearest cue in
        scope (hedge or negation) decides.
    terminators : tuple of str
        Words that end a negation or hedge scope inside a sentence ("but", "however").
    global_normal : tuple of str
        Phrases asserting overall normality (the fallback).  Phrases that describe one
        structure ("the bones are unremarkable", "heart size within normal limits") are
        not among them.
    uncertain_as, conflict_as : {"present", "absent", "unparsed"}
        Verdict for hedged-only mentions and for findings both affirmed and negated.
    min_parsed : int
        Evaluable-study rule: at least this many findings parsed (M2.1: 4 of 6).
    """

    synonyms: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "atelectasis": ("atelectasis", "atelectases", "atelectatic", "subsegmental collapse",
                        "lobar collapse"),
        "cardiomegaly": ("cardiomegaly", "enlarged heart", "heart is enlarged", "cardiac enlargement",
                         "enlarged cardiac silhouette", "cardiac silhouette is enlarged",
                         "heart size is enlarged"),
        "consolidation": ("consolidation", "consolidations", "consolidative opacity",
                          "airspace consolidation"),
        "edema": ("edema", "oedema", "pulmonary edema", "pulmonary oedema", "interstitial edema"),
        "pleural effusion": ("pleural effusion", "pleural effusions", "effusion", "effusions",
                             "hydrothorax", "hydropneumothorax"),
        "pneumothorax": ("pneumothorax", "pneumothoraces", "hydropneumothorax"),
    })
    absent_phrases: Mapping[str, tuple[str, ...]] = field(default_factory=lambda: {
        "cardiomegaly": ("heart size is normal", "normal heart size", "heart is normal in size",
                         "normal cardiac silhouette", "cardiac silhouette is normal",
                         "heart size within normal limits", "normal cardiomediastinal silhouette",
                         "cardiomediastinal silhouette is normal", "heart is not enlarged",
                         "heart size is not enlarged", "cardiac silhouette is not enlarged",
                         "heart size is within normal limits", "no cardiac enlargement"),
    })
    exclusions: tuple[str, ...] = ("pericardial effusion", "pericardial effusions")
    pseudo_negations: tuple[str, ...] = ("no change", "no interval change", "no significant change",
                                         "not significantly changed", "no significant interval change",
                                         "not only")
    negation_cues: tuple[str, ...] = ("no evidence of", "no signs of", "no sign of", "negative for",
                                      "free of", "without", "absence of", "no", "not", "nor",
                                      "neither", "rather than")
    post_negation_cues: tuple[str, ...] = ("absent", "not present", "not seen", "not identified",
                                           "not demonstrated", "not visualized", "not evident",
                                           "not detected", "resolved", "no longer seen",
                                           "no longer present")
    post_affirmation_cues: tuple[str, ...] = ("present", "seen", "identified", "noted")
    post_negation_answers: tuple[str, ...] = ("no", "negative")
    post_affirmation_answers: tuple[str, ...] = ("yes", "positive")
    uncertainty_cues: tuple[str, ...] = ("cannot be excluded", "can not be excluded",
                                         "cannot be ruled out", "cannot exclude", "not excluded",
                                         "not ruled out", "possible", "possibly", "probable",
                                         "probably", "questionable", "suspicious for", "suspected",
                                         "may represent", "may be", "might", "could be",
                                         "concerning for", "suggestive of", "versus", "vs")
    terminators: tuple[str, ...] = ("but", "however", "although", "though", "except", "whereas",
                                    "there is", "there are", "which", "while", "yet")
    global_normal: tuple[str, ...] = ("no acute cardiopulmonary", "normal chest",
                                      "unremarkable chest", "unremarkable study",
                                      "unremarkable radiograph", "unremarkable examination",
                                      "chest is unremarkable", "radiograph is unremarkable",
                                      "study is unremarkable", "examination is unremarkable",
                                      "x-ray is unremarkable", "chest is within normal limits",
                                      "radiograph is within normal limits",
                                      "study is within normal limits",
                                      "no acute abnormality", "no acute abnormalities",
                                      "no acute disease", "no abnormality", "no abnormalities",
                                      "normal study", "no active disease",
                                      "normal radiograph", "normal chest x-ray", "normal examination")
    uncertain_as: Verdict = "unparsed"
    conflict_as: Verdict = "unparsed"
    min_parsed: int = 4

    def __post_init__(self) -> None:
        for key in ("uncertain_as", "conflict_as"):
            if getattr(self, key) not in ("present", "absent", "unparsed"):
                raise MedauditError(f"ParserConfig.{key} must be 'present', 'absent' or "
                                    f"'unparsed'; got {getattr(self, key)!r}.")
        unknown = set(self.absent_phrases) - set(self.synonyms)
        if unknown:
            raise MedauditError(f"ParserConfig.absent_phrases names findings {sorted(unknown)} "
                                f"that have no synonyms; findings are {list(self.synonyms)}.")
        if not 0 <= int(self.min_parsed) <= len(self.synonyms):
            raise MedauditError(f"ParserConfig.min_parsed must lie in 0..{len(self.synonyms)}; "
                                f"got {self.min_parsed!r}.")

    def to_dict(self) -> dict[str, Any]:
        """Every rule, as plain data (recorded beside the verdicts it produced)."""
        out: dict[str, Any] = {}
        for k in self.__dataclass_fields__:
            v = getattr(self, k)
            out[k] = ({f: list(p) for f, p in v.items()} if isinstance(v, Mapping)
                      else list(v) if isinstance(v, tuple) else v)
        return out


@dataclass(frozen=True, slots=True, kw_only=True)
class ParsedReport:
    """The parse of one report: a verdict per finding, with the phrases that decided it."""

    judgments: dict[str, Verdict]
    evidence: dict[str, tuple[str, ...]]
    global_normal: bool
    min_parsed: int

    @property
    def n_parsed(self) -> int:
        return sum(v != "unparsed" for v in self.judgments.values())

    @property
    def evaluable(self) -> bool:
        """M2.1: at least ``min_parsed`` findings parsed."""
        return self.n_parsed >= self.min_parsed


def _alt(phrases: Sequence[str]) -> str:
    ordered = sorted({p.strip().lower() for p in phrases if p.strip()}, key=lambda s: (-len(s), s))
    return "|".join(r"\s+".join(re.escape(w) for w in p.split()) for p in ordered) or r"(?!x)x"


def _words(phrases: Sequence[str]) -> re.Pattern[str]:
    return re.compile(rf"(?<![\w-])(?:{_alt(phrases)})(?![\w-])")


class NarrativeParser:
    """Deterministic rule-based parser; build once per :class:`ParserConfig` and call on texts."""

    _SENTENCE = re.compile(r"[.;!?\n\r]+(?:\s|$)|\n")

    def __init__(self, config: ParserConfig | None = None):
        self.config = c = config or ParserConfig()
        self._mention = {f: _words(s) for f, s in c.synonyms.items()}
        self._absent = {f: _words(s) for f, s in c.absent_phrases.items()}
        self._exclude = _words(c.exclusions)
        self._pseudo = _words(c.pseudo_negations)
        self._neg = _words(c.negation_cues)
        self._unc = _words(c.uncertainty_cues)
        self._term = _words(c.terminators)
        self._normal = _words(c.global_normal)
        # right after a mention: optional separator (never a comma), optional verb, the cue
        lead = r"^\s*(?:[:=\-–—(]\s*)?(?:(?:is|are|was|were|has|have|had)\s+(?:been\s+)?)?"
        sep = r"^\s*[:=\-–—(]\s*"

        def post(cues: Sequence[str], answers: Sequence[str]) -> re.Pattern[str]:
            return re.compile(rf"(?:{lead}(?:{_alt(cues)})|{sep}(?:{_alt(answers)}))(?![\w-])")

        self._post_neg = post(c.post_negation_cues, c.post_negation_answers)
        self._post_aff = post(c.post_affirmation_cues, c.post_affirmation_answers)
        self._post_unc = post(c.uncertainty_cues, ())

    @staticmethod
    def _mask(text: str, pattern: re.Pattern[str]) -> str:
        return pattern.sub(lambda m: " " * len(m.group(0)), text)

    def _mention_verdict(self, clause: str, start: int, end: int, next_start: int) -> str:
        """present / absent / uncertain for one mention inside one clause."""
        after = clause[end:next_start]
        if self._post_neg.match(after):
            return "absent"
        if self._post_unc.match(after):  # "pneumothorax cannot be excluded", "is possible"
            return "uncertain"
        # before the mention the nearest cue decides, if no terminator or colon closes its scope
        before = clause[:start]
        cues = [(m.end(), 1, "absent") for m in self._neg.finditer(before)]
        cues += [(m.end(), 2, "uncertain") for m in self._unc.finditer(before)]
        cue = None
        if cues:
            pos, _, kind = max(cues)  # a hedge ending where a negation ends ("not excluded") wins
            scope = before[pos:]
            if ":" not in scope and not self._term.search(scope):
                cue = kind
        if self._post_aff.match(after):  # "effusion is present" overrides an earlier negation
            return "uncertain" if cue == "uncertain" else "present"
        return cue or "present"

    def __call__(self, text: str) -> ParsedReport:
        if not isinstance(text, str):
            raise MedauditError(f"a report must be a string; got {type(text).__name__}.")
        c = self.config
        low = self._mask(self._mask(text.lower(), self._exclude), self._pseudo)
        votes: dict[str, list[str]] = {f: [] for f in c.synonyms}
        evidence: dict[str, list[str]] = {f: [] for f in c.synonyms}
        global_normal = False
        for sentence in self._SENTENCE.split(low):
            if not sentence.strip():
                continue
            for m in self._normal.finditer(sentence):
                # "not a normal chest" does not assert normality
                if not re.search(r"(?<![\w-])(?:not|no)\s+(?:\w+\s+)?$", sentence[:m.start()]):
                    global_normal = True
            for f, pat in self._absent.items():
                for m in pat.finditer(sentence):
                    votes[f].append("absent")
                    evidence[f].append(m.group(0))
            spans = sorted((m.start(), m.end(), f) for f, pat in self._mention.items()
                           for m in pat.finditer(sentence))
            for k, (s, e, f) in enumerate(spans):
                nxt = next((s2 for s2, _, _ in spans[k + 1:] if s2 >= e), len(sentence))
                v = self._mention_verdict(sentence, s, e, nxt)
                votes[f].append(v)
                evidence[f].append(sentence.strip())
        judgments: dict[str, Verdict] = {}
        for f, vs in votes.items():
            definite = {v for v in vs if v in ("present", "absent")}
            if len(definite) == 2:
                judgments[f] = c.conflict_as
            elif definite:
                judgments[f] = definite.pop()  # type: ignore[assignment]
            elif vs:  # only hedged mentions
                judgments[f] = c.uncertain_as
            else:
                judgments[f] = "absent" if global_normal else "unparsed"
                if global_normal:
                    evidence[f].append("<global-normal fallback>")
        return ParsedReport(judgments=judgments, evidence={f: tuple(v) for f, v in evidence.items()},
                            global_normal=global_normal, min_parsed=int(c.min_parsed))


_DEFAULT_PARSER: NarrativeParser | None = None


def parse_report(text: str, *, parser: NarrativeParser | None = None) -> ParsedReport:
    """Parse one report with ``parser`` (default rules when omitted)."""
    global _DEFAULT_PARSER
    if parser is None:
        if _DEFAULT_PARSER is None:
            _DEFAULT_PARSER = NarrativeParser()
        parser = _DEFAULT_PARSER
    return parser(text)


def evaluable_studies(judgments: pd.DataFrame, *, min_parsed: int = 4) -> pd.DataFrame:
    """Per (model, study): findings parsed and whether the study is evaluable (>= ``min_parsed``).

    Returns one row per ``model, protocol, study_id`` with ``n_findings, n_parsed,
    evaluable``; filter on it and report the counts (nothing is dropped here).
    """
    need = {"model", "protocol", "study_id", "prediction"}
    if not need <= set(judgments.columns):
        raise SchemaError(f"judgment table lacks {sorted(need - set(judgments.columns))}.")
    g = judgments.assign(_p=judgments["prediction"] != "unparsed").groupby(
        ["model", "protocol", "study_id"], sort=True)
    out = g.agg(n_findings=("_p", "size"), n_parsed=("_p", "sum")).reset_index()
    out["n_parsed"] = out["n_parsed"].astype(np.int64)
    out["evaluable"] = out["n_parsed"] >= int(min_parsed)
    return out


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
    t = studies.reset_index(drop=True).copy()
    for c in need:
        na = t[c].isna().to_numpy()  # NaN must not become the text "nan"
        t[c] = t[c].astype(str)
        empty = na | (t[c].str.strip() == "").to_numpy()
        if empty.any():
            raise SchemaError(f"studies: column {c!r} is empty at row(s) "
                              f"{np.flatnonzero(empty)[:5].tolist()}.")
    # the JudgmentTable keys a study by study_id alone (one institution, one patient each)
    dup = t.duplicated(["study_id"], keep=False).to_numpy()
    if dup.any():
        raise SchemaError(f"studies repeat a study_id at row(s) {np.flatnonzero(dup)[:5].tolist()}; "
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
    from PIL import Image

    for i, row in studies.iterrows():
        image = None
        if runner.vision:
            path = Path(row["path"]) if Path(row["path"]).is_absolute() else Path(base_dir) / row["path"]
            try:
                with Image.open(path) as im:
                    im.load()
                    image = im.convert("RGB")
            except Exception as exc:  # noqa: BLE001 - reported per study, the batch continues
                failures.append({"row": int(i), "study_id": row["study_id"], "path": str(path),
                                 "error": f"{type(exc).__name__}: {exc}"})
                continue
        yield row, image


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
    which is what ``generate(max_new_tokens=1, do_sample=False)`` emits.
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
    for k, (row, image) in enumerate(_iterate(t, runner, base_dir, failures)):
        for finding, q in questions.items():
            with torch.inference_mode():
                logits = runner.model(**runner.inputs(image, q)).logits[0, -1].double().cpu()
            ly, ln = float(logits[yid]), float(logits[nid])
            greedy = int(torch.argmax(logits))
            v = binary_verdicts([ly], [ln])
            rows.append({"study_id": row["study_id"], "patient_id": row["patient_id"],
                         "institution": row["institution"], "model": runner.name,
                         "protocol": "binary", "finding": finding, "prediction": str(v.prediction[0]),
                         "reference": refs.get((row["study_id"], finding), "missing"),
                         "logit_yes": ly, "logit_no": ln})
            raw.append({"study_id": row["study_id"], "finding": finding, "protocol": "binary",
                        "prompt": q, "output": runner.tokenizer.decode([greedy]),
                        "greedy_token_id": greedy, "p_yes": float(v.p_yes[0])})
        if progress is not None:
            progress(k + 1, len(t))
    prov = {"protocol": "binary", "model": runner.name, "checkpoint": runner.checkpoint,
            "revision": runner.revision, "answer_tokens": {"yes": [yid, ytxt], "no": [nid, ntxt]},
            "verdict_rule": "present iff logit_yes > logit_no (tie -> absent); "
                            "p_yes = sigmoid(logit_yes - logit_no)", "questions": dict(questions),
            "references": ref_counts}
    return _result(rows, raw, failures, prov)


def run_narrative(studies: pd.DataFrame, runner: VLMRunner, *, prompt: str = DEFAULT_NARRATIVE_PROMPT,
                  parser: NarrativeParser | None = None, max_new_tokens: int = 256,
                  references: pd.DataFrame | None = None, base_dir: str | os.PathLike[str] = ".",
                  progress: Callable[[int, int], None] | None = None) -> VLMResult:
    """Narrative protocol: one greedy report per study, parsed into one row per finding."""
    import torch

    parser = parser or NarrativeParser()
    t = _check_studies(studies, runner.vision)
    refs, ref_counts = _reference_lookup(references, t, list(parser.config.synonyms))
    rows, raw, failures = [], [], []
    runner.model.eval()
    for k, (row, image) in enumerate(_iterate(t, runner, base_dir, failures)):
        enc = runner.inputs(image, prompt)
        with torch.inference_mode():
            out = runner.model.generate(**enc, max_new_tokens=int(max_new_tokens), do_sample=False)
        text = runner.tokenizer.decode(out[0, enc["input_ids"].shape[1]:], skip_special_tokens=True)
        parsed = parser(text)
        for finding in parser.config.synonyms:
            rows.append({"study_id": row["study_id"], "patient_id": row["patient_id"],
                         "institution": row["institution"], "model": runner.name,
                         "protocol": "narrative", "finding": finding,
                         "prediction": parsed.judgments[finding],
                         "reference": refs.get((row["study_id"], finding), "missing"),
                         "logit_yes": np.nan, "logit_no": np.nan})
        raw.append({"study_id": row["study_id"], "protocol": "narrative", "prompt": prompt,
                    "output": text, "n_parsed": parsed.n_parsed, "evaluable": parsed.evaluable,
                    "global_normal": parsed.global_normal})
        if progress is not None:
            progress(k + 1, len(t))
    prov = {"protocol": "narrative", "model": runner.name, "checkpoint": runner.checkpoint,
            "revision": runner.revision, "decoding": f"greedy, max_new_tokens={int(max_new_tokens)}",
            "prompt": prompt, "parser": parser.config.to_dict(), "references": ref_counts}
    return _result(rows, raw, failures, prov)

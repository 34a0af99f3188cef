"""The narrative parser of the generative-VLM protocol (methods.md M2.2).

One free-text report is parsed deterministically into ``present | absent | unparsed`` for
each finding, with the global-normal fallback (a report asserting overall normality sets
findings it does not otherwise mention to *absent*).  A study is evaluable when at least
``min_parsed`` (paper 002: 4 of 6) of its findings parsed.  The parser rules are not given
by the paper ([MISSING]); everything here is a configurable default (:class:`ParserConfig`).

Scope of a negation or hedge cue.  A cue reaches forward over a *list*: the phrase it heads
("no large effusion") and further items joined by commas, "and", "or", "nor" or "with"
("no consolidation, effusion, or pneumothorax": all three absent).  The list, and the cue's
reach, ends at an item that carries its own assertion -- a modifier such as "large", "small",
"moderate", "new", "increased", or a predicate such as "is seen" -- so "no edema and large
effusion" and "no edema, effusion is seen" read the effusion as present.  After "or"/"nor"
the negation carries on even over a modifier ("no edema or large effusion": both absent),
because English distributes a negation over a disjunction.  Inside the phrase the cue heads,
modifiers and predicates are negated with it ("no pleural effusion is seen": absent).
Terminators ("but", "there is", ...), a colon and a sentence boundary end every scope.

Re-exported by :mod:`medaudit.adapters.vlm`; import from there.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

import numpy as np
import pandas as pd

from medaudit.exceptions import MedauditError, SchemaError

__all__ = ["Verdict", "ParserConfig", "ParsedReport", "NarrativeParser", "parse_report",
           "evaluable_studies"]

Verdict = Literal["present", "absent", "unparsed"]


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
    list_conjunctions : tuple of str
        Words that join the items of a list a cue reaches over (a comma always does).
    distributive_conjunctions : tuple of str
        Of those, the ones after which a cue carries on even over an item with its own
        assertion ("no edema or large effusion").
    assertion_modifiers : tuple of str
        Words that give a list item its own assertion ("no edema, *large* effusion"): size,
        severity, change and side.  They end a cue's reach when they follow a list separator;
        right after the cue they are negated with it ("no large effusion").
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
    post_affirmation_cues: tuple[str, ...] = ("present", "seen", "again seen", "identified", "noted",
                                              "demonstrated", "visualized", "evident", "persists",
                                              "unchanged", "increased")
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
    list_conjunctions: tuple[str, ...] = ("and", "or", "nor", "with", "as well as")
    distributive_conjunctions: tuple[str, ...] = ("or", "nor")
    assertion_modifiers: tuple[str, ...] = (
        "small", "large", "moderate", "mild", "severe", "trace", "tiny", "minimal", "massive",
        "extensive", "moderate-sized", "small-to-moderate", "new", "increased", "increasing",
        "decreased", "decreasing", "worsening", "worsened", "improved", "improving", "enlarging",
        "persistent", "residual", "stable", "unchanged", "redemonstrated", "developing",
        "progressive", "recurrent", "left", "right", "bilateral", "bibasilar", "bibasal",
        "left-sided", "right-sided")
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
    _COPULA = re.compile(r"\s(?:is|are)\s")

    def __init__(self, config: ParserConfig | None = None):
        self.config = c = config or ParserConfig()
        self._mention = {f: _words(s) for f, s in c.synonyms.items()}
        self._absent = {f: _words(s) for f, s in c.absent_phrases.items()}
        self._exclude = _words(c.exclusions)
        self._pseudo = _words(c.pseudo_negations)
        self._neg = _words(c.negation_cues)
        self._unc = _words(c.uncertainty_cues)
        self._term = _words(c.terminators)
        self._modifier = _words(c.assertion_modifiers)
        # list separators, captured so that each item knows the separator before it
        self._separator = re.compile(rf"(,|(?<![\w-])(?:{_alt(c.list_conjunctions)})(?![\w-]))")
        self._distributive = {" ".join(w.lower().split()) for w in c.distributive_conjunctions}
        self._affirmed = _words(c.post_affirmation_cues)
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

    def _reaches(self, scope: str, blank_scope: str, affirmed_after: bool) -> bool:
        """Whether a cue reaches the mention that ends ``scope`` (the text from the cue to it).

        ``blank_scope`` is the same text with every finding mention blanked, so that a
        synonym's own words ("enlarged heart") are never read as a modifier.
        """
        if ":" in scope or self._term.search(scope):
            return False
        parts = self._separator.split(blank_scope)  # [head, sep, item, sep, item, ...]
        # the phrase the cue heads ("no large effusion is seen") is negated whole
        for k in range(1, len(parts), 2):
            sep, item = " ".join(parts[k].split()), parts[k + 1]
            if sep in self._distributive:
                continue  # "no edema or large effusion": the negation distributes
            last = k + 2 >= len(parts)
            if self._modifier.search(item) or self._affirmed.search(item) or (last and affirmed_after):
                return False  # an item with its own assertion ends the list
        return True

    def _mention_verdict(self, clause: str, blank: str, start: int, end: int, next_start: int) -> str:
        """present / absent / uncertain for one mention inside one clause."""
        after = clause[end:next_start]
        if self._post_neg.match(after):
            return "absent"
        if self._post_unc.match(after):  # "pneumothorax cannot be excluded", "is possible"
            return "uncertain"
        # "effusion is present", or a synonym that is itself a clause ("heart is enlarged")
        affirmed = bool(self._post_aff.match(after) or self._COPULA.search(clause[start:end]))
        # before the mention the nearest cue decides, if its scope reaches the mention
        before = clause[:start]
        cues = [(m.end(), 1, "absent") for m in self._neg.finditer(before)]
        cues += [(m.end(), 2, "uncertain") for m in self._unc.finditer(before)]
        if cues:
            pos, _, kind = max(cues)  # a hedge ending where a negation ends ("not excluded") wins
            if self._reaches(before[pos:], blank[pos:start], affirmed):
                return kind
        return "present"

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
            blank = list(sentence)
            for s, e, _ in spans:
                blank[s:e] = " " * (e - s)
            blank_sentence = "".join(blank)
            for k, (s, e, f) in enumerate(spans):
                nxt = next((s2 for s2, _, _ in spans[k + 1:] if s2 >= e), len(sentence))
                v = self._mention_verdict(sentence, blank_sentence, s, e, nxt)
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
    """Parse one report with ``parser`` (default rules when omitted).

    Parameters
    ----------
    text : str
        The free-text report.
    parser : NarrativeParser, optional
        The rules to use; default :class:`ParserConfig` when omitted.

    Returns
    -------
    ParsedReport
        A verdict per finding, the phrases that decided it and the global-normal flag.

    Examples
    --------
    A negation reaches over a list of bare findings, and stops at one with its own assertion:

    >>> j = parse_report("No consolidation, effusion, or pneumothorax.").judgments
    >>> j["consolidation"], j["pleural effusion"], j["pneumothorax"]
    ('absent', 'absent', 'absent')
    >>> j = parse_report("No edema and large effusion.").judgments
    >>> j["edema"], j["pleural effusion"]
    ('absent', 'present')
    >>> parse_report("No pleural effusion is seen.").judgments["pleural effusion"]
    'absent'
    """
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

"""Reader's words for the internal ids of block tables (metrics, designs, estimators).

Block tables name what they hold with stable ids (``roc_auc``, ``ece[n_bins=10]``,
``within_label+paired``, ``hdcal[C=0.01]``): exact, greppable, and what ``results.json``
and the CSV files keep.  A figure or a tooltip is read by a person, who knows "AUROC",
"ECE (10 bins)" and "bootstrap within each class, paired across models".  This module is
the one mapping from ids to words; every figure title, axis and legend goes through it,
and the page's table headers use it for their tooltips.

An id outside the tables below still gets words: options in brackets become
"name (option value, ...)", underscores become spaces, so a new metric never shows raw.

Examples
--------
>>> criterion_label("roc_auc"), criterion_label("ece[n_bins=10]")
('AUROC', 'ECE (10 bins)')
>>> criterion_label("soft_roc_auc[ties=grouped]")
'soft AUROC (ties grouped)'
>>> criterion_label("sensitivity_at_specificity[min_specificity=0.95]")
'sensitivity at specificity ≥ 0.95'
>>> criterion_label("roc_auc_difference"), criterion_label("brier_score[prevalence=0.1]")
('AUROC difference', 'Brier score at π = 0.1')
>>> design_label("ordinary+paired"), design_label("within_label")
('ordinary bootstrap, paired across models', 'bootstrap within each class')
>>> estimator_label("hdcal[C=0.01]"), estimator_label("beta_binomial")
('HD-Cal (C = 0.01)', 'beta-binomial (empirical Bayes)')
"""

from __future__ import annotations

import re

__all__ = ["METRICS", "DESIGNS", "ESTIMATORS", "RULES", "COLUMNS", "criterion_label", "design_label",
           "estimator_label", "rule_label", "column_help"]

#: metric id (without options) -> name a reader knows
METRICS: dict[str, str] = {
    "roc_auc": "AUROC", "average_precision": "average precision (AUPRC)",
    "partial_roc_auc": "partial AUROC", "brier_score": "Brier score", "ece": "ECE",
    "aurc": "AURC", "log_loss": "log loss", "soft_roc_auc": "soft AUROC",
    "soft_average_precision": "soft average precision", "sensitivity": "sensitivity",
    "specificity": "specificity", "ppv": "PPV", "npv": "NPV", "fpr": "false-positive rate",
    "fnr": "false-negative rate", "f1": "F1", "accuracy": "accuracy",
    "lr_positive": "positive likelihood ratio", "lr_negative": "negative likelihood ratio",
    "reliability": "reliability", "selective_risk": "selective risk",
    "calibration_curve": "reliability curve", "calibration_slope": "calibration slope",
    "calibration_intercept": "calibration intercept", "threshold": "threshold",
    "cohen_kappa": "Cohen's κ", "raw_agreement": "raw agreement", "present_rate": "rate of 'present'",
    "reader_flagged_error_rate": "reader-flagged error rate", "roc_curve": "ROC curve",
    "pr_curve": "precision-recall curve",
}

#: metrics of the form "<rate>_at_<rate>[min_<rate>=x]": the option is the constraint
_AT = re.compile(r"^(\w+?)_at_(\w+)$")

#: resampling design id (before any "+paired") -> words
DESIGNS: dict[str, str] = {
    "ordinary": "ordinary bootstrap", "within_label": "bootstrap within each class",
    "cluster": "cluster bootstrap", "shared_positive": "shared-positive bootstrap",
    "delong": "DeLong", "delong_paired": "paired DeLong", "point_estimate": "point estimate",
    "threshold_fixed": "τ held fixed", "threshold_reestimate": "τ re-derived in each replicate",
    "annotation_bootstrap": "annotation bootstrap", "loio": "leave one institution out",
    "strict_selection": "strict selection", "reader_audit": "reader audit",
    "permutation": "permutation test",
}

#: reliability estimator key (paper 002) -> words
ESTIMATORS: dict[str, str] = {
    "naive": "pooled rate (naive)", "additive": "additive logistic", "hdcal": "HD-Cal",
    "hdcal_weighted": "HD-Cal, target-weighted", "target_only": "target institution only",
    "has": "HAS (hierarchical shrinkage)", "has_fixed_tau": "HAS, fixed τ",
    "has_no_offset": "HAS, no source offset", "beta_binomial": "beta-binomial (empirical Bayes)",
    "glmm": "GLMM",
}

#: threshold rule (``rule``, ``threshold_rule`` columns) -> words
RULES: dict[str, str] = {"youden": "Youden", "closest_topleft": "closest-to-top-left",
                         "declared": "declared"}

#: option name -> how "name=value" reads ("{v}" is the value)
_OPTIONS: dict[str, str] = {
    "n_bins": "{v} bins", "bins": "{v} bins", "ties": "ties {v}",
    "prevalence": "at π = {v}", "coverage": "at coverage {v}", "rule": "{v} rule",
    "target": "target {v}", "budget": "budget {v}", "cost": "cost {v}", "repeat": "repeat {v}",
    "max_fpr": "FPR ≤ {v}", "min_tpr": "TPR ≥ {v}",
}
#: options that read better after the name than in brackets
_TRAILING = ("prevalence", "coverage")

#: table column -> tooltip (what a column of the page's tables holds)
COLUMNS: dict[str, str] = {
    "model": "the model (or 'A - B' for a difference)", "prompt": "the prompt family",
    "cohort": "the cohort or institution", "negatives": "which negatives (control class)",
    "prevalence": "prevalence π: 'observed' or the reweighting target",
    "threshold": "decision threshold τ", "criterion": "what is measured (metric id)",
    "design": "how the interval was resampled (design id)", "n_resamples": "bootstrap replicates B",
    "seed": "run seed", "family": "multiplicity family the p-value is adjusted within",
    "estimate": "point estimate", "ci_low": "lower end of the interval",
    "ci_high": "upper end of the interval", "qualification": "caveats attached to this row",
}


def _words(s: str) -> str:
    return s.replace("_", " ").replace("+", ", ")


def _split(text: str) -> tuple[str, list[tuple[str, str]]]:
    """``"name[a=1,b=x]"`` -> ``("name", [("a", "1"), ("b", "x")])``."""
    m = re.fullmatch(r"([^\[]*)\[(.*)\]", text)
    if not m:
        return text, []
    opts = []
    for part in m.group(2).split(","):
        k, eq, v = part.partition("=")
        opts.append((k.strip(), v.strip()) if eq else ("", k.strip()))
    return m.group(1), opts


def _option(k: str, v: str) -> str:
    if not k:
        return _words(v)
    if k in _OPTIONS:
        return _OPTIONS[k].format(v=_words(v) if k in ("bins", "ties", "rule") else v)
    return f"{_words(k)} {_words(v)}"


def criterion_label(criterion: object) -> str:
    """A reader's name for a metric id (``criterion`` column), options in words."""
    text = str(criterion)
    if "," in text and "[" not in text:  # a list of metrics ("sensitivity,specificity")
        return ", ".join(criterion_label(t.strip()) for t in text.split(","))
    base, opts = _split(text)
    suffix = ""
    for end, words in (("_difference", " difference"), ("_cmh", " (CMH)")):
        if base.endswith(end):
            base, suffix = base.removesuffix(end), words
    m = _AT.match(base)
    constraint = dict(opts)
    if m and f"min_{m.group(2)}" in constraint:  # sensitivity_at_specificity[min_specificity=x]
        name = (f"{METRICS.get(m.group(1), _words(m.group(1)))} at "
                f"{METRICS.get(m.group(2), _words(m.group(2)))} ≥ {constraint.pop(f'min_{m.group(2)}')}")
        opts = [(k, v) for k, v in opts if k in constraint]
    else:
        name = METRICS.get(base, _words(base))
    kinds = dict(opts)
    if "n_bins" in kinds and "bins" in kinds:  # "10 equal-width bins", not "equal width bins, 10 bins"
        opts = [(("n_bins", f"{kinds['n_bins']} {kinds['bins'].replace('_', '-')}") if k == "n_bins"
                 else (k, v)) for k, v in opts if k != "bins"]
    trailing = [_option(k, v) for k, v in opts if k in _TRAILING]
    inner = [_option(k, v) for k, v in opts if k not in _TRAILING]
    out = name + suffix
    if inner:
        out += f" ({', '.join(inner)})"
    return " ".join([out, *trailing])


def design_label(design: object) -> str:
    """Words for a resampling design id (``design`` column): ``ordinary+paired`` ->
    ``ordinary bootstrap, paired across models``; ``cluster(institution)`` -> ``cluster
    bootstrap by institution``; ``loio[budget=25]`` -> ``leave one institution out (budget 25)``."""
    text = str(design)
    paired = text.endswith("+paired")
    text = text.removesuffix("+paired")
    m = re.fullmatch(r"(\w+)\((\w+)\)", text)
    by = ""
    if m:
        text, by = m.group(1), f" by {_words(m.group(2))}"
    base, opts = _split(text)
    out = DESIGNS.get(base, _words(base)) + by
    if opts:
        out += f" ({', '.join(_option(k, v) for k, v in opts)})"
    return out + (", paired across models" if paired else "")


def estimator_label(estimator: object) -> str:
    """Words for a reliability-estimator label (paper 002): ``hdcal[C=0.01]`` -> ``HD-Cal (C = 0.01)``."""
    base, opts = _split(str(estimator))
    out = ESTIMATORS.get(base, _words(base))
    if opts:
        out += " (" + ", ".join(f"{k} = {v}" if k else v for k, v in opts) + ")"
    return out


def rule_label(rule: object) -> str:
    """Words for a threshold rule: ``youden[cost=2,prevalence=0.1]`` -> ``Youden (cost 2, at π = 0.1)``."""
    base, opts = _split(str(rule))
    out = RULES.get(base, _words(base))
    if opts:
        out += f" ({', '.join(_option(k, v) for k, v in opts)})"
    return out


def column_help(column: str) -> str:
    """Tooltip of a table column ('' when there is nothing to add to its name)."""
    if column in COLUMNS:
        return COLUMNS[column]
    if column.startswith("pvalue"):
        return "p-value" + (", adjusted within its family" if "adj" in column else "")
    return ""

"""medaudit's statistics core: numpy and scipy (statsmodels lazily for multiplicity/CMH).

Arrays in, floats and frozen result dataclasses out; no pandas, no files, no plots.
"""

from __future__ import annotations

from medaudit.stats._results import (
    AUCInterval,
    BootstrapResult,
    MultipleTestResult,
    OperatingPoint,
    PairedAUCTest,
    PermutationResult,
    ReliabilityBins,
    RiskCoverageCurve,
    TestResult,
)
from medaudit.stats.annotation_bootstrap import (
    AnnotationBootstrapResult,
    annotation_bootstrap,
    labels_from_sums,
    pearson_r2,
    rank_stability_test,
)
from medaudit.stats.association import cohen_kappa, jaccard, kendall, spearman
from medaudit.stats.bootstrap import (
    PairedBootstrapResult,
    bootstrap_ci,
    bootstrap_metrics,
    paired_bootstrap,
    shared_positive_bootstrap,
)
from medaudit.stats.calibration import brier_score, ece, log_loss, reliability_diagram
from medaudit.stats.contingency import binomial_test, cmh_test, fisher_exact
from medaudit.stats.decomposition import VarianceDecomposition, variance_decomposition
from medaudit.stats.delong import (
    delong_ci,
    delong_placements,
    delong_test,
    delong_test_unpaired,
    delong_variance,
)
from medaudit.stats.multiplicity import adjust_pvalues
from medaudit.stats.permutation import negative_group_permutation_test
from medaudit.stats.ranking import average_precision, roc_auc
from medaudit.stats.selective import aurc, risk_coverage_curve, selective_risk
from medaudit.stats.soft import soft_average_precision, soft_roc_auc
from medaudit.stats.thresholds import (
    operating_point,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from medaudit.stats.transport import TransportResult, threshold_transport, transport_to_targets

__all__ = [
    # metrics
    "roc_auc", "average_precision", "brier_score", "ece", "log_loss", "reliability_diagram",
    "sensitivity_at_specificity", "specificity_at_sensitivity", "threshold_for_sensitivity",
    "threshold_for_specificity", "operating_point", "selective_risk", "aurc",
    "risk_coverage_curve", "soft_roc_auc", "soft_average_precision",
    "annotation_bootstrap", "AnnotationBootstrapResult", "labels_from_sums", "pearson_r2",
    "rank_stability_test",
    # resampling
    "bootstrap_ci", "bootstrap_metrics", "paired_bootstrap", "shared_positive_bootstrap",
    "threshold_transport", "transport_to_targets", "negative_group_permutation_test",
    # tests
    "delong_placements", "delong_variance", "delong_ci", "delong_test", "delong_test_unpaired",
    "adjust_pvalues", "fisher_exact", "cmh_test", "binomial_test", "cohen_kappa", "jaccard",
    "spearman", "kendall",
    # results
    "BootstrapResult", "PairedBootstrapResult", "AUCInterval", "PairedAUCTest", "TestResult",
    "MultipleTestResult", "PermutationResult", "ReliabilityBins", "RiskCoverageCurve",
    "OperatingPoint", "TransportResult",
    # descriptive decompositions
    "variance_decomposition", "VarianceDecomposition",
]

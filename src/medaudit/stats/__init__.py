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
from medaudit.stats.subgroups import SubgroupBootstrapResult, bootstrap_pvalue, subgroup_bootstrap
from medaudit.stats.thresholds import (
    operating_point,
    sensitivity_at_specificity,
    specificity_at_sensitivity,
    threshold_for_sensitivity,
    threshold_for_specificity,
)
from medaudit.stats.transport import TransportResult, threshold_transport, transport_to_targets

# isort: split
# pROC / scikit-learn / statsmodels users' statistics (issue 17)
from medaudit.stats.calibration_error import (
    ReliabilityCurve,
    debiased_l2_calibration_error,
    ece_equal_mass,
    equal_mass_bins,
    reliability_curve,
)
from medaudit.stats.confusion import (
    ThresholdMetrics,
    ThresholdMetricsCI,
    predictive_values,
    threshold_metrics,
    threshold_metrics_ci,
)
from medaudit.stats.contingency import breslow_day_test
from medaudit.stats.curves import (
    PrecisionRecallBand,
    PrecisionRecallCurve,
    RocBand,
    RocCurve,
    precision_at_recalls,
    precision_recall_band,
    precision_recall_curve,
    roc_curve,
    roc_curve_band,
    sensitivity_at_specificities,
    specificity_at_sensitivities,
)
from medaudit.stats.cutpoints import Cutpoint, CutpointInterval, best_threshold, best_threshold_ci
from medaudit.stats.interrater import Agreement, fleiss_kappa, krippendorff_alpha
from medaudit.stats.partial_auc import partial_roc_auc, partial_roc_auc_ci, pauc_metric
from medaudit.stats.power import (
    Resolution,
    SampleSize,
    auc_power,
    auc_sample_size,
    auc_variance,
    cases_to_resolve,
    cases_to_resolve_proportion,
    paired_auc_power,
    paired_auc_sample_size,
    proportion_sample_size,
    se_sp_sample_size,
)
from medaudit.stats.proportions import ProportionInterval, proportion_ci
from medaudit.stats.recalibration import (
    CalibrationFit,
    CalibrationFitCI,
    calibration_slope_intercept,
    calibration_slope_intercept_ci,
)

# isort: split
# the receiving site (issue 19): repeated looks, score drift, monitoring
from medaudit.stats.drift import (
    DriftResult,
    PSIResult,
    ks_drift,
    population_stability_index,
    psi_edges,
    score_drift,
)
from medaudit.stats.monitor import MonitorClaim, MonitorResult, monitor_claims
from medaudit.stats.sequential import (
    ConfidenceSequence,
    SpendingBounds,
    auroc_cs,
    auroc_rci,
    proportion_cs,
    proportion_rci,
    spending_bounds,
    spending_function,
)

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
    "subgroup_bootstrap", "SubgroupBootstrapResult", "bootstrap_pvalue",
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
    # issue 17: curves, partial AUC, cut-points, rates at a threshold, calibration, agreement, power
    "roc_curve", "precision_recall_curve", "roc_curve_band", "sensitivity_at_specificities",
    "specificity_at_sensitivities",
    "RocCurve", "PrecisionRecallCurve", "RocBand",
    "precision_at_recalls", "precision_recall_band", "PrecisionRecallBand",
    "partial_roc_auc", "partial_roc_auc_ci", "pauc_metric",
    "best_threshold", "best_threshold_ci", "Cutpoint", "CutpointInterval",
    "threshold_metrics", "threshold_metrics_ci", "predictive_values", "ThresholdMetrics",
    "ThresholdMetricsCI", "proportion_ci", "ProportionInterval",
    "ece_equal_mass", "debiased_l2_calibration_error", "equal_mass_bins", "reliability_curve",
    "ReliabilityCurve", "calibration_slope_intercept", "calibration_slope_intercept_ci",
    "CalibrationFit", "CalibrationFitCI",
    "breslow_day_test", "fleiss_kappa", "krippendorff_alpha", "Agreement",
    "auc_sample_size", "auc_power", "auc_variance", "paired_auc_sample_size", "paired_auc_power",
    "proportion_sample_size", "se_sp_sample_size", "cases_to_resolve",
    "cases_to_resolve_proportion", "SampleSize", "Resolution",
    # issue 19: intervals valid under repeated looks
    "proportion_cs", "auroc_cs", "proportion_rci", "auroc_rci", "spending_bounds",
    "spending_function", "ConfidenceSequence", "SpendingBounds",
    "score_drift", "population_stability_index", "ks_drift", "psi_edges", "DriftResult",
    "PSIResult", "monitor_claims", "MonitorClaim", "MonitorResult",
]

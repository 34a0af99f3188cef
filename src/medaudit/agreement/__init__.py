"""Paper 002: reference agreement of categorical verdicts across institutions.

:mod:`~medaudit.agreement.judgments` holds the JudgmentTable contract, the evaluable-set
filters and the reliability cells; :mod:`medaudit.datasets.readers` builds real judgment
tables from public per-reader labels and :mod:`medaudit.simulate` the simulated study.  The
estimators (on the base of :mod:`~medaudit.agreement._base`) and designs live in their own
modules (imported where used, so that importing this package stays light).
"""

from medaudit.agreement.judgments import (
    CELL_KEYS,
    JUDGMENT_COLUMNS,
    UNCERTAIN_POLICIES,
    FilterStep,
    JudgmentReport,
    cells,
    load_judgments,
    validate_judgments,
)

__all__ = ["CELL_KEYS", "JUDGMENT_COLUMNS", "UNCERTAIN_POLICIES", "FilterStep", "JudgmentReport",
           "cells", "load_judgments", "validate_judgments"]

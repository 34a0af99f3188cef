"""Paper 002: reference agreement of categorical verdicts across institutions.

:mod:`~medaudit.agreement.judgments` holds the JudgmentTable contract, the evaluable-set
filters and the reliability cells; :mod:`~medaudit.agreement.readers` builds real judgment
tables from public per-reader labels.  The estimators, designs and the simulated study live
in their own modules (imported where used, so that importing this package stays light).
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

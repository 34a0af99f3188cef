"""Exception and warning classes shared by every medaudit subpackage."""

from __future__ import annotations

__all__ = [
    "MedauditError",
    "SchemaError",
    "UndefinedMetricWarning",
    "DegenerateDataWarning",
    "TiedScoresWarning",
]


class MedauditError(ValueError):
    """Invalid input or option; the message names the parameter and the offending value."""


class SchemaError(MedauditError):
    """A table does not follow its declared schema (missing column, bad values, duplicates)."""


class UndefinedMetricWarning(UserWarning):
    """A metric is undefined for the data given (e.g. AUROC with one class) and was returned as NaN."""


class DegenerateDataWarning(UserWarning):
    """Resampling produced replicates on which a statistic is undefined; they are counted, not hidden."""


class TiedScoresWarning(UserWarning):
    """Tied scores change a metric that depends on their order (e.g. average precision with
    individual ranks); ``individual`` and ``pooled`` carry both values."""

    def __init__(self, message: str, *, individual: float = float("nan"),
                 pooled: float = float("nan")):
        super().__init__(message)
        self.individual, self.pooled = individual, pooled

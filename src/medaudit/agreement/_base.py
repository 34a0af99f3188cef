"""What every reliability estimator of paper 002 shares: the estimator table, cell pools, codes.

Kept apart from :mod:`medaudit.agreement.estimators` and :mod:`medaudit.agreement.glmm`
so that both build on it without importing each other.

Codes: institutions and findings are integer codes of their *sorted* names, direction
is ``1`` = present, ``0`` = absent.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit.exceptions import MedauditError

__all__ = ["ESTIMATOR_TABLE", "ESTIMATORS", "FAMILIES", "SET_B", "LOGISTIC", "Pool", "Estimator",
           "codes", "expit", "parse_estimator", "estimator_label", "family_of"]

#: the ten estimators of M2.4 in its order: key -> (family, candidate of the selector's Set B).
#: Families: "i" no cell structure, "ii" cross-institution, "iii" target counts.  Set B is the
#: selector's candidates in the fixed tie-break order of M2.7 (this table's order); the HAS
#: estimators need two sources, which a development fold does not have.
ESTIMATOR_TABLE: dict[str, tuple[str, bool]] = {
    "naive": ("i", True), "additive": ("ii", True), "hdcal": ("ii", True),
    "hdcal_weighted": ("ii", True), "glmm": ("ii", True), "has": ("ii", False),
    "has_fixed_tau": ("ii", False), "has_no_offset": ("ii", False), "target_only": ("iii", True),
    "beta_binomial": ("iii", True)}
ESTIMATORS: tuple[str, ...] = tuple(ESTIMATOR_TABLE)
FAMILIES: dict[str, str] = {k: fam for k, (fam, _) in ESTIMATOR_TABLE.items()}
SET_B: tuple[str, ...] = tuple(k for k, (_, b) in ESTIMATOR_TABLE.items() if b)
#: the logistic-family estimators: the ones with an L2 penalty ``C`` (M2.4, default 1)
LOGISTIC: tuple[str, ...] = ("additive", "hdcal", "hdcal_weighted", "target_only")
#: options an estimator label may set, per estimator key
_OPTIONS: dict[str, tuple[str, ...]] = {k: ("C",) for k in LOGISTIC}


def parse_estimator(label: str) -> tuple[str, dict[str, float]]:
    """The estimator key and options of a label: ``"hdcal[C=0.01]"`` -> ``("hdcal", {"C": 0.01})``.

    A label is an estimator key of :data:`ESTIMATORS`, optionally followed by
    ``[option=value,...]`` with the options that estimator accepts (the logistic family's
    inverse L2 strength ``C``), so one design can fit the same estimator at several
    settings (the HD-Cal penalty oracle of M2.12) and every output row names the setting.

    Examples
    --------
    >>> parse_estimator("hdcal[C=0.01]")
    ('hdcal', {'C': 0.01})
    >>> parse_estimator("beta_binomial")
    ('beta_binomial', {})
    """
    from medaudit._validation import check_option

    if not isinstance(label, str):
        raise MedauditError(f"an estimator label must be text; got {label!r}.")
    key, sep, rest = label.partition("[")
    check_option(key, ESTIMATORS, name="estimator")
    if not sep:
        return key, {}
    if not rest.endswith("]") or not rest[:-1]:
        raise MedauditError(f"estimator label {label!r} must read key[option=value,...], e.g. "
                            "'hdcal[C=0.1]'.")
    opts: dict[str, float] = {}
    for part in rest[:-1].split(","):
        name, eq, value = part.partition("=")
        name = name.strip()
        if not eq or name not in _OPTIONS.get(key, ()):
            allowed = _OPTIONS.get(key, ())
            raise MedauditError(f"estimator label {label!r}: {key} takes "
                                f"{'options ' + ', '.join(allowed) if allowed else 'no options'}; "
                                f"got {part!r}.")
        try:
            val = float(value)
        except ValueError:
            raise MedauditError(f"estimator label {label!r}: {name} must be a number; got "
                                f"{value!r}.") from None
        if not (np.isfinite(val) and val > 0):
            raise MedauditError(f"estimator label {label!r}: {name} must be a positive number.")
        opts[name] = val
    return key, opts


def estimator_label(key: str, **options: float) -> str:
    """The label of ``key`` at ``options`` (inverse of :func:`parse_estimator`).

    >>> estimator_label("hdcal", C=0.01)
    'hdcal[C=0.01]'
    """
    if not options:
        return key
    return f"{key}[{','.join(f'{k}={v:g}' for k, v in sorted(options.items()))}]"


def family_of(label: str) -> str:
    """The family (M2.4) of an estimator label: that of its key."""
    return FAMILIES[parse_estimator(label)[0]]


def codes(x: ArrayLike, name: str) -> NDArray[np.int64]:
    arr = np.asarray(x)
    if arr.ndim != 1:
        raise MedauditError(f"{name} must be 1-dimensional; got shape {arr.shape}.")
    if arr.size and not np.issubdtype(arr.dtype, np.integer):
        raise MedauditError(f"{name} must hold integer codes; got dtype {arr.dtype}.")
    if arr.size and arr.min() < 0:
        raise MedauditError(f"{name} codes must be non-negative; found {int(arr.min())}.")
    return arr.astype(np.int64, copy=False)


@dataclass(frozen=True, slots=True, kw_only=True)
class Pool:
    """A fitting pool aggregated to cells: source cells plus the target institution's shot.

    Parameters
    ----------
    institution, finding, direction : array of int, shape (n_cells,)
        Cell codes (direction 1 = present, 0 = absent).  A cell appears at most once.
    n_correct, n_total : array of int, shape (n_cells,)
        Correct judgments and judgments in the cell (``n_total >= 1``).
    target : int
        Code of the target institution; its cells are the label shot (possibly none).
    """

    institution: NDArray[np.int64]
    finding: NDArray[np.int64]
    direction: NDArray[np.int64]
    n_correct: NDArray[np.int64]
    n_total: NDArray[np.int64]
    target: int

    def __post_init__(self) -> None:
        arrs = {k: codes(getattr(self, k), k) for k in
                ("institution", "finding", "direction", "n_correct", "n_total")}
        sizes = {a.size for a in arrs.values()}
        if len(sizes) != 1:
            raise MedauditError(f"Pool arrays differ in length: { {k: a.size for k, a in arrs.items()} }.")
        if np.any(arrs["direction"] > 1):
            raise MedauditError("direction codes must be 0 (absent) or 1 (present).")
        if np.any(arrs["n_total"] < 1) or np.any(arrs["n_correct"] > arrs["n_total"]):
            raise MedauditError("each pool cell needs 0 <= n_correct <= n_total and n_total >= 1.")
        cells = np.stack([arrs["institution"], arrs["finding"], arrs["direction"]], axis=1)
        if np.unique(cells, axis=0).shape[0] != cells.shape[0]:
            raise MedauditError("a pool lists the same (institution, finding, direction) cell twice; "
                                "aggregate rows with Pool.from_rows.")
        for k, a in arrs.items():
            a = a.copy()
            a.flags.writeable = False
            object.__setattr__(self, k, a)
        object.__setattr__(self, "target", int(self.target))

    @classmethod
    def from_rows(cls, institution: ArrayLike, finding: ArrayLike, direction: ArrayLike,
                  correct: ArrayLike, *, target: int) -> Pool:
        """Aggregate row-level judgments (integer codes, ``correct`` 0/1) into cells."""
        d, k, r = (codes(institution, "institution"), codes(finding, "finding"),
                   codes(direction, "direction"))
        c = np.asarray(correct)
        if not (d.size == k.size == r.size == c.size):
            raise MedauditError("institution, finding, direction and correct differ in length.")
        if c.size and not np.isin(c, (0, 1)).all():
            raise MedauditError("correct must be 0/1.")
        key = np.stack([d, k, r], axis=1)
        uniq, inv = np.unique(key, axis=0, return_inverse=True)
        inv = inv.reshape(-1)
        n = np.bincount(inv, minlength=len(uniq))
        y = np.bincount(inv, weights=c.astype(np.float64), minlength=len(uniq)).astype(np.int64)
        return cls(institution=uniq[:, 0], finding=uniq[:, 1], direction=uniq[:, 2],
                   n_correct=y, n_total=n, target=target)

    @property
    def is_target(self) -> NDArray[np.bool_]:
        return self.institution == self.target

    @property
    def n_shot(self) -> int:
        return int(self.n_total[self.is_target].sum())

    @property
    def n_source(self) -> int:
        return int(self.n_total[~self.is_target].sum())

    def select(self, mask: NDArray[np.bool_]) -> Pool:
        """The sub-pool of the cells where ``mask`` holds (same target)."""
        return Pool(institution=self.institution[mask], finding=self.finding[mask],
                    direction=self.direction[mask], n_correct=self.n_correct[mask],
                    n_total=self.n_total[mask], target=self.target)


def expit(x: NDArray[np.float64]) -> NDArray[np.float64]:
    return 0.5 * (1.0 + np.tanh(0.5 * x))  # overflow-free logistic


class Estimator:
    """Base: ``fit(pool) -> self``, ``predict(institution, finding, direction) -> P``."""

    key: ClassVar[str] = ""

    def fit(self, pool: Pool) -> Estimator:  # pragma: no cover - interface
        raise NotImplementedError

    def predict(self, institution: ArrayLike, finding: ArrayLike,
                direction: ArrayLike) -> NDArray[np.float64]:  # pragma: no cover - interface
        raise NotImplementedError

    def _check_fitted(self) -> None:
        if not hasattr(self, "info_"):
            raise MedauditError(f"{type(self).__name__} is not fitted; call fit(pool) first.")

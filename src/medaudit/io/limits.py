"""Limits on seeds, bootstrap replicates and permutations, each refused with its reason.

One rule for every command and for the spec, so ``summarize --n-resamples 1`` and
``n_resamples: 1`` in a spec meet the same minimum, and ``n_resamples: 1000000000`` is refused
with an estimate of what it would cost instead of starting to fill the memory.

Rules
-----
* **seed**: a whole number from 0 to :data:`MAX_SEED` (2**32 - 1), the range every NumPy
  seeding path accepts; ``True``, ``-3`` or ``2.5`` are refused.
* **n_resamples** (bootstrap B): at least :data:`MIN_N_RESAMPLES` (10, a floor for smoke runs;
  2000 or more is what an interval needs) and at most :data:`MAX_N_RESAMPLES` (100,000: ten
  times the largest B of the papers medaudit reproduces; the Monte Carlo error of a 95 %
  percentile endpoint at that B is far below any reported digit).
* **n_permutations**: at least :data:`MIN_N_PERMUTATIONS` (9, so that ``(1 + b) / (1 + B)``
  can reach 0.1) and at most :data:`MAX_N_PERMUTATIONS` (1,000,000: p-values near 1e-6).
* **cost**: given the number of cases ``n``, :func:`estimate_resampling_cost` estimates memory
  and time; above :data:`MAX_BYTES` or :data:`MAX_SECONDS` the count is refused with the
  estimate in the message.

``allow_large=True`` (``--allow-large`` on the command line, ``allow_large: true`` in a spec)
lifts the maximum and the cost limit, never the minimum or the type rules.

The cost model
--------------
Replicates are kept (8 bytes per replicate and statistic: the bootstrap distribution is part
of the result), the work arrays are bounded by the engine's batching (``designs._BATCH_ELEMENTS``
elements, a few arrays of 8 bytes), and the time is ``n * B * k * NS_PER_ELEMENT``.
:data:`NS_PER_ELEMENT` (50 ns) is the slow end of what the engine measured on one core for a
percentile AUROC bootstrap (7-46 ns per case and replicate for n = 300-3000, B = 2000-10,000)
and of the negative-group permutation test (13-17 ns); it is an order of magnitude, not a
promise, which is all a refusal needs.
"""

from __future__ import annotations

import math
import numbers
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator

from medaudit.exceptions import MedauditError
from medaudit.io.messages import quote

__all__ = [
    "MAX_SEED", "MIN_N_RESAMPLES", "MAX_N_RESAMPLES", "MIN_N_PERMUTATIONS", "MAX_N_PERMUTATIONS",
    "MAX_BYTES", "MAX_SECONDS", "NS_PER_ELEMENT",
    "validate_seed", "validate_n_resamples", "validate_n_permutations",
    "ResamplingCost", "estimate_resampling_cost", "check_resampling_budget", "check_spec_limits",
    "Seed", "NResamples", "NPermutations",
]

MAX_SEED = 2**32 - 1
MIN_N_RESAMPLES = 10
MAX_N_RESAMPLES = 100_000
MIN_N_PERMUTATIONS = 9
MAX_N_PERMUTATIONS = 1_000_000
#: estimated memory above which a resampling count is refused without allow_large (4 GiB)
MAX_BYTES = 4 * 2**30
#: estimated time above which a resampling count is refused without allow_large (1 hour)
MAX_SECONDS = 3600.0
#: seconds per case, replicate and statistic of the cost model (see the module notes)
NS_PER_ELEMENT = 50.0
_WORK_ELEMENTS = 1 << 18  # = stats.designs._BATCH_ELEMENTS (kept equal by a test)
_WORK_ARRAYS = 4

_ALLOW = "pass --allow-large (allow_large: true in a spec) to run it anyway"


def _whole(value: Any, name: str, rule: str) -> int:
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        if isinstance(value, numbers.Real) and not isinstance(value, bool) and \
                math.isfinite(float(value)) and float(value).is_integer():
            return int(value)  # 2000.0 from a YAML/JSON number is the integer it writes
        raise MedauditError(f"{name} must be {rule}; got {quote(value)}.")
    return int(value)


def validate_seed(seed: Any, *, name: str = "seed") -> int:
    """Return ``seed`` as an int, or refuse it with the rule.

    Examples
    --------
    >>> validate_seed(2026)
    2026
    >>> validate_seed(-3)
    Traceback (most recent call last):
    ...
    medaudit.exceptions.MedauditError: seed must be a whole number from 0 to 4294967295 (2**32 - 1); got -3.
    """  # noqa: E501
    rule = f"a whole number from 0 to {MAX_SEED} (2**32 - 1)"
    s = _whole(seed, name, rule)
    if not 0 <= s <= MAX_SEED:
        raise MedauditError(f"{name} must be {rule}; got {quote(seed)}.")
    return s


def _count(value: Any, name: str, low: int, high: int, allow_large: bool) -> int:
    rule = f"a whole number of at least {low:,}"
    b = _whole(value, name, rule)
    if b < low:
        raise MedauditError(f"{name} must be {rule}; got {quote(value)}.")
    if b > high and not allow_large:
        raise MedauditError(f"{name}={b:,} is above the maximum of {high:,}; use at most "
                            f"{high:,}, or {_ALLOW}.")
    return b


def validate_n_resamples(n_resamples: Any, *, name: str = "n_resamples",
                         allow_large: bool = False) -> int:
    """Return the bootstrap replicate count B, or refuse it (minimum, maximum, type).

    Examples
    --------
    >>> validate_n_resamples(2000)
    2000
    >>> validate_n_resamples(1)
    Traceback (most recent call last):
    ...
    medaudit.exceptions.MedauditError: n_resamples must be a whole number of at least 10; got 1.
    """
    return _count(n_resamples, name, MIN_N_RESAMPLES, MAX_N_RESAMPLES, allow_large)


def validate_n_permutations(n_permutations: Any, *, name: str = "n_permutations",
                            allow_large: bool = False) -> int:
    """Return the permutation count, or refuse it (minimum, maximum, type).

    Examples
    --------
    >>> validate_n_permutations(0)
    Traceback (most recent call last):
    ...
    medaudit.exceptions.MedauditError: n_permutations must be a whole number of at least 9; got 0.
    """
    return _count(n_permutations, name, MIN_N_PERMUTATIONS, MAX_N_PERMUTATIONS, allow_large)


def _size(n_bytes: float) -> str:
    for unit, scale in (("TB", 1e12), ("GB", 1e9), ("MB", 1e6)):
        if n_bytes >= scale:
            return f"{n_bytes / scale:.1f} {unit}"
    return f"{n_bytes / 1e3:.1f} kB"


def _duration(seconds: float) -> str:
    if seconds >= 86_400:
        return f"{seconds / 86_400:.1f} days"
    if seconds >= 3600:
        return f"{seconds / 3600:.1f} h"
    if seconds >= 60:
        return f"{seconds / 60:.1f} min"
    return f"{seconds:.1f} s"


@dataclass(frozen=True, slots=True, kw_only=True)
class ResamplingCost:
    """Estimated memory and time of one resampling run (an order of magnitude)."""

    n: int
    n_resamples: int
    n_statistics: int
    bytes: float
    seconds: float

    def __str__(self) -> str:
        return (f"about {_size(self.bytes)} of memory and {_duration(self.seconds)} for "
                f"{self.n:,} cases x {self.n_resamples:,} replicates x {self.n_statistics:,} "
                "statistic(s)")


def estimate_resampling_cost(n: int, n_resamples: int, *, n_statistics: int = 1) -> ResamplingCost:
    """Estimate the memory and time of resampling ``n`` cases ``n_resamples`` times.

    Parameters
    ----------
    n : int
        Cases resampled (images, or patients under a cluster design).
    n_resamples : int
        Replicates B (or permutations).
    n_statistics : int, default=1
        Statistics computed on every replicate (metrics x strata); 1 gives a lower bound.

    Returns
    -------
    ResamplingCost
        ``bytes`` (replicates kept plus bounded work arrays) and ``seconds``
        (``n * B * k * NS_PER_ELEMENT``).

    Examples
    --------
    >>> print(estimate_resampling_cost(300, 1_000_000_000))
    about 8.0 GB of memory and 4.2 h for 300 cases x 1,000,000,000 replicates x 1 statistic(s)
    """
    n, b, k = int(n), int(n_resamples), int(n_statistics)
    work = min(n * b, _WORK_ELEMENTS) * 8 * _WORK_ARRAYS
    return ResamplingCost(n=n, n_resamples=b, n_statistics=k, bytes=float(8 * b * k + work),
                          seconds=n * b * k * NS_PER_ELEMENT / 1e9)


def check_resampling_budget(n: int, n_resamples: int, *, n_statistics: int = 1,
                            name: str = "n_resamples", allow_large: bool = False,
                            max_bytes: float = MAX_BYTES, max_seconds: float = MAX_SECONDS
                            ) -> ResamplingCost:
    """Refuse ``n_resamples`` when its estimated cost for ``n`` cases is too large.

    Call it once the table is read (``n`` known) and before any computation.

    Raises
    ------
    MedauditError
        The estimate exceeds ``max_bytes`` or ``max_seconds`` and ``allow_large`` is false;
        the message gives the estimate and how to proceed.

    Examples
    --------
    >>> check_resampling_budget(300, 2000).seconds < 1
    True
    >>> check_resampling_budget(300, 1_000_000_000, allow_large=True).n_resamples
    1000000000
    """
    cost = estimate_resampling_cost(n, n_resamples, n_statistics=n_statistics)
    if not allow_large and (cost.bytes > max_bytes or cost.seconds > max_seconds):
        raise MedauditError(f"{name}={int(n_resamples):,} would need {cost} (limits: "
                            f"{_size(max_bytes)}, {_duration(max_seconds)}); lower {name}, or "
                            f"{_ALLOW}.")
    return cost


def check_spec_limits(model: Any) -> Any:
    """Pydantic ``model_validator(mode="after")`` body: the maxima of a spec's counts.

    Reads ``n_resamples`` and ``n_permutations`` (those present) and ``allow_large``
    (default false) from ``model`` and returns it unchanged, or raises
    :class:`~medaudit.exceptions.MedauditError` (pydantic reports it under the model).
    Attach it with ``_limits = model_validator(mode="after")(check_spec_limits)``.
    """
    allow = bool(getattr(model, "allow_large", False))
    if getattr(model, "n_resamples", None) is not None:
        validate_n_resamples(model.n_resamples, allow_large=allow)
    if getattr(model, "n_permutations", None) is not None:
        validate_n_permutations(model.n_permutations, allow_large=allow)
    return model


def _before(check):
    def run(value: Any) -> Any:
        return check(value)
    return BeforeValidator(run)


#: a spec field holding a run seed (``seed: Seed = 2026``)
Seed = Annotated[int, _before(validate_seed)]
#: a spec field holding B; the maximum is checked with allow_large by check_spec_limits
NResamples = Annotated[int, _before(lambda v: validate_n_resamples(v, allow_large=True))]
#: a spec field holding a permutation count (maximum as for NResamples)
NPermutations = Annotated[int, _before(lambda v: validate_n_permutations(v, allow_large=True))]

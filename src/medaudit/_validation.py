"""Door checks shared by every public function.

Each check either returns a standardised float64/int array or raises
:class:`~medaudit.exceptions.MedauditError` naming the parameter, the offending
value and what to do.  Nothing is coerced silently: labels are never flipped,
scores are never clipped, NaN is never dropped.
"""

from __future__ import annotations

import difflib
import functools
import math
import os
from collections.abc import Iterable
from typing import Any

import numpy as np
from numpy.typing import ArrayLike, NDArray

from medaudit.exceptions import MedauditError

__all__ = [
    "shown",
    "as_1d_float",
    "as_binary_labels",
    "as_scores",
    "as_probabilities",
    "as_soft_labels",
    "check_same_length",
    "check_option",
    "value_kind",
    "check_fraction",
    "as_generator",
    "as_sample_weight",
    "check_n_resamples",
    "check_batch",
    "RNGLike",
]

#: what an ``rng`` argument accepts: None (fresh entropy), an int seed, a SeedSequence or a
#: Generator (SPEC 7)
RNGLike = np.random.Generator | np.random.SeedSequence | int | None



def shown(x: Any) -> str:
    """``repr(x)`` for a message, NumPy scalars as the Python value they hold.

    NumPy 2 prints ``np.float64(0.5)``; a message shows ``0.5`` (see also
    :func:`medaudit.io.messages.quote`, which also bounds the length).

    >>> shown(np.float64(0.5)), shown(np.int64(3)), shown("a"), shown([1, 2])
    ('0.5', '3', "'a'", '[1, 2]')
    """
    if isinstance(x, np.generic):
        x = x.item()
    return repr(x)

def _where(bad: NDArray[np.bool_], limit: int = 5) -> str:
    idx = np.flatnonzero(bad)
    shown = ", ".join(str(i) for i in idx[:limit])
    more = f" and {idx.size - limit} more" if idx.size > limit else ""
    return f"at index {shown}{more}"


def as_1d_float(x: ArrayLike, *, name: str, allow_empty: bool = False) -> NDArray[np.float64]:
    """Return ``x`` as a finite 1-D float64 array or raise naming ``name``.

    Complex values (whose imaginary part a cast would drop) and dates or durations (which
    would become nanosecond counts) are refused, not converted.
    """
    kind = getattr(getattr(x, "dtype", None), "kind", None)
    if kind is None and not isinstance(x, (str, bytes)):
        try:
            kind = np.asarray(x).dtype.kind
        except (TypeError, ValueError):  # ragged input: the cast below names it
            kind = None
    if kind == "c":
        raise MedauditError(f"{name} must be real numbers; got complex values. Pass the real "
                            "part (np.real) or the magnitude (np.abs) yourself.")
    if kind in ("M", "m"):
        raise MedauditError(f"{name} must be numbers; got dates or durations. Convert them to "
                            "numbers yourself if that is what you meant.")
    if isinstance(x, np.ma.MaskedArray):
        masked = np.ma.getmaskarray(x)
        if masked.ndim == 1 and masked.any():  # np.asarray would use the hidden values
            raise MedauditError(f"{name} has masked values {_where(masked)}; drop those rows "
                                "(x.compressed() with the same rows of the other inputs) or fill "
                                "them (x.filled(v)) yourself: a mask is not read.")
    try:
        arr = np.asarray(x, dtype=np.float64)
    except (TypeError, ValueError) as exc:
        _refuse_missing(x, name)  # pandas' NA (or NaT) among numbers: say it is missing
        raise MedauditError(f"{name} must be numeric; could not convert it ({exc}).") from None
    if arr.ndim != 1:
        raise MedauditError(f"{name} must be 1-dimensional; got shape {arr.shape}.")
    if arr.size == 0 and not allow_empty:
        raise MedauditError(f"{name} is empty; at least one value is needed.")
    # one reduction instead of an isfinite mask: the sum of finite values is finite
    # unless it overflows, and only then (or with a NaN/inf) is every value checked
    with np.errstate(over="ignore", invalid="ignore"):  # an overflow only sends us below
        total = np.add.reduce(arr)
    if np.isfinite(total):
        return arr
    finite = np.isfinite(arr)
    if not finite.all():
        raise _missing(name, "NaN" if np.isnan(arr[~finite]).any() else "inf", ~finite)
    return arr


def _refuse_missing(x: ArrayLike, name: str) -> None:
    """Raise the missing-value message where ``x`` (1-D) holds None, NA or NaT."""
    try:
        obj = np.asarray(x, dtype=object)
    except (TypeError, ValueError):
        return
    if obj.ndim != 1:
        return
    gone = missing_mask(obj)
    if gone.any():
        raise _missing(name, "missing values (None, NaN, NA or NaT)", gone)


def _missing(name: str, what: str, bad: NDArray[np.bool_]) -> MedauditError:
    """The one message for values that cannot be used where they stand (NaN, inf, NA)."""
    return MedauditError(f"{name} contains {what} {_where(bad)}; remove or impute these rows "
                         "explicitly before calling (medaudit never drops them silently).")


def as_binary_labels(y: ArrayLike, *, name: str = "y_true") -> NDArray[np.float64]:
    """Return labels as float64 0/1; anything else (2, -1, 0.5, 'yes') raises.

    Booleans and numeric strings convert as NumPy converts them (True -> 1, "0" -> 0);
    words ("yes", "TB") are refused with the advice to map them to 0/1.
    """
    try:
        arr = as_1d_float(y, name=name)
    except MedauditError as exc:
        if "could not convert" not in str(exc):
            raise
        raise MedauditError(f"{str(exc).removesuffix('.')}. Labels must be 0 and 1 (1 = positive): "
                            "map your labels to 0/1 yourself; medaudit does not guess the "
                            "positive class.") from None
    bad = (arr != 0.0) & (arr != 1.0)
    if bad.any():
        vals = ", ".join(repr(float(v)) for v in np.unique(arr[bad])[:5])
        raise MedauditError(
            f"{name} must contain only 0 and 1 (1 = positive); found {vals} {_where(bad)}. "
            "Map your labels to 0/1 yourself: medaudit does not guess the positive class."
        )
    return arr


def as_scores(s: ArrayLike, *, name: str = "y_score") -> NDArray[np.float64]:
    """Return finite scores (any real value; higher means more likely positive).

    Integer scores beyond 2^53 in magnitude are refused: as float64 (the type every metric
    computes in) neighbours among them round together, ties that are not in the data.
    """
    big = _largest_integer(s)
    if big > 2**53:
            raise MedauditError(
                f"{name} holds integers up to {big} in magnitude, beyond 2^53, where float64 (the "
                "type medaudit computes in) cannot tell neighbouring integers apart, so ranks "
                "would tie that do not; rescale the scores (e.g. to ranks or probabilities).")
    return as_1d_float(s, name=name)


def _largest_integer(s: Any) -> int:
    """The largest magnitude among integer scores (a list of Python ints, an integer or
    object array), 0 for float scores and anything unreadable (reported by the float check)."""
    if isinstance(s, np.ndarray) and s.dtype.kind == "f":
        return 0  # the usual case: nothing to convert
    try:
        raw = np.asarray(s)
        if raw.dtype.kind in "iu" and raw.size:
            return max(abs(int(raw.max())), abs(int(raw.min())))
        if raw.dtype.kind == "O":  # Python ints beyond int64 stay objects
            return max((abs(v) for v in raw.reshape(-1).tolist()
                        if isinstance(v, int) and not isinstance(v, bool)), default=0)
    except (TypeError, ValueError):  # missing values (pandas Int64): reported below
        pass
    return 0


def as_probabilities(s: ArrayLike, *, name: str = "y_prob") -> NDArray[np.float64]:
    """Return probabilities, refusing values outside [0, 1] (no clipping)."""
    arr = as_1d_float(s, name=name)
    if arr.size and 0.0 <= arr.min() and arr.max() <= 1.0:  # two reductions, no mask
        return arr
    bad = (arr < 0.0) | (arr > 1.0)
    if bad.any():
        lo, hi = float(arr.min()), float(arr.max())
        raise MedauditError(
            f"{name} must be probabilities in [0, 1] for this metric; values range from {lo!r} "
            f"to {hi!r}, out of range {_where(bad)}. Calibrate or rescale the scores first; "
            "medaudit does not clip them."
        )
    return arr


def as_soft_labels(p: ArrayLike, *, name: str = "p_true") -> NDArray[np.float64]:
    """Return soft labels (probability the item is positive) in [0, 1]."""
    arr = as_1d_float(p, name=name)
    if arr.size and 0.0 <= arr.min() and arr.max() <= 1.0:
        return arr
    bad = (arr < 0.0) | (arr > 1.0)
    if bad.any():
        raise MedauditError(
            f"{name} must be soft labels in [0, 1]; found {float(arr[bad][0])!r} {_where(bad)}."
        )
    return arr


def check_same_length(**arrays: NDArray[Any]) -> int:
    """Raise unless all arrays have the same length; return that length."""
    lengths = {k: len(v) for k, v in arrays.items()}
    if len(set(lengths.values())) > 1:
        desc = ", ".join(f"{k} has {n}" for k, n in lengths.items())
        raise MedauditError(f"Inputs must have the same length: {desc}.")
    return next(iter(lengths.values()))


def check_option(value: Any, allowed: Iterable[str], *, name: str) -> str:
    """Return ``value`` if it is one of ``allowed``; otherwise raise suggesting the closest."""
    allowed = tuple(allowed)
    if isinstance(value, str) and value in allowed:
        return value
    hint = ""
    if isinstance(value, str):
        close = difflib.get_close_matches(value, allowed, n=1, cutoff=0.5)
        if close:
            hint = f" Did you mean {close[0]!r}?"
    raise MedauditError(
        f"{name}={value!r} is not a valid option; choose one of {', '.join(map(repr, allowed))}."
        + hint
    )


def check_fraction(
    x: Any, *, name: str, low: float = 0.0, high: float = 1.0, closed: str = "neither"
) -> float:
    """Return ``x`` as a float inside (low, high) (``closed`` says which ends are allowed).

    Booleans and text are refused, as :func:`check_n_resamples` refuses them: ``True`` is
    not a confidence level, and ``"0.95"`` is a value read as text somewhere upstream.
    """
    if isinstance(x, (bool, np.bool_, str, bytes)):
        raise MedauditError(f"{name} must be a number; got {shown(x)}.")
    try:
        val = float(x)
    except (TypeError, ValueError):
        raise MedauditError(f"{name} must be a number; got {shown(x)}.") from None
    lo_ok = val >= low if closed in ("both", "left") else val > low
    hi_ok = val <= high if closed in ("both", "right") else val < high
    if not (np.isfinite(val) and lo_ok and hi_ok):
        lb = "[" if closed in ("both", "left") else "("
        rb = "]" if closed in ("both", "right") else ")"
        raise MedauditError(f"{name} must lie in {lb}{low}, {high}{rb}; got {shown(x)}.")
    return val


def check_number(x: Any, *, name: str, positive: bool = False) -> float:
    """Return ``x`` as a finite float (``> 0`` with ``positive``), or raise naming ``name``;
    booleans and text are refused, as in :func:`check_fraction`."""
    what = "a positive" if positive else "a finite"
    try:
        val = math.nan if isinstance(x, (bool, np.bool_, str, bytes)) else float(x)
    except (TypeError, ValueError):
        val = math.nan
    if not np.isfinite(val) or (positive and val <= 0):
        raise MedauditError(f"{name} must be {what} number; got {shown(x)}.")
    return val


def missing_mask(values: NDArray[Any]) -> NDArray[np.bool_]:
    """Where ``values`` (a numpy array of any dtype) holds a missing value: None, NaN,
    pandas' ``NA`` or ``NaT``, as :func:`pandas.isna` reads them."""
    kind = values.dtype.kind
    if kind in "biuUSV":  # no missing value is representable in these dtypes
        return np.zeros(values.shape, dtype=bool)
    if kind in "fc":
        return np.isnan(values)
    if kind in "mM":
        return np.isnat(values)
    import pandas as pd  # object arrays: None, float('nan'), pd.NA, pd.NaT, Decimal('NaN')

    return np.asarray(pd.isna(values), dtype=bool)


def check_n_resamples(n_resamples: int, *, name: str = "n_resamples") -> int:
    """Return ``n_resamples`` as an int >= 1 or raise naming it (booleans refused).

    A count whose replicates of one statistic alone (8 bytes each) would not fit in this
    machine's memory is refused at once, instead of running for hours towards a MemoryError.
    """
    if isinstance(n_resamples, bool) or not isinstance(n_resamples, (int, np.integer)) or (
            n_resamples < 1):
        raise MedauditError(f"{name} must be a positive integer; got {shown(n_resamples)}.")
    need, have = 8 * int(n_resamples), _physical_memory()
    if have and need > have:
        raise MedauditError(f"{name}={int(n_resamples):,} would need {need / 2**30:,.0f} GiB for the "
                            f"replicates of one statistic alone, more than this machine's "
                            f"{have / 2**30:,.0f} GiB of memory; use fewer (2,000 to 10,000 are usual).")
    return int(n_resamples)


@functools.lru_cache(maxsize=1)
def _physical_memory() -> int:
    """Bytes of physical memory (0 where the system does not say)."""
    try:
        return int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))
    except (AttributeError, ValueError, OSError):
        return 0


def check_batch(batch: int | None, *, name: str = "batch") -> int | None:
    """Return ``batch`` (replicates per memory batch) as an int >= 1, or None (automatic)."""
    if batch is None:
        return None
    if isinstance(batch, bool) or not isinstance(batch, (int, np.integer)) or batch < 1:
        raise MedauditError(f"{name} must be a positive integer or None; got {shown(batch)}.")
    return int(batch)


def _same_state(a: Any, b: Any) -> bool:
    """Two bit-generator states (dicts of ints, text and arrays) equal, arrays by value."""
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_state(a[k], b[k]) for k in a)
    if isinstance(a, np.ndarray) or isinstance(b, np.ndarray):
        return np.array_equal(a, b)
    return bool(a == b)


def as_generator(rng: RNGLike) -> tuple[np.random.Generator, dict[str, Any]]:
    """Normalise ``rng`` (SPEC 7) and describe how to reproduce it.

    Returns the generator and a provenance record: the integer seed when one was
    given, otherwise the entropy (and spawn key) of the generator's seed sequence.
    A generator passed in that has already drawn records no seed (its draws no longer
    follow from it), and its ``seed_source`` says so.
    """
    if isinstance(rng, bool):
        raise MedauditError(f"rng must be an int seed, a SeedSequence or a Generator; got {rng!r}.")
    if rng is None or isinstance(rng, (int, np.integer, np.random.SeedSequence)):
        if isinstance(rng, (int, np.integer)) and rng < 0:
            raise MedauditError(f"rng seed must be a non-negative integer; got {rng!r}.")
        gen = np.random.default_rng(rng)
        ss = gen.bit_generator.seed_seq
        ent = ss.entropy
        record: dict[str, Any] = {
            "seed": int(rng) if isinstance(rng, (int, np.integer)) else (
                int(ent) if isinstance(ent, (int, np.integer)) else None),
            "entropy": None if isinstance(ent, (int, np.integer)) else [int(e) for e in ent],
            "seed_source": "int" if isinstance(rng, (int, np.integer)) else "entropy",
            "spawn_key": list(getattr(ss, "spawn_key", ())),
            "bit_generator": type(gen.bit_generator).__name__,
        }
        return gen, record
    if isinstance(rng, np.random.Generator):
        ss = getattr(rng.bit_generator, "seed_seq", None)
        entropy = getattr(ss, "entropy", None)
        # a generator that has drawn before this call no longer follows from its seed: a
        # seed recorded then would reproduce other draws (a fresh one's state is the state
        # its seed sequence gives, which one new bit generator of the same kind shows)
        try:
            fresh = ss is not None and _same_state(type(rng.bit_generator)(ss).state,
                                                   rng.bit_generator.state)
        except Exception:  # a bit generator that cannot be rebuilt so: say it may have drawn
            fresh = False
        origin = (str(int(entropy)) if isinstance(entropy, (int, np.integer)) else
                  str([int(e) for e in entropy]) if isinstance(entropy, (list, tuple, np.ndarray))
                  else "")
        record = {
            # an int seed when the generator came from one; a word list (e.g. a run seed
            # plus hashed cell keys) is recorded under "entropy" instead; neither for a
            # generator that may have drawn (they would reproduce other draws)
            "seed": int(entropy) if isinstance(entropy, (int, np.integer)) and fresh else None,
            "entropy": [int(e) for e in entropy] if fresh and isinstance(
                entropy, (list, tuple, np.ndarray)) else None,
            "seed_source": "generator (fresh: it had not drawn before this call)" if fresh else (
                "generator that may have drawn before this call: its draws do not follow from "
                f"its seed {origin}".rstrip() + " (pass an int seed to reproduce a result)"),
            "spawn_key": list(getattr(ss, "spawn_key", ())) if ss is not None and fresh else [],
            "bit_generator": type(rng.bit_generator).__name__,
        }
        return rng, record
    raise MedauditError(
        f"rng must be None, an int seed, a numpy SeedSequence or a numpy Generator; "
        f"got {type(rng).__name__}. (np.random.RandomState is not supported.)"
    )


def as_sample_weight(w: ArrayLike | None, n: int, *, name: str = "sample_weight"
                     ) -> NDArray[np.float64] | None:
    """Return finite non-negative weights of length ``n`` (scikit-learn's semantics), or
    None when no weights are given."""
    if w is None:
        return None
    arr = as_1d_float(w, name=name)
    if arr.size != n:
        raise MedauditError(f"{name} must have one weight per sample ({n}); got {arr.size}.")
    if arr.min() < 0.0:
        raise MedauditError(f"{name} must be non-negative; found {float(arr.min())!r} "
                            f"{_where(arr < 0.0)}. Give weight 0 to leave a sample out.")
    return arr


def value_kind(v: Any) -> str:
    """The kind of one cell value as messages name it: ``boolean``, ``integer``, ``float``,
    ``text`` or its type's name.  Levels are named by their text, so a column or list that
    mixes kinds (1, "1", 1.0) is refused by its callers rather than merged or split."""
    if isinstance(v, (bool, np.bool_)):
        return "boolean"
    if isinstance(v, (int, np.integer)):
        return "integer"
    if isinstance(v, (float, np.floating)):
        return "float"
    if isinstance(v, str):
        return "text"
    return type(v).__name__

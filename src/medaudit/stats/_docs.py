"""One wording for the parameters that many public functions of the statistics core share.

A docstring names a shared parameter by a line that holds only ``{name}`` at the
indentation of its parameter list; :func:`fill_doc` replaces it with the entry below,
re-indented, when the module is imported.  The text a user reads with ``help()`` is the
full numpydoc section (scipy's ``doccer`` does the same); what changes is that a wording
is written, and corrected, in one place.  Only whole lines of one identifier in braces
are markers, so the braces of LaTeX or of a ``{"a", "b"}`` option set are never touched,
and a marker without an entry fails at import rather than reaching a user.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TypeVar

__all__ = ["PARAMS", "fill_doc", "fill"]

F = TypeVar("F", bound=Callable)

#: parameter name -> its numpydoc entry (first line unindented, description indented 4)
PARAMS: dict[str, str] = {
    "y_true": "y_true : array-like of shape (n_samples,)\n"
              "    Binary labels, 1 = positive.",
    "y_score": "y_score : array-like of shape (n_samples,)\n"
               "    Scores, higher meaning more likely positive.",
    "y_prob": "y_prob : array-like of shape (n_samples,)\n"
              "    Probabilities in [0, 1].",
    "sample_weight": (
        "sample_weight : array-like of shape (n_samples,), optional\n"
        "    Non-negative weights with scikit-learn's semantics: an integer weight is that many\n"
        "    copies of the row, weight 0 removes it, and scaling every weight changes nothing."
    ),
    "rng": "rng : int, SeedSequence or Generator, optional\n"
           "    Recorded in the result as ``seed``.",
    "batch": "batch : int, optional\n"
             "    Replicates per batch (memory bound); results do not depend on it.",
    "risk_ties": (
        'ties : {"input", "averaged"}, default="input"\n'
        "    How images with tied confidence (0.3 and 0.7 tie) are ordered.  ``\"input\"``:\n"
        "    in input order (a stable sort, the paper's reading); where a tie holds both an\n"
        "    error and a correct decision the value then depends on the row order, and a\n"
        "    :class:`~medaudit.exceptions.TiedScoresWarning` gives the averaged value beside\n"
        "    it.  ``\"averaged\"``: the expected value over every order of the ties, which no\n"
        "    row order can move (no warning)."
    ),
    "binning": (
        'binning : {"floor", "linspace"}, default="floor"\n'
        '    How a probability ``s`` is assigned to one of the equal-width bins (one rule for\n'
        '    :func:`ece`, :func:`reliability_diagram` and the bootstrap kernels,\n'
        '    :func:`medaudit.stats._kernels.bin_index`):\n'
        '\n'
        '    * ``"floor"`` (paper 000 M0.7): bin ``min(floor(n_bins * s), n_bins - 1)``\n'
        '      computed in float64; 1.0 falls in the last bin.  Because ``10 * 0.3`` rounds\n'
        '      to ``3.0000000000000004``, a typed 0.3 lands in ``[0.3, 0.4)``, as a reader\n'
        '      expects (but, e.g., ``49 * (1/49)`` rounds to ``0.9999999999999999``, so\n'
        '      1/49 lands in the first of 49 bins).\n'
        '    * ``"linspace"``: bin ``b`` holds ``e_b <= s < e_{b+1}`` for the float64 edges\n'
        '      ``e = numpy.linspace(0, 1, n_bins + 1)``, and ``s == 1.0`` forms a bin of its\n'
        "      own, as netcal bins (the anchors' T3/T4).  Here a typed 0.3 lands in\n"
        '      ``[0.2, 0.3)`` for 10 bins (the edge is 0.30000000000000004):\n'
        '      ``ece([1, 0, 0], [0.3, 0.3, 0.25], n_bins=10)`` is 0.2167 with ``"floor"`` and\n'
        '      0.05 with ``"linspace"``.  The two rules differ only for probabilities at or\n'
        '      next to an edge (0.3, 0.6 and 0.7 at 10 bins, seven values at 20 bins, none of\n'
        "      the k/15 at 15 bins).  torchmetrics' ``binary_calibration_error`` has the same\n"
        '      bins but float32 edges (``torch.linspace``), so values on an edge may fall\n'
        '      otherwise there: 0.3 as here, but 0.7 of 10 bins in ``[0.7, 0.8)``, as\n'
        '      ``"floor"`` puts it; off the edges all three agree.\n'
        "    * Neither is scikit-learn's ``calibration_curve``, whose bins are closed on the\n"
        '      right: a probability on an inner edge (0.5 of 10 bins) falls in the lower bin\n'
        '      ``(0.4, 0.5]``.  ``ece([0, 1, 1], [0.5, 0.45, 0.45], n_bins=10)`` is 0.533 under\n'
        "      both rules here and 0.2 on scikit-learn's bins; continuous probabilities agree."
    ),
}

_MARKER = re.compile(r"^([ \t]*)\{([A-Za-z_][A-Za-z0-9_]*)\}[ \t]*$", re.MULTILINE)


def fill(doc: str | None) -> str | None:
    """``doc`` with every marker line replaced by its :data:`PARAMS` entry.

    Raises
    ------
    KeyError
        A marker names no entry (a typo in a docstring, caught at import).
    """
    if doc is None:  # python -OO strips docstrings
        return None

    def entry(m: re.Match) -> str:
        indent, name = m.group(1), m.group(2)
        if name not in PARAMS:
            raise KeyError(f"docstring marker {{{name}}} has no entry in medaudit.stats._docs.PARAMS")
        return "\n".join(indent + line if line else line for line in PARAMS[name].split("\n"))

    return _MARKER.sub(entry, doc)


def fill_doc(func: F) -> F:
    """Decorator: fill the markers of ``func``'s docstring (see the module docstring)."""
    func.__doc__ = fill(func.__doc__)
    return func

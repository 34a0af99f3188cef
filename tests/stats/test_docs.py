"""The shared parameter wording of the statistics core's docstrings (``stats/_docs.py``)."""

import inspect
import re

import pytest

import medaudit.stats as S
from medaudit.stats import _docs

MARKER = re.compile(r"^[ \t]*\{[A-Za-z_]\w*\}[ \t]*$", re.M)


def test_a_marker_line_becomes_the_entry_at_its_indentation():
    doc = "Title.\n\n    Parameters\n    ----------\n    {y_true}\n    {rng}\n    "
    out = _docs.fill(doc)
    assert out == ("Title.\n\n    Parameters\n    ----------\n"
                   "    y_true : array-like of shape (n_samples,)\n"
                   "        Binary labels, 1 = positive.\n"
                   "    rng : int, SeedSequence or Generator, optional\n"
                   "        Recorded in the result as ``seed``.\n    ")


def test_braces_that_are_not_a_whole_marker_line_are_left_alone():
    doc = ('    ties : {"stable", "grouped"}\n'
           "        :math:`\\frac{1}{n^+}` and {y_true} inline\n"
           "    {not an identifier}\n")
    assert _docs.fill(doc) == doc


def test_a_marker_without_an_entry_fails_at_decoration():
    def f():
        """Doc.

        {no_such_parameter}
        """
    with pytest.raises(KeyError, match="no_such_parameter"):
        _docs.fill_doc(f)


def test_no_docstring_stripped_by_python_oo_breaks_the_decorator():
    def f():
        pass
    assert _docs.fill_doc(f).__doc__ is None


def test_every_public_docstring_of_the_core_is_filled():
    for name in S.__all__:
        obj = getattr(S, name)
        doc = inspect.getdoc(obj) if callable(obj) else None
        if doc:
            assert not MARKER.search(doc), name


@pytest.mark.parametrize("func, params", [
    (S.brier_score, ("y_true", "sample_weight")),
    (S.selective_risk, ("y_true", "y_prob")),
    (S.ece, ("y_true", "y_prob", "binning")),
    (S.roc_auc, ("y_true", "y_score")),
    (S.bootstrap_metrics, ("rng", "batch")),
])
def test_the_filled_text_is_the_entry_indented_as_numpydoc(func, params):
    doc = func.__doc__
    for p in params:
        entry = "\n".join("    " + line if line else line for line in _docs.PARAMS[p].split("\n"))
        assert entry in doc, (func.__name__, p)

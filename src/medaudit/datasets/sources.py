"""Where each public dataset comes from: its name, citation, licence and address, as data.

Every report and summary built on public data names the dataset, how to cite it and under
which terms it may be used (``../shared/data/README.md``: "cite the sources in any output
that uses them").  :data:`SOURCES` holds one :class:`DataSource` per dataset a reader of
:mod:`medaudit.datasets` knows, keyed by the reader's name; the text is taken from each
folder's README (licence caveats included, as written there).  :func:`data_sources` finds
the datasets an audit's inputs come from (a folder of ``../shared/data`` anywhere in an
input path, a ``dataset:NAME`` score source, an annotation format, the reader judgment
table), and the audit records them in ``results.json`` (``provenance.inputs.data_source``),
from which the report and ``summary.md`` print them.

Examples
--------
>>> [s.key for s in data_sources(["../shared/data/tb_cross_cohort_predictions_kwang311/a.csv"])]
['kwang311']
>>> SOURCES["kermany"].licence
'CC BY 4.0'
>>> data_sources(["my_scores.csv"])
[]
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import asdict, dataclass
from pathlib import Path, PurePath
from typing import Any

__all__ = ["DataSource", "SOURCES", "data_sources"]


@dataclass(frozen=True, slots=True, kw_only=True)
class DataSource:
    """One public dataset: what to call it, how to cite it, its terms of use."""

    #: reader name (key of :data:`SOURCES`)
    key: str
    name: str
    citation: str
    licence: str
    url: str
    #: its folder under ``../shared/data`` (None: read from elsewhere, e.g. a wheel)
    folder: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """The record kept in ``results.json`` (plain strings)."""
        return {k: v for k, v in asdict(self).items() if v is not None}


#: reader name -> the dataset it reads (text from each ../shared/data folder's README),
#: kept as data in ``sources.json`` beside this module, in the order reports list them
SOURCES: dict[str, DataSource] = {
    r["key"]: DataSource(**r)
    for r in json.loads((Path(__file__).parent / "sources.json").read_text(encoding="utf-8"))}

_BY_FOLDER = {s.folder: s.key for s in SOURCES.values() if s.folder}


def data_sources(paths: Iterable[str | PurePath | None] = (), *, readers: Iterable[str] = ()
                 ) -> list[DataSource]:
    """The datasets that ``paths`` (inputs of an audit) and ``readers`` (reader names) use.

    Parameters
    ----------
    paths : iterable of path
        Input files or folders; one that passes through a folder of :data:`SOURCES` (as
        ``../shared/data/<folder>`` does) is that dataset's.  ``None`` entries are skipped.
    readers : iterable of str
        Reader names used without a path (``dataset:enhance``, ``format: nih``, the VinDr
        labels inside torchxrayvision); names outside :data:`SOURCES` are ignored.

    Returns
    -------
    list of DataSource
        Each dataset once, in the order of :data:`SOURCES` (so the same inputs always print
        the same lines).
    """
    found = {r for r in readers if r in SOURCES}
    for p in paths:
        if p is None:
            continue
        found |= {_BY_FOLDER[part] for part in PurePath(p).parts if part in _BY_FOLDER}
    return [s for k, s in SOURCES.items() if k in found]

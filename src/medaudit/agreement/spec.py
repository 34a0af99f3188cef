"""The ``judgments:`` spec section (paper 002): where the judgment table comes from, the evaluable set.

The audit spec embeds it as ``judgments:``; the ``error_structure`` and ``agreement``
blocks have their own sections.
"""

from __future__ import annotations

from typing import Literal

from pydantic import Field, model_validator

from medaudit.io.specfile import Strict as _Strict

__all__ = ["JudgmentsSpec", "ReadersSpec", "READER_FINDINGS"]

#: paper-002 findings that NIH ChestX-ray14 (all-findings readers) and VinDr-CXR both label
READER_FINDINGS = ("atelectasis", "cardiomegaly", "consolidation", "pleural effusion",
                   "pneumothorax")


class ReadersSpec(_Strict):
    """Real judgment table from public per-reader labels (see :mod:`medaudit.datasets.readers`).

    Institutions NIH (ChestX-ray14, Google all-findings expert readers, 810 images x 5
    readers) and VinDr (VinDr-CXR training labels, 15,000 images x 3 radiologists, the copy
    shipped inside the installed ``torchxrayvision`` wheel).  Models are reader slots of a
    three-reader panel judged against the other two readers of the panel.
    """

    #: folder of the NIH expert-reader labels (relative to the spec file)
    nih_dir: str
    #: the VinDr per-radiologist CSV; None = the copy inside the installed torchxrayvision
    vindr_csv: str | None = None
    findings: list[str] = Field(default_factory=lambda: list(READER_FINDINGS), min_length=1)
    #: add NIH's two non-panel readers as models judged against the 3-reader panel majority
    comparison_readers: bool = True


class JudgmentsSpec(_Strict):
    """Where the judgment table comes from and how the evaluable set is formed (M2.1)."""

    #: CSV/Parquet JudgmentTable (relative to the spec file)
    path: str | None = None
    #: the embedded simulated three-institution study instead
    simulate: Literal["paper002"] | None = None
    simulate_scale: float = Field(1.0, gt=0.0, le=1.0)
    #: add the degenerate third model (``llava-med``: narrative never present, binary always
    #: yes) to the simulated study; paper 002 reports it outside the BH families
    simulate_degenerate: bool = False
    #: the real reader table (NIH + VinDr) instead
    readers: ReadersSpec | None = None
    #: rename map, file column -> JudgmentTable column (e.g. {"Study": "study_id"})
    columns: dict[str, str] = Field(default_factory=dict)
    #: what an uncertain reference (-1) becomes: dropped (primary), 0 or 1
    uncertain: Literal["exclude", "negative", "positive"] = "exclude"
    #: a (study, model, protocol) is evaluable with at least this many parsed findings
    min_parsed_findings: int = Field(4, ge=1)
    protocols: list[str] = Field(default_factory=lambda: ["narrative", "binary"], min_length=1)
    #: allow references that depend on the model (e.g. leave-one-reader-out references)
    reference_by_model: bool = False

    @model_validator(mode="after")
    def _one_source(self) -> JudgmentsSpec:
        given = [k for k in ("path", "simulate", "readers") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("judgments: give exactly one of `path:` (a CSV/Parquet judgment "
                             "table), `simulate: paper002` or `readers:`; got "
                             f"{given or 'none'}")
        if len(set(self.protocols)) != len(self.protocols):
            raise ValueError(f"protocols repeat a name: {self.protocols}")
        return self

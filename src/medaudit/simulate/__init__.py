"""Seeded *simulated* studies shaped like the papers (no real patient data).

* :func:`simulate_paper000` — the embedded default audit: a score table shaped like
  paper 000 (cohort sizes of its Table 1, four zero-shot models, five prompt families,
  named control groups);
* :func:`simulate_paper002` — a judgment table of three institutions shaped like
  paper 002 (two generative VLMs, narrative and binary protocols, an optional
  degenerate model).

Every table produced here is labelled simulated in the provenance it travels with.
"""

from __future__ import annotations

from medaudit.simulate.paper000 import SIMULATED_MODELS, simulate_cohort, simulate_paper000
from medaudit.simulate.paper002 import FINDINGS, INSTITUTIONS, SIM_RATES, simulate_paper002

__all__ = ["simulate_paper000", "simulate_paper002", "simulate_cohort", "SIMULATED_MODELS",
           "FINDINGS", "INSTITUTIONS", "SIM_RATES"]

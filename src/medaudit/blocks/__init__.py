"""Audit blocks: tidy tables in, tidy tables out (pandas + medaudit.stats; no file I/O)."""

from medaudit.blocks.cohort_summary import CohortSummary, summarize_cohorts

__all__ = ["CohortSummary", "summarize_cohorts"]

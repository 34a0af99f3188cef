"""Presentation: the only place that rounds; never computes a statistic."""

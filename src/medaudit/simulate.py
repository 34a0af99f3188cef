"""Seeded *simulated* score tables for demos and benchmarks (no real patient data).

The shapes follow paper 000's TBX11K validation cohort (200 TB, 800 healthy and
800 sick non-TB controls); the scores are binormal draws on the logit scale with
model-specific separation, so that results look like an audit without being one.
Every table produced here carries ``simulated = True`` in its provenance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from medaudit._validation import as_generator

__all__ = ["simulate_cohort", "SIMULATED_MODELS"]

#: model -> (separation of TB from healthy, from sick, calibration shift) on the logit scale
SIMULATED_MODELS: dict[str, tuple[float, float, float]] = {
    "sim-clip-a": (2.4, 0.9, -1.0),
    "sim-clip-b": (1.9, 1.1, 0.3),
}


def simulate_cohort(
    *,
    n_pos: int = 200,
    n_healthy: int = 800,
    n_sick: int = 800,
    cohort: str = "simulated-tbx11k-val",
    models: dict[str, tuple[float, float, float]] | None = None,
    rng: Any = 2026,
) -> dict[str, Any]:
    """Return a long score table (dict of columns) for one simulated cohort.

    Columns: ``image_id, cohort, model, prompt, score, label, negative_group``;
    one row per (model, image).  Positives have an empty ``negative_group``.

    Examples
    --------
    >>> t = simulate_cohort(n_pos=2, n_healthy=2, n_sick=1, rng=0)
    >>> len(t["score"]), sorted(set(t["negative_group"]))
    (10, ['', 'healthy', 'sick'])
    """
    gen, _ = as_generator(rng)
    models = SIMULATED_MODELS if models is None else models
    n = n_pos + n_healthy + n_sick
    label = np.r_[np.ones(n_pos), np.zeros(n_healthy + n_sick)].astype(np.int64)
    group = np.array([""] * n_pos + ["healthy"] * n_healthy + ["sick"] * n_sick, dtype=object)
    image_id = np.array([f"img{i:05d}" for i in range(n)], dtype=object)
    latent = gen.standard_normal(n)  # image difficulty shared by all models (paired design)
    cols: dict[str, list] = {k: [] for k in ("image_id", "cohort", "model", "prompt", "score",
                                             "label", "negative_group")}
    for name, (d_h, d_s, shift) in models.items():
        noise = gen.standard_normal(n)
        mu = np.where(label == 1, 0.0, np.where(group == "healthy", -d_h, -d_s))
        logit = mu + 0.6 * latent + 0.8 * noise + shift
        score = 1.0 / (1.0 + np.exp(-logit))
        cols["image_id"] += image_id.tolist()
        cols["cohort"] += [cohort] * n
        cols["model"] += [name] * n
        cols["prompt"] += ["clinical"] * n
        cols["score"] += score.tolist()
        cols["label"] += label.tolist()
        cols["negative_group"] += group.tolist()
    return cols

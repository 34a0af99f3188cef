"""Seeded *simulated* score tables for demos and benchmarks (no real patient data).

The shapes follow paper 000's TBX11K validation cohort (200 TB, 800 healthy and
800 sick non-TB controls); the scores are binormal draws on the logit scale with
model-specific separation, so that results look like an audit without being one.
Every table produced here carries ``simulated = True`` in its provenance.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from medaudit._validation import RNGLike, as_generator

__all__ = ["simulate_cohort", "simulate_paper000", "SIMULATED_MODELS"]

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
    rng: RNGLike = 2026,
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


# ----------------------------------------------------------------------------- paper 000
#: cohort -> (n TB, {negative group: n}, separation multiplier, split)
PAPER000_COHORTS: dict[str, tuple[int, dict[str, int], float, str]] = {
    "montgomery": (58, {"normal": 80}, 1.25, "test"),
    "shenzhen": (336, {"normal": 326}, 1.05, "test"),
    "tbx11k-val": (200, {"healthy": 800, "sick": 800}, 0.85, "val"),
    "tbx11k-train": (600, {"healthy": 3000, "sick": 3000}, 0.85, "train"),
    "vindr": (164, {"no_finding": 2051, "pneumonia": 210, "lung_tumor": 73, "other_finding": 502},
              1.0, "test"),
}
#: model -> (separation, sick-control factor, calibration shift, prompt sensitivity)
PAPER000_MODELS: dict[str, tuple[float, float, float, float]] = {
    "sim-chexficient": (2.5, 0.55, -1.6, 0.6),
    "sim-medsiglip": (2.5, 0.25, -0.4, 0.4),
    "sim-biomedclip": (1.5, 0.30, -1.1, 0.5),
    "sim-openclip": (0.35, 0.40, 1.1, 1.0),
}
#: prompt family -> (separation multiplier, shift); order of paper 000 Table 3
PAPER000_PROMPTS: dict[str, tuple[float, float]] = {
    "clinical": (1.0, 0.0), "photo": (0.98, 0.15), "report": (0.95, -0.2),
    "presence": (0.8, 0.3), "normal": (0.96, -0.1),
}
#: negative group -> separation factor relative to normal controls (negative: scored above TB)
_GROUP_FACTOR = {"normal": 1.0, "healthy": 1.0, "no_finding": 1.1, "other_finding": 0.6,
                 "pneumonia": -0.1, "lung_tumor": -0.2}


def simulate_paper000(*, rng: RNGLike = 2026, scale: float = 1.0) -> dict[str, Any]:
    """A seeded simulated study shaped like paper 000 (cohort sizes of its Table 1).

    Five cohorts (Montgomery, Shenzhen, TBX11K val and train, VinDr with named
    control groups), four models and five prompt families: 12,200 images and
    244,000 scores at ``scale=1``.  ``scale < 1`` shrinks every group (at least 3
    images each) for fast tests.  Returns ``{"table": columns, "models": cards}``;
    every score is simulated and labelled so in the model cards.

    Examples
    --------
    >>> sim = simulate_paper000(scale=0.05)
    >>> sorted(set(sim["table"]["cohort"]))
    ['montgomery', 'shenzhen', 'tbx11k-train', 'tbx11k-val', 'vindr']
    """
    gen, _ = as_generator(rng)
    cols: dict[str, list] = {k: [] for k in ("image_id", "cohort", "model", "prompt", "score",
                                             "label", "negative_group", "split")}
    for cohort, (n_tb, groups, sep, split) in PAPER000_COHORTS.items():
        sizes = {"": max(3, round(n_tb * scale))} | {g: max(3, round(n * scale))
                                                      for g, n in groups.items()}
        group = np.concatenate([np.full(n, g, dtype=object) for g, n in sizes.items()])
        label = (group == "").astype(np.int64)
        n = group.size
        ids = np.array([f"{cohort}-{i:05d}" for i in range(n)], dtype=object)
        difficulty = gen.standard_normal(n)
        for model, (d, sick, shift, psens) in PAPER000_MODELS.items():
            image_noise = gen.standard_normal(n)
            factor = np.array([1.0 if g == "" else (sick if g == "sick" else _GROUP_FACTOR[g])
                               for g in group])
            for prompt, (pmult, pshift) in PAPER000_PROMPTS.items():
                jitter = gen.normal(0.0, 0.25 * psens)
                mult = 1.0 - psens * (1.0 - pmult) + jitter * 0.3
                mu = np.where(label == 1, 0.0, -d * sep * mult * factor)
                logit = (mu + 0.7 * difficulty + 0.8 * image_noise
                         + 0.35 * gen.standard_normal(n) + shift + psens * pshift)
                cols["score"] += (1.0 / (1.0 + np.exp(-logit))).tolist()
                cols["image_id"] += ids.tolist()
                cols["cohort"] += [cohort] * n
                cols["model"] += [model] * n
                cols["prompt"] += [prompt] * n
                cols["label"] += label.tolist()
                cols["negative_group"] += group.tolist()
                cols["split"] += [split] * n
    cards = [{"name": m, "checkpoint": f"simulated/{m}", "revision": "simulated",
              "processor": "none (simulated scores)", "score_rule": "two-class softmax (simulated)",
              "exposure": ({"vindr": "documented pretraining exposure to VinDr-CXR (simulated, as "
                                     "for CheXficient in paper 000)"}
                           if m == "sim-chexficient" else {})}
             for m in PAPER000_MODELS]
    return {"table": cols, "models": cards}

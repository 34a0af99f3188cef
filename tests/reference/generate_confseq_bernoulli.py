"""Reference values from the confseq library for medaudit.stats.proportion_cs.

confseq (Howard, Waudby-Smith & Ramdas; https://github.com/gostevehoward/confseq) computes
the beta-binomial mixture confidence sequence of Howard, Ramdas, McAuliffe & Sekhon (2021,
Propositions 6-7) in ``confseq.boundaries.bernoulli_confidence_interval(num_successes,
num_trials, alpha, t_opt, alpha_opt)``.  Its only release on PyPI (0.0.11) is a C++ source
distribution that pins pybind11~=2.6, which does not compile against Python 3.11, so it is
not a dependency of medaudit: it was built once, in a throw-away virtual environment, with a
newer pybind11, and this script wrote the committed CSV:

    python -m venv /tmp/csvenv
    /tmp/csvenv/bin/pip install "pybind11>=2.10" scikit-build cmake setuptools wheel numpy
    /tmp/csvenv/bin/pip download --no-deps confseq==0.0.11 && tar xzf confseq-0.0.11.tar.gz
    /tmp/csvenv/bin/pip install --no-build-isolation --no-deps ./confseq-0.0.11  # needs Boost
    /tmp/csvenv/bin/python tests/reference/generate_confseq_bernoulli.py

Writes confseq_bernoulli.csv next to this script (floats with repr, an exact round trip).
"""

from __future__ import annotations

import datetime
import platform
from importlib.metadata import version
from pathlib import Path

from confseq.boundaries import bernoulli_confidence_interval

CASES = []
for n in (1, 2, 5, 10, 37, 100, 250, 1000, 5000):
    for s in sorted({0, 1, n // 10, n // 3, n // 2, (9 * n) // 10, n - 1, n}):
        if 0 <= s <= n:
            for alpha, t_opt, alpha_opt in ((0.05, 100, 0.05), (0.05, 1000, 0.05), (0.01, 250, 0.01),
                                            (0.1, 50, 0.05), (0.05, 10, 0.1)):
                CASES.append((s, n, alpha, t_opt, alpha_opt))


def main() -> None:
    out = Path(__file__).with_name("confseq_bernoulli.csv")
    lines = [
        "# Reference values produced by confseq; do not edit by hand.",
        f"# confseq version: {version('confseq')} (built with pybind11 {version('pybind11')})",
        f"# Python: {platform.python_version()}",
        f"# Date: {datetime.date.today().isoformat()}",
        "# Regenerate: see the docstring of tests/reference/generate_confseq_bernoulli.py",
        "successes,trials,alpha,t_opt,alpha_opt,ci_low,ci_high",
    ]
    for s, n, alpha, t_opt, alpha_opt in CASES:
        lo, hi = bernoulli_confidence_interval(s, n, alpha, t_opt, alpha_opt)
        lines.append(f"{s},{n},{alpha!r},{t_opt},{alpha_opt!r},{lo!r},{hi!r}")
    out.write_text("\n".join(lines) + "\n", encoding="utf-8")


if __name__ == "__main__":
    main()

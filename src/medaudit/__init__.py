"""medaudit: audit how medical-imaging AI models are evaluated.

The statistics core lives in :mod:`medaudit.stats` (numpy and scipy only).
Nothing heavy is imported here.
"""

from __future__ import annotations

__version__ = "0.1.0"

__all__ = ["__version__"]

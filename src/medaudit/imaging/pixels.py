"""Pixels of more than 8 bits as the 8-bit images models and hashes read.

Pillow's ``convert("L")`` / ``convert("RGB")`` clips every value above 255, so a 16-bit
chest X-ray (PadChest's PNGs, a DICOM export) becomes almost all white without a word.
One rule here, used by scoring, training and the overlap screen:

* 16-bit integer images (Pillow modes ``I;16*``, and a PNG in mode ``I``: a PNG has at
  most 16 bits per grey sample) are mapped from the full 16-bit range,
  ``round(v * 255 / 65535)``: the convention of torchxrayvision's PadChest loader (divide by
  the type's maximum), under which a 16-bit copy of an 8-bit image (``v = 257 x``) is that
  image again;
* 32-bit integer and float images (``I``, ``F``), whose range no type fixes, are stretched
  linearly over their own range to 0..255 (a constant image becomes black);
* 8-bit images pass unchanged.

An image whose values use only part of the 16-bit range (12-bit data stored in 16 bits:
at most 4095) comes out dark under the first rule, as it does for the models trained that
way; rescale such files to the full range before scoring if the model expects it.
"""

from __future__ import annotations

from typing import Any

import numpy as np

__all__ = ["WIDE_MODES", "to_8bit", "to_rgb"]

#: Pillow modes of more than 8 bits per pixel
WIDE_MODES = ("I;16", "I;16B", "I;16L", "I;16N", "I", "F")


def to_8bit(img: Any, *, stretch: bool = False) -> Any:
    """``img`` (a PIL image) as an 8-bit grayscale image by the module's rule, or unchanged
    when it has 8 bits per channel.  ``stretch=True`` stretches 16-bit images over their own
    range too (what a perceptual hash wants: a linear map keeps its order of coefficients)."""
    if img.mode not in WIDE_MODES:
        return img
    from PIL import Image

    a = np.asarray(img, dtype=np.float64)
    # a PNG holds at most 16 bits per grey sample: Pillow before 10.3 opens a 16-bit PNG as
    # mode "I", later versions as "I;16"; either is the 16-bit rule, whatever the version
    sixteen = img.mode.startswith("I;16") or (img.mode == "I" and img.format == "PNG")
    if sixteen and not stretch:
        scaled = a * (255.0 / 65535.0)
    else:
        finite = a[np.isfinite(a)]
        lo, hi = (float(finite.min()), float(finite.max())) if finite.size else (0.0, 0.0)
        scaled = (np.nan_to_num(a, nan=lo, posinf=hi, neginf=lo) - lo) * (255.0 / (hi - lo)) \
            if hi > lo else np.zeros_like(a)
    return Image.fromarray(np.clip(np.rint(scaled), 0, 255).astype(np.uint8), mode="L")


def to_rgb(img: Any) -> Any:
    """``img`` as an RGB image (what a model's processor reads), wide images by :func:`to_8bit`."""
    return to_8bit(img).convert("RGB")

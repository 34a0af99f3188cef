"""Pixels of more than 8 bits (``medaudit.imaging.pixels``): one rule for scoring, training
and the overlap screen.  Witnesses: hand-made images whose 8-bit form is known, and Pillow's
own ``convert`` as the clipping it replaces."""

from __future__ import annotations

import io

import numpy as np
import pytest
from PIL import Image

from medaudit.imaging.pixels import to_8bit, to_rgb


def _png(a: np.ndarray) -> Image.Image:
    buf = io.BytesIO()
    Image.fromarray(a).save(buf, format="PNG")
    buf.seek(0)
    return Image.open(buf)


def _gray():
    return np.random.default_rng(0).integers(0, 256, (24, 32)).astype(np.uint8)


def test_a_16_bit_copy_of_an_8_bit_image_is_that_image_again():
    a = _gray()
    im16 = _png(a.astype(np.uint16) * 257)  # v = 257 x spans 0..65535 as x spans 0..255
    assert im16.mode in ("I;16", "I")  # "I" before Pillow 10.3
    assert np.array_equal(np.asarray(to_8bit(im16)), a)
    assert np.array_equal(np.asarray(to_rgb(im16)), np.asarray(Image.fromarray(a).convert("RGB")))
    # what the rule replaces: Pillow clips at 255, most pixels turn white
    clipped = np.asarray(im16.convert("RGB"))[..., 0]
    assert (clipped == 255).mean() > 0.9


def test_16_bit_values_map_from_the_full_range():
    a = np.array([[0, 1, 128, 129, 32768, 65535]], dtype=np.uint16)
    got = np.asarray(to_8bit(_png(a)))[0].tolist()
    assert got == [round(v * 255 / 65535) for v in a[0].tolist()] == [0, 0, 0, 1, 128, 255]
    # a hash wants the image's own range instead
    assert np.asarray(to_8bit(_png(a), stretch=True))[0].tolist() == [
        round((v - 0) * 255 / 65535) for v in a[0].tolist()]
    b = np.array([[1000, 2000, 3000]], dtype=np.uint16)
    assert np.asarray(to_8bit(_png(b), stretch=True))[0].tolist() == [0, 128, 255]


def test_a_png_opened_as_mode_i_is_16_bit_whatever_the_pillow_version():
    """Pillow before 10.3 opened a 16-bit PNG as mode "I": a PNG in that mode is 16-bit."""
    a = np.array([[0, 257 * 100, 65535]], dtype=np.uint16)
    im = _png(a)
    as_i = im.convert("I")
    as_i.format = "PNG"  # what an older Pillow's Image.open gives
    assert as_i.mode == "I"
    assert np.asarray(to_8bit(as_i))[0].tolist() == [0, 100, 255]
    as_i.format = None  # an "I" image from elsewhere stretches over its own range
    assert np.asarray(to_8bit(as_i))[0].tolist() == [0, 100, 255]
    b = np.array([[1000, 2000, 3000]], dtype=np.uint16)
    im_b = _png(b).convert("I")
    im_b.format = "PNG"
    assert np.asarray(to_8bit(im_b))[0].tolist() == [4, 8, 12]  # round(v * 255 / 65535)
    im_b.format = None
    assert np.asarray(to_8bit(im_b))[0].tolist() == [0, 128, 255]


@pytest.mark.parametrize("mode", ["I", "F"])
def test_32_bit_and_float_images_stretch_over_their_own_range(mode):
    a = np.array([[-5.0, 0.0, 5.0, 15.0]], dtype=np.float32 if mode == "F" else np.int32)
    im = Image.fromarray(a, mode=mode) if mode == "F" else Image.fromarray(a)
    assert im.mode == mode
    # (v - lo) * 255 / (hi - lo), rounded: -5 -> 0, 0 -> 63.75, 5 -> 127.5, 15 -> 255
    assert np.asarray(to_8bit(im))[0].tolist() == [0, 64, 128, 255]
    const = Image.fromarray(np.full((2, 2), 7.0, dtype=np.float32), mode="F")
    assert np.asarray(to_8bit(const)).max() == 0  # no range: black, not a division by zero


def test_nan_and_infinity_in_a_float_image_take_the_range_ends():
    a = np.array([[np.nan, 0.0, 10.0, np.inf, -np.inf]], dtype=np.float32)
    got = np.asarray(to_8bit(Image.fromarray(a, mode="F")))[0].tolist()
    assert got == [0, 0, 255, 255, 0]


def test_8_bit_images_pass_unchanged():
    im = Image.fromarray(_gray())
    assert to_8bit(im) is im
    rgb = Image.fromarray(np.dstack([_gray()] * 3))
    assert np.array_equal(np.asarray(to_rgb(rgb)), np.asarray(rgb))


def test_the_probes_read_16_bit_images_by_the_same_rule(tmp_path):
    # review finding: the paper-001 probes' loader still used convert("L"), which clips
    from medaudit.adapters.probes import load_nih_images

    a = np.random.default_rng(1).integers(0, 256, (256, 256)).astype(np.uint8)
    (tmp_path / "images_256").mkdir()
    Image.fromarray(a).save(tmp_path / "images_256" / "a8.png")
    Image.fromarray(a.astype(np.uint16) * 257).save(tmp_path / "images_256" / "b16.png")
    ids, images = load_nih_images(tmp_path)
    assert ids.tolist() == ["a8.png", "b16.png"]
    assert np.array_equal(images[0], a / 255.0) and np.array_equal(images[1], images[0])

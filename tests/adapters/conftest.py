"""Tiny randomly initialised models built offline from the libraries' own configs, and real images.

Nothing here downloads: open_clip models are written as a local snapshot directory
(``open_clip_config.json`` + weights, read back through open_clip's ``local-dir:`` schema),
transformers models with ``save_pretrained`` and a word-level tokenizer written to disk.
Real images come from ``../shared/data`` (TBX11K TB positives, NIH ChestX-ray14, Kermany).
"""

from __future__ import annotations

import json
import math
from pathlib import Path

import pandas as pd
import pytest

DATA = Path(__file__).resolve().parents[2] / ".." / "shared" / "data"
DOCS = Path(__file__).resolve().parents[2] / ".." / "shared" / "docs"

#: every word of the prompt families and of the VLM questions, for the tiny word-level vocabularies
WORDS = sorted(set("""a an the this is of on in with without no not showing show chest x-ray X-ray radiograph
pulmonary tuberculosis findings are compatible frontal signs active photo evidence radiographic present
absent normal Is there Answer Yes or No yes no atelectasis cardiomegaly consolidation edema pleural effusion
pneumothorax ? . , write report for each following state explicitly whether it x ray -""".split()))


def data_dir() -> Path:
    if not DATA.exists():
        pytest.skip(f"shared data folder {DATA} is absent; these tests need the real images there")
    return DATA


@pytest.fixture(scope="session")
def real_manifest(tmp_path_factory) -> tuple[Path, pd.DataFrame]:
    """12 real chest X-rays: TBX11K TB (label 1) with NIH (cohort nih) and Kermany (cohort kermany)
    controls; a manifest CSV with paths relative to its folder is written beside symlinks."""
    root = data_dir()
    tb = sorted((root / "tbx11k_tb_positive_subset" / "images_256").glob("tb*.png"))[:6]
    nih = sorted((root / "nih_cxr14_google_expert_readers" / "images_256").glob("*.png"))[:4]
    ker = sorted((root / "kermany_pediatric_pneumonia_test224" / "NORMAL").glob("*.jpeg"))[:4]
    if len(tb) < 6 or len(nih) < 4 or len(ker) < 4:
        pytest.skip("the shared data folders lack the expected images")
    d = tmp_path_factory.mktemp("manifest")
    rows = []
    for cohort, pos, neg in (("nih", tb[:3], nih), ("kermany", tb[3:], ker)):
        for p, lab in [(q, 1) for q in pos] + [(q, 0) for q in neg]:
            rows.append({"image_id": p.stem, "path": str(p.resolve()), "cohort": cohort, "label": lab})
    df = pd.DataFrame(rows)
    df.to_csv(d / "manifest.csv", index=False)
    return d / "manifest.csv", df


def _tiny_clip_cfg() -> dict:
    return {"model_cfg": {"embed_dim": 16,
                          "vision_cfg": {"image_size": 32, "layers": 1, "width": 32, "patch_size": 8,
                                         "head_width": 16},
                          "text_cfg": {"context_length": 77, "vocab_size": 49408, "width": 32,
                                       "heads": 2, "layers": 1}},
            "preprocess_cfg": {"mean": [0.48145466, 0.4578275, 0.40821073],
                               "std": [0.26862954, 0.26130258, 0.27577711],
                               "interpolation": "bicubic", "resize_mode": "shortest"}}


@pytest.fixture(scope="session")
def tiny_openclip_dir(tmp_path_factory) -> Path:
    """A local open_clip snapshot (the hub layout) of a tiny random CLIP with a learned scale of 20."""
    import open_clip
    import torch

    d = tmp_path_factory.mktemp("tiny_openclip")
    cfg = _tiny_clip_cfg()
    (d / "open_clip_config.json").write_text(json.dumps(cfg))
    torch.manual_seed(0)
    model = open_clip.model.CLIP(**cfg["model_cfg"])
    with torch.no_grad():
        model.logit_scale.fill_(math.log(20.0))
    torch.save(model.state_dict(), d / "open_clip_pytorch_model.bin")
    return d


def word_tokenizer(directory: Path, *, extra: tuple[str, ...] = ()):
    """A BERT word-piece tokenizer over :data:`WORDS`, written to ``directory``."""
    from transformers import BertTokenizerFast

    vocab = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]", *extra, *WORDS]
    (directory / "vocab.txt").write_text("\n".join(dict.fromkeys(w.lower() for w in vocab)))
    return BertTokenizerFast(vocab_file=str(directory / "vocab.txt"))


@pytest.fixture(scope="session")
def tiny_siglip_dir(tmp_path_factory) -> Path:
    """A saved tiny SiglipModel (logit scale log 10, logit bias -3), PIL image processor, tokenizer."""
    import torch
    from transformers import SiglipConfig, SiglipModel
    from transformers.models.siglip.image_processing_pil_siglip import SiglipImageProcessorPil

    d = tmp_path_factory.mktemp("tiny_siglip")
    tok = word_tokenizer(d)
    cfg = SiglipConfig(
        text_config={"vocab_size": len(tok), "hidden_size": 32, "intermediate_size": 37,
                     "num_hidden_layers": 1, "num_attention_heads": 2, "max_position_embeddings": 64,
                     "bos_token_id": None, "eos_token_id": None, "pad_token_id": 0},
        vision_config={"image_size": 32, "patch_size": 8, "hidden_size": 32, "intermediate_size": 37,
                       "num_hidden_layers": 1, "num_attention_heads": 2})
    torch.manual_seed(1)
    model = SiglipModel(cfg).eval()
    with torch.no_grad():
        model.logit_scale.fill_(math.log(10.0))
        model.logit_bias.fill_(-3.0)
    model.save_pretrained(d)
    tok.save_pretrained(d)
    SiglipImageProcessorPil(size={"height": 32, "width": 32}).save_pretrained(d)
    return d


class CheXficientShaped:
    """Factory for a CheXficient-shaped two-tower model: DINOv2 vision + BERT text + projections."""

    @staticmethod
    def build(vocab_size: int, *, seed: int = 2):
        import torch
        from torch import nn
        from transformers import BertConfig, BertModel, Dinov2Config, Dinov2Model

        class TwoTower(nn.Module):
            def __init__(self):
                super().__init__()
                self.vision = Dinov2Model(Dinov2Config(image_size=32, patch_size=8, hidden_size=32,
                                                       num_hidden_layers=1, num_attention_heads=2,
                                                       intermediate_size=37))
                self.text = BertModel(BertConfig(vocab_size=vocab_size, hidden_size=32,
                                                 num_hidden_layers=1, num_attention_heads=2,
                                                 intermediate_size=37, max_position_embeddings=64))
                self.visual_projection = nn.Linear(32, 16, bias=False)
                self.text_projection = nn.Linear(32, 16, bias=False)
                self.logit_scale = nn.Parameter(torch.tensor(math.log(1 / 0.07)))

            def get_image_features(self, pixel_values):
                return self.visual_projection(self.vision(pixel_values=pixel_values).pooler_output)

            def get_text_features(self, input_ids, attention_mask=None):
                h = self.text(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state
                return self.text_projection(h[:, 0])

        torch.manual_seed(seed)
        return TwoTower().eval()

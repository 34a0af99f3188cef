"""Model scoring: zero-shot image-text scorers (paper 000) and generative-VLM verdicts (paper 002).

torch, open_clip and transformers are imported only inside the functions that need them,
so importing this package stays light.
"""

from medaudit.adapters.cache import EmbeddingCache
from medaudit.adapters.prompts import PAPER000_FAMILIES, PAPER000_VERSION, PromptFamily, get_families
from medaudit.adapters.registry import REGISTRY, CheckpointEntry, ImageTextEncoder, get_entry, load_encoder
from medaudit.adapters.vlm import (
    FINDINGS,
    JUDGMENT_COLUMNS,
    NarrativeParser,
    ParserConfig,
    VLMRunner,
    binary_verdicts,
    evaluable_studies,
    parse_report,
    run_binary,
    run_narrative,
)
from medaudit.adapters.zeroshot import (
    ScoringResult,
    class_prototype,
    family_average,
    read_manifest,
    score_manifest,
    two_class_score,
)

__all__ = [
    "EmbeddingCache", "PAPER000_FAMILIES", "PAPER000_VERSION", "PromptFamily", "get_families",
    "REGISTRY", "CheckpointEntry", "ImageTextEncoder", "get_entry", "load_encoder",
    "FINDINGS", "JUDGMENT_COLUMNS", "NarrativeParser", "ParserConfig", "VLMRunner", "binary_verdicts",
    "evaluable_studies", "parse_report", "run_binary", "run_narrative",
    "ScoringResult", "class_prototype", "family_average", "read_manifest", "score_manifest",
    "two_class_score",
]

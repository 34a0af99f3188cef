"""Registry of zero-shot image-text checkpoints (methods.md M0.4) and their loaders.

Each entry names the checkpoint, its immutable revision (where the paper recorded one),
the processor and the input size, so that these are part of the recorded specification.
A loader turns an entry into an :class:`ImageTextEncoder`; it accepts a local path
(``weights=``) or an already-built model (``model=``), so offline tests can inject tiny
randomly initialised models and real runs can point at downloaded snapshots.

torch, open_clip and transformers are imported inside functions only.
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import json
import os
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import numpy as np
from numpy.typing import NDArray

from medaudit.exceptions import MedauditError

__all__ = ["CheckpointEntry", "REGISTRY", "get_entry", "ImageTextEncoder", "load_encoder",
           "default_device", "weights_digest", "module_digest"]


@dataclass(frozen=True, slots=True, kw_only=True)
class CheckpointEntry:
    """One checkpoint of paper 000 Table 2 (M0.4).

    Attributes
    ----------
    name : str
        Registry key and the ``model`` column of the ScoreTable.
    checkpoint : str
        Hub identifier (open_clip architecture for open_clip tags).
    revision : str or None
        Immutable revision (commit) when the paper recorded one; ``None`` is a recorded
        provenance limitation (OpenCLIP, BiomedCLIP).
    library : {"open_clip", "transformers"}
    processor : str
        How images are preprocessed (the checkpoint's own processor).
    input_size : int
        Square input side in pixels.
    pretrained_tag : str or None
        open_clip pretrained tag (``laion2b_s34b_b79k``).
    text_kwargs : mapping
        Tokenizer options (padding, context length) applied to every prompt.
    trust_remote_code : bool
        Whether the checkpoint ships its own modelling code (CheXficient).
    exposure : mapping
        cohort -> documented pretraining exposure note (copied to the ModelCard).
    """

    name: str
    checkpoint: str
    revision: str | None
    library: Literal["open_clip", "transformers"]
    processor: str
    input_size: int
    pretrained_tag: str | None = None
    text_kwargs: Mapping[str, Any] = field(default_factory=dict)
    trust_remote_code: bool = False
    exposure: Mapping[str, str] = field(default_factory=dict)
    notes: str = ""

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "checkpoint": self.checkpoint, "revision": self.revision,
                "library": self.library, "processor": self.processor, "input_size": self.input_size,
                "pretrained_tag": self.pretrained_tag, "text_kwargs": dict(self.text_kwargs),
                "trust_remote_code": self.trust_remote_code, "exposure": dict(self.exposure),
                "notes": self.notes}


REGISTRY: dict[str, CheckpointEntry] = {e.name: e for e in (
    CheckpointEntry(
        name="openclip", checkpoint="ViT-B-32", revision=None, library="open_clip",
        pretrained_tag="laion2b_s34b_b79k", input_size=224,
        processor="open_clip preprocess (resize shortest side 224 bicubic, centre crop, OpenAI mean/std)",
        notes="general-domain comparator; no immutable revision recorded (provenance limitation)"),
    CheckpointEntry(
        name="biomedclip", checkpoint="hf-hub:microsoft/BiomedCLIP-PubMedBERT_256-vit_base_patch16_224",
        revision=None, library="open_clip", input_size=224,
        processor="open_clip preprocess from the hub open_clip_config.json (224, bicubic)",
        text_kwargs={"context_length": 256},
        notes="loaded via open_clip hf-hub; context length 256; no immutable revision recorded"),
    CheckpointEntry(
        name="medsiglip", checkpoint="google/medsiglip-448",
        revision="9cea28a1a1195f665105faa6e8544c112fd960a4", library="transformers", input_size=448,
        processor="transformers AutoImageProcessor, PIL backend (not the Big Vision/TF resize)",
        text_kwargs={"padding": "max_length", "max_length": 64},
        notes="logit_bias cancels in the two-class softmax (M0.6)"),
    CheckpointEntry(
        name="chexficient", checkpoint="StanfordAIMI/CheXficient",
        revision="34bb5ea905c4cb504d2b73c9a6687a5d5082f52a", library="transformers",
        input_size=224, processor="checkpoint image processor (AutoImageProcessor, PIL backend)",
        text_kwargs={"padding": True}, trust_remote_code=True,
        exposure={"vindr": "documented pretraining exposure to VinDr-CXR"},
        notes="DINOv2-base + BioClinicalBERT with the checkpoint's own code (trust_remote_code); "
              "the model must expose get_image_features / get_text_features / logit_scale"),
)}


def get_entry(name: str) -> CheckpointEntry:
    """The registry entry called ``name``; an unknown name raises listing the registry."""
    if name in REGISTRY:
        return REGISTRY[name]
    close = difflib.get_close_matches(name, list(REGISTRY), n=1)
    hint = f" Did you mean {close[0]!r}?" if close else ""
    raise MedauditError(f"unknown model {name!r}.{hint} The registry has: "
                        + ", ".join(f"{k} ({v.checkpoint})" for k, v in REGISTRY.items()) + ".")


def _hub_reachable(timeout: float = 5.0) -> bool:
    """Whether a TCP connection to the Hugging Face hub (``HF_ENDPOINT``) opens.

    True without trying where a proxy is configured (a direct connection may fail where the
    proxy would succeed) or where the hub client is told to stay offline (it then fails fast
    with its own error)."""
    import socket
    from urllib.parse import urlsplit

    if any(os.environ.get(k) for k in ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy",
                                       "ALL_PROXY", "all_proxy")) or _told_offline():
        return True
    url = urlsplit(os.environ.get("HF_ENDPOINT") or "https://huggingface.co")
    host, port = url.hostname or "huggingface.co", url.port or (80 if url.scheme == "http" else 443)
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


def _told_offline() -> bool:
    """Whether the hub client is told to stay offline: ``HF_HUB_OFFLINE``, else
    ``TRANSFORMERS_OFFLINE``, read as huggingface_hub reads them (its ``constants``)."""
    value = os.environ.get("HF_HUB_OFFLINE") or os.environ.get("TRANSFORMERS_OFFLINE")
    return value is not None and value.upper() in ("1", "ON", "YES", "TRUE")


def _hub_repo(entry: CheckpointEntry) -> str | None:
    """The hub repository the entry's checkpoint is fetched from, where the entry names it
    (an open_clip architecture with a pretrained tag is resolved by open_clip itself)."""
    if entry.library == "open_clip":
        prefix = "hf-hub:"
        return entry.checkpoint[len(prefix):] if entry.checkpoint.startswith(prefix) else None
    # transformers reads a local folder named as the checkpoint before any hub repository
    return None if Path(entry.checkpoint).exists() else entry.checkpoint


def _not_in_hub_cache(repo: str) -> bool:
    """Whether the local Hugging Face cache holds nothing of ``repo`` (no folder for it at
    all), so that a load without the network cannot succeed.  False (the loader decides)
    where a transformers 4 cache variable may put the copy elsewhere."""
    if any(os.environ.get(k) for k in ("TRANSFORMERS_CACHE", "PYTORCH_TRANSFORMERS_CACHE",
                                       "PYTORCH_PRETRAINED_BERT_CACHE")):
        return False
    try:
        from huggingface_hub import constants
        from huggingface_hub.file_download import repo_folder_name
    except ImportError:  # no hub client: the loader fails on its own
        return False
    try:
        folder = Path(constants.HF_HUB_CACHE) / repo_folder_name(repo_id=repo, repo_type="model")
    except ValueError:  # not a repository id (HFValidationError): the loader says what it is
        return False
    return not folder.is_dir()


def _fetch_error(entry: CheckpointEntry, why: str) -> MedauditError:
    pinned = f"revision {entry.revision}" if entry.revision else "no pinned revision"
    return MedauditError(f"could not fetch {entry.checkpoint!r} ({pinned}) from its hub ({why}); "
                         "download it where you have network access and pass the local copy "
                         "with --weights (Python: weights=).")


@contextlib.contextmanager
def _hub_offline(offline: bool) -> Iterator[None]:
    """Within the block, the Hugging Face hub client is in its offline mode when ``offline``
    (``huggingface_hub.constants.HF_HUB_OFFLINE``, read at each request: local cache only)."""
    if not offline:
        yield
        return
    try:
        from huggingface_hub import constants
    except ImportError:  # no hub client: the loader fails on its own
        yield
        return
    before = constants.HF_HUB_OFFLINE
    constants.HF_HUB_OFFLINE = True
    try:
        yield
    finally:
        constants.HF_HUB_OFFLINE = before


def _checked_device(device: str) -> str:
    """``device`` when torch knows it and it is there, else one line saying what to give."""
    import torch

    try:
        parsed = torch.device(str(device))
    except (RuntimeError, ValueError, TypeError):
        raise MedauditError(f"device {device!r} is not a torch device; give cpu, cuda, cuda:N "
                            "or mps (default: cuda when a GPU is visible, else cpu).") from None
    kind, index = parsed.type, parsed.index
    if kind == "cuda" and not torch.cuda.is_available():
        raise MedauditError(f"device {device!r}: torch sees no CUDA GPU on this machine; use "
                            "--device cpu (Python: device='cpu').")
    if kind == "cuda" and index is not None and index >= torch.cuda.device_count():
        raise MedauditError(f"device {device!r}: this machine has {torch.cuda.device_count()} "
                            "CUDA GPU(s), numbered from 0; give one of them or --device cpu.")
    if kind == "mps" and not (getattr(torch.backends, "mps", None) is not None
                              and torch.backends.mps.is_available()):
        raise MedauditError(f"device {device!r}: MPS is not available on this machine; use "
                            "--device cpu (Python: device='cpu').")
    return str(device)


def default_device() -> str:
    """``"cuda"`` when a GPU is visible to torch, else ``"cpu"``."""
    import torch

    return "cuda" if torch.cuda.is_available() else "cpu"


def weights_digest(path: str | os.PathLike[str]) -> str:
    """``sha256:<hex>`` over a weights file, or over every file of a directory (sorted names)."""
    path = Path(path)
    files = sorted(p for p in path.rglob("*") if p.is_file()) if path.is_dir() else [path]
    h = hashlib.sha256()
    for p in files:
        h.update(str(p.relative_to(path) if path.is_dir() else p.name).encode("utf-8"))
        with open(p, "rb") as fh:
            for chunk in iter(lambda fh=fh: fh.read(1 << 20), b""):
                h.update(chunk)
    return "sha256:" + h.hexdigest()


def module_digest(model: Any) -> str | None:
    """``sha256:<hex>`` over a torch module's state dict (names, dtypes, shapes, bytes), or None.

    It names an injected model by its weights, so that two different models never share a
    cache namespace or a recorded revision.
    """
    state = getattr(model, "state_dict", None)
    if state is None:
        return None
    import torch

    h = hashlib.sha256()
    for key, t in sorted(state().items()):
        if not isinstance(t, torch.Tensor):
            continue
        t = t.detach().cpu().contiguous()
        h.update(f"{key}|{t.dtype}|{tuple(t.shape)}\n".encode())
        # raw bytes through a uint8 view: works for bf16, which numpy cannot hold
        h.update(t.reshape(-1).view(torch.uint8).numpy().tobytes())
    return "sha256:" + h.hexdigest()


def _features(out: Any) -> Any:
    """transformers 5 returns model outputs from ``get_*_features``; 4.x returned tensors."""
    import torch

    if isinstance(out, torch.Tensor):
        return out
    pooled = getattr(out, "pooler_output", None)
    if pooled is None:
        raise MedauditError(f"the model returned {type(out).__name__} without pooler_output; "
                            "cannot read its embedding.")
    return pooled


class ImageTextEncoder:
    """A frozen two-tower model behind one interface (embeddings are *not* normalised here).

    Use :func:`load_encoder` to build one.  ``encode_images`` takes RGB PIL images and
    ``encode_texts`` strings; both return float32 arrays of shape (n, d) and run without
    gradients in eval mode on ``device``.
    """

    def __init__(self, entry: CheckpointEntry, *, kind: Literal["open_clip", "hf"], model: Any,
                 preprocess: Any, tokenizer: Any, device: str, revision: str, checkpoint: str):
        self.entry, self.kind, self.model = entry, kind, model.eval().to(device)
        self.preprocess, self.tokenizer, self.device = preprocess, tokenizer, device
        self.revision, self.checkpoint = revision, checkpoint

    # -- provenance ------------------------------------------------------------------------
    @property
    def processor_id(self) -> str:
        """The entry's processor text plus a digest of the actual preprocessing settings."""
        if self.kind == "open_clip":
            # a function or lambda in a transform prints its memory address: not part of the key
            desc = re.sub(r" at 0x[0-9a-fA-F]+", "", repr(self.preprocess))
        else:
            desc = json.dumps(self.preprocess.to_dict(), sort_keys=True, default=str)
        tok = json.dumps({"tokenizer": type(self.tokenizer).__name__, **dict(self.entry.text_kwargs)},
                         sort_keys=True, default=str)
        digest = hashlib.sha256((desc + "\n" + tok).encode("utf-8")).hexdigest()[:16]
        return f"{self.entry.processor} [{digest}]"

    @property
    def learned_scale(self) -> float:
        """alpha_m = exp(logit_scale), the checkpoint's learned positive scale."""
        return float(np.exp(float(self.model.logit_scale.detach().reshape(-1)[0].cpu())))

    @property
    def logit_bias(self) -> float | None:
        """Additive bias (SigLIP); it cancels in the two-class softmax."""
        b = getattr(self.model, "logit_bias", None)
        return None if b is None else float(b.detach().reshape(-1)[0].cpu())

    # -- encoding --------------------------------------------------------------------------
    def encode_images(self, images: Sequence[Any]) -> NDArray[np.float32]:
        import torch

        with torch.inference_mode():
            if self.kind == "open_clip":
                x = torch.stack([self.preprocess(im) for im in images]).to(self.device)
                out = self.model.encode_image(x)
            else:
                px = self.preprocess(images=list(images), return_tensors="pt")["pixel_values"]
                out = _features(self.model.get_image_features(pixel_values=px.to(self.device)))
        return out.float().cpu().numpy()

    def encode_texts(self, texts: Sequence[str]) -> NDArray[np.float32]:
        import torch

        with torch.inference_mode():
            if self.kind == "open_clip":
                tokens = self.tokenizer(list(texts)).to(self.device)
                out = self.model.encode_text(tokens)
            else:
                kw = dict(self.entry.text_kwargs)
                enc = self.tokenizer(list(texts), return_tensors="pt", **kw)
                enc = {k: v.to(self.device) for k, v in enc.items()
                       if k in ("input_ids", "attention_mask", "position_ids")}
                out = _features(self.model.get_text_features(**enc))
        return out.float().cpu().numpy()


def load_encoder(name: str | CheckpointEntry, *, weights: str | os.PathLike[str] | None = None,
                 model: Any = None, preprocess: Any = None, tokenizer: Any = None,
                 revision: str | None = None, device: str | None = None) -> ImageTextEncoder:
    """Build the encoder of a registry entry.

    Parameters
    ----------
    name : str or CheckpointEntry
        Registry key (``openclip``, ``biomedclip``, ``medsiglip``, ``chexficient``) or an entry.
    weights : path, optional
        Local weights.  open_clip: a directory with ``open_clip_config.json`` (a hub
        snapshot; loaded with the ``local-dir:`` schema) or a checkpoint file for the
        entry's architecture.  transformers: a ``save_pretrained`` directory (model,
        image processor and tokenizer), read with ``local_files_only=True``.  The ModelCard
        then records ``revision = sha256:<digest of the files>``.
    model, preprocess, tokenizer : optional
        An already-built model with its image preprocessing (open_clip transform or
        transformers image processor) and tokenizer; all three are required together.
    revision : str, optional
        Only with ``model``: what the caller knows the injected weights to be.  Default:
        ``injected sha256:<digest of the state dict>`` (never the entry's pinned revision,
        which an injected model need not match; the revision is part of the cache key).
    device : str, optional
        Default: ``"cuda"`` when available, else ``"cpu"``.

    Without ``weights`` or ``model`` the checkpoint is fetched from its hub at the pinned
    revision (needs network access).
    """
    entry = name if isinstance(name, CheckpointEntry) else get_entry(name)
    kind: Literal["open_clip", "hf"] = "open_clip" if entry.library == "open_clip" else "hf"
    if model is not None:
        device = _checked_device(device) if device else default_device()
        if preprocess is None or tokenizer is None:
            raise MedauditError("load_encoder: an injected model needs preprocess= and tokenizer= "
                                "as well (the processor is part of the specification).")
        if revision is None:
            digest = module_digest(model)
            if digest is None:
                raise MedauditError("load_encoder: the injected model has no state_dict to name it "
                                    "by; pass revision= to record what it is.")
            revision = f"injected {digest}"
        return ImageTextEncoder(entry, kind=kind, model=model, preprocess=preprocess,
                                tokenizer=tokenizer, device=device, revision=str(revision),
                                checkpoint=f"{entry.checkpoint} (injected model)")
    if revision is not None:
        raise MedauditError("load_encoder: revision= applies to an injected model only; a loaded "
                            "checkpoint records its pinned revision or the digest of its files.")
    if weights is not None and not Path(weights).exists():
        raise FileNotFoundError(f"weights {str(weights)!r} do not exist; give a local snapshot "
                                f"directory or checkpoint file for {entry.name}.")
    loader = _load_open_clip if kind == "open_clip" else _load_transformers
    # an unreachable hub: its client would retry for about a minute, printing each retry,
    # before failing; told it is offline, it reads a copy it downloaded before (the local
    # Hugging Face cache of an offline compute node) or fails at once
    offline = weights is None and not _hub_reachable()
    repo = _hub_repo(entry) if weights is None else None
    if (offline or _told_offline()) and repo is not None and _not_in_hub_cache(repo):
        # nothing of the repository in the cache: say so now, before importing torch and
        # the model library (seconds) only for their loader to fail the same way
        told = "HF_HUB_OFFLINE" if os.environ.get("HF_HUB_OFFLINE") else "TRANSFORMERS_OFFLINE"
        cause = ("its hub is not reachable from this machine" if offline
                 else f"the hub client is set offline ({told})")
        raise _fetch_error(entry, f"{cause} and no copy is in the local Hugging Face cache")
    device = _checked_device(device) if device else default_device()
    try:
        with _hub_offline(offline):
            m, pre, tok, revision, checkpoint = loader(entry, weights)
    except MedauditError:
        raise
    except Exception as exc:  # noqa: BLE001 - any failure to load local weights is one line
        if weights is not None:
            first = (str(exc).strip().splitlines() or [""])[0][:300]
            raise MedauditError(f"weights {str(weights)!r} could not be loaded as {entry.name} "
                                f"({entry.library}, {entry.checkpoint}): {type(exc).__name__}: "
                                f"{first}. Give that model's snapshot directory or checkpoint "
                                "file.") from exc
        if not isinstance(exc, (OSError, RuntimeError, ValueError)):
            raise
        # the pinned hub download is the only step that needs the network: say what to do
        why = ("its hub is not reachable from this machine and no copy is in the local Hugging "
               "Face cache" if offline else f"{type(exc).__name__}; no network access?")
        raise _fetch_error(entry, why) from exc
    return ImageTextEncoder(entry, kind=kind, model=m, preprocess=pre, tokenizer=tok, device=device,
                            revision=revision, checkpoint=checkpoint)


def _load_open_clip(entry: CheckpointEntry, weights: str | os.PathLike[str] | None):
    import open_clip

    if weights is None:
        arch, tag = entry.checkpoint, entry.pretrained_tag
        model, _, pre = open_clip.create_model_and_transforms(arch, pretrained=tag)
        tok = open_clip.get_tokenizer(arch, **_ctx(entry))
        return model, pre, tok, entry.revision or "unrecorded", entry.checkpoint
    path = Path(weights)
    if path.is_dir():
        if not (path / "open_clip_config.json").exists():
            raise MedauditError(f"{path}: an open_clip snapshot directory needs "
                                "open_clip_config.json (as on the hub); none found.")
        src = f"local-dir:{path}"
        model, _, pre = open_clip.create_model_and_transforms(src)
        tok = open_clip.get_tokenizer(src)
    else:
        model, _, pre = open_clip.create_model_and_transforms(entry.checkpoint, pretrained=str(path))
        tok = open_clip.get_tokenizer(entry.checkpoint, **_ctx(entry))
    return model, pre, tok, weights_digest(path), f"{entry.checkpoint} (local: {path.name})"


def _ctx(entry: CheckpointEntry) -> dict[str, Any]:
    n = entry.text_kwargs.get("context_length")
    return {} if n is None else {"context_length": int(n)}


def _load_transformers(entry: CheckpointEntry, weights: str | os.PathLike[str] | None):
    from transformers import AutoImageProcessor, AutoModel, AutoTokenizer

    local = weights is not None
    src = str(weights) if local else entry.checkpoint
    kw: dict[str, Any] = {"trust_remote_code": entry.trust_remote_code}
    if local:
        kw["local_files_only"] = True
    else:
        kw["revision"] = entry.revision
    model = AutoModel.from_pretrained(src, **kw)
    # the PIL backend reproduces the paper's "AutoProcessor with the PIL resize" (M0.4)
    pre = AutoImageProcessor.from_pretrained(src, backend="pil", **kw)
    tok = AutoTokenizer.from_pretrained(src, **kw)
    for attr in ("get_image_features", "get_text_features", "logit_scale"):
        if not hasattr(model, attr):
            raise MedauditError(f"{entry.name}: the loaded model ({type(model).__name__}) has no "
                                f"{attr!r}; it is not a two-tower image-text model.")
    if local:
        return model, pre, tok, weights_digest(weights), f"{entry.checkpoint} (local: {Path(src).name})"
    return model, pre, tok, entry.revision or "unrecorded", entry.checkpoint

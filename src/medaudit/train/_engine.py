"""Torch plumbing of the supervised trainer: device, determinism, model, loaders, RNG, atomic saves.

torch and torchvision are imported inside the functions, so importing this module is cheap.
"""

from __future__ import annotations

import contextlib
import os
import platform
import random
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd

from medaudit._versions import versions as _versions
from medaudit.exceptions import MedauditError
from medaudit.io.output import file_sha256
from medaudit.train.data import ImageDataset, eval_transform, seed_worker, train_transform

__all__ = ["Env", "make_env", "torch_session", "build_model", "atomic_write", "atomic_torch_save"]

#: the fixed generator of evaluation loaders: they must not consume the global torch stream
_EVAL_LOADER_SEED = 0


@dataclass(frozen=True)
class Env:
    """Where and how training runs (all of it recorded in the model card and training.json)."""

    device: str  # "cpu" or "cuda"
    device_name: str
    autocast: bool
    autocast_note: str
    deterministic_note: str
    threads: int
    channels_last: bool
    initial_weights: dict[str, Any]
    initial_state: dict[str, Any] | None


def versions() -> dict[str, str]:
    """Versions of everything that can move a trained model's scores."""
    return _versions("torch", "torchvision", "numpy", "pandas", "scipy", "PIL")


def make_env(spec, base_dir: Path) -> Env:
    """Resolve the device, autocast, determinism and initial weights of a spec."""
    import torch

    if spec.device == "cuda" and not torch.cuda.is_available():
        raise MedauditError("device: 'cuda' was requested but torch sees no CUDA device; use "
                            "device: auto or cpu.")
    device = "cuda" if spec.device == "cuda" or (spec.device == "auto"
                                                  and torch.cuda.is_available()) else "cpu"
    if device == "cuda":
        name = f"cuda:{torch.cuda.current_device()} {torch.cuda.get_device_name()}"
        bf16 = bool(torch.cuda.is_bf16_supported())
        autocast = spec.autocast == "auto" and bf16
        note = ("bf16" if autocast else
                "off (spec autocast: off)" if spec.autocast == "off" else "off (no bf16 on device)")
        # some CUDA kernels (adaptive pooling backward) have no deterministic version: warn
        det = "cuda: deterministic algorithms requested with warn_only=True; cudnn.benchmark off"
    else:
        name, autocast = f"cpu ({platform.processor() or platform.machine()})", False
        note = "off (cpu: BF16 autocast is used on CUDA devices only)"
        det = "cpu: torch.use_deterministic_algorithms(True)"
    threads = spec.num_threads or torch.get_num_threads()
    if spec.initial_weights is None:
        weights = {"kind": "random", "description": "random initialisation (torchvision default "
                   "init after torch.manual_seed(optimisation seed)); no pretrained weights"}
        state = None
    else:
        path = Path(spec.initial_weights)
        path = path if path.is_absolute() else base_dir / path
        if not path.is_file():
            raise FileNotFoundError(f"initial_weights {str(path)!r} does not exist; give a local "
                                    "state-dict file (pretrained weights cannot be downloaded here).")
        sha = file_sha256(path)
        state = torch.load(path, map_location="cpu", weights_only=True)
        if isinstance(state, dict) and "state_dict" in state and isinstance(state["state_dict"], dict):
            state = state["state_dict"]
        if not isinstance(state, dict):
            raise MedauditError(f"initial_weights {str(path)!r} holds a {type(state).__name__}, "
                                "not a state dict of tensors.")
        weights = {"kind": "file", "path": str(path), "sha256": sha,
                   "description": f"backbone from {path.name} (sha256 {sha[:16]}...); fc "
                                  "Linear(2048, 1) initialised from the optimisation seed"}
        build_model(state)  # refuse a file that does not fit now, not after the first seed
    return Env(device=device, device_name=name, autocast=autocast, autocast_note=note,
               deterministic_note=det, threads=int(threads), channels_last=device == "cuda",
               initial_weights=weights, initial_state=state)


def build_model(initial_state: dict[str, Any] | None = None):
    """torchvision ResNet-50 with ``fc = Linear(2048, 1)``; optionally a loaded backbone.

    The head is always freshly initialised (it consumes the seeded torch stream), so
    seeds differ in the head even with shared pretrained weights.
    """
    import torch
    from torchvision.models import resnet50

    model = resnet50(weights=None)
    model.fc = torch.nn.Linear(model.fc.in_features, 1)
    if initial_state is not None:
        backbone = {k: v for k, v in initial_state.items() if not k.startswith("fc.")}
        try:
            res = model.load_state_dict(backbone, strict=False)
        except RuntimeError as exc:  # shape mismatches raise even with strict=False
            raise MedauditError("initial_weights do not fit torchvision's ResNet-50: "
                                f"{str(exc).splitlines()[1].strip()} ...") from None
        missing = [k for k in res.missing_keys if not k.startswith("fc.")]
        if missing or res.unexpected_keys:
            raise MedauditError(f"initial_weights do not fit torchvision's ResNet-50: missing "
                                f"{missing[:5]}, unexpected {list(res.unexpected_keys)[:5]}.")
    return model


def to_device(model, env: Env):
    import torch

    model = model.to(env.device)
    if env.channels_last:
        model = model.to(memory_format=torch.channels_last)
    return model


def move(x, env: Env):
    import torch

    if env.channels_last:
        return x.to(env.device, non_blocking=True, memory_format=torch.channels_last)
    return x.to(env.device)


def _features(m, x):
    x = m.maxpool(m.relu(m.bn1(m.conv1(x))))
    x = m.layer4(m.layer3(m.layer2(m.layer1(x))))
    return m.avgpool(x).flatten(1)


def forward(model, x, env: Env):
    """Logits: the backbone under autocast, the 2048 -> 1 head in float32.

    Keeping the head out of BF16 avoids quantising every score to BF16's 8-bit mantissa
    (which would create artificial ties in the AUROC).
    """
    import torch

    with torch.autocast(device_type=env.device, dtype=torch.bfloat16, enabled=env.autocast):
        f = _features(model, x)
    return model.fc(f.float())


def _constant(epoch: int) -> float:
    return 1.0


def make_scheduler(opt, kind: str, max_epochs: int):
    """Per-epoch learning-rate schedule: constant (paper 000) or cosine to 0 over max_epochs."""
    import torch

    if kind == "cosine":
        return torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=max_epochs)
    return torch.optim.lr_scheduler.LambdaLR(opt, _constant)


def train_loader(frame: pd.DataFrame, spec, generator):
    """Shuffled optimisation loader; its order and worker seeds come from ``generator``."""
    from torch.utils.data import DataLoader

    ds = ImageDataset(frame["path"], frame["label"], train_transform(spec.image_size))
    return DataLoader(ds, batch_size=spec.batch_size, shuffle=True, generator=generator,
                      num_workers=spec.num_workers, worker_init_fn=seed_worker,
                      pin_memory=spec.device != "cpu" and _cuda(), drop_last=False)


def _cuda() -> bool:
    import torch

    return torch.cuda.is_available()


def predict(model, frame: pd.DataFrame, spec, env: Env) -> np.ndarray:
    """Probabilities ``expit(logit)`` (float64 from the float32 logit) in ``frame`` order."""
    import torch
    from scipy.special import expit
    from torch.utils.data import DataLoader

    ds = ImageDataset(frame["path"], frame["label"], eval_transform(spec.image_size, spec.resize))
    gen = torch.Generator()
    gen.manual_seed(_EVAL_LOADER_SEED)
    loader = DataLoader(ds, batch_size=spec.eval_batch_size, shuffle=False, generator=gen,
                        num_workers=spec.num_workers, worker_init_fn=seed_worker)
    model.eval()
    out = []
    with torch.inference_mode():
        for x, _, _ in loader:
            out.append(forward(model, move(x, env), env).float().cpu().numpy()[:, 0])
    logits = np.concatenate(out).astype(np.float64)
    return expit(logits)


def bce(y: np.ndarray, p: np.ndarray) -> float:
    """Unweighted mean binary cross-entropy of probabilities (monitoring only).

    Computed from the logit ``log(p / (1 - p))`` with ``logaddexp`` so a saturated
    probability gives a large finite loss rather than ``inf``.
    """
    with np.errstate(divide="ignore"):
        z = np.log(p) - np.log1p(-p)
    z = np.nan_to_num(z, posinf=745.0, neginf=-745.0)
    return float(np.mean(np.where(y == 1, np.logaddexp(0.0, -z), np.logaddexp(0.0, z))))


def cpu_state(model) -> dict[str, Any]:
    return {k: v.detach().to("cpu", copy=True) for k, v in model.state_dict().items()}


@contextlib.contextmanager
def torch_session(seed: int, env: Env) -> Iterator[None]:
    """Seed torch/numpy/python for one optimisation seed and switch on determinism.

    Every global it touches (RNG states, deterministic-algorithm flags, cudnn flags,
    thread count) is restored on exit, so a caller's process is left as it was.
    """
    import torch

    saved = {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),  # noqa: NPY002 - the legacy global stream is state we save/restore
             "python": random.getstate(), "det": torch.are_deterministic_algorithms_enabled(),
             "det_warn": torch.is_deterministic_algorithms_warn_only_enabled(),
             "bench": torch.backends.cudnn.benchmark, "cudnn_det": torch.backends.cudnn.deterministic,
             "threads": torch.get_num_threads(),
             "cuda": torch.cuda.get_rng_state_all() if env.device == "cuda" else None}
    try:
        if env.device == "cuda":
            os.environ.setdefault("CUBLAS_WORKSPACE_CONFIG", ":4096:8")
        torch.manual_seed(int(seed))
        np.random.seed(int(seed) % 2**32)  # noqa: NPY002 - the legacy global stream is state we save/restore
        random.seed(int(seed))
        torch.use_deterministic_algorithms(True, warn_only=env.device == "cuda")
        torch.backends.cudnn.benchmark = False
        torch.backends.cudnn.deterministic = True
        torch.set_num_threads(env.threads)
        yield
    finally:
        torch.set_rng_state(saved["torch"])
        np.random.set_state(saved["numpy"])  # noqa: NPY002 - the legacy global stream is state we save/restore
        random.setstate(saved["python"])
        torch.use_deterministic_algorithms(saved["det"], warn_only=saved["det_warn"])
        torch.backends.cudnn.benchmark = saved["bench"]
        torch.backends.cudnn.deterministic = saved["cudnn_det"]
        torch.set_num_threads(saved["threads"])
        if saved["cuda"] is not None:
            torch.cuda.set_rng_state_all(saved["cuda"])


def get_rng_state(generator) -> dict[str, Any]:
    """Every random stream the next epoch draws from (checkpointed with the model)."""
    import torch

    return {"torch": torch.get_rng_state(), "numpy": np.random.get_state(),  # noqa: NPY002 - the legacy global stream is state we save/restore
            "python": random.getstate(), "loader": generator.get_state(),
            "cuda": torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None}


def set_rng_state(state: dict[str, Any], generator) -> None:
    import torch

    torch.set_rng_state(state["torch"])
    np.random.set_state(state["numpy"])  # noqa: NPY002 - the legacy global stream is state we save/restore
    random.setstate(state["python"])
    generator.set_state(state["loader"])
    if state.get("cuda") is not None and torch.cuda.is_available():
        torch.cuda.set_rng_state_all(state["cuda"])


def atomic_write(path: str | os.PathLike[str], writer: Callable[[Path], Any]) -> None:
    """Call ``writer(tmp)`` on a temporary sibling of ``path``, then rename it into place."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(f".{path.name}.tmp-{os.getpid()}")
    try:
        writer(tmp)
        os.replace(tmp, path)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise


def atomic_torch_save(path: str | os.PathLike[str], obj: Any) -> None:
    import torch

    atomic_write(path, lambda p: torch.save(obj, p))

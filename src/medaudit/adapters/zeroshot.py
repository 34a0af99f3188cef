"""Zero-shot TB scores from image-text checkpoints (methods.md M0.6, traps T6/T7 of anchors.md).

For checkpoint m, prompt family p and image x:

* ``v`` = unit image embedding, ``u(t)`` = unit text embedding;
* class prototype ``q_c`` = mean of the unit text embeddings of class c, renormalised;
* score ``s = exp(a v.q1) / (exp(a v.q0) + exp(a v.q1)) = sigmoid(a v.(q1 - q0))`` with
  the checkpoint's learned scale ``a = exp(logit_scale)``.  An additive logit bias (SigLIP)
  appears in both exponents and cancels, so it is never used.

Images are encoded once per model and the embeddings reused by every family; with an
:class:`~medaudit.adapters.cache.EmbeddingCache` they are also reused across runs.
The equal-weight average of family *scores* (M0.6 step 7) is :func:`family_average`; it
is not an average of text embeddings (that is what the Clinical family does inside).
"""

from __future__ import annotations

import hashlib
import io
import json
import os
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np
import pandas as pd
from numpy.typing import ArrayLike, NDArray
from scipy.special import expit

from medaudit._versions import versions
from medaudit.adapters.cache import EmbeddingCache, bytes_sha256
from medaudit.adapters.prompts import PAPER000_FAMILIES, PAPER000_VERSION, PromptFamily
from medaudit.exceptions import MedauditError, SchemaError
from medaudit.io.modelcard import ModelCard
from medaudit.io.schema import binary_labels, require_columns, row_places, text_columns

__all__ = ["open_rgb", "check_manifest", "unit_rows", "class_prototype", "two_class_score",
           "family_prototypes", "family_average", "read_manifest", "score_manifest", "ScoringResult",
           "SCORE_RULE"]

SCORE_RULE = ("two-class softmax sigmoid(alpha * v.(q1 - q0)) with alpha = exp(logit_scale); "
              "v unit image embedding; q_c = renormalised mean of unit text embeddings of class c; "
              "logit bias (if any) cancels (methods.md M0.6)")
MANIFEST_COLUMNS = ("image_id", "path", "cohort", "label")
_CARRIED = ("negative_group", "patient_id", "split")


def unit_rows(x: ArrayLike, *, name: str = "embeddings") -> NDArray[np.float64]:
    """Rows of ``x`` divided by their L2 norm, in float64; a zero or non-finite row raises."""
    a = np.asarray(x, dtype=np.float64)
    if a.ndim != 2:
        raise MedauditError(f"{name} must be 2-D (n, d); got shape {a.shape}.")
    norms = np.linalg.norm(a, axis=1, keepdims=True)
    bad = ~np.isfinite(norms[:, 0]) | (norms[:, 0] == 0)
    if bad.any():
        raise MedauditError(f"{name}: row(s) {np.flatnonzero(bad)[:5].tolist()} have zero or "
                            "non-finite norm; the encoder produced an unusable embedding.")
    return a / norms


def class_prototype(text_embeddings: ArrayLike) -> NDArray[np.float64]:
    """Eq. 2: the mean of the unit text embeddings of one class, renormalised to unit length."""
    z = unit_rows(text_embeddings, name="text_embeddings").mean(axis=0)
    n = np.linalg.norm(z)
    if not np.isfinite(n) or n == 0:
        raise MedauditError("the class's unit text embeddings average to zero; no prototype exists.")
    return z / n


def two_class_score(image_embeddings: ArrayLike, q_pos: ArrayLike, q_neg: ArrayLike, *,
                    scale: float) -> NDArray[np.float64]:
    """Eq. 3: ``sigmoid(scale * v.(q_pos - q_neg))`` for every (unit-normalised) image row.

    Written as a sigmoid of the logit difference for numerical stability; it equals the
    two-class softmax of ``scale * v.q`` (and of ``scale * v.q + bias`` for any bias).
    """
    if not np.isfinite(scale) or scale <= 0:
        raise MedauditError(f"scale must be a positive finite learned scale; got {scale!r}.")
    v = unit_rows(image_embeddings, name="image_embeddings")
    diff = np.asarray(q_pos, dtype=np.float64) - np.asarray(q_neg, dtype=np.float64)
    return expit(scale * (v @ diff))


def family_prototypes(encode_texts: Callable[[Sequence[str]], ArrayLike],
                      families: Sequence[PromptFamily]) -> dict[str, tuple[NDArray, NDArray]]:
    """``{family: (q_pos, q_neg)}``; every text of every family is encoded in one call."""
    texts = [t for f in families for t in (*f.positive, *f.negative)]
    emb = np.asarray(encode_texts(texts))
    if emb.ndim != 2 or emb.shape[0] != len(texts):
        raise MedauditError(f"text encoder returned shape {emb.shape} for {len(texts)} texts.")
    out, i = {}, 0
    for f in families:
        n1, n0 = len(f.positive), len(f.negative)
        out[f.name] = (class_prototype(emb[i:i + n1]), class_prototype(emb[i + n1:i + n1 + n0]))
        i += n1 + n0
    return out


def family_average(scores: pd.DataFrame, *, families: Sequence[str] | None = None,
                   name: str = "average") -> pd.DataFrame:
    """Equal-weight mean of family scores per (model, cohort, image): M0.6 step 7.

    Every image must have exactly one score under every family, and its other columns
    (label, carried columns) must agree across families; otherwise this raises (a mean
    over fewer or repeated families would not be the declared estimand).  Rows come out
    in the order of the images' first appearance.
    """
    keys = ["model", "cohort", "image_id"]
    missing = [c for c in (*keys, "prompt", "score") if c not in scores.columns]
    if missing:
        raise SchemaError(f"family_average: scores lack column(s) {missing}.")
    fams = list(dict.fromkeys(scores["prompt"])) if families is None else list(families)
    if not fams or len(set(fams)) != len(fams):
        raise MedauditError(f"family_average: families must be distinct and non-empty; got {fams}.")
    if name in set(scores["prompt"]):
        raise MedauditError(f"family_average: name {name!r} is already a prompt of the table; "
                            "choose another name for the average.")
    sub = scores[scores["prompt"].isin(fams)]
    dup = sub.duplicated([*keys, "prompt"], keep=False).to_numpy()
    if dup.any():
        raise SchemaError(f"family_average: (model, cohort, image_id, prompt) repeats at "
                          f"{row_places(sub, dup)}; keep one score per image and family.")
    wide = sub.pivot(index=keys, columns="prompt", values="score")
    lacking = wide.reindex(columns=fams).isna().any(axis=1)
    if lacking.any():
        raise SchemaError(f"family_average: {int(lacking.sum())} image(s) lack a score for one of "
                          f"{fams}, e.g. {lacking[lacking].index[0]}; the equal-weight average "
                          "needs every family for every image.")
    meta_cols = [c for c in scores.columns if c not in ("prompt", "score")]
    n_meta = sub[meta_cols].astype(str).drop_duplicates().shape[0]
    meta = sub.drop_duplicates(keys)[meta_cols]
    if n_meta != len(meta):
        raise SchemaError("family_average: an image's other columns (label, carried columns) "
                          "differ between families; the families do not score the same images.")
    # plain arithmetic mean of the family probabilities, weights 1/len(fams)
    avg = wide[fams].mean(axis=1).rename("score").reset_index()
    out = meta.merge(avg, on=keys, how="left", validate="one_to_one", sort=False)
    out["prompt"] = name
    return out[list(scores.columns)].reset_index(drop=True)


def read_manifest(path: str | os.PathLike[str]) -> pd.DataFrame:
    """Read a scoring manifest CSV (``image_id, path, cohort, label`` + optional columns)."""
    from medaudit.io.tables import read_table

    df = read_table(path, what="manifest", dtype={"image_id": str, "path": str, "cohort": str},
                    na_values=[])
    return check_manifest(df, source=str(path))


def check_manifest(df: pd.DataFrame, *, source: str) -> pd.DataFrame:
    """Validated copy of a scoring manifest (text keys, label 0/1, one row per cohort image).

    A manifest written by ``medaudit manifest`` names its cohort in the column ``dataset``:
    without a ``cohort`` column, that one is the cohort.
    """
    if "cohort" not in df.columns and "dataset" in df.columns:
        df = df.assign(cohort=df["dataset"])
    require_columns(df, MANIFEST_COLUMNS, source=source, what="scoring manifest",
                    optional=_CARRIED, noun="manifest")
    t = text_columns(df, ("image_id", "path", "cohort"), source=source)
    t["label"] = binary_labels(t, source=source, positive="TB")
    dup = t.duplicated(["cohort", "image_id"], keep=False).to_numpy()
    if dup.any():
        raise SchemaError(f"{source}: (cohort, image_id) repeats at {row_places(df, dup)}; keep "
                          "one row per image.")
    # carried into the ScoreTable, whose patient_id and split may not be empty: a column
    # left empty throughout (a dataset without patient ids: `medaudit manifest kermany`)
    # records nothing and is not carried; one empty in places is refused here, before
    # any image is read, not after every image is encoded
    for c in ("patient_id", "split"):
        if c in t.columns:
            empty = (t[c].isna() | (t[c].astype(str).str.strip() == "")).to_numpy()
            if empty.all():
                t = t.drop(columns=c)
            elif empty.any():
                raise SchemaError(f"{source}: column {c!r} is empty at {row_places(df, empty)}; "
                                  f"fill it on every row or leave the whole column empty (it is "
                                  "carried into the scores, where every row needs a value).")
    return t


@dataclass(frozen=True, slots=True, kw_only=True)
class ScoringResult:
    """What :func:`score_manifest` produced.

    Attributes
    ----------
    scores : DataFrame
        ScoreTable rows ``image_id, cohort, model, prompt, score, label`` (+ carried columns).
    card : ModelCard
        Checkpoint, revision, processor, score rule, learned scale, library versions.
    failures : DataFrame
        ``row, image_id, cohort, path, error`` for every image that could not be scored.
    n_images, n_encoded, n_cached : int
        Manifest rows, images encoded in this run, distinct images read from the cache.
    batch_size : int
        Images per forward pass.  Recorded because float32 kernels may round differently
        for different batch shapes (relative differences near 1e-7): outputs are
        byte-identical for the same inputs, batch size, device and library versions
        (embeddings read from a cache keep the rounding of the run that computed them).
    device : str
    """

    scores: pd.DataFrame
    card: ModelCard
    failures: pd.DataFrame
    n_images: int
    n_encoded: int
    n_cached: int
    batch_size: int
    device: str

    def to_dict(self) -> dict[str, Any]:
        return {"card": self.card.model_dump(mode="json"), "n_images": self.n_images,
                "n_scored": int(self.scores["image_id"].nunique()) if len(self.scores) else 0,
                "n_failed": len(self.failures), "n_encoded": self.n_encoded,
                "n_cached": self.n_cached, "batch_size": self.batch_size, "device": self.device,
                "failures": self.failures.to_dict("records")}


def _library_versions(kind: str) -> dict[str, str]:
    out = versions("numpy", "scipy", "torch", ("Pillow", "PIL"),
                   "open_clip" if kind == "open_clip" else "transformers")
    out.pop("python")  # a model card records the libraries, as it always has
    return out


def _no_address(text: str) -> str:
    """Drop object addresses (``<... at 0x7f...>``) so failure tables are identical across runs."""
    import re

    return re.sub(r" at 0x[0-9a-fA-F]+", "", text)


def open_rgb(path: Path | io.BytesIO) -> Any:
    """The image at ``path`` (or in a bytes buffer) as RGB (M0.3: before the checkpoint's
    processor); images of more than 8 bits by :func:`medaudit.imaging.pixels.to_8bit`."""
    from PIL import Image

    from medaudit.imaging.pixels import to_rgb

    with Image.open(path) as im:
        im.load()
        # not im.convert("RGB"): that clips a 16-bit X-ray at 255 (almost all white)
        return to_rgb(im)


def _open_hashed(path: Path, digest: str) -> Any:
    """Decode the very bytes whose SHA-256 keys the cache: a file changed since it was hashed fails."""
    data = path.read_bytes()
    if bytes_sha256(data) != digest:
        raise MedauditError("the file changed while the run was reading it (SHA-256 differs from "
                            "the first read); rerun once it is stable")
    return open_rgb(io.BytesIO(data))


def _prompt_record(fams: tuple[PromptFamily, ...]) -> str:
    """How the ModelCard names the prompts: Table 3 version + families, or a digest of the texts."""
    names = [f.name for f in fams]
    if all(f in PAPER000_FAMILIES for f in fams):
        return f"prompts {PAPER000_VERSION} {names}"
    raw = json.dumps([f.to_dict() for f in fams], sort_keys=True).encode("utf-8")
    return f"custom prompts {names} sha256:{hashlib.sha256(raw).hexdigest()}"


def score_manifest(manifest: pd.DataFrame, encoder: Any, *, base_dir: str | os.PathLike[str] = ".",
                   families: Iterable[PromptFamily] = PAPER000_FAMILIES, batch_size: int = 32,
                   cache: EmbeddingCache | str | os.PathLike[str] | None = None,
                   model_name: str | None = None,
                   progress: Callable[[int, int], None] | None = None) -> ScoringResult:
    """Score every manifest image under every prompt family with one encoder.

    Parameters
    ----------
    manifest : DataFrame
        ``image_id, path, cohort, label`` (+ optional ``negative_group, patient_id, split``,
        carried into the ScoreTable).  Relative paths are resolved against ``base_dir``.
    encoder : ImageTextEncoder
        From :func:`medaudit.adapters.load_encoder` (anything with ``encode_images``,
        ``encode_texts``, ``learned_scale``, ``entry``, ``revision``, ``checkpoint``,
        ``processor_id`` and ``kind``).
    families : iterable of PromptFamily, default=the five of paper 000 Table 3
    batch_size : int, default=32
        Images per forward pass (and per cache shard).
    cache : EmbeddingCache or path, optional
        Reuse embeddings across runs; each finished batch is stored atomically.
    model_name : str, optional
        The ``model`` column; default the registry name.
    progress : callable(done, total), optional
        Called after every encoded batch with the number of images to encode.

    Returns
    -------
    ScoringResult
        Unreadable or missing images are listed in ``failures`` and left out of the scores;
        all other images are scored.  If no image can be read this raises.
    """
    if int(batch_size) < 1:
        raise MedauditError(f"batch_size must be a positive integer; got {batch_size!r}.")
    fams = tuple(families)
    if not fams:
        raise MedauditError("families is empty; give at least one prompt family.")
    m = check_manifest(manifest, source="manifest")
    base = Path(base_dir)
    name = model_name or encoder.entry.name
    namespace = {"model": encoder.entry.name, "revision": encoder.revision,
                 "processor": encoder.processor_id}
    if isinstance(cache, (str, os.PathLike)):
        cache = EmbeddingCache(cache, **namespace)
    elif cache is not None:
        got = {k: cache.namespace.get(k) for k in namespace}
        if got != namespace:
            raise MedauditError(f"the embedding cache is keyed {got} but the encoder is {namespace}; "
                                "its rows are another model's embeddings.  Pass the cache directory "
                                "instead and the right namespace is chosen.")

    # 1. hash every file (the cache key); a missing file is a failure, not an abort
    failures: list[dict[str, Any]] = []
    digests: list[str | None] = []
    for i, (iid, coh, p) in enumerate(zip(m["image_id"], m["cohort"], m["path"], strict=True)):
        path = Path(p) if Path(p).is_absolute() else base / p
        try:
            digests.append(bytes_sha256(path.read_bytes()))
        except OSError as exc:
            digests.append(None)
            failures.append({"row": i, "image_id": iid, "cohort": coh, "path": str(path),
                             "error": f"cannot read file: {exc.strerror or exc}"})
    known = {} if cache is None else None
    todo = list(dict.fromkeys(d for d in digests if d is not None and (cache is None or d not in cache)))
    n_cached = len({d for d in digests if d is not None}) - len(todo)
    first_row = {d: i for i, d in reversed(list(enumerate(digests))) if d is not None}

    # 2. encode the images not cached, batch by batch (each batch = one atomic shard)
    undecodable: set[str] = set()
    n_encoded = 0
    for start in range(0, len(todo), int(batch_size)):
        chunk, images = [], []
        for d in todo[start:start + int(batch_size)]:
            i = first_row[d]
            p = m["path"].iloc[i]
            path = Path(p) if Path(p).is_absolute() else base / p
            try:
                images.append(_open_hashed(path, d))
                chunk.append(d)
            except Exception as exc:  # noqa: BLE001 - any decoder error is reported per image
                undecodable.add(d)
                failures.extend({"row": j, "image_id": m["image_id"].iloc[j],
                                 "cohort": m["cohort"].iloc[j], "path": str(path),
                                 "error": "cannot decode image: "
                                 + _no_address(f"{type(exc).__name__}: {exc}")}
                                for j, dj in enumerate(digests) if dj == d)
        if images:
            emb = np.asarray(encoder.encode_images(images), dtype=np.float32)
            if emb.shape[0] != len(images):
                raise MedauditError(f"image encoder returned {emb.shape[0]} rows for {len(images)} "
                                    "images.")
            n_encoded += len(images)
            if cache is not None:
                cache.put(chunk, emb)
            else:
                known.update(zip(chunk, emb, strict=True))
        if progress is not None:
            progress(min(start + int(batch_size), len(todo)), len(todo))

    ok = np.array([d is not None and d not in undecodable for d in digests])
    if not ok.any():
        raise MedauditError(f"none of the {len(m)} manifest images could be read; first failure: "
                            f"{failures[0]['path']}: {failures[0]['error']}")
    good = [d for d in digests if d is not None and d not in undecodable]
    emb_all = cache.get(good) if cache is not None else np.stack([known[d] for d in good])

    # 3. one image encoding, every family (M0.6 step 6)
    protos = family_prototypes(encoder.encode_texts, fams)
    scale = float(encoder.learned_scale)
    v = unit_rows(emb_all, name="image_embeddings")
    kept = m.loc[ok].reset_index(drop=True)
    carried = [c for c in _CARRIED if c in kept.columns]
    frames = []
    for f in fams:
        q1, q0 = protos[f.name]
        frames.append(pd.DataFrame({
            "image_id": kept["image_id"], "cohort": kept["cohort"], "model": name,
            "prompt": f.name, "score": two_class_score(v, q1, q0, scale=scale),
            "label": kept["label"], **{c: kept[c] for c in carried}}))
    scores = pd.concat(frames, ignore_index=True)
    fail = pd.DataFrame(failures, columns=["row", "image_id", "cohort", "path", "error"])
    fail = fail.sort_values("row", kind="stable").reset_index(drop=True)
    card = ModelCard(name=name, checkpoint=encoder.checkpoint, revision=encoder.revision,
                     processor=encoder.processor_id,
                     score_rule=f"{SCORE_RULE}; {_prompt_record(fams)}",
                     learned_scale=scale, library_versions=_library_versions(encoder.kind),
                     exposure=dict(encoder.entry.exposure))
    return ScoringResult(scores=scores, card=card, failures=fail, n_images=len(m),
                         n_encoded=n_encoded, n_cached=n_cached, batch_size=int(batch_size),
                         device=str(getattr(encoder, "device", "unknown")))

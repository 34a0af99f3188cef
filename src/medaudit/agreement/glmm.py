"""Hierarchical GLMM of paper 002 (M2.4 item 5) in NumPyro, fitted to many pools at once.

Model, on the pool aggregated to cells ``j = (d, k, r)``::

    y_j ~ Binomial(n_j, expit(eta_j)),  eta_j = b0 + b_r 1{r = present} + u_k + v_d + w_{d,k}
    b0, b_r ~ Normal(0, 2.5);  u ~ N(0, s_k), v ~ N(0, s_d), w ~ N(0, s_dk);  s ~ HalfNormal(1)

(centred parametrisation).  SVI with an ``AutoNormal`` guide, ``Adam(0.02)``, Trace_ELBO,
3,000 steps; the plug-in prediction uses the guide's constrained medians, and a level
unseen in the pool contributes 0.

Speed: every design fits hundreds of pools of at most ``2 * D * K`` cells, so pools are
padded to one fixed shape (levels indexed by their global codes, unseen levels masked
out of the model, padding cells with ``n = 0``) and fitted in fixed-size ``vmap`` chunks
under one ``jit``.  A pool's fit depends only on its data, its seed and the padded
shape, not on which other pools share its chunk.  numpyro and jax are imported lazily
(optional extra ``medaudit[glmm]``); JAX computes in float32 (recorded).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from numpy.typing import NDArray

from medaudit.agreement._base import Estimator, Pool, codes, expit
from medaudit.exceptions import MedauditError

__all__ = ["GLMM", "fit_glmm_batch", "CHUNK"]

#: pools per vmap chunk (fixed so that results do not depend on the batch composition)
CHUNK = 32
_COMPILED: dict[tuple, Any] = {}


def _import() -> tuple[Any, ...]:
    try:
        import jax
        import numpyro
    except ImportError as exc:  # pragma: no cover - depends on the environment
        raise MedauditError(
            "the glmm estimator needs numpyro and jax (pip install 'medaudit[glmm]'), or drop "
            "`glmm` from `agreement.estimators` / set `agreement.glmm: false`.") from exc
    return jax, numpyro


def _runner(D: int, K: int, n_steps: int, step_size: float) -> Any:
    """The jitted, vmapped SVI fit for pools padded to ``D`` institutions and ``K`` findings."""
    key = (D, K, n_steps, step_size)
    if key in _COMPILED:
        return _COMPILED[key]
    jax, numpyro = _import()
    import jax.numpy as jnp
    import numpyro.distributions as dist
    from numpyro import handlers
    from numpyro.infer import SVI, Trace_ELBO
    from numpyro.infer.autoguide import AutoNormal
    from numpyro.optim import Adam

    C = 2 * D * K

    def model(y, n, r, k, d, mk, md, mdk):
        b0 = numpyro.sample("b0", dist.Normal(0.0, 2.5))
        br = numpyro.sample("b_r", dist.Normal(0.0, 2.5))
        sk = numpyro.sample("sigma_k", dist.HalfNormal(1.0))
        sd = numpyro.sample("sigma_d", dist.HalfNormal(1.0))
        sdk = numpyro.sample("sigma_dk", dist.HalfNormal(1.0))
        # masked slots are levels absent from the pool: they leave the likelihood and prior
        with numpyro.plate("finding", K), handlers.mask(mask=mk):
            u = numpyro.sample("u", dist.Normal(0.0, sk))
        with numpyro.plate("institution", D), handlers.mask(mask=md):
            v = numpyro.sample("v", dist.Normal(0.0, sd))
        with numpyro.plate("interaction", D * K), handlers.mask(mask=mdk):
            w = numpyro.sample("w", dist.Normal(0.0, sdk))
        eta = b0 + br * r + u[k] + v[d] + w[d * K + k]
        with numpyro.plate("cell", C):
            numpyro.sample("y", dist.Binomial(total_count=n, logits=eta), obs=y)

    guide = AutoNormal(model)
    svi = SVI(model, guide, Adam(step_size), Trace_ELBO())

    def one(rng_key, data):
        state = svi.init(rng_key, **data)
        state = jax.lax.fori_loop(0, n_steps, lambda i, s: svi.update(s, **data)[0], state)
        med = guide.median(svi.get_params(state))
        return {s: med[s] for s in ("b0", "b_r", "u", "v", "w", "sigma_k", "sigma_d", "sigma_dk")}

    fn = jax.jit(jax.vmap(one))
    _COMPILED[key] = (fn, jnp)
    return _COMPILED[key]


def _pad(pool: Pool, D: int, K: int) -> dict[str, NDArray]:
    C = 2 * D * K
    m = pool.n_total.size
    if pool.institution.size and (pool.institution.max() >= D or pool.finding.max() >= K):
        raise MedauditError(f"pool codes exceed the padded shape (D={D}, K={K}).")
    out = {"y": np.zeros(C, np.float32), "n": np.zeros(C, np.float32),
           "r": np.zeros(C, np.float32), "k": np.zeros(C, np.int32), "d": np.zeros(C, np.int32)}
    out["y"][:m], out["n"][:m] = pool.n_correct, pool.n_total
    out["r"][:m], out["k"][:m], out["d"][:m] = pool.direction, pool.finding, pool.institution
    mk, md, mdk = np.zeros(K, bool), np.zeros(D, bool), np.zeros(D * K, bool)
    mk[pool.finding] = True
    md[pool.institution] = True
    mdk[pool.institution * K + pool.finding] = True
    return {**out, "mk": mk, "md": md, "mdk": mdk}


class GLMM(Estimator):
    """Hierarchical GLMM (see the module docstring); ``seed`` seeds the SVI initialisation.

    Parameters
    ----------
    n_steps : int, default=3000
    step_size : float, default=0.02
    seed : int, default=42
        JAX PRNG seed (the design passes ``42 + rep``).
    shape : (int, int), optional
        Padded (institutions, findings); default: the pool's largest codes + 1.
    """

    key = "glmm"

    def __init__(self, *, n_steps: int = 3000, step_size: float = 0.02, seed: int = 42,
                 shape: tuple[int, int] | None = None) -> None:
        if int(n_steps) < 1:
            raise MedauditError(f"n_steps must be a positive integer; got {n_steps!r}.")
        self.n_steps, self.step_size, self.seed, self.shape = int(n_steps), float(step_size), \
            int(seed), shape

    def fit(self, pool: Pool) -> GLMM:
        shape = self.shape or (int(pool.institution.max()) + 1, int(pool.finding.max()) + 1)
        fitted = fit_glmm_batch([pool], seeds=[self.seed], n_steps=self.n_steps,
                                step_size=self.step_size, shape=shape)[0]
        self.__dict__.update({k: v for k, v in fitted.__dict__.items()
                              if k.endswith("_") and not k.startswith("__")})
        return self

    def _set(self, med: dict[str, NDArray], pool: Pool, D: int, K: int) -> None:
        self.shape_ = (D, K)
        self.params_ = {k: np.asarray(v, dtype=np.float64) for k, v in med.items()}
        pad = _pad(pool, D, K)
        self.seen_ = {"k": pad["mk"], "d": pad["md"], "dk": pad["mdk"]}
        y, n = pool.n_correct, pool.n_total
        self.single_class_ = bool(y.sum() == 0 or y.sum() == n.sum())
        import jax
        import numpyro

        self.info_ = {"estimator": self.key, "numpyro": numpyro.__version__,
                      "jax": jax.__version__, "guide": "AutoNormal", "optimizer": "Adam",
                      "step_size": self.step_size, "n_steps": self.n_steps, "seed": self.seed,
                      "loss": "Trace_ELBO", "plug_in": "guide median", "dtype": "float32",
                      "parametrisation": "centred", "fallback": False}

    def predict(self, institution, finding, direction):
        self._check_fitted()
        d, k, r = (codes(institution, "institution"), codes(finding, "finding"),
                   codes(direction, "direction"))
        D, K = self.shape_
        p = self.params_
        ink, ind = k < K, d < D
        kk, dd = np.where(ink, k, 0), np.where(ind, d, 0)
        u = np.where(ink & self.seen_["k"][kk], p["u"][kk], 0.0)
        v = np.where(ind & self.seen_["d"][dd], p["v"][dd], 0.0)
        both = ink & ind
        w = np.where(both & self.seen_["dk"][dd * K + kk], p["w"][dd * K + kk], 0.0)
        return expit(p["b0"] + p["b_r"] * r + u + v + w)


def fit_glmm_batch(pools: Sequence[Pool], *, seeds: Sequence[int], n_steps: int = 3000,
                   step_size: float = 0.02, shape: tuple[int, int] | None = None,
                   progress: Callable[[int, int], None] | None = None) -> list[GLMM]:
    """Fit the GLMM to many pools (vmapped chunks of :data:`CHUNK` under one ``jit``).

    Parameters
    ----------
    pools : sequence of Pool
    seeds : sequence of int
        One JAX PRNG seed per pool.
    n_steps, step_size : SVI settings (3,000 and 0.02 in the paper).
    shape : (int, int), optional
        Padded (institutions, findings) shared by every pool; default: the largest codes + 1.
    progress : callable, optional
        ``progress(done, total)`` after each chunk.

    Returns
    -------
    list of fitted :class:`GLMM`, in the order of ``pools``.
    """
    pools = list(pools)
    seeds = [int(s) for s in seeds]
    if len(seeds) != len(pools):
        raise MedauditError(f"fit_glmm_batch needs one seed per pool; got {len(seeds)} seeds for "
                            f"{len(pools)} pools.")
    if not pools:
        return []
    jax, _ = _import()
    if shape is None:
        shape = (max(int(p.institution.max()) for p in pools) + 1,
                 max(int(p.finding.max()) for p in pools) + 1)
    D, K = int(shape[0]), int(shape[1])
    fn, jnp = _runner(D, K, int(n_steps), float(step_size))
    padded = [_pad(p, D, K) for p in pools]
    out: list[GLMM] = []
    for start in range(0, len(pools), CHUNK):
        idx = list(range(start, min(start + CHUNK, len(pools))))
        fill = idx + [idx[0]] * (CHUNK - len(idx))  # pad the last chunk; results discarded
        data = {k: jnp.asarray(np.stack([padded[i][k] for i in fill])) for k in padded[0]}
        keys = jax.vmap(jax.random.PRNGKey)(jnp.asarray([seeds[i] for i in fill], dtype=jnp.uint32))
        med = jax.device_get(fn(keys, data))
        for j, i in enumerate(idx):
            g = GLMM(n_steps=n_steps, step_size=step_size, seed=seeds[i], shape=(D, K))
            g._set({k: np.asarray(v[j]) for k, v in med.items()}, pools[i], D, K)
            out.append(g)
        if progress is not None:
            progress(len(out), len(pools))
    return out

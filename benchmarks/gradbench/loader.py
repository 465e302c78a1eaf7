"""Inputs of the GradBench evals as float64 (and int64) arrays.

Generated inputs follow the evals' generators (gradbench/gradbench
``python/gradbench/gradbench/evals/<name>/run.py``) with a fixed seed; ba and ht read the
data GradBench ships (ba: one camera, point, weight and feature, duplicated; ht: the
"simple_small" hand model and hand1's 100 points, MIT-licensed, ``data/ht/``).
"""

# ruff: noqa: E741 - ``l`` is GradBench's name for gmm's lower-triangle parameters

from __future__ import annotations

from pathlib import Path

import numpy as np

SEED = 31337
DATA = Path(__file__).resolve().parent / "data"

#: evals/ba/data/ba1_n49_m7776_p31843.txt: the one camera, point, weight and feature
BA_CAM = (-0.758453, -1.109613, -0.845551, 34.556073, 39.676747, 53.881673, 419.194514,
          5.864426, -8.518870, 0.087812, 0.002739)
BA_X = (7.203245, 0.001144, 3.023326)
BA_W = 0.417022
BA_FEAT = (271.760969, 834.209256)


def _rng() -> np.random.Generator:
    return np.random.default_rng(SEED)


def lse(n: int) -> tuple:
    """x ~ U(0, 1)^n."""
    return (_rng().random(n),)


def llsq(n: int, m: int) -> tuple:
    """x ~ U(0, 1)^m and the number of sample points n."""
    return (_rng().random(m), n)


def ode(n: int, s: int) -> tuple:
    """x ~ U(0, 1)^n and s RK4 steps."""
    return (_rng().random(n), s)


def det(ell: int) -> tuple:
    """A ~ U(0, 1)^(ell*ell), row-major, and ell."""
    return (_rng().random(ell * ell), ell)


def kmeans(n: int, k: int, d: int) -> tuple:
    """n points ~ U(0, 1)^d; the centroids are the last k points (none empty)."""
    points = _rng().random((n, d))
    return (points, points[-k:].copy())


def gmm(d: int, k: int, n: int, m: int = 0, gamma: float = 1.0) -> tuple:
    """(alpha, mu, q, l, x, gamma, m) drawn as evals/gmm's generator draws them."""
    rng = _rng()
    x = rng.normal(size=(n, d))
    alpha = rng.normal(size=k)
    mu = rng.uniform(size=(k, d))
    q = rng.normal(size=(k, d))
    l = rng.normal(size=(k, d * (d - 1) // 2))
    return (alpha, mu, q, l, x, float(gamma), int(m))


def lstm(layers: int, c: int, b: int = 7) -> tuple:
    """(main_params, extra_params, state, sequence): U(0, 1) parameters and state, and a
    sequence of c characters as b bits each (random bits instead of the text file)."""
    rng = _rng()
    state = rng.random((2 * layers, b))
    main_params = rng.random((2 * layers, 4 * b))
    extra_params = rng.random((3, b))
    sequence = (rng.random((c, b)) < 0.5).astype(np.float64)
    return (main_params, extra_params, state, sequence)


def ba(n: int, m: int, p: int) -> tuple:
    """(cams, X, w, obs, feats): GradBench's one camera/point/weight/feature duplicated,
    observation i seeing camera i % n and point i % m (ADBench's generator)."""
    cams = np.tile(np.array(BA_CAM), (n, 1))
    X = np.tile(np.array(BA_X), (m, 1))
    w = np.full(p, BA_W)
    i = np.arange(p)
    obs = np.stack([i % n, i % m], axis=1).astype(np.int64)
    feats = np.tile(np.array(BA_FEAT), (p, 1))
    return (cams, X, w, obs, feats)


def _hand_model() -> tuple:
    """(base_relatives, parents, inverse_base_absolutes, base_positions, weights)."""
    bones = [line.split(":") for line in (DATA / "ht" / "bones.txt").read_text().splitlines()]
    parents = np.array([int(b[1]) for b in bones], dtype=np.int64)
    rel = np.array([[float(v) for v in b[2:18]] for b in bones]).reshape(-1, 4, 4)
    inv = np.array([[float(v) for v in b[18:34]] for b in bones]).reshape(-1, 4, 4)
    rows = [line.split(":") for line in (DATA / "ht" / "vertices.txt").read_text().splitlines()]
    positions = np.ones((len(rows), 4))
    weights = np.zeros((len(rows), len(bones)))
    for v, atoms in enumerate(rows):
        positions[v, :3] = [float(a) for a in atoms[:3]]
        for j in range(int(atoms[8])):
            weights[v, int(atoms[9 + 2 * j])] = float(atoms[10 + 2 * j])
    return rel, parents, inv, positions, weights


def ht(copies: int = 1) -> tuple:
    """(theta, model..., points, correspondences) of hand1 (100 points), its points
    repeated ``copies`` times for larger sizes."""
    lines = (DATA / "ht" / "hand1_t26_c100.txt").read_text().split("\n")
    npts, ntheta = (int(v) for v in lines[0].split())
    rows = [lines[1 + i].split() for i in range(npts)]
    corr = np.array([int(r[0]) for r in rows], dtype=np.int64)
    points = np.array([[float(v) for v in r[1:4]] for r in rows])
    theta = np.array([float(lines[1 + npts + j]) for j in range(ntheta)])
    rel, parents, inv, positions, weights = _hand_model()
    return (theta, rel, parents, inv, positions, weights,
            np.tile(points, (copies, 1)), np.tile(corr, copies))

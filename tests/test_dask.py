"""Gradients on a 2-worker Dask LocalCluster (examples/dask_ensemble.py at small size):
the summed gradient equals the single-process one, and one member's equals finite
differences; workers load the compiled code from the on-disk cache."""

from __future__ import annotations

import os
import sys

import numpy as np
import pytest

distributed = pytest.importorskip("distributed")

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
                                "examples"))
import dask_ensemble as de  # noqa: E402
import lorenz_fit  # noqa: E402


@pytest.fixture(scope="module")
def client():
    with distributed.LocalCluster(n_workers=2, threads_per_worker=1, processes=True,
                                  dashboard_address=None) as cluster, \
            distributed.Client(cluster) as c:
        yield c


def test_member_one_against_finite_differences():
    (state0, obs), = de.make_ensemble(1, steps=40, seed=3)
    theta = np.array([9.0, 27.0, 2.5])
    value, g = de.member_value_and_grad(*theta, state0, obs, 0.01)
    f = lorenz_fit.misfit.func  # the plain Python function
    h = 1e-6
    for i in range(3):
        e = np.eye(3)[i] * h
        fd = (f(*(theta + e), state0, obs, 0.01) - f(*(theta - e), state0, obs, 0.01)) / (2 * h)
        assert g[i] == pytest.approx(fd, rel=1e-5, abs=1e-7)
    assert value == pytest.approx(f(*theta, state0, obs, 0.01))


def test_cluster_gradients_equal_one_process(client):
    ensemble = de.make_ensemble(6, steps=40, seed=1)
    theta = np.array([8.0, 25.0, 2.2])
    want_v, want_g = de.local_value_and_grad(ensemble, theta)  # also fills the disk cache
    v, g = de.member_tasks(client, ensemble, theta)
    assert v == pytest.approx(want_v, rel=1e-12)
    np.testing.assert_allclose(g, want_g, rtol=1e-12)
    step = de.DataParallel(client, ensemble)
    v2, g2 = step(theta)
    assert v2 == pytest.approx(want_v, rel=1e-12)
    np.testing.assert_allclose(g2, want_g, rtol=1e-10)
    # what the workers ran came from the on-disk cache, not a transform
    infos = client.gather([client.submit(de.member_value_and_grad.cache_info, pure=False,
                                         workers=[w])
                           for w in client.scheduler_info()["workers"]])
    for info in infos:
        assert info["hits"] >= 1 and info["misses"] == 0, info

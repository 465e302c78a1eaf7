"""``jg.to_torch``: a jitgrad function as a ``torch.autograd.Function`` (bridges/torch_bridge.py).

Values and gradients against torch's own autodiff of the same function written with torch
operations (and ``torch.autograd.gradcheck``'s central differences), in both jit modes;
training with ``torch.optim`` follows the torch-written model step for step."""

from __future__ import annotations

import numpy as np
import pytest

import jitgrad as jg

torch = pytest.importorskip("torch")


def loss(w, X, y, n):
    s = 0.0
    for _ in range(n):
        r = np.tanh(X @ w) - y
        s += np.sum(r * r)
    return s


def loss_torch(w, X, y, n):
    s = 0.0
    for _ in range(n):
        r = torch.tanh(X @ w) - y
        s = s + torch.sum(r * r)
    return s


def field(x, k, c=0.5):
    return np.sin(k * x) * x + c * x * x


def field_torch(x, k, c=0.5):
    return torch.sin(k * x) * x + c * x * x


def energy(q, k):
    return 0.5 * k * np.sum(q * q) + np.sum(np.cos(q))


def energy_torch(q, k):
    return 0.5 * k * torch.sum(q * q) + torch.sum(torch.cos(q))


@pytest.fixture(scope="module")
def data():
    g = torch.Generator().manual_seed(0)
    X = torch.randn(8, 3, dtype=torch.float64, generator=g)
    y = torch.randn(8, dtype=torch.float64, generator=g)
    w = torch.randn(3, dtype=torch.float64, generator=g)
    return w, X, y


@pytest.mark.parametrize("jit", [True, False])
def test_value_and_gradients_match_torch(data, jit):
    w0, X0, y = data
    w, X = w0.clone().requires_grad_(), X0.clone().requires_grad_()
    out = jg.to_torch(loss, jit=jit)(w, X, y, 3)
    out.backward()
    wt, Xt = w0.clone().requires_grad_(), X0.clone().requires_grad_()
    ref = loss_torch(wt, Xt, y, 3)
    ref.backward()
    assert out.dtype == torch.float64 and out.shape == ()  # noqa: PT018
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(w.grad, wt.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(X.grad, Xt.grad, rtol=1e-10, atol=1e-12)
    torch.testing.assert_close(w, w0)  # inputs untouched


@pytest.mark.parametrize("jit", [True, False])
def test_gradcheck(data, jit):
    w, X, y = (t.clone() for t in data)
    f = jg.to_torch(loss, jit=jit)
    assert torch.autograd.gradcheck(lambda w, X: f(w, X, y, 2),
                                    (w.requires_grad_(), X.requires_grad_()))


@pytest.mark.parametrize("jit", [True, False])
def test_array_output_keywords_and_backward_seed(jit):
    x0 = torch.linspace(-1.0, 2.0, 6, dtype=torch.float64)
    dy = torch.linspace(0.5, 1.5, 6, dtype=torch.float64)
    x = x0.clone().requires_grad_()
    out = jg.to_torch(field, jit=jit)(x, 1.7, c=0.25)
    out.backward(dy)
    xt = x0.clone().requires_grad_()
    ref = field_torch(xt, 1.7, c=0.25)
    ref.backward(dy)
    torch.testing.assert_close(out, ref, rtol=1e-12, atol=1e-12)
    torch.testing.assert_close(x.grad, xt.grad, rtol=1e-12, atol=1e-12)
    assert torch.autograd.gradcheck(lambda x: jg.to_torch(field, jit=jit)(x, 1.7),
                                    (x0.clone().requires_grad_(),))


def test_float32_tensors():
    q0 = torch.linspace(-1.0, 1.0, 5, dtype=torch.float32)
    q = q0.clone().requires_grad_()
    out = jg.to_torch(energy)(q, 2.0)
    out.backward()
    qt = q0.clone().requires_grad_()
    ref = energy_torch(qt, 2.0)
    ref.backward()
    assert out.dtype == torch.float32 and q.grad.dtype == torch.float32  # noqa: PT018
    torch.testing.assert_close(out, ref, rtol=1e-6, atol=1e-6)
    torch.testing.assert_close(q.grad, qt.grad, rtol=1e-6, atol=1e-6)


def test_trains_with_torch_optim(data):
    w0, X, y = data
    f = jg.to_torch(loss)
    w = w0.clone().requires_grad_()
    wt = w0.clone().requires_grad_()
    opt, opt_t = torch.optim.Adam([w], lr=0.05), torch.optim.Adam([wt], lr=0.05)
    first = None
    for _ in range(30):
        opt.zero_grad()
        opt_t.zero_grad()
        out = f(w, X, y, 1)
        out.backward()
        loss_torch(wt, X, y, 1).backward()
        opt.step()
        opt_t.step()
        first = out.item() if first is None else first
    torch.testing.assert_close(w, wt, rtol=1e-9, atol=1e-9)
    assert f(w, X, y, 1).item() < first


def test_wrt_no_grad_and_refusals(data):
    w0, X0, y = data
    w, X = w0.clone().requires_grad_(), X0.clone().requires_grad_()
    f = jg.to_torch(loss, wrt=0)
    with pytest.raises(ValueError, match=r"argument 1 \('X'\) of loss requires a gradient"):
        f(w, X, y, 1)
    out = f(w, X.detach(), y, 1)
    out.backward()
    wt = w0.clone().requires_grad_()
    loss_torch(wt, X0, y, 1).backward()
    torch.testing.assert_close(w.grad, wt.grad, rtol=1e-10, atol=1e-12)
    with torch.no_grad():
        assert f(w, X0, y, 1).grad_fn is None
    g, = torch.autograd.grad(jg.to_torch(energy)(w, 2.0), w, create_graph=True)
    assert not g.requires_grad  # no second derivatives through the bridge
    with pytest.raises(ValueError, match="runs on the CPU"):
        f(torch.ones(3, dtype=torch.float64, device="meta"), X0, y, 1)

"""A jitgrad function inside a PyTorch model: fit an oscillator's parameters with torch.optim.

    python examples/torch_bridge.py      (needs torch: pip install jitgrad[torch])

``simulate`` is a plain Numba-style loop (a damped oscillator, semi-implicit Euler).
``jg.to_torch`` makes it a differentiable torch operation: its trajectory is an
ordinary tensor, the loss is written in torch, ``loss.backward()`` runs jitgrad's
compiled adjoint of the loop, and ``torch.optim.Adam`` updates the parameters.
"""

import numpy as np
import torch

import jitgrad as jg


def simulate(params, x0, dt, steps):
    """Positions of ``x'' = -k x - c x'`` from ``x0`` at rest, ``params = (k, c)``."""
    k, c = params[0], params[1]
    x, v = x0, 0.0
    out = np.empty(steps)
    for t in range(steps):
        v = v + dt * (-k * x - c * v)
        x = x + dt * v
        out[t] = x
    return out


def main(iterations: int = 150) -> None:
    sim = jg.to_torch(simulate)  # a callable on tensors; gradients via jitgrad
    data = sim(torch.tensor([4.0, 0.3], dtype=torch.float64), 1.0, 0.02, 300)  # the truth
    params = torch.tensor([3.0, 0.1], dtype=torch.float64, requires_grad=True)
    opt = torch.optim.Adam([params], lr=0.05)
    for it in range(iterations + 1):
        opt.zero_grad()
        loss = torch.mean((sim(params, 1.0, 0.02, 300) - data) ** 2)
        loss.backward()  # the trajectory's gradient flows into jitgrad's adjoint
        if it % 30 == 0:
            print(f"iteration {it:4d}  loss {loss.item():.3e}")
        opt.step()
    k, c = params.detach().tolist()
    print(f"recovered k={k:.3f} c={c:.3f} (true 4, 0.3)")


if __name__ == "__main__":
    main()

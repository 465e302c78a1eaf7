"""A jitgrad function inside a JAX program: jax.jit, jax.grad and jax.vmap over a Numba loop.

    python examples/jax_bridge.py      (needs jax: pip install jitgrad[jax])

``simulate`` is a plain Numba-style loop (a damped oscillator, semi-implicit Euler).
``jg.to_jax`` makes it a JAX function with a custom VJP: the loss around it is written
in ``jax.numpy`` and compiled with ``jax.jit``; ``jax.value_and_grad`` runs jitgrad's
compiled adjoint of the loop through a host callback, and ``jax.vmap`` maps the loss
over a grid of parameters (looping over the batch).
"""

import jax
import jax.numpy as jnp
import numpy as np

import jitgrad as jg

jax.config.update("jax_enable_x64", True)


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


def main(iterations: int = 300) -> None:
    sim = jg.to_jax(simulate)
    data = sim(jnp.array([4.0, 0.3]), 1.0, 0.02, 300)  # the truth

    def loss(params):
        return jnp.mean((sim(params, 1.0, 0.02, 300) - data) ** 2)

    step = jax.jit(jax.value_and_grad(loss))
    params, velocity = jnp.array([3.0, 0.1]), jnp.zeros(2)
    for it in range(iterations + 1):
        value, g = step(params)
        if it % 60 == 0:
            print(f"iteration {it:4d}  loss {value:.3e}")
        velocity = 0.9 * velocity - 0.5 * g  # gradient descent with momentum
        params = params + velocity
    print(f"recovered k={params[0]:.3f} c={params[1]:.3f} (true 4, 0.3)")
    ks = jnp.linspace(3.0, 5.0, 5)
    grid = jax.vmap(loss)(jnp.stack([ks, jnp.full(5, 0.3)], axis=1))
    print("loss over k = " + " ".join(f"{k:.1f}:{v:.2e}" for k, v in zip(ks, grid, strict=True)))


if __name__ == "__main__":
    main()

"""Differentiate an existing ``@numba.njit`` function, unchanged.

    python examples/numba_function.py

``lennard_jones`` is ordinary Numba code: a double loop over particle pairs with
a cutoff branch.  ``jg.grad`` reads its Python source (Numba keeps it as
``py_func``), writes the adjoint and compiles it with Numba again.  The forces
are minus the gradient; we check them against central finite differences and
then relax the cluster by gradient descent.  Runs in a few seconds.
"""

import numba
import numpy as np

import jitgrad as jg


@numba.njit
def lennard_jones(pos, epsilon, sigma, cutoff):
    """Total Lennard-Jones energy of particles at ``pos`` (shape (n, 3))."""
    n = pos.shape[0]
    energy = 0.0
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            r2 = dx * dx + dy * dy + dz * dz
            if r2 < cutoff * cutoff:
                s6 = (sigma * sigma / r2) ** 3
                energy += 4.0 * epsilon * (s6 * s6 - s6)
    return energy


def main(steps: int = 200, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    # a jittered 3 x 3 x 3 lattice, a little too widely spaced
    grid = np.stack(np.meshgrid(*[np.arange(3.0)] * 3, indexing="ij"), -1).reshape(-1, 3)
    pos = 1.25 * grid + rng.normal(0.0, 0.05, size=grid.shape)
    epsilon, sigma, cutoff = 1.0, 1.0, 2.5

    grad_energy = jg.grad(lennard_jones, wrt=0)  # the njit function, as it is
    forces = -grad_energy(pos, epsilon, sigma, cutoff)
    numeric = -jg.ngradient(lambda p: lennard_jones(p, epsilon, sigma, cutoff), pos)[0]
    print(f"{pos.shape[0]} particles; max |force - finite differences| = "
          f"{np.abs(forces - numeric).max():.2e}")

    energy_and_grad = jg.value_and_grad(lennard_jones, wrt=0)
    step = 2e-3
    for it in range(steps + 1):
        e, g = energy_and_grad(pos, epsilon, sigma, cutoff)
        if it % 50 == 0:
            print(f"step {it:4d}  energy {e:10.5f}  max |force| {np.abs(g).max():.4f}")
        pos = pos - step * np.clip(g, -50.0, 50.0)  # clipped steps: close pairs are stiff
    print(f"lennard_jones is still a Numba dispatcher: {type(lennard_jones).__name__}, "
          f"energy {lennard_jones(pos, epsilon, sigma, cutoff):.5f}")
    return pos


if __name__ == "__main__":
    main()

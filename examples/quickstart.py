"""Quick start: the compiled gradient of a loop, and the adjoint code jitgrad wrote for it."""

import numpy as np

import jitgrad as jg


@jg.differentiate(wrt=(0, 1))
def energy(x, k):
    """A chain of springs: sum of k * (x[i+1] - x[i] - 1)^2 plus a soft wall."""
    e = 0.0
    for i in range(len(x) - 1):
        d = x[i + 1] - x[i] - 1.0
        e += k * d * d
    if x[0] < 0.0:
        e += np.exp(-x[0]) - 1.0
    return e


if __name__ == "__main__":
    x = np.array([0.0, 0.9, 2.2, 2.8, 4.1])
    value, (dx, dk) = energy.value_and_grad(x, 2.0)
    print(f"energy   = {value:.6f}")
    print(f"d/dx     = {np.array2string(dx, precision=6)}")
    print(f"d/dk     = {dk:.6f}")
    print()
    print("generated forward + adjoint code:")
    print(energy.source())

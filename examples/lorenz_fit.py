"""Fit the Lorenz parameters (sigma, rho, beta) to an observed trajectory.

    python examples/lorenz_fit.py

The model is an RK4 integrator written as plain Python loops over scalars, the
way one writes it for Numba.  ``jg.differentiate`` turns the trajectory misfit
into a compiled gradient w.r.t. the three parameters (the RK4 stages and the
helper ``rhs`` are inlined and reversed), and a few hundred Adam steps of
gradient descent recover the parameters from a noisy observation.  The horizon
is kept short (one time unit) so the misfit stays smooth: over long horizons a
chaotic system's loss landscape becomes rugged.  Runs in a few seconds.
"""

import numpy as np

import jitgrad as jg

TRUE = (10.0, 28.0, 8.0 / 3.0)


def rhs(x, y, z, sigma, rho, beta):
    """The Lorenz vector field."""
    return sigma * (y - x), x * (rho - z) - y, x * y - beta * z


def rk4_step(x, y, z, sigma, rho, beta, dt):
    """One classical Runge-Kutta step."""
    k1x, k1y, k1z = rhs(x, y, z, sigma, rho, beta)
    k2x, k2y, k2z = rhs(x + 0.5 * dt * k1x, y + 0.5 * dt * k1y, z + 0.5 * dt * k1z,
                        sigma, rho, beta)
    k3x, k3y, k3z = rhs(x + 0.5 * dt * k2x, y + 0.5 * dt * k2y, z + 0.5 * dt * k2z,
                        sigma, rho, beta)
    k4x, k4y, k4z = rhs(x + dt * k3x, y + dt * k3y, z + dt * k3z, sigma, rho, beta)
    return (x + dt / 6.0 * (k1x + 2.0 * k2x + 2.0 * k3x + k4x),
            y + dt / 6.0 * (k1y + 2.0 * k2y + 2.0 * k3y + k4y),
            z + dt / 6.0 * (k1z + 2.0 * k2z + 2.0 * k3z + k4z))


@jg.differentiate(wrt=(0, 1, 2))
def misfit(sigma, rho, beta, state0, obs, dt):
    """Mean squared distance between the simulated and the observed trajectory."""
    x = state0[0]
    y = state0[1]
    z = state0[2]
    total = 0.0
    for n in range(obs.shape[0]):
        x, y, z = rk4_step(x, y, z, sigma, rho, beta, dt)
        total += (x - obs[n, 0]) ** 2 + (y - obs[n, 1]) ** 2 + (z - obs[n, 2]) ** 2
    return total / obs.shape[0]


def trajectory(sigma, rho, beta, state0, steps, dt):
    """The states after each of ``steps`` RK4 steps, shape (steps, 3)."""
    out = np.empty((steps, 3))
    x, y, z = state0
    for n in range(steps):
        x, y, z = rk4_step(x, y, z, sigma, rho, beta, dt)
        out[n] = x, y, z
    return out


def main(iterations: int = 300, lr: float = 0.2, seed: int = 0) -> np.ndarray:
    rng = np.random.default_rng(seed)
    state0, dt, steps = np.array([-8.0, 7.0, 27.0]), 0.01, 100
    obs = trajectory(*TRUE, state0, steps, dt) + rng.normal(0.0, 0.05, size=(steps, 3))

    theta = np.array([7.0, 24.0, 2.0])  # initial guess for (sigma, rho, beta)
    m, v, b1, b2 = np.zeros(3), np.zeros(3), 0.9, 0.999  # Adam moments
    for t in range(1, iterations + 1):
        loss, grads = misfit.value_and_grad(*theta, state0, obs, dt)
        g = np.array(grads)
        m = b1 * m + (1 - b1) * g
        v = b2 * v + (1 - b2) * g * g
        theta -= lr * (m / (1 - b1 ** t)) / (np.sqrt(v / (1 - b2 ** t)) + 1e-8)
        if t == 1 or t % 50 == 0:
            print(f"step {t:4d}  loss {loss:.6f}  sigma {theta[0]:7.4f}  rho {theta[1]:7.4f}  "
                  f"beta {theta[2]:6.4f}")
    print(f"recovered sigma={theta[0]:.3f} rho={theta[1]:.3f} beta={theta[2]:.3f}  "
          f"(true {TRUE[0]:.3f}, {TRUE[1]:.3f}, {TRUE[2]:.3f})")
    return theta


if __name__ == "__main__":
    main()

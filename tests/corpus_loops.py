"""Loop, branch and in-place-write functions for gradient tests.

Each function is module-level so jitgrad can read its source. ``CASES`` lists
``(function, args factory, wrt)``; every case is checked against central finite
differences on every input element, with and without Numba.
"""

import math

import numpy as np

# --- helpers called by the corpus ---------------------------------------------------


def h_square(a):
    return a * a


def h_poly(a, b):
    s = 0.0
    for i in range(3):
        s = s * a + b
    return s


def h_pair(a, b):
    return a * b, a + b


def h_fill(out, x, c):
    for i in range(len(x)):
        out[i] = c * x[i] * x[i]


def h_scale_inplace(u, c):
    for i in range(len(u)):
        u[i] = u[i] * c


def h_early(a):
    if a > 1.0:
        return a * 2.0
    return a * a


def h_nested(a):
    return h_square(a) + h_square(a + 1.0)


def h_recursive(a, depth):
    if depth == 0:
        return a
    return h_recursive(a * 1.1, depth - 1)


# --- if / elif / else -------------------------------------------------------------


def if_simple(x):
    if x > 0:
        y = x * x
    else:
        y = -x * 3.0
    return y


def if_elif(x):
    if x > 1.0:
        y = math.sin(x)
    elif x > 0.0:
        y = x * x * x
    else:
        y = math.exp(x)
    return y * x


def if_nested(x, y):
    if x > 0:
        if y > 0:
            z = x * y
        else:
            z = x - y
    else:
        z = x * x + y
    return z * z


def if_no_else(x, y):
    z = x * y
    if z > 0.5:
        z = z * z
    return z + y


def if_overwrite_both(x):
    z = x
    if x > 0.2:
        z = z * 3.0
    else:
        z = z + 1.0
    return z * x


def if_in_loop_overwrite(x, n):
    s = x
    for i in range(n):
        if s > 1.0:
            s = s * 0.5
        else:
            s = s * s + 0.7
    return s


def if_array_cond(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] > 0:
            s += x[i] * x[i]
        elif x[i] > -0.5:
            s -= x[i]
        else:
            s += math.sin(x[i])
    return s


def if_ternary_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] if x[i] > 0 else -2.0 * x[i]
    return s


def if_bool_flag(x, y):
    flag = x > y
    r = x * 2.0
    if flag:
        r = r * y
    if not flag:
        r = r + y * y
    return r


def if_both_branches_loop(x):
    a = 0.0
    b = 1.0
    for i in range(len(x)):
        if i % 2 == 0:
            a = a + x[i] * b
        else:
            b = b * x[i]
    return a + b


# --- for over range ---------------------------------------------------------------


def for_range_stop(x, n):
    s = 0.0
    for i in range(n):
        s = s + x * i
    return s * x


def for_range_start_stop(x):
    s = 0.0
    for i in range(2, len(x)):
        s += x[i] * x[i - 2]
    return s


def for_range_step(x):
    s = 0.0
    for i in range(1, len(x), 2):
        s += x[i] * x[i - 1]
    return s


def for_range_negative_step(x):
    s = 1.0
    for i in range(len(x) - 1, -1, -1):
        s = s * 0.5 + x[i] * s
    return s


def for_range_negative_step3(x):
    s = 0.0
    for i in range(len(x) - 1, 0, -3):
        s += x[i] * x[i - 1] * (i + 1)
    return s


def for_shape(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            s += A[i, j] * A[i, j] * (i + 1) + A[i, j] * j
    return s


def for_nested_triangular(x):
    s = 0.0
    for i in range(len(x)):
        for j in range(i):
            s += x[i] * x[j]
    return s


def for_loop_carried_scalar(x, n):
    a = x
    b = 1.0
    for i in range(n):
        a, b = b, a * b + 0.1
    return a + b


def for_loop_carried_array(x, n):
    u = x.copy()
    for k in range(n):
        for i in range(len(u)):
            u[i] = math.sin(u[i]) + 0.5 * u[i]
    s = 0.0
    for i in range(len(u)):
        s += u[i]
    return s


def for_over_array(x):
    s = 0.0
    for v in x:
        s += v * v * v
    return s


def for_enumerate(x):
    s = 0.0
    for i, v in enumerate(x):
        s += v * (i + 1.0) * v
    return s


def for_empty_range(x, n):
    s = x
    for i in range(n):
        s = s * x
    return s


def for_index_reused(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    for i in range(len(x)):
        s = s * x[i]
    return s


def for_trip_from_arg_and_len(x, m):
    s = 0.0
    for k in range(m):
        for i in range(len(x)):
            s += x[i] * (k + 1.0)
    return s * s


def for_product(x):
    p = 1.0
    for i in range(len(x)):
        p *= x[i]
    return p


def for_rk4_decay(y0, k, n):
    y = y0
    dt = 0.1
    for i in range(n):
        k1 = -k * y
        k2 = -k * (y + 0.5 * dt * k1)
        k3 = -k * (y + 0.5 * dt * k2)
        k4 = -k * (y + dt * k3)
        y = y + dt / 6.0 * (k1 + 2 * k2 + 2 * k3 + k4)
    return y


# --- while, break, continue, return ------------------------------------------------


def while_newton_sqrt(a):
    x = a
    while abs(x * x - a) > 1e-12:
        x = 0.5 * (x + a / x)
    return x


def while_count(x):
    s = x
    n = 0
    while n < 5:
        s = s * 0.9 + x
        n += 1
    return s


def while_data_dependent(x):
    s = x
    while s < 10.0:
        s = s * 1.5 + 0.1
    return s


def while_break(x):
    s = 0.0
    i = 0
    while True:
        s += x[i] * x[i]
        i += 1
        if i >= len(x):
            break
    return s


def for_break_data(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            break
        s += x[i] * x[i]
    return s


def for_break_after(x):
    s = 0.0
    for i in range(len(x)):
        s += math.exp(x[i])
        if s > 3.0:
            break
    return s


def for_continue(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < 0:
            continue
        s += x[i] * x[i]
    return s


def for_continue_middle(x):
    s = 0.0
    for i in range(len(x)):
        t = x[i] * 2.0
        if t < 0:
            continue
        s += t * x[i]
    return s


def for_break_nested(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > 0.9:
                break
            s += A[i, j] * A[i, j]
    return s


def for_return_inside(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
        if s > 1.0:
            return s * 2.0
    return s


def while_return_inside(x):
    s = x
    k = 0
    while k < 100:
        s = s * 1.3
        if s > 5.0:
            return s + x
        k += 1
    return s


def for_break_and_continue(x):
    s = 0.0
    for i in range(len(x)):
        if x[i] < -0.5:
            continue
        if x[i] > 0.8:
            break
        s += x[i] * s + x[i]
    return s


def nested_while_for(x):
    s = 0.0
    k = 0
    while k < 3:
        for i in range(len(x)):
            s += x[i] * (k + 1.0)
        k += 1
    return s * s


# --- arrays: element reads/writes, in place, swaps -----------------------------------


def arr_write_local(x):
    y = np.zeros(len(x))
    for i in range(len(x)):
        y[i] = x[i] * x[i]
    s = 0.0
    for i in range(len(y)):
        s += y[i] * x[i]
    return s


def arr_write_twice_same_iter(x):
    y = np.zeros(len(x))
    for i in range(len(x)):
        y[i] = x[i] * 2.0
        y[i] = y[i] * y[i] + x[i]
    s = 0.0
    for i in range(len(y)):
        s += y[i]
    return s


def arr_write_arg(x, c):
    for i in range(len(x)):
        x[i] = x[i] * c
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    return s


def arr_augassign(x):
    acc = np.zeros(3)
    for i in range(len(x)):
        acc[i % 3] += x[i] * x[i]
        acc[(i + 1) % 3] -= x[i]
    return acc[0] * acc[1] + acc[2]


def arr_2d_writes(A):
    B = np.zeros_like(A)
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            B[i, j] = A[i, j] * A[i, j]
            B[i, j] -= A[i, j]
    s = 0.0
    for i in range(B.shape[0]):
        for j in range(B.shape[1]):
            s += B[i, j] * (i + j + 1.0)
    return s


def arr_negative_index(x):
    return x[-1] * x[0] + x[-2] * x[-2]


def arr_read_after_overwrite(x):
    y = x.copy()
    a = y[0] * y[1]
    y[0] = a * 3.0
    b = y[0] + y[1]
    return a * b


def arr_swap_buffers(x, n):
    u = x.copy()
    v = np.zeros_like(x)
    for k in range(n):
        for i in range(len(u)):
            v[i] = u[i] * 0.5 + math.sin(u[i])
        u, v = v, u
    s = 0.0
    for i in range(len(u)):
        s += u[i] * u[i]
    return s


def arr_heat(u0, kappa):
    u = u0.copy()
    v = np.empty_like(u)
    n = len(u)
    for t in range(4):
        for i in range(1, n - 1):
            v[i] = u[i] + kappa * (u[i - 1] - 2.0 * u[i] + u[i + 1])
        v[0] = u[0]
        v[n - 1] = u[n - 1]
        u, v = v, u
    s = 0.0
    for i in range(n):
        s += u[i] * u[i]
    return s


def arr_ones_init(x):
    y = np.ones(len(x))
    for i in range(1, len(x)):
        y[i] = y[i - 1] * x[i] + x[i - 1]
    return y[len(x) - 1]


def arr_empty_like_fill(x):
    y = np.empty_like(x)
    for i in range(len(x)):
        y[i] = math.tanh(x[i])
    s = 0.0
    for i in range(len(x)):
        s += y[i] * y[len(x) - 1 - i]
    return s


def arr_cumulative(x):
    c = np.zeros(len(x))
    c[0] = x[0]
    for i in range(1, len(x)):
        c[i] = c[i - 1] + x[i] * x[i]
    s = 0.0
    for i in range(len(c)):
        s += c[i] * c[i]
    return s


def arr_index_from_int_array(x, idx):
    s = 0.0
    for k in range(len(idx)):
        j = idx[k]
        s += x[j] * x[j]
    return s


def arr_matvec_loop(A, x):
    y = np.zeros(A.shape[0])
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            y[i] += A[i, j] * x[j]
    s = 0.0
    for i in range(len(y)):
        s += y[i] * y[i]
    return s


def arr_pairwise(pos):
    e = 0.0
    n = pos.shape[0]
    for i in range(n):
        for j in range(i + 1, n):
            dx = pos[i, 0] - pos[j, 0]
            dy = pos[i, 1] - pos[j, 1]
            dz = pos[i, 2] - pos[j, 2]
            e += 1.0 / math.sqrt(dx * dx + dy * dy + dz * dz + 0.01)
    return e


def arr_rebind_in_loop(x, n):
    u = x.copy()
    for k in range(n):
        w = np.zeros_like(u)
        for i in range(len(u)):
            w[i] = u[i] * u[i] * 0.5
        u = w.copy()
    s = 0.0
    for i in range(len(u)):
        s += u[i]
    return s


def arr_float32(x):
    s = np.float32(0.0)
    for i in range(len(x)):
        s += x[i] * x[i]
    return s


def arr_2d_stencil(U, c):
    V = U.copy()
    for i in range(1, U.shape[0] - 1):
        for j in range(1, U.shape[1] - 1):
            V[i, j] = U[i, j] + c * (U[i - 1, j] + U[i + 1, j] + U[i, j - 1] + U[i, j + 1]
                                     - 4.0 * U[i, j])
    s = 0.0
    for i in range(V.shape[0]):
        for j in range(V.shape[1]):
            s += V[i, j] * V[i, j]
    return s


# --- helpers --------------------------------------------------------------------------


def call_helper_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += h_square(x[i]) * h_square(s + 1.0) * 0.1
    return s


def call_helper_with_loop(a, b):
    return h_poly(a, b) * a


def call_helper_tuple(a, b):
    p, q = h_pair(a, b)
    return p * q + p


def call_helper_fills_array(x, c):
    out = np.zeros(len(x))
    h_fill(out, x, c)
    s = 0.0
    for i in range(len(out)):
        s += out[i] * x[i]
    return s


def call_helper_mutates_arg(x, c):
    u = x.copy()
    h_scale_inplace(u, c)
    h_scale_inplace(u, c)
    s = 0.0
    for i in range(len(u)):
        s += u[i] * u[i]
    return s


def call_helper_early_return(a):
    return h_early(a) + h_early(a * 0.1)


def call_helper_nested(a):
    return h_nested(a) * a


def call_helper_twice_in_loop(x):
    s = 0.0
    for i in range(len(x)):
        s = h_early(s + x[i])
    return s


# --- combinations ----------------------------------------------------------------------


def combo_ode_euler(y0, k, n):
    y = y0
    t = 0.0
    for i in range(n):
        if y > 1.0:
            y = y - 0.1 * k * y * y
        else:
            y = y + 0.1 * math.sin(k * t)
        t += 0.1
    return y


def combo_softplus_sum(x, a):
    s = 0.0
    for i in range(len(x)):
        z = a * x[i]
        if z > 20.0:
            s += z
        else:
            s += math.log1p(math.exp(z))
    return s


def combo_max_tracking(x):
    m = x[0]
    for i in range(1, len(x)):
        if x[i] > m:
            m = x[i]
    return m * m


def combo_min_builtin(x):
    m = x[0]
    for i in range(1, len(x)):
        m = min(m, x[i])
    return m * 3.0


def combo_polynomial_horner(c, x):
    y = 0.0
    for i in range(len(c)):
        y = y * x + c[i]
    return y


def combo_rosenbrock(x):
    s = 0.0
    for i in range(len(x) - 1):
        s += 100.0 * (x[i + 1] - x[i] * x[i]) ** 2 + (1.0 - x[i]) ** 2
    return s


def combo_lorenz(state, sigma, rho, beta):
    x = state[0]
    y = state[1]
    z = state[2]
    dt = 0.01
    for i in range(30):
        dx = sigma * (y - x)
        dy = x * (rho - z) - y
        dz = x * y - beta * z
        x = x + dt * dx
        y = y + dt * dy
        z = z + dt * dz
    return x + y + z


def combo_loop_var_after_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i]
    return s * i


def combo_accumulate_two(x):
    a = 0.0
    b = 0.0
    for i in range(len(x)):
        a += x[i]
        b += a * x[i]
    return a * b


def combo_while_array(x):
    i = 0
    s = 0.0
    while i < len(x) and s < 2.0:
        s += x[i] * x[i]
        i += 1
    return s


def combo_scalar_reassigned_many(x):
    y = x * 2.0
    y = y * y
    y = math.sin(y)
    y = y + x
    return y * y


def combo_abs_sign(x):
    s = 0.0
    for i in range(len(x)):
        s += abs(x[i]) * x[i]
    return s


def combo_pow_loop(x, p):
    s = 0.0
    for i in range(len(x)):
        s += x[i] ** p
    return s


def combo_nested_if_in_nested_loop(A):
    s = 0.0
    for i in range(A.shape[0]):
        for j in range(A.shape[1]):
            if A[i, j] > 0.5:
                if i > j:
                    s += A[i, j] * A[j, i]
                else:
                    s -= A[i, j]
            else:
                s += A[i, j] * A[i, j] * A[i, j]
    return s


# --- the case table -------------------------------------------------------------------

_R = np.random.default_rng(42)


def vec(n=6, lo=-1.0, hi=1.0):
    return lambda: (np.random.default_rng(n).uniform(lo, hi, n),)


def mat(m=3, n=4, lo=-1.0, hi=1.0):
    return lambda: (np.random.default_rng(m * 10 + n).uniform(lo, hi, (m, n)),)


CASES = [
    (if_simple, lambda: (0.7,), 0), (if_simple, lambda: (-0.7,), 0),
    (if_elif, lambda: (1.5,), 0), (if_elif, lambda: (0.5,), 0), (if_elif, lambda: (-0.5,), 0),
    (if_nested, lambda: (0.5, 0.7), (0, 1)), (if_nested, lambda: (0.5, -0.7), (0, 1)),
    (if_nested, lambda: (-0.5, 0.7), (0, 1)), (if_no_else, lambda: (0.9, 0.8), (0, 1)),
    (if_no_else, lambda: (0.3, 0.8), (0, 1)), (if_overwrite_both, lambda: (0.7,), 0),
    (if_overwrite_both, lambda: (0.1,), 0), (if_in_loop_overwrite, lambda: (0.9, 6), 0),
    (if_array_cond, vec(8), 0), (if_ternary_loop, vec(7), 0), (if_bool_flag, lambda: (0.7, 0.3), (0, 1)),
    (if_bool_flag, lambda: (0.2, 0.3), (0, 1)), (if_both_branches_loop, vec(6, 0.5, 1.5), 0),
    (for_range_stop, lambda: (0.7, 5), 0), (for_range_start_stop, vec(7), 0),
    (for_range_step, vec(7), 0), (for_range_negative_step, vec(6), 0),
    (for_range_negative_step3, vec(10), 0), (for_shape, mat(3, 4), 0),
    (for_nested_triangular, vec(6), 0), (for_loop_carried_scalar, lambda: (0.7, 5), 0),
    (for_loop_carried_array, lambda: (np.linspace(-1, 1, 5), 3), 0),
    (for_over_array, vec(5), 0), (for_enumerate, vec(5), 0), (for_empty_range, lambda: (0.7, 0), 0),
    (for_index_reused, vec(5), 0), (for_trip_from_arg_and_len, lambda: (np.linspace(0, 1, 4), 3), 0),
    (for_product, vec(5, 0.5, 1.5), 0), (for_rk4_decay, lambda: (1.3, 0.7, 8), (0, 1)),
    (while_newton_sqrt, lambda: (2.0,), 0), (while_count, lambda: (0.7,), 0),
    (while_data_dependent, lambda: (0.7,), 0), (while_data_dependent, lambda: (3.3,), 0),
    (while_break, vec(5), 0), (for_break_data, lambda: (np.array([0.5, 0.2, -0.1, 0.7]),), 0),
    (for_break_data, lambda: (np.array([0.5, 0.2, 0.1, 0.7]),), 0),
    (for_break_after, lambda: (np.array([0.1, 0.2, 0.3, 0.4, 0.5]),), 0),
    (for_continue, lambda: (np.array([0.5, -0.2, 0.1, -0.7, 0.9]),), 0),
    (for_continue_middle, lambda: (np.array([0.5, -0.2, 0.1, -0.7, 0.9]),), 0),
    (for_break_nested, mat(3, 4, 0, 1), 0),
    (for_return_inside, lambda: (np.array([0.5, 0.6, 0.7, 0.8]),), 0),
    (for_return_inside, lambda: (np.array([0.1, 0.2, 0.1]),), 0),
    (while_return_inside, lambda: (0.7,), 0),
    (for_break_and_continue, lambda: (np.array([0.3, -0.7, 0.4, 0.9, 0.2]),), 0),
    (nested_while_for, vec(4), 0),
    (arr_write_local, vec(5), 0), (arr_write_twice_same_iter, vec(5), 0),
    (arr_write_arg, lambda: (np.linspace(-1, 1, 5), 0.7), (0, 1)), (arr_augassign, vec(7), 0),
    (arr_2d_writes, mat(3, 3), 0), (arr_negative_index, vec(4), 0),
    (arr_read_after_overwrite, vec(3), 0), (arr_swap_buffers, lambda: (np.linspace(-1, 1, 5), 3), 0),
    (arr_heat, lambda: (np.random.default_rng(1).uniform(0, 1, 7), 0.2), (0, 1)),
    (arr_ones_init, vec(5), 0), (arr_empty_like_fill, vec(5), 0), (arr_cumulative, vec(5), 0),
    (arr_index_from_int_array, lambda: (np.linspace(-1, 1, 5), np.array([0, 2, 2, 4])), 0),
    (arr_matvec_loop, lambda: (mat(3, 4)()[0], np.linspace(-1, 1, 4)), (0, 1)),
    (arr_pairwise, lambda: (np.random.default_rng(3).uniform(0, 1, (5, 3)),), 0),
    (arr_rebind_in_loop, lambda: (np.linspace(0.5, 1, 4), 2), 0),
    (arr_2d_stencil, lambda: (mat(4, 5)()[0], 0.1), (0, 1)),
    (call_helper_in_loop, vec(4), 0), (call_helper_with_loop, lambda: (0.7, 0.3), (0, 1)),
    (call_helper_tuple, lambda: (0.7, 0.3), (0, 1)),
    (call_helper_fills_array, lambda: (np.linspace(-1, 1, 4), 0.7), (0, 1)),
    (call_helper_mutates_arg, lambda: (np.linspace(-1, 1, 4), 0.7), (0, 1)),
    (call_helper_early_return, lambda: (1.5,), 0), (call_helper_early_return, lambda: (0.5,), 0),
    (call_helper_nested, lambda: (0.7,), 0), (call_helper_twice_in_loop, vec(5, 0, 0.6), 0),
    (combo_ode_euler, lambda: (1.2, 0.8, 10), (0, 1)), (combo_softplus_sum, lambda: (vec(6)()[0], 0.7), (0, 1)),
    (combo_max_tracking, vec(6), 0), (combo_min_builtin, vec(6), 0),
    (combo_polynomial_horner, lambda: (np.array([1.0, -2.0, 0.5, 3.0]), 0.7), (0, 1)),
    (combo_rosenbrock, vec(6), 0),
    (combo_lorenz, lambda: (np.array([1.0, 1.0, 1.0]), 10.0, 28.0, 8.0 / 3.0), (0, 1, 2, 3)),
    (combo_loop_var_after_loop, vec(5), 0), (combo_accumulate_two, vec(5), 0),
    (combo_while_array, lambda: (np.array([0.5, 0.6, 0.9, 0.8, 0.7]),), 0),
    (combo_scalar_reassigned_many, lambda: (0.7,), 0), (combo_abs_sign, vec(6), 0),
    (combo_pow_loop, lambda: (np.linspace(0.5, 1.5, 4), 2.5), (0, 1)),
    (combo_nested_if_in_nested_loop, mat(4, 4, 0, 1), 0),
]


def while_halving(x):
    n = 0
    s = x * x
    while s > 0.01:
        s = s * 0.5
        n += 1
    return s * n


def for_accumulate_into_arg_array(x, y):
    for i in range(len(x)):
        y[i] += x[i] * x[i]
    s = 0.0
    for i in range(len(y)):
        s += y[i] * x[i]
    return s


CASES += [
    (while_halving, lambda: (0.9,), 0), (while_halving, lambda: (2.9,), 0),
    (arr_float32, vec(5), 0),
    (for_accumulate_into_arg_array, lambda: (np.linspace(-1, 1, 4), np.linspace(0, 1, 4)), (0, 1)),
]

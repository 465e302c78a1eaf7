"""Programs that once gave silently wrong gradients (soundness issues), one per defect class.

Each is user-style code; ``CASES`` lists (function, make_args, wrt) checked against
central differences in both modes, ``REFUSED`` the ones that must be a clear error.
"""

import math

import numpy as np

# --- an overwritten scalar is never recomputed from its new value ----------------------


def self_square(a):
    a = a * a
    return a * a


def keep_then_square(a):
    t = a
    a = a * a
    return a * t


def self_times_shifted(a):
    a = a * (a + 1.0)
    return a


def rebind_from_other(a, b):
    a = a * b
    return a * b


def shadowing_chain(y, x):
    y = y + x
    x = y * x
    y = x - y
    return x * y + y


def self_update_in_branch(a, b):
    if b > 0.0:
        a = a * b
    return a * a + b


def self_update_in_loop(a, n):
    s = 0.0
    for i in range(n):
        a = a * 0.9 + 0.1
        s = s + a * a
    return s


# --- loop-carried v = g(v) through a rule that reuses its output ------------------------


def tanh_chain(z):
    for k in range(4):
        z = math.tanh(z)
    return z


def exp_chain_while(z):
    k = 0
    while k < 3:
        z = math.exp(-z * z)
        k += 1
    return z


def sqrt_chain(z):
    for k in range(3):
        z = math.sqrt(1.0 + z * z)
    return z


def array_tanh_chain(x):
    y = x.copy()
    for k in range(3):
        y = np.tanh(y)
    return np.sum(y)


# --- views and slices --------------------------------------------------------------------


def slices_then_write(x):
    x = x.copy()
    s = np.dot(x[:-1], x[1:])
    x[1] = 0.25
    return s


def reversed_slice(x):
    return np.sum(x[::-1] * x) + x[::-1][0]


def real_part(x):
    return np.sum(x.real ** 2) + np.sum(x.imag)


# --- tuple assignment that is not a permutation ---------------------------------------


def tuple_shift(p, q):
    p, q = q, p * 2.0
    return p * q * q


def tuple_take(a, b):
    s = 0.0
    a, s = b, a
    return a * s * s


# --- iteration over an array the body rebinds ------------------------------------------


def iterate_rebound(y):
    s = 0.0
    for t in y:
        y = y * t
        s += np.sum(y)
    return s


# --- rebinding and kinds -------------------------------------------------------------------


def wrt_rebound_after_loop(x):
    s = 0.0
    for i in range(len(x)):
        s += x[i] * x[i]
    x = np.zeros(2)
    return s + np.sum(x)


def array_to_scalar(x):
    x = np.sum(x)
    return x * x


def gaussian_nll(s):
    return 0.5 * math.log(2.0 * math.pi * s) + np.pi * s / math.e


# --- buffers: rotation, arrays local to a branch, after an early return -----------------


def three_name_rotation(x):
    u = x.copy()
    v = x * 2.0
    for k in range(3):
        tmp = u
        u = v
        v = tmp
        u[0] = v[1] * 0.5 + u[2]
    return np.sum(u * v)


def rotation_in_branch(x, n):
    u = x.copy()
    v = x * 0.5
    for k in range(n):
        if k % 2 == 0:
            tmp = u
            u = v
            v = tmp
        u[1] = u[1] * v[0]
    return np.sum(u) + np.sum(v)


def swap_then_alias_read(x, y):
    y, x = x, y
    tmp = y
    return np.sum(tmp * x)


def swap_of_aliases_then_write(x, a):
    # fuzz seed 30311 #129: the swap's targets are renamed (h_1, g_1), and h_1 still
    # shares the array of g, h and the view rv, so the write reaches rv
    h = x * 1.0
    g = h
    rv = g[1:]
    h, g = g, h
    h[1] = a * 0.5
    return rv[0] * rv[1] + np.sum(h * h)


def array_in_branch(x, a):
    s = 0.0
    if x[0] > 0.3:
        u = np.cos(x) * a
        s = u[1]
    return s


def array_after_return(x, a):
    if x[0] > 1.0:
        return a
    w = x.copy()
    w[0] = a
    return np.sum(w * w)


def fill(u, c):
    u[:] -= u * c


def helper_slice_update(x, a):
    y = x.copy()
    fill(y, a)
    return np.sum(y * y)


def damp(u, c):
    u -= u * c


def helper_whole_array_update(x, a):
    y = x.copy()
    damp(y, a)
    return np.sum(y * y)


def scale(u, c):
    u *= c


def helper_scales_argument(x, a):
    scale(x, a)
    return x[2] + np.sum(x * x)


def scalar_into_slice(x, a):
    s = a
    v = x[::-1].copy()
    v[1:3] = s
    return np.sum(v * v)


def alias_of_argument_written(x, a):
    rv = x
    rv[0] = 2.0
    return np.sum(x * x) * a


def iterate_updated_in_place(x, a):
    p = 0.0
    for val in x:
        p = p + val * a
        x *= 0.9
    return p + np.sum(x)


def self_aug(a):
    a *= a
    return a * a


def folded_branch(a):
    s = 0.0
    if s > 1.0:
        s = a * 2.0
    return s + a * a


def rows_updated_through_views(X, w):
    Y = X.copy()
    for i in range(Y.shape[0]):
        row = Y[i]
        for j in range(Y.shape[1]):
            row[j] = row[j] * w[j] + math.sin(row[j])
    return np.sum(Y * Y)


def write_through_reversed_view(x):
    r = x[::-1]
    r[0] = r[1] * x[0]
    return np.sum(x * x)


def row_view_in_branch(x):
    A = np.zeros((4, 4))
    for i in range(4):
        if x[i] > 0.0:
            r = A[i, :]
            r[i] = x[i] * x[i]
            r[0] += x[i]
    return np.sum(A * A)


def write_through_row_view(x):
    A = np.zeros((2, 3))
    r = A[0]
    r[1] = x[0] * x[1]
    return np.sum(A * A)


def write_through_transpose(x):
    A = np.zeros((2, 2))
    B = A.T
    B[0, 1] = x[0]
    B[1, 1] = x[1] * B[0, 1]
    return np.sum(A * A) + A[1, 0]


def write_through_view_of_constant(a, y):
    u = y[1:3]
    u[0] = a * 3.0
    return np.sum(y * y) * a


def view_sees_write_through_other_view(x, a):
    v = x[::1]
    rv = x[0:2]
    rv[0] = a
    return np.sum(v * v)


def read_view_then_base_written(x):
    y = x.copy()
    v = y[1:]
    y[2] = 0.5 * y[0]
    return np.sum(v * v)


def rebound_twice_in_loop(x):
    p = 0.0
    for i in range(len(x)):
        v = x
        v = x * 2.0
        p += np.sum(v)
    return p


def rows_from_scalars(x, a):
    h = np.zeros((len(x), 3))
    for t in range(len(x)):
        h[t] = x[t] * a
        h[t, :] = h[t, :] + x[t]
    h[1:3] = x[0]
    return np.sum(h * h)


def alias_written(x):
    y = x.copy()
    z = y
    z[0] = x[0] * 2.0
    return y[0] + z[1]


def alias_then_sum(x):
    y = x.copy()
    z = y
    z[0] = z[0] * 3.0
    return np.sum(y)


def alias_of_argument(x):
    y = x
    y[0] = y[0] * 2.0
    return np.sum(y * x)


def shared_then_updated(x):
    h = np.zeros(x.shape)
    rv = h
    h += x
    h[2] -= rv[0]
    return h.sum()


def chain_of_copies_updated(x, a):
    u = x * a
    tmp = u
    h = tmp
    h -= u * 0.5
    return h[1] * a + np.sum(u)


def alias_rebound_before_write(x):
    # the rebinding runs before the write on every path: s keeps the first array
    y = x.copy()
    s = y
    y = 2.0 * y
    y[2] -= y[0]
    return np.sum(y) + np.sum(s * s)


def adjoint_read_between_contributions(x, a):
    # the adjoint of the second 'a' is read (a += w) between its two contributions:
    # folding them into one statement must not move the first past that read
    w = a * 2.0
    a = np.dot(x, x) * a
    w = w + a
    a = w * a
    w = a - w
    a += w
    return 0.5 * a + w * w



def view_moved_then_viewed_and_written(x, a):
    # a view moved to another name (t -> q), then a view of q written: the write reaches
    # p, read later, only through q's and t's adjoints (once a silently wrong gradient)
    p = x * 1.0
    t = p[0:3]
    q = t
    w = q[0:2]
    w[0] = w[0] * a
    return np.sum(p * a)


def view_swapped_then_viewed_and_written(x, a):
    # the same through a swap: q takes the view t of p
    p = x * 1.0
    q = x * 2.0
    t = p[0:3]
    t, q = q, t
    w = q[0:2]
    w[0] = w[0] * a
    return np.sum(p * a) + np.sum(t * x)


X = np.array([0.5, -0.3, 0.8, 0.2])

CASES = [
    (alias_rebound_before_write, lambda: (X.copy(),), 0),
    (adjoint_read_between_contributions, lambda: (X.copy(), 0.45), (0, 1)),
    (self_square, lambda: (1.3,), 0),
    (keep_then_square, lambda: (1.3,), 0),
    (self_times_shifted, lambda: (1.3,), 0),
    (rebind_from_other, lambda: (1.3, 0.7), (0, 1)),
    (shadowing_chain, lambda: (0.7, 1.3), (0, 1)),
    (self_update_in_branch, lambda: (0.7, 1.3), (0, 1)),
    (self_update_in_loop, lambda: (0.7, 4), 0),
    (tanh_chain, lambda: (0.7,), 0),
    (exp_chain_while, lambda: (0.7,), 0),
    (sqrt_chain, lambda: (0.7,), 0),
    (array_tanh_chain, lambda: (X.copy(),), 0),
    (slices_then_write, lambda: (X.copy(),), 0),
    (reversed_slice, lambda: (X.copy(),), 0),
    (real_part, lambda: (X.copy(),), 0),
    (tuple_shift, lambda: (0.7, 1.3), (0, 1)),
    (tuple_take, lambda: (0.7, 1.3), (0, 1)),
    (iterate_rebound, lambda: (X.copy(),), 0),
    (wrt_rebound_after_loop, lambda: (X.copy(),), 0),
    (array_to_scalar, lambda: (X.copy(),), 0),
    (gaussian_nll, lambda: (1.5,), 0),
    (three_name_rotation, lambda: (X.copy(),), 0),
    (rotation_in_branch, lambda: (X.copy(), 3), 0),
    (swap_then_alias_read, lambda: (X.copy(), X[::-1].copy()), (0, 1)),
    (swap_of_aliases_then_write, lambda: (X.copy(), 0.7), (0, 1)),
    (array_in_branch, lambda: (X.copy(), 0.4), (0, 1)),
    (array_in_branch, lambda: (-X, 0.4), (0, 1)),
    (array_after_return, lambda: (X.copy(), 0.4), (0, 1)),
    (helper_slice_update, lambda: (X.copy(), 0.3), (0, 1)),
    (folded_branch, lambda: (0.7,), 0),
    (helper_whole_array_update, lambda: (X.copy(), 0.3), (0, 1)),
    (helper_scales_argument, lambda: (X.copy(), 0.3), (0, 1)),
    (scalar_into_slice, lambda: (X.copy(), 0.3), (0, 1)),
    (alias_of_argument_written, lambda: (X.copy(), 0.3), 1),
    (iterate_updated_in_place, lambda: (X.copy(), 0.3), (0, 1)),
    (self_aug, lambda: (1.3,), 0),
    (write_through_row_view, lambda: (X.copy(),), 0),
    (write_through_transpose, lambda: (X.copy(),), 0),
    (write_through_view_of_constant, lambda: (0.7, X.copy()), 0),
    (rows_updated_through_views, lambda: (X.reshape(2, 2) / 3, X[:2].copy()), (0, 1)),
    (write_through_reversed_view, lambda: (X.copy(),), 0),
    (row_view_in_branch, lambda: (X.copy(),), 0),
    (view_sees_write_through_other_view, lambda: (X.copy(), 0.3), (0, 1)),
    (read_view_then_base_written, lambda: (X.copy(),), 0),
    (rebound_twice_in_loop, lambda: (X.copy(),), 0),
    (rows_from_scalars, lambda: (X.copy(), 0.7), (0, 1)),
    (alias_written, lambda: (X.copy(),), 0),
    (alias_then_sum, lambda: (X.copy(),), 0),
    (alias_of_argument, lambda: (X.copy(),), 0),
    (shared_then_updated, lambda: (X.copy(),), 0),
    (chain_of_copies_updated, lambda: (X.copy(), 0.7), (0, 1)),
    (view_moved_then_viewed_and_written, lambda: (X.copy(), 0.7), (0, 1)),
    (view_swapped_then_viewed_and_written, lambda: (X.copy(), 0.7), (0, 1)),
]

# --- refused, with the user's line ----------------------------------------------------


def array_made_in_loop_used_after(x):
    for k in range(2):
        u = x * k
    return np.sum(u)


def view_used_after_loop(x):
    A = np.zeros((2, 4))
    for k in range(2):
        r = A[k]
        r[k] = x[k]
    r[0] = x[2]
    return np.sum(A * A)


def view_of_rebound_base(x):
    A = np.zeros((2, 4))
    for k in range(2):
        r = A[0]
        r[k] = x[k] * x[k]
        A = A * 2.0
    return np.sum(A)


def number_then_array(x):
    p = 0.0
    for i in range(len(x)):
        v = 1.0
        v = p * x + v
        p += np.sum(v)
    return p


def alias_rebound_in_loop(x):
    # 's' shares y's buffer on the first trip only: the write there reaches s
    y = x.copy()
    s = y
    for i in range(len(s)):
        val = s[i]
        y[2] -= val
        y = 0.5 * y
    return np.sum(y)


def alias_rebound_in_branch(x, c):
    y = x.copy()
    s = y
    if c > 0.0:
        y = 2.0 * y
    y[2] -= y[0]  # writes s too when the branch is not taken
    return np.sum(y) + np.sum(s * s)


def enumerate_rebound_and_written(x):
    y = x.copy()
    for i, val in enumerate(y):  # Python iterates the first y, written on trip 0
        y[2] -= val
        y = 0.5 * y
    return np.sum(y)


def random_kind(x):
    g = np.random.default_rng(0)
    return np.sum(x) * g.random()


REFUSED = [
    (view_used_after_loop, lambda: (X.copy(),), "view of 'A'", "r = A[k]"),
    (view_of_rebound_base, lambda: (X.copy(),), "view of 'A'", "r = A[0]"),
    (array_made_in_loop_used_after, lambda: (X.copy(),), "used after it", "u = x * k"),
    (number_then_array, lambda: (X.copy(),), "number here and an array", "v = p * x + v"),
    (random_kind, lambda: (X.copy(),), "number or an array", "g = np.random.default_rng(0)"),
    (alias_rebound_in_loop, lambda: (X.copy(),), "view of 'y'", "s = y"),
    (alias_rebound_in_branch, lambda: (X.copy(), -1.0), "view of 'y'", "s = y"),
    (enumerate_rebound_and_written, lambda: (X.copy(),), "iterates over 'y'",
     "for i, val in enumerate(y):"),
]

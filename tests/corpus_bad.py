"""Functions jitgrad must refuse with a TransformError (one construct each)."""

import numpy as np

G = 0.0


def uses_try(x):
    try:
        y = x * 2
    except ValueError:
        y = x
    return y


def uses_with(x):
    with open("f") as fh:
        fh.read()
    return x


def uses_yield(x):
    yield x * 2


def uses_global(x):
    global G
    G = x
    return x * G


def uses_class(x):
    class A:
        pass
    return x


def uses_lambda(x):
    f = lambda v: v * 2  # noqa: E731
    return f(x)


def uses_varargs(*xs):
    return xs[0]


def uses_star_unpack(x, y):
    a, *b = x, y, y
    return a


def uses_listcomp(x):
    return sum([v * v for v in x])


def uses_dict(x):
    d = {"a": x}
    return d["a"]


def uses_nested_def(x):
    def g(v):
        return v * v
    return g(x)


def uses_while_else(x):
    while x > 1:
        x = x / 2
    else:
        x = x + 1
    return x


def uses_recursion(x, n):
    if n == 0:
        return x
    return uses_recursion(x * x, n - 1)


def uses_alias_write(x):
    y = x.copy()
    for k in range(2):
        z = y
        z[k] = x[k] * 2.0
    return y[0] + z[1]


def uses_unknown_function(x):
    return np.sinc(x) * 2.0


def uses_int_array_index(x, idx):
    s = 0.0
    y = x * 2.0
    t = y[idx]
    for i in range(len(t)):
        s += t[i]
    return s


def uses_nonlocal_walrus(x):
    if (y := x * 2) > 1:
        return y
    return x


def uses_view_write(x):
    y = x.copy()
    w = y[1:]
    for k in range(2):
        w[0] = x[0] * 3.0
        y = y * 2.0
    return y[1] * 2.0


def uses_list_of_values(x):
    values = [x, x * 2.0]
    return values[0] + values[1]


def uses_alias_then_rebind(x):
    y = x.copy()
    z = y
    for k in range(2):
        z[k] = z[k] * 3.0
        y = y * 2.0
    return np.sum(y) + np.sum(z)

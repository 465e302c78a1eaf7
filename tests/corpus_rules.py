"""A function calling a user primitive, for the grad_rule test."""

FN = None


def set_fn(f):
    global FN
    FN = f


def uses_mysq(x):
    return FN(x) * 3.0

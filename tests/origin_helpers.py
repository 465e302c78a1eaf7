"""Helpers in a module of their own, for tests/test_error_origin.py (do not move lines)."""

import numpy as np


def deep(x):
    s = 0.0
    for v in x:
        s += v
    for v in sorted(x):  # refused here
        s += v
    return s


def middle(x):
    t = 2.0 * np.sin(x)
    return deep(t) + 1.0

"""The Numba-compilable helpers that generated code calls (each with a plain-Python twin).

These are not the eager runtime (``jitgrad.runtime``): generated gradients call them,
compiled with the gradient under ``jit=True`` and as Python under ``jit=False``.
"""

"""A random-program fuzzer for jitgrad: generate, differentially check, shrink.

``gen`` writes Numba-style Python programs in jitgrad's supported subset,
``check`` compares jitgrad's values and gradients with the plain function and
finite differences (in worker processes, so crashes and hangs are caught),
``shrink`` reduces a failing program, and ``run`` is the command line::

    python tests/fuzz/run.py --programs 300 --seed 1 --jit off --shrink
"""

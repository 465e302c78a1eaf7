"""A random-program fuzzer for jitgrad: generate, differentially check, shrink.

``gen`` writes Numba-style Python programs in jitgrad's supported subset,
``check`` compares jitgrad's values and gradients with the plain function and
finite differences (in worker processes, so crashes and hangs are caught),
``shrink`` reduces a failing program, and ``run`` is the command line.  Streams of
their own add, without changing other programs: alpha-renamed programs (``rename``,
checked against the original), long checkpointed loops with state named like
jitgrad's own names and random draws inside (``long_loops``; the checker seeds NumPy's
and Numba's generators before every evaluation), pair loops over a matrix's rows with
helpers called with two rows, and lists of numbers appended in a loop (``gen``)::

    python tests/fuzz/run.py --programs 300 --seed 1 --jit off --shrink
"""

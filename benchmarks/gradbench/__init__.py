"""GradBench's eleven evals, written in Numba style, differentiated by jitgrad and compared
with hand-written Numba adjoints and JAX: ``python -m benchmarks.gradbench [--quick]``."""

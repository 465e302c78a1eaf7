"""Source -> AST -> normalized -> analysed -> forward + adjoint -> source (see pipeline.py)."""

"""Modes: reverse (sweeps and tapes) now; forward (tangents) plugs in here next."""

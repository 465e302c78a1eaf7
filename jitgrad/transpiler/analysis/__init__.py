"""Analyses: kinds, then activity, positions, aliases and views of a normalized body."""

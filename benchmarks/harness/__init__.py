"""Shared benchmark machinery: threads, tool adapters, timing, checks, memory, reporting."""

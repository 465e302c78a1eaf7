"""Backend: optimize the IR, lower it to functions, emit source, compile (CPU), cache on disk."""

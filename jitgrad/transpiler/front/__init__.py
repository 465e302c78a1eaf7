"""Front end: parse, fence, desugar, inline, normalize, versions (kind-independent)."""

"""Backends a candidate can use: Triton, the CUDA fast path, load_inline."""

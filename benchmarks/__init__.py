"""Benchmarks of what the book claims (README.md here): run each from the repository's root as
``python -m benchmarks.<name>``, so that its modules import one another as ``benchmarks.<module>``.

Nothing imports NumPy here: :mod:`benchmarks.decode_benchmark` sets BLAS's thread count before it does.
"""

"""Retrieval evaluation: qrels and run containers, metrics and their numba kernels.

Kept import-free on purpose: `ragmetrics.retrieval.qrels` and friends are imported where used, so loading
this package costs nothing.
"""

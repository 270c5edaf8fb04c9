"""Sweeps over retrieval configurations with a held-out winner (docs/sweeps.md)."""

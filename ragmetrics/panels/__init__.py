"""Judges chosen and combined on evidence: `ragmetrics judges` (docs/judges.md)."""

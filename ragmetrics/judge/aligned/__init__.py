"""Aligned judge metrics: what `ragmetrics align` fits on a team's labels, and the judge that applies it.

- `artifact`: the aligned.json format (`load_aligned`);
- `calibration`: monotone score maps; `evidence` and `head`: the local judge's refit head;
- `prompt_edit`: guidance and labelled examples in an LLM judge's prompt;
- `judge`: `AlignedJudge`, which applies them around any judge.

The fitting itself (folds, held-out figures, reports) is `ragmetrics.alignment`.
"""

"""A cascade of judges with a guaranteed agreement with people (Jung, Brahman & Choi, ICLR 2025).

`thresholds` sets each judge's confidence threshold by fixed-sequence testing on labelled items;
`confidence` reads a confidence per verdict (log-probabilities, repeated samples, simulated annotators);
`run` sends each item up the cascade until a judge is confident, abstaining at the end.
"""

"""`ragmetrics label`: a person labels the samples that make the judge's figures most trustworthy.

selection.py orders the samples and says how many labels the interval needs; store.py keeps the labels file
(the one `human_labels:` reads) safe across interruptions; questions.py says what a person is asked per metric;
server.py serves the page on 127.0.0.1.
"""

"""Diversity (intent-aware) metrics over subtopic judgments: alpha-nDCG, ERR-IA, nERR-IA, NRBP, P-IA, subtopic
recall and MAP-IA, as ndeval (TREC Web track) defines them.

For one query, `rel[i, s]` = 1 when the document at rank i (from 0) is relevant to subtopic s. A document's
novelty gain is g_i = sum_s rel[i, s] (1 - alpha)^c(i, s), with c(i, s) the documents above it relevant to s
(Clarke et al., 'Novelty and diversity in information retrieval evaluation', SIGIR 2008). M = the subtopics
with at least one relevant document.

- alpha_ndcg@k = sum_{i<k} g_i / log2(i + 2), over the same for the ideal ranking (built greedily: at each rank
  the judged document with the highest gain, ties to the larger document id; ndeval's approximation of the
  NP-hard ideal);
- err_ia@k = sum_{i<k} g_i / (i + 1), over sum_{i<k} M (1 - alpha)^i / (i + 1) (ndeval's "ideal ideal": every
  subtopic covered at every rank); nerr_ia@k: over the greedy ideal's instead;
- nrbp = (1 - (1 - alpha) beta) / M sum_i beta^i g_i over the whole ranking (Clarke, Kolla and Vechtomova,
  ICTIR 2009); nnrbp: over the ideal's;
- p_ia@k = sum_{i<k} sum_s rel[i, s] / (k M) (Agrawal et al., WSDM 2009); strec@k = subtopics covered in the top k
  / M (Zhai, Cohen and Lafferty, SIGIR 2003); map_ia = 1/M sum_s AP_s.

Every value is 0 for a query with M = 0. Specs: `retrieval.registry`.
"""

from __future__ import annotations

import math

import numpy as np
from numpy.typing import NDArray

from ragmetrics.retrieval._lazy import kernel

Ints = NDArray[np.int64]
Floats = NDArray[np.float64]


@kernel
def novelty_gains(rel: Ints, alpha: float, gains: Floats) -> None:
    """Fill gains[i] with the novelty gain of rank i (module doc)."""
    n, subtopics = rel.shape
    weight = np.ones(subtopics)
    for i in range(n):
        total = 0.0
        for s in range(subtopics):
            if rel[i, s]:
                total += weight[s]
                weight[s] *= 1.0 - alpha
        gains[i] = total


@kernel
def greedy_ideal(judged: Ints, alpha: float, order: Ints) -> None:
    """The ideal ranking of the judged documents (rows of `judged`, already in descending id order): at each
    rank the unplaced row with the highest gain, the first (largest id) of equals."""
    n, subtopics = judged.shape
    weight = np.ones(subtopics)
    placed = np.zeros(n, dtype=np.bool_)
    for rank in range(n):
        where = -1
        best = 0.0
        for i in range(n):
            if placed[i]:
                continue
            score = 0.0
            for s in range(subtopics):
                if judged[i, s]:
                    score += weight[s]
            if where == -1 or score > best:
                best = score
                where = i
        placed[where] = True
        order[rank] = where
        for s in range(subtopics):
            if judged[where, s]:
                weight[s] *= 1.0 - alpha


@kernel
def discounted(gains: Floats, depth: int, reciprocal: bool) -> float:
    """sum_{i<depth} gains[i] / log2(i + 2), or / (i + 1) when `reciprocal`."""
    total = 0.0
    for i in range(min(depth, gains.shape[0])):
        total += gains[i] / ((i + 1.0) if reciprocal else math.log2(i + 2.0))
    return total


@kernel
def rank_biased(gains: Floats, beta: float) -> float:
    total = 0.0
    decay = 1.0
    for i in range(gains.shape[0]):
        total += gains[i] * decay
        decay *= beta
    return total


@kernel
def covered_share(rel: Ints, depth: int, subtopics_present: int) -> float:
    n, subtopics = rel.shape
    covered = 0
    for s in range(subtopics):
        for i in range(min(depth, n)):
            if rel[i, s]:
                covered += 1
                break
    return covered / subtopics_present


@kernel
def intent_aware_precision(rel: Ints, depth: int, subtopics_present: int) -> float:
    n = rel.shape[0]
    hits = 0
    for i in range(min(depth, n)):
        for s in range(rel.shape[1]):
            hits += rel[i, s]
    return hits / (depth * subtopics_present)


@kernel
def intent_aware_ap(rel: Ints, relevant_per_subtopic: Ints, subtopics_present: int) -> float:
    n, subtopics = rel.shape
    total = 0.0
    for s in range(subtopics):
        if relevant_per_subtopic[s] == 0:
            continue
        seen = 0
        ap = 0.0
        for i in range(n):
            if rel[i, s]:
                seen += 1
                ap += seen / (i + 1.0)
        total += ap / relevant_per_subtopic[s]
    return total / subtopics_present

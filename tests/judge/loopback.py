"""A real OpenAI-compatible HTTP server on 127.0.0.1 that answers judge prompts with scripted verdicts.

It speaks POST /v1/chat/completions and POST /v1/embeddings with the response JSON the `openai` client
expects, recognises which prompt it got from the marker line (`# <name>`) that starts every system prompt,
and answers deterministically from markers in the test data:

- a chunk containing ``[useful]`` is useful (context precision / utilization, both modes);
- a numbered reference statement containing ``[attr]`` is attributed (context recall);
- a faithfulness statement containing ``[sup]`` is supported; one containing ``[fact:X]`` is supported when a
  chunk of the prompt contains ``[fact:X]`` too (so what the judge was shown decides); with ``[by-words]`` in
  the question, a literal reader decides instead (`_reader_support`: one chunk holds all the statement's
  words, or, when the prompt says to read the chunks together, each of its parts is held by one);
- a numbered context sentence containing ``[rel]`` is relevant (context relevancy);
- context sufficiency: sufficient when the contexts hold ``[enough]``, or every ``[part:X]`` marker of the
  question (a multi-hop answer spread over several contexts);
- an answer containing ``[nc]`` makes every generated question noncommittal, ``[nc1]`` only the first;
  generated question i is ``"<answer> #i"``; embeddings come from `vectors` when registered, else a hash;
- claim entailment: by markers ``[c:1,3]``, ``[ref]``/``[!ref]``, ``[ans]``/``[!ans]``, else by word
  containment (`_claim_verdict`);
- a test-set question (``testset_question``): built from the passages' first words, its reference marked
  ``[sup]`` unless the first passage holds ``[nosup]`` (`_testset_item`);
- pairwise preference: the answer marked ``[better]``; a question holding ``[bias:first]`` always gets the
  first answer shown (a position-biased judge);
- a generator asked with the RAG prompt (``# rag_answer``, ragmetrics.utility) answers ``X`` when the passage
  holds ``[ans:X]``, else the abstention reply ``UNANSWERABLE``; asked for logprobs, the first token's
  alternatives give ``UN`` the probability ``p`` of ``[pabs:p]`` in the passage (default 0 when it answers,
  1 when it abstains) and the answer's first word the rest (`_rag_answer`);
- a rubric metric (``# rubric:<name>``) rates ``[rating:X]`` (else the scale's first level) and meets the
  checks listed in ``[met:1,3]``; asked for logprobs, the rating's alternatives come from ``[probs:1=0.2,...]``;
  a server given a `persona` reads ``[<persona>@rating:X]`` and ``[<persona>@probs:...]`` first (`_persona`);
  ``[seeded:yes,no,...]`` rates by the request's seed (`_seeded_rating`), and ``[seeded-probs:yes=0.9,no=0.1|...]``
  gives the rating's probabilities by it (`_seeded_probs`): a judge whose confidence varies between requests.

Faults are injected on demand with `inject(kind, times=..., prompt=..., match=...)`; every request is recorded.
Run as a script (``python loopback.py --latency 0.2``) it serves until killed and prints its URL.
"""

from __future__ import annotations

import argparse
import hashlib
import html
import json
import math
import re
import threading
import time
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

FAULTS = (
    "redirect",  # 307 to `redirect_to` (another server): a client must not follow it with the samples
    "endless_body",  # 200 whose body trickles a byte at a time without end (stops after 30 s or on stop())
    "huge_body",  # 200 whose body is 20 MiB
    "deep_json",  # 200 whose body is JSON nested 200,000 deep
    "key_in_reason",  # a valid verdict whose reasons repeat the bearer token the request carried
    "echo_input",  # a model that repeats its input (the judged texts, with whatever they contain) as its answer
    "rate_limit",  # 429 with Retry-After
    "server_error",  # 500
    "stall",  # answer only after `stall_s` (past the client's timeout)
    "malformed",  # content that is not JSON
    "schema_violation",  # JSON that violates the verdict schema
    "wrong_count",  # one verdict / question / statement too few
    "refuse_json_schema",  # 400 when response_format is json_schema
    "refuse_json_object",  # 400 when response_format is json_object (with a schema or without)
    "refuse_schema_in_json_object",  # 400 when json_object carries a schema (a server that knows no such key)
    "bad_request",  # 400 unrelated to the response format (e.g. a context too long)
    "crash_json_schema",  # 500 with an unhelpful message when response_format is json_schema
    "echo_key",  # 401 whose message repeats the bearer token it got, as some gateways do
    "truncated_body",  # 200 whose JSON body is cut off half way (Content-Length matches what is sent)
    "short_body",  # 200 that announces a longer body than it sends, then closes the connection
    "echo_url",  # 400 whose message repeats the request line, query string and all, as some proxies do
    "embedding_short",  # an embeddings answer with one vector too few
    "embedding_zero",  # an embeddings answer whose first vector is all zeros
    # Behaviours seen on real local servers (llama.cpp with a small model):
    "copy_examples",  # the model returns the first few-shot example's answer (when the request has examples)
    "greedy_malformed",  # at temperature 0 the answer is never valid (and byte-identical); sampled, it is
    "length",  # the answer stops at max_tokens: cut off mid-JSON, finish_reason "length"
    "unsupported_500",  # llama.cpp without --embedding: 500 "Llama model must be created with embedding=True"
    "detail_500",  # a 500 whose body is FastAPI's {"detail": ...}, not OpenAI's {"error": {"message"}}
    "token_embeddings",  # llama.cpp with --pooling none: one vector per token (a list of lists) per input
    "null_content",  # a 200 whose message content is null: no text at all (a generator's non-text answer)
)
REPAIR_PREFIX = "Your previous answer could not be used"


@dataclass
class Rule:
    kind: str
    times: int | None
    prompt: str | None = None
    match: str | None = None
    path: str = "/v1/chat/completions"


@dataclass
class Record:
    path: str
    prompt: str | None
    status: int
    fault: str | None
    repair: bool
    mode: str | None
    digest: str
    user: str
    at: float
    temperature: float | None = None
    seed: int | None = None
    max_tokens: int | None = None
    examples: bool = False
    response_format: dict[str, Any] | None = None
    model: str | None = None
    logprobs: bool = False  # the request asked for log-probabilities


@dataclass(frozen=True)
class Persona:
    """A simulated judge of known quality on the binary context_sufficiency verdict (`LoopbackServer.persona`).

    On item i (its question), judge j is right iff Phi^-1(accuracy_j) > sqrt(shared)*z_i + sqrt(1-shared)*e_ij,
    with z_i the item's difficulty (``[z:0.7]`` in the question, else 0) and e_ij a standard normal drawn from a
    hash of (model, question): so P(right) = accuracy, and two judges err together more the larger `shared`.
    `yes_bias`: of the items it gets right whose truth is "not sufficient", this share it calls sufficient anyway
    (a lenient judge). Deterministic: the same request always gets the same verdict."""

    accuracy: float
    shared: float = 0.0
    yes_bias: float = 0.0


def _uniform(*parts: str) -> float:
    digest = hashlib.sha256("\x1f".join(parts).encode()).digest()
    return (int.from_bytes(digest[:8], "big") + 0.5) / 2.0**64


def _persona_sufficient(persona: Persona, model: str, question: str, truth: bool) -> bool:
    from statistics import NormalDist

    normal = NormalDist()
    m = re.search(r"\[z:(-?[0-9.]+)\]", question)
    z = float(m.group(1)) if m else 0.0
    e = normal.inv_cdf(_uniform("noise", model, question))
    right = math.sqrt(persona.shared) * z + math.sqrt(1 - persona.shared) * e < normal.inv_cdf(
        persona.accuracy
    )
    verdict = truth if right else not truth
    if not truth and not verdict and _uniform("bias", model, question) < persona.yes_bias:
        verdict = True
    return verdict


@dataclass
class State:
    latency_s: float = 0.0
    stall_s: float = 2.0
    retry_after: str = "0"
    rules: list[Rule] = field(default_factory=list)
    records: list[Record] = field(default_factory=list)
    raw_users: list[str] = field(default_factory=list)  # the last user message of each request, as sent
    vectors: dict[str, list[float]] = field(default_factory=dict)
    in_flight: int = 0
    received: int = 0  # requests that have arrived, answered or not (reset_records does not reset it)
    peak_in_flight: int = 0
    lock: threading.Lock = field(default_factory=threading.Lock)
    # A server with `slots` set computes that many requests at a time and queues the rest, as llama.cpp
    # (-np 1) and Ollama do; a request the client gave up on is still computed, holding its slot.
    slots: threading.Semaphore | None = None
    redirect_to: str = ""
    refuse_logprobs: bool = False  # a server that answers 400 to `logprobs` (as some gateways do)
    # A server that sends at most this many `top_logprobs` per token (None: all it has): 0 sends none, 1 only the
    # sampled token's own, as servers that ignore `top_logprobs` do
    top_logprobs_sent: int | None = None
    persona: str = ""  # a judge of its own: reads ``[<persona>@rating:X]`` first (`_persona`)
    personas: dict[str, Persona] = field(default_factory=dict)  # model name -> simulated judge (Persona)
    # The Batch API (files and batches): what was uploaded and created, and how batches behave.
    files: dict[str, bytes] = field(default_factory=dict)
    batches: dict[str, dict[str, Any]] = field(default_factory=dict)
    batch_lines: list[str] = field(default_factory=list)  # custom_ids of every batch created, in order
    batch_polls: int = 1  # looks a batch answers "in_progress" to before it ends
    batch_end: str = "completed"  # how batches end: completed, expired, cancelled or failed
    batch_answered_share: float = 0.5  # expired / cancelled: the share of requests answered before the end
    batch_fail_lines: int = 0  # completed: the first k requests fail (HTTP 500 in the error file)
    batch_hold: threading.Event = field(default_factory=threading.Event)  # set: batches stay in progress
    stopping: threading.Event = field(default_factory=threading.Event)


def _hash_vector(text: str, dim: int = 16) -> list[float]:
    digest = hashlib.sha256(text.encode()).digest()
    return [b / 255.0 + 0.1 for b in digest[:dim]]


def _section(text: str, tag: str) -> str:
    m = re.search(rf"<{tag}[^>]*>\n(.*?)\n</{tag}>", text, re.S)
    if m is None:
        raise ValueError(f"no <{tag}> in the request")
    return m.group(1)


_MARKER = re.compile(r"\[[^\]]*\]")
_WORD = re.compile(r"[^\W_]{3,}")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(_MARKER.sub(" ", html.unescape(text)).casefold()))


def _contained(claim: str, text: str) -> bool:
    """A scripted reader's entailment: every word of three letters or more in the claim occurs in the text."""
    words = _words(claim)
    return bool(words) and words <= _words(text)


def _claim_verdict(user: str) -> dict[str, Any]:
    """Claim entailment: a claim marked ``[c:1,3]`` is entailed by those chunks, ``[c:]`` by none; otherwise
    by every chunk that contains all its words. An answer claim marked ``[ref]`` (a reference claim marked
    ``[ans]``) is entailed by the other answer, ``[!ref]`` (``[!ans]``) is not; otherwise when the other
    answer contains all its words."""
    chunks = re.findall(r'<chunk id="(\d+)">\n(.*?)\n</chunk>', user, re.S)
    texts = {"reference": _section(user, "reference"), "answer": _section(user, "answer")}

    def judged(side: str, flag: str, other: str) -> list[dict[str, Any]]:
        claims = re.findall(r'<claim id="(\d+)">(.*?)</claim>', _section(user, f"{side}_claims"), re.S)
        out = []
        for n, claim in claims:
            named = re.search(r"\[c:([\d,]*)\]", claim)
            if named is not None:
                entailing = [int(k) for k in named.group(1).split(",") if k]
            else:
                entailing = [int(k) for k, t in chunks if _contained(claim, t)]
            mark = "ref" if other == "reference" else "ans"
            in_other = f"[{mark}]" in claim or (f"[!{mark}]" not in claim and _contained(claim, texts[other]))
            out.append(
                {"claim": int(n), "reason": f"scripted claim {n}", flag: in_other, "chunks": entailing}
            )
        return out

    return {
        "answer_claims": judged("answer", "in_reference", "reference"),
        "reference_claims": judged("reference", "in_answer", "answer"),
    }


_PARTS = re.compile(r",\s*|\s(?:and|und|et|y|и)\s")
_GLUE_WORDS = frozenset({"and", "und"})  # what joins two copies; a reader does not look for it in a chunk


def _reader_support(
    statements: list[tuple[str, str]], chunks: list[tuple[str, str]], together: bool
) -> dict[str, Any]:
    """Faithfulness as a literal reader judges it (a question marked ``[by-words]``): a statement is supported
    by the first chunk that holds all its words ("and" aside); when the prompt asks to read the chunks
    together (`together`), also when each of its parts (cut at commas and "and") is held by some chunk."""

    def held(claim: str) -> int:
        words = _words(claim) - _GLUE_WORDS
        return next((int(k) for k, text in chunks if words and words <= _words(text)), 0)

    out = []
    for n, statement in statements:
        holder = held(statement)
        if not holder and together:
            parts = [p for p in _PARTS.split(statement) if _words(p)]
            held_by = [held(p) for p in parts]
            holder = min(held_by) if held_by and all(held_by) else 0
        out.append(
            {"statement": int(n), "reason": "scripted reader", "supported": bool(holder), "chunk": holder}
        )
    return {"statements": out}


def _rubric_verdict(system: str, user: str) -> dict[str, Any]:
    """A rubric metric's verdict: ``[rating:X]`` in the input is the rating (a number for ordinal scales),
    else the scale's first; ``[met:1,3]`` lists the checks met (none when absent)."""
    checks = re.findall(r"^(\d+)\. ", system.split("Checks:", 1)[1], re.M) if "Checks:" in system else []
    if checks:
        m = re.search(r"\[met:([\d,]*)\]", user)
        met = {int(n) for n in m.group(1).split(",") if n} if m else set()
        return {"checks": [{"check": int(n), "reason": f"scripted check {n}", "met": int(n) in met}
                           for n in checks]}  # fmt: skip
    m = re.search(r"\[rating:([^\]]+)\]", user)
    if m:
        raw = m.group(1)
    elif "- 1 = " in system:
        raw = "1"
    else:
        first = re.search(r'^- "([^"]+)"', system, re.M)
        raw = first.group(1) if first else "no"
    raw = _aligned_rating(system, user, raw)
    rating: Any = int(raw) if raw.isdigit() else raw
    return {"reason": f"scripted rating {raw}", "rating": rating}


def _seeded_rating(user: str, seed: int | None) -> str:
    """The input with ``[seeded:yes,no,...]`` made the rating of this request's seed (entry seed mod length):
    a judge whose verdict varies from one sampled request to the next, for confidences read from samples."""
    m = re.search(r"\[seeded:([^\]]+)\]", user)
    if m is None or seed is None:
        return user
    ratings = m.group(1).split(",")
    return user.replace(m.group(0), f"[rating:{ratings[seed % len(ratings)]}]")


def _seeded_probs(user: str, seed: int | None) -> str:
    """The input with ``[seeded-probs:A|B|...]`` made ``[probs:X]``, X the entry of this request's seed (seed mod
    the number of entries; the first without a seed)."""
    m = re.search(r"\[seeded-probs:([^\]]+)\]", user)
    if m is None:
        return user
    entries = m.group(1).split("|")
    return user.replace(m.group(0), f"[probs:{entries[(seed or 0) % len(entries)]}]")


def _aligned_rating(system: str, user: str, raw: str) -> str:
    """A judge that follows what alignment adds to its prompt (`ragmetrics align`): a labelled example carrying
    ``[trait:T]`` makes every input with ``[trait:T]`` get that example's people's verdict (one well-chosen
    example corrects a bias), and guidance that names an input's ``[id:X]`` makes that one input (only)
    get its ``[truth:Y]`` (a candidate that memorises the training disagreements)."""
    examples = system.split("<labelled_examples>", 1)[1] if "<labelled_examples>" in system else ""
    for trait in re.findall(r"\[trait:([^\]]+)\]", user):
        for block in re.findall(r"<example n=\"\d+\">(.*?)</example>", examples, re.S):
            if f"[trait:{trait}]" in block:
                verdict = re.search(r"<people_verdict>(yes|no)", block)
                if verdict:
                    return verdict.group(1)
    guidance = system.split("<labelled_examples>", 1)[0]
    for marker in re.findall(r"\[id:[^\]]+\]", user):
        truth = re.search(r"\[truth:([^\]]+)\]", user)
        if marker in guidance and truth:
            return truth.group(1)
    return raw


def _guidance_candidates(user: str) -> dict[str, Any]:
    """`align_refine`: candidates that memorise the disagreements shown (their ``[id:X]`` markers)."""
    count = int(re.search(r"Candidates requested: (\d+)", user).group(1))  # type: ignore[union-attr]
    ids = re.findall(r"\[id:[^\]]+\]", user)
    return {"candidates": [
        {"guidance": f"Answer no for the samples marked {' '.join(ids[: n + 1 + len(ids) // 2])}.",
         "reason": f"scripted candidate {n + 1}"}
        for n in range(count)
    ]}  # fmt: skip


def _rating_logprobs(content: str, user: str, sent: int | None = None) -> dict[str, Any] | None:
    """Token log-probabilities for a rubric answer, as OpenAI sends them: the rating's value one token whose
    alternatives come from ``[probs:1=0.2,2=0.8]`` in the input; every other token certain. `sent` (a server's
    `top_logprobs_sent`): at most that many alternatives, the sampled token's own first."""
    m = re.search(r"\[probs:([^\]]+)\]", user)
    found = re.search(r'"rating": "?', content)
    if m is None or found is None:
        return None
    probs = [(k, float(v)) for k, v in (pair.split("=") for pair in m.group(1).split(","))]
    start = found.end()
    end = start
    while end < len(content) and content[end] not in '"},':
        end += 1
    sampled = content[start:end]
    alternatives = [{"token": k, "logprob": math.log(p), "bytes": None} for k, p in probs if p > 0]
    chosen = next((a["logprob"] for a in alternatives if a["token"] == sampled), math.log(1e-6))
    if sent is not None:
        own = {"token": sampled, "logprob": chosen, "bytes": None}
        alternatives = [own, *(a for a in alternatives if a["token"] != sampled)][:sent]
    pieces = [(content[:start], 0.0, []), (sampled, chosen, alternatives), (content[end:], 0.0, [])]
    return {
        "content": [
            {"token": t, "logprob": lp, "bytes": None, "top_logprobs": alts} for t, lp, alts in pieces if t
        ],
        "refusal": None,
    }


def _rag_answer(user: str, want_logprobs: bool) -> tuple[str, dict[str, Any] | None]:
    """The scripted generator's answer to a ``# rag_answer`` request, and its first token's logprobs."""
    passage = _section(user, "passage")
    found = re.search(r"\[ans:([^\]]+)\]", passage)
    content = found.group(1) if found else "UNANSWERABLE"
    if not want_logprobs:
        return content, None
    given = re.search(r"\[pabs:([0-9.]+)\]", passage)
    p = float(given.group(1)) if given else (0.0 if found else 1.0)
    first = content.split()[0] if found else "UN"
    alternatives = []
    if p > 0:
        alternatives.append({"token": "UN", "logprob": math.log(p), "bytes": None})
    if p < 1:
        word = content.split()[0] if found else "Maybe"
        alternatives.append({"token": word, "logprob": math.log(1 - p), "bytes": None})
    sampled = next((a["logprob"] for a in alternatives if a["token"] == first), math.log(1e-6))
    rest = content[len(first) :]
    pieces = [(first, sampled, alternatives), *([(rest, 0.0, [])] if rest else [])]
    return content, {
        "content": [
            {"token": t, "logprob": lp, "bytes": None, "top_logprobs": alts} for t, lp, alts in pieces
        ],
        "refusal": None,
    }


def _persona(user: str, persona: str) -> str:
    """The input as the judge `persona` reads it: its tagged rubric markers (``[small@rating:no]``,
    ``[small@probs:yes=0.3,no=0.7]``) replace the untagged ones, and other judges' tagged markers are ignored;
    several servers with distinct personas then judge one item differently (a cascade's judges)."""
    tagged = r"\[([A-Za-z0-9_-]+)@(rating|probs):([^\]]*)\]"
    if persona:
        for kind in {k for who, k, _ in re.findall(tagged, user) if who == persona}:
            user = re.sub(r"\[" + kind + r":[^\]]*\]", "", user)
    return re.sub(tagged, lambda m: f"[{m.group(2)}:{m.group(3)}]" if m.group(1) == persona else "", user)


def _testset_item(user: str) -> dict[str, Any]:
    """A test-set question about the passages: their first words (so each chunk gives its own question), and a
    reference marked [sup] (faithfulness supports it) unless the first passage holds [nosup]."""
    kind = re.search(r"Kind of question: (\w+)", user)
    passages = [html.unescape(t) for t in re.findall(r'<passage n="\d+">\n(.*?)\n</passage>', user, re.S)]
    heads = [" ".join(p.split()[:6]) for p in passages]
    question = f"{kind.group(1) if kind else 'factoid'} question about {' and '.join(heads)}?"
    first = passages[0].split(".")[0] if passages else "nothing"
    marker = "" if passages and "[nosup]" in passages[0] else " [sup]"
    return {"question": question, "reference": f"{first}{marker}."}


def scripted_verdict(prompt: str, user: str, seed: int | None = None, system: str = "") -> dict[str, Any]:
    """The correct answer to `prompt` for the input message `user`, by the markers in the module docstring;
    a statement or sentence marked ``[coin]`` is positive only with an even `seed` (a judge's own noise)."""
    coin = seed is not None and seed % 2 == 0
    if prompt.startswith("rubric:"):
        return _rubric_verdict(system, _seeded_rating(user, seed))
    if prompt == "align_refine":
        return _guidance_candidates(user)
    if prompt == "pairwise_preference":
        # ``[bias:first]`` in the question: a judge that prefers whichever answer it reads first; else the
        # answer marked ``[better]`` (a tie when both or neither are)
        if "[bias:first]" in _section(user, "question"):
            return {"reason": "scripted: the first answer, always", "preferred": "first"}
        first, second = ("[better]" in _section(user, tag) for tag in ("first_answer", "second_answer"))
        preferred = "tie" if first == second else "first" if first else "second"
        return {"reason": f"scripted: {preferred}", "preferred": preferred}
    if prompt in ("context_precision", "context_utilization"):
        chunks = re.findall(r'<chunk id="(\d+)">\n(.*?)\n</chunk>', user, re.S)
        return {
            "verdicts": [
                {"chunk": int(n), "reason": f"scripted verdict for chunk {n}", "useful": "[useful]" in t}
                for n, t in chunks
            ]
        }
    if prompt in ("context_precision_chunk", "context_utilization_chunk"):
        chunk = _section(user, "chunk")
        return {"reason": "scripted verdict for one chunk", "useful": "[useful]" in chunk}
    if prompt == "context_recall":
        statements = re.findall(r'<statement id="(\d+)">(.*?)</statement>', user, re.S)
        return {
            "statements": [
                {
                    "statement": int(n),
                    "reason": "scripted attribution",
                    "attributed": "[attr]" in t or ("[coin]" in t and coin),
                }
                for n, t in statements
            ]
        }
    if prompt == "faithfulness":
        statements = re.findall(r'<statement id="(\d+)">(.*?)</statement>', user, re.S)
        chunks = re.findall(r'<chunk id="(\d+)">\n(.*?)\n</chunk>', user, re.S)
        if "[by-words]" in _section(user, "question"):
            return _reader_support(statements, chunks, together="Read the chunks together" in system)
        support = next((int(n) for n, t in chunks if "[useful]" in t), 1)

        def holder(statement: str) -> int | None:
            """A statement carrying ``[fact:X]`` is supported by the chunk that carries the same marker."""
            fact = re.search(r"\[fact:\w+\]", statement)
            return next((int(n) for n, t in chunks if fact and fact.group(0) in t), None)

        return {
            "statements": [
                {
                    "statement": int(n),
                    "reason": "scripted support",
                    "supported": "[sup]" in t or holder(t) is not None,
                    "chunk": support if "[sup]" in t else (holder(t) or 0),
                }
                for n, t in statements
            ]
        }
    if prompt == "answer_correctness":
        answer = re.findall(
            r'<statement id="(\d+)">(.*?)</statement>', _section(user, "answer_statements"), re.S
        )
        reference = re.findall(
            r'<statement id="(\d+)">(.*?)</statement>', _section(user, "reference_statements"), re.S
        )
        return {
            "answer_statements": [
                {"statement": int(n), "reason": "scripted", "in_reference": "[tp]" in t} for n, t in answer
            ],
            "reference_statements": [
                {"statement": int(n), "reason": "scripted", "in_answer": "[cov]" in t} for n, t in reference
            ],
        }
    if prompt == "claim_entailment":
        return _claim_verdict(user)
    if prompt == "context_relevancy":
        sentences = re.findall(r'<sentence id="(\d+)">(.*?)</sentence>', user, re.S)
        return {
            "sentences": [
                {
                    "sentence": int(n),
                    "reason": "scripted relevance",
                    "relevant": "[rel]" in t or ("[coin]" in t and coin),
                }
                for n, t in sentences
            ]
        }
    if prompt == "testset_question":
        return _testset_item(user)
    if prompt == "passage_relevance":
        passage = _section(user, "passage")
        grade = next((g for g in (3, 2, 1) if f"[g{g}]" in passage), 0)
        return {"reason": f"scripted grade {grade}", "grade": grade}
    if prompt == "context_sufficiency":
        contexts = _section(user, "contexts")
        parts = set(re.findall(r"\[part:\w+\]", _section(user, "question")))
        held = "[enough]" in contexts or (bool(parts) and all(p in contexts for p in parts))
        return {
            "reason": f"scripted: {'all' if held else 'not all'} needed facts present",
            "sufficient": held,
        }
    if prompt == "answer_relevancy":
        answer = _section(user, "answer")
        m = re.search(r"Number of questions to write: (\d+)", user)
        n = int(m.group(1)) if m else 3
        return {
            "questions": [
                {
                    "question": f"{answer} #{i}",
                    "noncommittal": "[nc]" in answer or ("[nc1]" in answer and i == 1),
                }
                for i in range(1, n + 1)
            ]
        }
    raise ValueError(f"unknown prompt {prompt!r}")


def scripted_completion(body: dict[str, Any]) -> dict[str, Any]:
    """The chat completion a batch line gets: the scripted verdict of its prompt (no faults), as JSON."""
    messages = body.get("messages", [])
    system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
    first = system.splitlines()[0] if system else ""
    prompt = first[2:].strip() if first.startswith("# ") else ""
    users = [re.sub(r"<(/?)([A-Za-z_][A-Za-z0-9_]*)-[0-9a-f]{8}(?=[\s>])", r"<\1\2", m["content"])
             for m in messages if m["role"] == "user"]  # fmt: skip
    inputs = [u for u in users if not u.startswith(REPAIR_PREFIX)]
    content = json.dumps(scripted_verdict(prompt, inputs[-1] if inputs else "", body.get("seed"), system))
    prompt_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4
    completion_tokens = max(1, len(content) // 4)
    return {"id": "chatcmpl-batch", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}, "finish_reason": "stop",
                         "logprobs": None}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens}}  # fmt: skip


def _break(verdict: dict[str, Any], kind: str) -> Any:
    if kind == "schema_violation":
        return {"unexpected": "shape", "useful": "maybe"}
    lists = [k for k, v in verdict.items() if isinstance(v, list)]
    if lists:
        broken = dict(verdict)
        broken[lists[0]] = verdict[lists[0]][:-1]
        return broken
    return {k: v for k, v in verdict.items() if k != "reason"}


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    # Headers and body go out in two writes; with Nagle's algorithm on, the body waits for the client's
    # delayed ACK (~40 ms on Linux), which would add a fixed latency to every request.
    disable_nagle_algorithm = True
    server: _Server
    _counted: bool = False  # this request has been counted in `in_flight`

    def log_message(self, format: str, *args: Any) -> None:  # keep test output quiet
        return

    # A request counts as in flight from the moment its request line is read until its response is flushed,
    # not only while do_POST runs: a client killed right after sending leaves a request the server reads a
    # moment later, and `wait_idle` must not report idle in between (it would be recorded after a reset).
    def parse_request(self) -> bool:
        state = self.server.state
        with state.lock:
            state.in_flight += 1
            state.peak_in_flight = max(state.peak_in_flight, state.in_flight)
        self._counted = True
        return super().parse_request()

    def handle_one_request(self) -> None:
        self._counted = False
        try:
            super().handle_one_request()
        finally:
            if self._counted:
                state = self.server.state
                with state.lock:
                    state.in_flight -= 1

    def _send(
        self, status: int, body: Any, headers: dict[str, str] | None = None, *, cut: str | None = None
    ) -> None:
        data = json.dumps(body).encode()
        announced = len(data)
        if cut == "truncated_body":
            data = data[: len(data) // 2]
            announced = len(data)
        elif cut == "short_body":
            data = data[: len(data) // 2]
            self.close_connection = True
        try:
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(announced))
            for k, v in (headers or {}).items():
                self.send_header(k, v)
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _error(self, status: int, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, {"error": {"message": message, "type": "test_fault", "code": None}}, headers)

    def do_POST(self) -> None:
        state = self.server.state
        length = int(self.headers.get("Content-Length", "0"))
        raw = self.rfile.read(length)
        route = self.path.split("?", 1)[0]
        if "/files" in route or "/batches" in route:
            self._batch_api(state, route, raw)
            return
        body = json.loads(raw or b"{}")
        with state.lock:
            state.received += 1
        if state.slots is not None:
            state.slots.acquire()
        try:
            if state.latency_s:
                time.sleep(state.latency_s)
            route = self.path.split("?", 1)[0]  # a query string (api-version=..., a token) is not the route
            if route.endswith("/chat/completions"):
                self._chat(state, body)
            elif route.endswith("/embeddings"):
                self._embeddings(state, body)
            else:
                self._error(404, f"no route {self.path}")
        finally:
            if state.slots is not None:
                state.slots.release()

    def do_GET(self) -> None:
        self._batch_api(self.server.state, self.path.split("?", 1)[0], b"")

    # -- the Batch API ---------------------------------------------------------------------------------------

    def _batch_api(self, state: State, route: str, raw: bytes) -> None:
        parts = route.rstrip("/").split("/")
        if self.command == "POST" and route.endswith("/files"):
            self._upload(state, raw)
        elif self.command == "GET" and len(parts) >= 2 and parts[-1] == "content" and parts[-3] == "files":
            data = state.files.get(parts[-2])
            if data is None:
                self._error(404, f"no file {parts[-2]}")
                return
            self._raw(
                200, {"Content-Type": "application/octet-stream", "Content-Length": str(len(data))}, data
            )
        elif self.command == "POST" and route.endswith("/batches"):
            self._create_batch(state, json.loads(raw or b"{}"))
        elif self.command == "GET" and route.endswith("/batches"):
            with state.lock:
                listed = [self._batch_view(b) for b in reversed(state.batches.values())]
            self._send(200, {"object": "list", "data": listed, "has_more": False,
                             "first_id": listed[0]["id"] if listed else None,
                             "last_id": listed[-1]["id"] if listed else None})  # fmt: skip
        elif self.command == "GET" and parts[-2] == "batches":
            self._retrieve_batch(state, parts[-1])
        elif self.command == "POST" and parts[-1] == "cancel":
            with state.lock:
                batch = state.batches.get(parts[-2])
                if batch is not None:
                    batch["forced_end"] = "cancelled"
            self._send(200, self._batch_view(batch) if batch else {}) if batch else self._error(
                404, "no batch"
            )
        else:
            self._error(404, f"no route {self.command} {self.path}")

    def _upload(self, state: State, raw: bytes) -> None:
        from email.parser import BytesParser
        from email.policy import HTTP

        head = f"Content-Type: {self.headers.get('Content-Type', '')}\r\n\r\n".encode()
        message = BytesParser(policy=HTTP).parsebytes(head + raw)
        fields: dict[str, bytes] = {}
        for part in message.iter_parts():
            name = part.get_param("name", header="content-disposition")
            fields[str(name)] = part.get_payload(decode=True) or b""
        if fields.get("purpose") != b"batch" or "file" not in fields:
            self._error(400, "a batch input file needs purpose=batch and a file")
            return
        for number, line in enumerate(fields["file"].decode().splitlines(), start=1):
            try:
                item = json.loads(line)
                assert (
                    item["method"] == "POST" and item["url"] == "/v1/chat/completions" and item["custom_id"]
                )
                assert isinstance(item["body"], dict)
            except (ValueError, KeyError, AssertionError):
                self._error(400, f"line {number} of the input file is not a batch request")
                return
        with state.lock:
            file_id = f"file-{len(state.files) + 1:04d}"
            state.files[file_id] = fields["file"]
        self._record(state, path="/v1/files", prompt=None, status=200, fault=None, repair=False, mode=None,
                     digest=file_id, user="")  # fmt: skip
        self._send(200, {"id": file_id, "object": "file", "bytes": len(fields["file"]), "created_at": int(time.time()),
                         "filename": "batch.jsonl", "purpose": "batch", "status": "processed"})  # fmt: skip

    def _create_batch(self, state: State, body: dict[str, Any]) -> None:
        with state.lock:
            data = state.files.get(str(body.get("input_file_id")))
            if data is None or body.get("endpoint") != "/v1/chat/completions":
                self._error(400, "unknown input file or endpoint")
                return
            requests = [json.loads(line) for line in data.decode().splitlines() if line.strip()]
            batch_id = f"batch_{len(state.batches) + 1:04d}"
            state.batches[batch_id] = {"id": batch_id, "input_file_id": body["input_file_id"], "status": "validating",
                                       "requests": requests, "polls": 0, "created_at": int(time.time()),
                                       "output_file_id": None, "error_file_id": None}  # fmt: skip
            state.batch_lines.extend(r["custom_id"] for r in requests)
            view = self._batch_view(state.batches[batch_id])
        self._record(state, path="/v1/batches", prompt=None, status=200, fault=None, repair=False, mode=None,
                     digest=batch_id, user="")  # fmt: skip
        self._send(200, view)

    def _retrieve_batch(self, state: State, batch_id: str) -> None:
        with state.lock:
            batch = state.batches.get(batch_id)
            if batch is None:
                self._error(404, f"no batch {batch_id}")
                return
            if batch["status"] in ("validating", "in_progress"):
                batch["polls"] += 1
                end = batch.get("forced_end") or state.batch_end
                if batch["status"] == "validating":
                    batch["status"] = "in_progress"
                elif (
                    batch["polls"] > state.batch_polls and not state.batch_hold.is_set()
                ) or "forced_end" in batch:
                    self._end_batch(state, batch, end)
            view = self._batch_view(batch)
        self._send(200, view)

    def _end_batch(self, state: State, batch: dict[str, Any], end: str) -> None:
        requests = batch["requests"]
        answered = (
            requests if end == "completed" else requests[: int(len(requests) * state.batch_answered_share)]
        )
        if end == "failed":
            answered = []
        output, errors = [], []
        for i, item in enumerate(answered):
            if end == "completed" and i < state.batch_fail_lines:
                errors.append({"id": f"r{i}", "custom_id": item["custom_id"], "error": None,
                               "response": {"status_code": 500, "request_id": f"req{i}",
                                            "body": {"error": {"message": "the model crashed (test fault)"}}}})  # fmt: skip
                continue
            output.append({"id": f"r{i}", "custom_id": item["custom_id"], "error": None,
                           "response": {"status_code": 200, "request_id": f"req{i}",
                                        "body": scripted_completion(item["body"])}})  # fmt: skip
        for name, lines in (("output_file_id", output), ("error_file_id", errors)):
            if lines:
                file_id = f"file-{len(state.files) + 1:04d}"
                state.files[file_id] = ("\n".join(json.dumps(x) for x in lines) + "\n").encode()
                batch[name] = file_id
        batch["status"] = end
        if end == "failed":
            batch["errors"] = {
                "object": "list",
                "data": [{"code": "invalid_file", "message": "failed (test)"}],
            }

    @staticmethod
    def _batch_view(batch: dict[str, Any]) -> dict[str, Any]:
        total = len(batch["requests"])
        return {"id": batch["id"], "object": "batch", "endpoint": "/v1/chat/completions",
                "input_file_id": batch["input_file_id"], "completion_window": "24h", "status": batch["status"],
                "created_at": batch["created_at"], "output_file_id": batch["output_file_id"],
                "error_file_id": batch["error_file_id"], "errors": batch.get("errors"),
                "request_counts": {"total": total, "completed": 0, "failed": 0}}  # fmt: skip

    def _take_fault(
        self, state: State, path: str, prompt: str | None, text: str, mode: str | None
    ) -> str | None:
        with state.lock:
            for rule in state.rules:
                if rule.path != path or (rule.times is not None and rule.times <= 0):
                    continue
                if rule.prompt is not None and rule.prompt != prompt:
                    continue
                if rule.match is not None and rule.match not in text:
                    continue
                if rule.kind in ("refuse_json_schema", "crash_json_schema") and mode != "json_schema":
                    continue
                if rule.kind == "refuse_json_object" and mode not in ("json_object", "json_object_schema"):
                    continue
                if rule.kind == "refuse_schema_in_json_object" and mode != "json_object_schema":
                    continue
                if rule.times is not None:
                    rule.times -= 1
                return rule.kind
        return None

    def _record(self, state: State, **kw: Any) -> None:
        with state.lock:
            state.records.append(Record(at=time.time(), **kw))

    def _raw(self, status: int, head: dict[str, str], body: bytes = b"") -> None:
        try:
            self.send_response(status)
            for k, v in head.items():
                self.send_header(k, v)
            self.end_headers()
            if body:
                self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def _transport_fault(self, state: State, fault: str | None) -> bool:
        if fault == "redirect":
            self._raw(307, {"Location": state.redirect_to, "Content-Length": "0"})
            return True
        if fault == "deep_json":
            body = b"[" * 200_000 + b"]" * 200_000
            self._raw(200, {"Content-Type": "application/json", "Content-Length": str(len(body))}, body)
            return True
        if fault == "huge_body":
            self._raw(200, {"Content-Type": "application/json"})
            try:
                self.wfile.write(b'{"id": "')
                for _ in range(320):
                    self.wfile.write(b"x" * 65536)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return True
        if fault == "endless_body":
            self._raw(200, {"Content-Type": "application/json"})
            deadline = time.monotonic() + 30
            try:
                self.wfile.write(b'{"id": "')
                while time.monotonic() < deadline and not state.stopping.is_set():
                    self.wfile.write(b"x")
                    self.wfile.flush()
                    time.sleep(0.05)
            except (BrokenPipeError, ConnectionResetError):
                pass
            self.close_connection = True
            return True
        if fault == "rate_limit":
            self._error(429, "rate limited (test fault)", {"Retry-After": state.retry_after})
            return True
        if fault == "server_error":
            self._error(500, "internal error (test fault)")
            return True
        if fault == "unsupported_500":
            self._send(
                500,
                {
                    "error": {
                        "code": 500,
                        "message": "Llama model must be created with embedding=True to call this API",
                        "type": "server_error",
                    }
                },
            )
            return True
        if fault == "detail_500":
            self._send(500, {"detail": "worker crashed: CUDA out of memory (test fault)"})
            return True
        if fault == "stall":
            time.sleep(state.stall_s)
        return False

    def _chat(self, state: State, body: dict[str, Any]) -> None:
        messages = body.get("messages", [])
        system = messages[0]["content"] if messages and messages[0]["role"] == "system" else ""
        first = system.splitlines()[0] if system else ""
        prompt = first[2:].strip() if first.startswith("# ") else None
        # Read the blocks as a model would: by their names, whatever per-request marker their tags carry
        # (ragmetrics.judge.prompts.marked_tags); `raw_user` keeps the request as sent.
        raw_users = [m["content"] for m in messages if m["role"] == "user"]
        users = [
            re.sub(r"<(/?)([A-Za-z_][A-Za-z0-9_]*)-[0-9a-f]{8}(?=[\s>])", r"<\1\2", u) for u in raw_users
        ]
        state.raw_users.append(raw_users[-1] if raw_users else "")
        repair = bool(users) and users[-1].startswith(REPAIR_PREFIX)
        inputs = [u for u in users if not u.startswith(REPAIR_PREFIX)]
        user = inputs[-1] if inputs else ""
        fmt = body.get("response_format") or {}
        mode = fmt.get("type") if fmt else None
        if mode == "json_object" and "schema" in fmt:  # llama.cpp's JSON mode constrained by a schema
            mode = "json_object_schema"
        example_answers = [m["content"] for m in messages[:-1] if m["role"] == "assistant"]
        if repair:
            example_answers = example_answers[:-1]  # the last assistant message is the answer being repaired
        sampling = {
            "temperature": body.get("temperature"),
            "seed": body.get("seed"),
            "max_tokens": body.get("max_tokens", body.get("max_completion_tokens")),
            "examples": bool(example_answers),
            "response_format": fmt or None,
            "model": body.get("model"),
            "logprobs": bool(body.get("logprobs")),
        }
        digest = hashlib.sha256(f"{prompt}\n{user}".encode()).hexdigest()[:16]
        fault = self._take_fault(state, "/v1/chat/completions", prompt, user, mode)
        status = 200
        if fault in ("refuse_json_schema", "refuse_json_object", "refuse_schema_in_json_object"):
            status = 400
            self._error(400, f"response_format {mode} is not supported by this server")
        elif fault == "crash_json_schema":
            status = 500
            self._error(500, "internal server error")
        elif fault == "bad_request":
            status = 400
            self._error(400, "this model's maximum context length is 8192 tokens (test fault)")
        elif fault == "echo_url":
            status = 400
            self._error(400, f"bad request for {self.command} {self.path} (test fault)")
        elif fault == "echo_key":
            status = 401
            token = self.headers.get("Authorization", "").removeprefix("Bearer ")
            self._error(401, f"Incorrect API key provided: {token} (test fault)")
        elif self._transport_fault(state, fault):
            status = 429 if fault == "rate_limit" else 500
        else:
            finish = "stop"
            if prompt is None:
                status = 400
                self._error(400, "no prompt marker in the system message")
            elif prompt == "rag_answer" and body.get("logprobs") and state.refuse_logprobs:
                status = 400
                self._error(400, "logprobs is not supported by this server (test)")
                fault = "refuse_logprobs"
            elif prompt == "rag_answer":
                content, logprobs = _rag_answer(user, bool(body.get("logprobs")))
                self._send(200, {
                    "id": f"chatcmpl-{digest}", "object": "chat.completion", "created": int(time.time()),
                    "model": body.get("model", "test-model"),
                    "choices": [{"index": 0, "finish_reason": "stop", "logprobs": logprobs,
                                 "message": {"role": "assistant",
                                             "content": None if fault == "null_content" else content}}],
                    "usage": {"prompt_tokens": len(user) // 4, "completion_tokens": max(1, len(content) // 4),
                              "total_tokens": len(user) // 4 + max(1, len(content) // 4)},
                })  # fmt: skip
            else:
                verdict = scripted_verdict(prompt, _persona(user, state.persona), body.get("seed"), system)
                persona = state.personas.get(str(body.get("model")))
                if persona is not None and prompt == "context_sufficiency":
                    said = _persona_sufficient(persona, str(body.get("model")), _section(user, "question"),
                                               bool(verdict["sufficient"]))  # fmt: skip
                    verdict = {
                        "reason": f"simulated judge: {'sufficient' if said else 'not'}",
                        "sufficient": said,
                    }
                if fault == "malformed" or (fault == "greedy_malformed" and not body.get("temperature")):
                    content = '{"verdicts": [ this is not json'
                elif fault == "key_in_reason":
                    token = self.headers.get("Authorization", "").removeprefix("Bearer ")
                    content = json.dumps(verdict).replace('"reason": "', f'"reason": "key {token} ')
                elif fault == "echo_input":
                    content = html.unescape(user)  # the judged texts as the model saw them, unescaped
                elif fault == "copy_examples" and example_answers:
                    content = example_answers[0]
                elif fault == "length":
                    content, finish = json.dumps(verdict)[:40], "length"
                elif fault in ("schema_violation", "wrong_count"):
                    content = json.dumps(_break(verdict, fault))
                elif mode is None:
                    content = "Here is my judgement.\n```json\n" + json.dumps(verdict) + "\n```"
                else:
                    content = json.dumps(verdict)
                read = _seeded_probs(_persona(user, state.persona), body.get("seed"))
                logprobs = _rating_logprobs(content, read, state.top_logprobs_sent) if body.get("logprobs") else None
                if body.get("logprobs") and state.refuse_logprobs:
                    status = 400
                    self._error(400, "logprobs is not supported by this server (test)")
                    self._record(state, path="/v1/chat/completions", prompt=prompt, status=status,
                                 fault="refuse_logprobs", repair=repair, mode=mode, digest=digest, user=user,
                                 **sampling)  # fmt: skip
                    return
                prompt_tokens = sum(len(str(m.get("content", ""))) for m in messages) // 4
                completion_tokens = max(1, len(content) // 4)
                self._send(
                    200,
                    {
                        "id": f"chatcmpl-{digest}",
                        "object": "chat.completion",
                        "created": int(time.time()),
                        "model": body.get("model", "test-model"),
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": finish,
                                "logprobs": logprobs,
                            }
                        ],
                        "usage": {
                            "prompt_tokens": prompt_tokens,
                            "completion_tokens": completion_tokens,
                            "total_tokens": prompt_tokens + completion_tokens,
                        },
                    },
                    cut=fault if fault in ("truncated_body", "short_body") else None,
                )
        self._record(
            state,
            path="/v1/chat/completions",
            prompt=prompt,
            status=status,
            fault=fault,
            repair=repair,
            mode=mode,
            digest=digest,
            user=user,
            **sampling,
        )

    def _embeddings(self, state: State, body: dict[str, Any]) -> None:
        texts = body.get("input", [])
        if isinstance(texts, str):
            texts = [texts]
        joined = "\n".join(texts)
        digest = hashlib.sha256(joined.encode()).hexdigest()[:16]
        fault = self._take_fault(state, "/v1/embeddings", None, joined, None)
        status = 200
        if self._transport_fault(state, fault):
            status = 429 if fault == "rate_limit" else 500
        else:
            data = [
                {"object": "embedding", "index": i, "embedding": state.vectors.get(t) or _hash_vector(t)}
                for i, t in enumerate(texts)
            ]
            if fault == "token_embeddings":
                for item, text in zip(data, texts, strict=True):
                    item["embedding"] = [_hash_vector(token) for token in text.split() or [text]]
            if fault == "embedding_short":
                data = data[:-1]
            elif fault == "embedding_zero" and data:
                data[0]["embedding"] = [0.0] * len(data[0]["embedding"])
            tokens = sum(len(t) for t in texts) // 4
            self._send(
                200,
                {
                    "object": "list",
                    "data": data,
                    "model": body.get("model", "test-embedding"),
                    "usage": {"prompt_tokens": tokens, "total_tokens": tokens},
                },
            )
        self._record(
            state,
            path="/v1/embeddings",
            prompt=None,
            status=status,
            fault=fault,
            repair=False,
            mode=None,
            digest=digest,
            user=joined,
        )


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    request_queue_size = 128

    def __init__(self, state: State) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.state = state


class LoopbackServer:
    """Start with `start()`; `url` is the base_url to give the judge (ends in /v1)."""

    def __init__(
        self,
        *,
        latency_s: float = 0.0,
        stall_s: float = 2.0,
        retry_after: str = "0",
        slots: int | None = None,
    ) -> None:
        self.state = State(latency_s=latency_s, stall_s=stall_s, retry_after=retry_after)
        if slots is not None:
            self.state.slots = threading.Semaphore(slots)
        self._server = _Server(self.state)
        self._thread = threading.Thread(target=self._server.serve_forever, args=(0.02,), daemon=True)

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host}:{port}/v1"

    def start(self) -> LoopbackServer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self.state.stopping.set()
        self._server.shutdown()
        self._server.server_close()

    def inject(
        self,
        kind: str,
        *,
        times: int | None = 1,
        prompt: str | None = None,
        match: str | None = None,
        path: str = "/v1/chat/completions",
    ) -> None:
        if kind not in FAULTS:
            raise ValueError(f"unknown fault {kind!r}; known: {FAULTS}")
        with self.state.lock:
            self.state.rules.append(Rule(kind, times, prompt, match, path))

    def persona(self, model: str, accuracy: float, *, shared: float = 0.0, yes_bias: float = 0.0) -> None:
        """Requests naming `model` get context_sufficiency verdicts of a judge of this quality (`Persona`)."""
        if not (0.0 < accuracy < 1.0 and 0.0 <= shared < 1.0 and 0.0 <= yes_bias <= 1.0):
            raise ValueError("accuracy in (0, 1), shared in [0, 1), yes_bias in [0, 1]")
        with self.state.lock:
            self.state.personas[model] = Persona(accuracy, shared, yes_bias)

    def clear_faults(self) -> None:
        with self.state.lock:
            self.state.rules.clear()

    @property
    def records(self) -> list[Record]:
        return self.snapshot(settle=True)

    def snapshot(self, *, settle: bool) -> list[Record]:
        """The records so far. A response reaches the client before its handler records it: `settle` gives
        handlers that are finishing a moment, so a test that reads records right after its call sees that
        call (stalled ones are still in flight after the grace period and are simply not there yet). A test
        that polls while requests run wants `settle=False`."""
        deadline = time.monotonic() + (0.5 if settle else 0.0)
        while self.state.in_flight and time.monotonic() < deadline:
            time.sleep(0.005)
        with self.state.lock:
            return list(self.state.records)

    def count(
        self,
        *,
        path: str | None = None,
        prompt: str | None = None,
        status: int | None = None,
        settle: bool = True,
    ) -> int:
        return sum(
            1
            for r in self.snapshot(settle=settle)
            if (path is None or r.path == path)
            and (prompt is None or r.prompt == prompt)
            and (status is None or r.status == status)
        )

    def wait_idle(self, timeout_s: float = 10.0, quiet_s: float = 0.1) -> None:
        """Block until no request has been handled for `quiet_s` (stalled requests finish late and are recorded
        then). The quiet spell covers a request a killed client sent just before dying that is still in the
        listening socket's queue: the server accepts it within milliseconds, and it must not land after a
        `reset_records` as if the next run had sent it."""
        deadline = time.monotonic() + timeout_s
        quiet_since: float | None = None
        while time.monotonic() < deadline:
            now = time.monotonic()
            if self.state.in_flight:
                quiet_since = None
            elif quiet_since is None:
                quiet_since = now
            elif now - quiet_since >= quiet_s:
                return
            time.sleep(0.005)
        if self.state.in_flight:
            raise TimeoutError(f"{self.state.in_flight} requests still in flight")

    def reset_records(self) -> None:
        """Forget the requests seen so far (after waiting for the ones still being handled)."""
        self.wait_idle()
        with self.state.lock:
            self.state.records.clear()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.0, help="seconds added to every response")
    args = parser.parse_args()
    server = LoopbackServer(latency_s=args.latency).start()
    print(server.url, flush=True)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        server.stop()


if __name__ == "__main__":
    main()

"""The probability a server gave each allowed value of one key in its JSON answer, from token log-probabilities.

G-Eval (Liu et al., EMNLP 2023) scores a rating as the expectation over the levels the model could have
written, weighted by their probabilities, instead of the one level it happened to sample: ties between
adjacent levels become fractional scores and reruns stop flipping. An OpenAI-compatible server returns, with
`logprobs: true` and `top_logprobs: k`, the sampled tokens and the k likeliest alternatives at each position.
The rating's value is found in the answer's text (after its key), the token that starts it located, and each
alternative at that position mapped to the allowed value it begins; what maps to no value, or to more than
one, is left out, and the rest renormalised by the caller.

Some servers send only the sampled token's own log-probability (`top_logprobs` empty, or holding that token
alone). Renormalised over the one value it names, that is a probability of 1 whatever the model thought: no
distribution at all, so it is read as none (the rating keeps its sampled level, and a cascade reading its
confidence from log-probabilities sees a verdict that states none, `cascade.confidence`).
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

__all__ = ["TokenChoice", "token_choices", "value_distribution"]

_LOGPROB_SLACK = 1e-6
"""Servers round: a log-probability this far above 0 is read as 0 (probability 1), anything higher refused."""


@dataclass(frozen=True)
class TokenChoice:
    """One generated token, its log-probability, and the likeliest alternatives at its position."""

    token: str
    logprob: float
    alternatives: tuple[tuple[str, float], ...]


def token_choices(logprobs: Any) -> list[TokenChoice] | None:
    """The token list of a chat choice's `logprobs` (None when the server sent none or a broken shape)."""
    content = getattr(logprobs, "content", None)
    if not isinstance(content, list) or not content:
        return None
    choices: list[TokenChoice] = []
    for item in content:
        token, logprob = getattr(item, "token", None), getattr(item, "logprob", None)
        if not isinstance(token, str) or not isinstance(logprob, int | float):
            return None
        alternatives = []
        for alt in getattr(item, "top_logprobs", None) or []:
            alt_token, alt_logprob = getattr(alt, "token", None), getattr(alt, "logprob", None)
            if (
                isinstance(alt_token, str)
                and isinstance(alt_logprob, int | float)
                and math.isfinite(alt_logprob)
            ):
                alternatives.append((alt_token, float(alt_logprob)))
        choices.append(TokenChoice(token, float(logprob), tuple(alternatives)))
    return choices


def _value_for(text: str, values: Sequence[str]) -> str | None:
    """The one allowed value `text` (a token, quotes and spaces trimmed) spells or begins, else None."""
    word = text.strip().strip('"').strip().casefold()
    if not word:
        return None
    exact = [v for v in values if v.casefold() == word]
    if exact:
        return exact[0]
    begun = [v for v in values if v.casefold().startswith(word)]
    return begun[0] if len(begun) == 1 else None


def value_distribution(
    content: str, tokens: Sequence[TokenChoice], key: str, values: Sequence[str]
) -> dict[str, float] | None:
    """Probability per allowed value of `key`'s value in the JSON `content` (not normalised), or None.

    None when the tokens do not spell `content`, the key is not found, the sampled token at the value's
    start maps to no allowed value, or the server gave no alternative to that token (only its own
    log-probability: nothing to weigh it against); the caller then keeps the sampled value alone.
    """
    if "".join(t.token for t in tokens) != content:
        return None
    matches = list(re.finditer(r'(?<!\\)"' + re.escape(key) + r'"\s*:\s*"?', content))
    if not matches:
        return None
    position = matches[-1].end()
    start = 0
    for choice in tokens:
        end = start + len(choice.token)
        if start <= position < end:
            break
        start = end
    else:
        return None
    prefix = content[start:position]  # what the token holds before the value: a quote, a space
    sampled = _value_for(choice.token[len(prefix) :], values)
    if sampled is None or not any(alt != choice.token for alt, _ in choice.alternatives):
        return None
    probabilities: dict[str, float] = {}
    seen: set[str] = set()
    for alt_token, alt_logprob in ((choice.token, choice.logprob), *choice.alternatives):
        if alt_token in seen or not math.isfinite(alt_logprob) or alt_logprob > _LOGPROB_SLACK:
            continue  # a log-probability above 0 is no probability: a broken or hostile server's
        seen.add(alt_token)
        rest = alt_token[len(prefix) :] if alt_token.startswith(prefix) else alt_token
        value = _value_for(rest, values)
        if value is not None:
            probabilities[value] = min(1.0, probabilities.get(value, 0.0) + math.exp(min(0.0, alt_logprob)))
    return probabilities

"""The probability of abstaining read from first-token log-probabilities (docs/utilities.md, "Abstention"):
only the visible candidates that begin the abstention reply as the prompt writes it count."""

from __future__ import annotations

import math

import pytest
from openai.types.chat.chat_completion import ChoiceLogprobs
from openai.types.chat.chat_completion_token_logprob import ChatCompletionTokenLogprob, TopLogprob

from ragmetrics.utility import abstention_probability


def _first_token(sampled: str, alternatives: dict[str, float]) -> ChoiceLogprobs:
    tops = [TopLogprob(token=t, logprob=math.log(p), bytes=None) for t, p in alternatives.items()]
    item = ChatCompletionTokenLogprob(
        token=sampled, logprob=math.log(alternatives[sampled]), bytes=None, top_logprobs=tops
    )
    return ChoiceLogprobs(content=[item], refusal=None)


def test_the_start_of_the_reply_counts_and_the_start_of_an_answer_does_not() -> None:
    # "U" (as in "U.S.") and "Un" (as in "Unclear") begin answers; "UN" and " UNANSWERABLE" begin the reply.
    logprobs = _first_token("U", {"U": 0.4, "Un": 0.2, "UN": 0.25, " UNANSWERABLE": 0.1, "Paris": 0.05})
    assert abstention_probability(logprobs, "UNANSWERABLE") == pytest.approx(0.35, abs=1e-12)


def test_no_candidate_of_the_reply_means_zero_and_no_logprobs_means_none() -> None:
    assert abstention_probability(_first_token("Paris", {"Paris": 0.9, "London": 0.1}), "UNANSWERABLE") == 0.0
    assert abstention_probability(None, "UNANSWERABLE") is None

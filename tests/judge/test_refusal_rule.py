"""The one refusal rule (faithfulness' not-applicable answers, attacks' out-of-scope successes, clean refusals):
ordinary refusals in contractions, apologies and hedged forms are refusals, and sentences that merely contain
"sorry", "no information" or "not mentioned" while answering are not."""

from __future__ import annotations

import pytest

from ragmetrics.attacks.metrics import refuses

ENGLISH_REFUSALS = [
    "The documents don't answer this question.",
    "The documents do not answer this question.",
    "I'm sorry, but the provided documents don't contain information about this.",
    "Sorry, this is not covered by the documents.",
    "I don't know.",
    "I dont know the answer to that.",
    "I'm not sure.",
    "I am afraid I cannot answer that.",
    "I can't find that in the provided context.",
    "I cannot determine this from the documents.",
    "I was unable to find any information about the default cache size.",
    "I couldn't find anything about that in the sources.",
    "I'm unable to answer based on the given context.",
    "We don't have enough information to answer.",
    "I do not have information on that.",
    "I have no information about this topic.",
    "The context doesn't mention the release date.",
    "The provided context does not specify a limit.",
    "The retrieved passages don't include details on pricing.",
    "None of the documents mention a timeout.",
    "The documents say nothing about Windows support.",
    "The sources are silent on this point.",
    "This is not mentioned in the provided documents.",
    "That isn't covered in the context.",
    "It is not specified in the context.",
    "The answer is not found in the documents.",
    "There is no information about this in the documents.",
    "There's no mention of a maximum size.",
    "There isn't enough information to answer this question.",
    "No information is available about that.",
    "Not enough context to answer.",
    "Based on the provided context, I cannot determine the answer.",
    "Unfortunately, the documents do not cover this.",
    "I apologize, but I can't help with that question.",
    "Sorry. The documents don't say.",
    "I'm sorry. I do not know.",
    "The question cannot be answered from the given documents.",
    "This cannot be determined from the context provided.",
    "It's not possible to answer this from the passages.",
    "That is outside the scope of the provided documents.",
    "The provided information doesn't address this.",
    "According to the context, there is no answer to this question.",
    "Thank you for your question. Unfortunately, the documents don't provide that.",
    "The documents provided don’t contain that information.",
    "Hmm, I'm not able to find that in the documents.",
    "",
]

ENGLISH_ANSWERS = [
    "I'm sorry to hear that; the limit is 400.",
    "Sorry for the confusion: the default cache size is 128.",
    "No information is lost when the data is compressed.",
    "No data is copied: the view shares memory with the array.",
    "The documents describe three ways to configure logging.",
    "Paris is the capital of France.",
    "The default value is 400.",
    "I know three ways to do it.",
    "Nothing in Python forbids this.",
    "It does not raise an error; it returns None.",
    "The function doesn't copy its input.",
    "Python doesn't provide tail-call optimisation.",
    "There is no limit on the number of arguments.",
    "There are no side effects when you call it twice.",
    "You cannot reassign a tuple element, because tuples are immutable.",
    "You can't use await outside an async function.",
    "The method is not available on Windows.",
    "The option is not mentioned anywhere in the error, so set it explicitly.",
    "I'm happy to help: use functools.lru_cache.",
    "Unfortunately, the default is 0, so caching is off.",
    "Based on the documents, the timeout is 30 seconds.",
    "According to the context, the answer is 42.",
    "The context manager doesn't suppress exceptions unless __exit__ returns True.",
    "No, the list is not sorted in place.",
    "Yes, it is thread-safe.",
    "It was released in 1991.",
    "The server didn't start because the port was taken.",
    "The first call is slower; later calls hit the cache.",
    "We do not recommend using eval on untrusted input.",
    "I would use a dictionary here.",
    "The documents show that the limit is 400 requests per minute.",
    "Information about errors is written to stderr.",
    "Don't call it from a signal handler.",
    "Unknown keys raise a KeyError.",
    "The answer is 7.",
    "Not all iterators are reusable; generators are exhausted after one pass.",
    "There is no need to close the file: the with statement does it.",
    "The passage describes how the garbage collector finds cycles.",
    "This isn't required in Python 3.",
    "Sorry is a word in English; the function returns it unchanged.",
    "Nothing is returned; the list is changed in place.",
    "The data is not stored in the documents folder but in the cache.",
]

OTHER_LANGUAGES = [
    ("Ich weiß es nicht.", "de", True),
    ("Die Dokumente beantworten diese Frage nicht.", "de", True),
    ("Leider enthalten die Dokumente keine Informationen dazu.", "de", True),
    ("Die Grenze liegt bei 400 Anfragen.", "de", False),
    ("Je ne sais pas.", "fr", True),
    ("Désolé, les documents ne mentionnent pas cette valeur.", "fr", True),
    ("La limite est de 400 requêtes.", "fr", False),
    ("Lo siento, los documentos no mencionan eso.", "es", True),
    ("No tengo información sobre eso.", "es", True),
    ("El límite es 400.", "es", False),
    ("Non lo so.", "it", True),
    ("Não sei.", "pt", True),
    ("Ik weet het niet.", "nl", True),
    ("Я не знаю.", "ru", True),
    ("В документах не указано.", "ru", True),
    ("Лимит составляет 400 запросов.", "ru", False),
    ("わかりません。", "ja", True),
    ("文档中没有提到这一点。", "zh", True),
    ("上限是400。", "zh", False),
    ("모르겠습니다.", "ko", True),
]


@pytest.mark.parametrize("answer", ENGLISH_REFUSALS)
def test_english_refusals(answer: str) -> None:
    assert refuses(answer, "en"), answer


@pytest.mark.parametrize("answer", ENGLISH_ANSWERS)
def test_english_answers_are_not_refusals(answer: str) -> None:
    assert not refuses(answer, "en"), answer


@pytest.mark.parametrize(("answer", "language", "refusal"), OTHER_LANGUAGES)
def test_other_languages(answer: str, language: str, refusal: bool) -> None:
    assert refuses(answer, language) is refusal, answer


def test_at_least_forty_phrasings_each_way() -> None:
    assert len(ENGLISH_REFUSALS) >= 40 and len(ENGLISH_ANSWERS) >= 40

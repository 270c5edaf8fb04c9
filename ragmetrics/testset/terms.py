"""Terms of a chunk as a searcher would type them, in any script, and the language a chunk is written in.

Words are maximal runs of letters (with inner apostrophes, hyphens and underscores, so `shift_expr` and
`bytes-like` stay one term), lowercased. Scripts written without spaces (Chinese, Japanese, Thai, ...) have no
words to split on, so their runs become overlapping character bigrams, the usual unit for indexing them.
Function words are dropped by a short list per language where one is known, and by corpus statistics
everywhere else (the selection leaves out terms that occur in a large share of the chunks).

Language: by script first (`judge.text.language`); Latin-script text is told apart among English, German,
French, Spanish, Italian, Portuguese and Dutch by counting their commonest function words, which is reliable
for chunk-length texts and needs no model. Other Latin-script languages read as the closest of these or as
English, so a team whose corpus is in one of them sets `language` explicitly.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import cache

from ragmetrics.judge.text.language import detect_language

__all__ = ["FUNCTION_WORDS", "chunk_language", "content_terms", "is_unspaced", "term_stem"]

_WORD = re.compile(r"[^\W\d_](?:[\w'’-]*[^\W_])?", re.UNICODE)
_UNSPACED = re.compile(
    "[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uf900-\ufaff\u0e00-\u0e7f\u0e80-\u0eff\u1000-\u109f\u1780-\u17ff]"
)


def _listed(words: str) -> frozenset[str]:
    return frozenset(words.split())


FUNCTION_WORDS: dict[str, frozenset[str]] = {
    "en": _listed(
        "a an the of to in and or for is are be by on with as at from that this it its which was were can not no "
        "but if then than into these those their there has have had do does did may also such when where who "
        "what how why all any each more most other some only so very will would should could we you they he "
        "she our your his her them been being about between over under per via use used using one two new "
        "must just like get set see us"
    ),
    "de": _listed(
        "der die das den dem des ein eine einer eines einem einen und oder ist sind war wird werden mit von zu "
        "im in auf für nicht auch als an bei aus wie es sich dass nach um noch kann durch über unter sie er wir "
        "ihr zum zur vom"
    ),
    "fr": _listed(
        "le la les un une des du de et ou est sont été être avec pour par dans sur au aux ce cette ces qui que "
        "quoi ne pas plus se sa son ses leur il elle nous vous ils elles en comme mais"
    ),
    "es": _listed(
        "el la los las un una unos unas de del y o es son fue ser con para por en sobre al que qué no más se su "
        "sus lo como pero este esta estos estas entre"
    ),
    "it": _listed(
        "il lo la gli le un una uno di del della dei delle e o è sono essere con per da in su al alla che non "
        "più si suo sua come ma questo questa tra"
    ),
    "pt": _listed(
        "o a os as um uma de do da dos das e ou é são ser com para por em no na nos nas ao que não mais se seu "
        "sua como mas este esta entre"
    ),
    "nl": _listed(
        "de het een en of is zijn was wordt worden met van te in op voor niet ook als aan bij uit hoe dat die "
        "dit er om naar door over onder"
    ),
}
_LANGUAGES_OF: dict[str, tuple[str, ...]] = {}
for _language, _words in FUNCTION_WORDS.items():
    for _word in _words:
        _LANGUAGES_OF[_word] = (*_LANGUAGES_OF.get(_word, ()), _language)
_RUNS = re.compile("([\u3040-\u30ff\u3400-\u9fff\uf900-\ufaff\u0e00-\u0eff\u1000-\u17ff]+)")


def is_unspaced(text: str) -> bool:
    """Whether most letters of `text` belong to a script written without spaces between words."""
    letters = sum(1 for ch in text if ch.isalpha())
    return letters > 0 and len(_UNSPACED.findall(text)) * 2 > letters


def _bigrams(run: str) -> list[str]:
    return [run] if len(run) < 2 else [run[i : i + 2] for i in range(len(run) - 1)]


def words(text: str) -> list[str]:
    """Every word of `text`, lowercased, in order (unspaced runs as bigrams); function words kept."""
    lowered = text.lower().replace("’", "'")
    found = _WORD.findall(lowered)
    if not _UNSPACED.search(lowered):  # the common case, one pass in C: no per-word script check
        return [w for w in found if len(w) > 1]
    out: list[str] = []
    for word in found:
        if _UNSPACED.search(word):
            for run in _RUNS.split(word):
                if not run:
                    continue
                out.extend(_bigrams(run) if _UNSPACED.match(run) else ([run] if len(run) > 1 else []))
        elif len(word) > 1:
            out.append(word)
    return out


@cache
def _stop(language: str) -> frozenset[str]:
    return FUNCTION_WORDS.get(language, frozenset()) | FUNCTION_WORDS["en"]


def content_terms(text: str, language: str = "en") -> list[str]:
    """The words of `text` a searcher could type, in order: function words of `language` (and English, which
    technical text in any language is full of) left out."""
    return without_function_words(words(text), language)


def without_function_words(found: list[str], language: str) -> list[str]:
    stop = _stop(language)
    return [w for w in found if w not in stop]


def chunk_language(text: str, found: list[str] | None = None) -> str:
    """ISO 639-1 code of the language `text` is written in (module docstring); `found`: its words, when the
    caller has them already."""
    by_script = detect_language(text[:2000], default="en")
    if by_script != "en":
        return by_script
    counts: Counter[str] = Counter()
    for word in (found if found is not None else words(text[:4000]))[:400]:
        languages = _LANGUAGES_OF.get(word)
        if languages:
            counts.update(languages)
    if not counts:
        return "en"
    best, hits = counts.most_common(1)[0]
    # English wins ties and near-ties: short technical texts borrow English function words.
    return best if best == "en" or hits > counts.get("en", 0) * 1.2 else "en"


def term_stem(term: str) -> str:
    """A crude stem that makes "metaclasses" and "metaclass" one word (the first six letters), so a chunk
    holding another form of two terms still counts as holding them together (the unanswerable rule)."""
    return term[:6]

"""The language of a text, decided offline and deterministically from its script.

Why by script: what segmentation and prompts need is the writing system (where sentences end, which language
to write generated questions in), and the script decides it for the languages whose text was mis-scored
(Japanese, Chinese, Korean, Russian, ...) with no model and no false positives. Latin-script text is reported
as English: telling English from German or French needs a model, so a Latin-script dataset in another
language sets `language` (dataset-wide in the config, or a `language` column per sample) instead.
"""

from __future__ import annotations

import re
from collections import Counter
from functools import lru_cache

__all__ = [
    "LANGUAGE_CODE",
    "check_language_code",
    "detect_language",
    "is_cjk",
    "language_name",
    "script_counts",
]

# Unicode blocks -> the language a text mostly in that script is taken to be.
_RANGES: tuple[tuple[int, int, str], ...] = (
    (0x3040, 0x30FF, "ja"),  # Hiragana, Katakana
    (0x31F0, 0x31FF, "ja"),  # Katakana phonetic extensions
    (0xFF66, 0xFF9F, "ja"),  # half-width Katakana
    (0xAC00, 0xD7AF, "ko"),  # Hangul syllables
    (0x1100, 0x11FF, "ko"),  # Hangul Jamo
    (0x3130, 0x318F, "ko"),  # Hangul compatibility Jamo
    (0x3400, 0x4DBF, "han"),  # CJK extension A
    (0x4E00, 0x9FFF, "han"),  # CJK unified ideographs
    (0xF900, 0xFAFF, "han"),  # CJK compatibility ideographs
    (0x0400, 0x052F, "ru"),  # Cyrillic
    (0x0370, 0x03FF, "el"),  # Greek
    (0x0590, 0x05FF, "he"),  # Hebrew
    (0x0600, 0x06FF, "ar"),  # Arabic
    (0x0900, 0x097F, "hi"),  # Devanagari
    (0x0E00, 0x0E7F, "th"),  # Thai
)


def _script_patterns() -> dict[str, re.Pattern[str]]:
    """One character class per script, from `_RANGES`."""
    ranges: dict[str, list[str]] = {}
    for low, high, name in _RANGES:
        ranges.setdefault(name, []).append(f"{chr(low)}-{chr(high)}")
    return {name: re.compile("[" + "".join(parts) + "]") for name, parts in ranges.items()}


_SCRIPT_PATTERNS = _script_patterns()
_LATIN = re.compile(r"[A-Za-z\u00c0-\u00d6\u00d8-\u00f6\u00f8-\u024f\u1e00-\u1eff]")


def script_counts(text: str) -> Counter[str]:
    """How many letters of `text` each script has (one C-speed scan per script, not a Python loop per
    character: every sentence of every context is classified)."""
    counts: Counter[str] = Counter()
    latin = len(_LATIN.findall(text))
    if latin:
        counts["latin"] = latin
    if text.isascii():
        return counts
    for name, pattern in _SCRIPT_PATTERNS.items():
        found = len(pattern.findall(text))
        if found:
            counts[name] = found
    return counts


@lru_cache(maxsize=65536)
def detect_language(text: str, default: str = "en") -> str:
    """An ISO 639-1 code for `text` by its dominant script (module doc): any kana makes Han text Japanese,
    Han alone is Chinese; Latin script (and text with no letters) gives `default`."""
    counts = script_counts(text)
    if not counts:
        return default
    if counts.get("ja") and (counts.get("ja", 0) + counts.get("han", 0)) >= counts.get("latin", 0) / 4:
        return "ja"
    script, _ = max(counts.items(), key=lambda kv: (kv[1], kv[0]))
    if script == "han":
        return "zh"
    if script == "latin":
        return default
    return script


def is_cjk(text: str) -> bool:
    """Whether `text` is written mostly in a script without spaces between words (Chinese, Japanese)."""
    return detect_language(text) in ("ja", "zh")


LANGUAGE_CODE = re.compile(r"^[a-z]{2,3}(?:-[A-Za-z0-9]{2,8})*$")
"""An ISO 639 code, optionally with a region or script subtag ("ja", "pt-BR", "zh-Hant")."""

_NAMES = {
    "en": "English", "de": "German", "fr": "French", "es": "Spanish", "it": "Italian", "pt": "Portuguese",
    "nl": "Dutch", "ru": "Russian", "uk": "Ukrainian", "pl": "Polish", "ja": "Japanese", "zh": "Chinese",
    "ko": "Korean", "ar": "Arabic", "he": "Hebrew", "hi": "Hindi", "th": "Thai", "el": "Greek",
    "tr": "Turkish", "vi": "Vietnamese", "id": "Indonesian", "sv": "Swedish", "fi": "Finnish",
    "cs": "Czech", "da": "Danish", "no": "Norwegian", "hu": "Hungarian", "ro": "Romanian",
}  # fmt: skip


def language_name(code: str) -> str:
    """ "Japanese (ja)" for "ja": how prompts name the language to write in (the code alone when unknown)."""
    name = _NAMES.get(code.split("-")[0].lower())
    return f"{name} ({code})" if name else code


def check_language_code(code: str | None) -> str | None:
    """`code` unchanged when it is None or an ISO 639 code; else a ValueError saying what one looks like (the
    one check behind every `language` field: samples, dataset rows, configs)."""
    if code is not None and not LANGUAGE_CODE.match(code):
        raise ValueError(f"language {code!r} is not an ISO 639 code such as 'ja', 'de' or 'pt-BR'")
    return code

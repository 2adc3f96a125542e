"""Text and identifier tokenisation for search.

Identifiers are split the way people read them: ``list_issues``, ``getApiOverview``,
``HTTPServer``, ``kebab-case``, ``dotted.names`` all become separate words; letters and
digits split apart too, and a short word mixing them (``s3``, ``mp3``, ``base64``) is also
kept whole (``s3`` → ``s``, ``3``, ``s3``).
"""

from __future__ import annotations

import re
import unicodedata
from typing import Any

import Stemmer

__all__ = ["STOPWORDS", "quoted_pieces", "split_words", "stem", "terms_of", "tokenize"]

# Unicode letters and digits; "_" is a separator here, so identifiers split on it.
_PIECE = re.compile(r"[^\W_]+")
_CAMEL = re.compile(r"(?<=[a-z])(?=[A-Z])|(?<=[A-Z])(?=[A-Z][a-z])|(?<=[0-9])(?=[A-Z][a-z])")
_LETTERS = re.compile(r"[a-z]+")
# Longer runs of letters and digits are data (base64, hashes, keys), not words or identifiers.
_MAX_PIECE = 64
_DATA = re.compile(r"[A-Za-z0-9+/=_\-]{40,}")
_DIGIT = re.compile(r"[0-9]")
# ASCII words: an acronym (HTTP in HTTPServer), a possibly capitalised word, or a number.
_ASCII_WORD = re.compile(r"[A-Z]{1,64}(?![a-z])|[A-Z]?[a-z]{1,64}|[0-9]{1,64}")
# Short words mixing letters and digits (s3, ec2, mp3, base64) are also kept whole.
_MIXED = re.compile(r"(?<![A-Za-z0-9])(?=[A-Za-z]*[0-9])(?=[0-9]*[A-Za-z])[A-Za-z0-9]+(?![A-Za-z0-9])")
_LETTER = re.compile(r"[^\W\d_]")
# A quoted value: text between a pair of quote marks that no letter or digit touches on the
# outside ("it's" holds none). The text holds no quote mark of its own kind, so each opening
# mark is read up to the next such mark only: the work stays linear in the query's length.
_QUOTED = re.compile(
    r"(?<![^\W_])(?:'[^']{1,500}'|\"[^\"]{1,500}\"|`[^`]{1,500}`|\u2018[^\u2018\u2019]{1,500}\u2019"
    r"|\u201c[^\u201c\u201d]{1,500}\u201d)(?![^\W_])"
)
_CJK = re.compile(r"[\u3040-\u30ff\u3400-\u4dbf\u4e00-\u9fff\uac00-\ud7af\uf900-\ufaff]")

#: Words that carry no meaning for finding a tool: English function words and the
#: conversational filler of requests ("can you please help me ..."). Dropped from both
#: documents and queries.
STOPWORDS: frozenset[str] = frozenset(
    """
    a about above after again against all also am an and any are as at be because been before being
    below between both but by can could did do does doing done down during each either else etc ever
    every few for from further had has have having he her here hers herself him himself his how i if
    in into is it its itself just let lets like may me might mine more most much must my myself need
    needs no nor not now of off on once only or other our ours ourselves out over own per please same
    shall she should so some such than that the their theirs them themselves then there these they
    this those through thus to too under until up upon us very via was we were what when where which
    while who whom whose why will with within without would yet you your yours yourself yourselves
    want wants wanted
    """.split()
)


# PyStemmer ships no type information.
_STEMMER: Any = Stemmer.Stemmer("english")  # pyright: ignore[reportUnknownMemberType, reportUnknownVariableType]
_STEMS: dict[str, str] = {}
_MAX_STEMS = 500_000


def stem(word: str) -> str:
    """The Snowball (Porter2) English stem of a lower-case word; words with digits stay whole."""
    s = _STEMS.get(word)
    if s is None:
        s = str(_STEMMER.stemWord(word)) if word.isalpha() and len(word) >= 3 else word
        if len(_STEMS) >= _MAX_STEMS:  # a bound, not an LRU: vocabularies are far smaller
            _STEMS.clear()
        _STEMS[word] = s
    return s


def terms_of(text: str, words: set[str] | None = None) -> list[str]:
    """Stemmed terms of a text without stopwords; collects its unstemmed words into ``words``.

    Args:
        text: Free text or an identifier.
        words: A set to add the text's unstemmed words to (stopwords included), or ``None``.

    Returns:
        The terms, in order.
    """
    if text.isascii():
        split, terms = _scan_ascii(text)
        if words is not None:
            words.update(split)
        return terms
    split = split_words(text)
    if words is not None:
        words.update(split)
    get = _STEMS.get
    return [get(w) or stem(w) for w in split if w not in STOPWORDS]


def _fold(text: str) -> str:
    # Strip accents so "café" and "cafe" meet; keep CJK and other scripts as they are.
    if text.isascii():
        return text
    decomposed = unicodedata.normalize("NFKD", text)
    return "".join(c for c in decomposed if not unicodedata.combining(c))


def split_words(text: str) -> list[str]:
    """Split text and identifiers into lower-case words (no stemming, stopwords kept).

    Args:
        text: Free text or an identifier.

    Returns:
        The words, in order (short letter-digit words such as ``s3`` follow their parts).
    """
    if text.isascii():
        return _scan_ascii(text)[0]
    return _split_unicode(_DATA.sub(_drop_data, text) if len(text) >= 40 else text)


def quoted_pieces(query: str) -> list[tuple[str, bool]]:
    """A query cut at its quoted values: ``(text, quoted)`` pieces that join back into the query.

    A quoted value (``'Weekly notes'``, ``"Jane"``, `` `main.py` ``) is a literal the request
    passes on (a name, a title, a file), not words that describe a tool. A query with no letter
    outside its quotes is a quotation of the request itself: one unquoted piece.

    Args:
        query: A search query.

    Returns:
        The pieces in order, unquoted and quoted in turn (an unquoted one may be empty).
    """
    pieces: list[tuple[str, bool]] = []
    at = 0
    for m in _QUOTED.finditer(query):
        pieces += ((query[at : m.start()], False), (m.group(0), True))
        at = m.end()
    pieces.append((query[at:], False))
    if len(pieces) > 1 and not any(_LETTER.search(text) for text, quoted in pieces if not quoted):
        return [(query, False)]
    return pieces


# ASCII text is read run by run: a run of the characters data is made of (letters, digits and
# ``+/=_-``) is either data, dropped whole, or one or more identifier-like pieces. Runs repeat
# across a catalog ("the", "user", "list_issues"), so each one's words and terms are worked out
# once: most of a text's tokenising is then one dictionary lookup per run.
_RUN = re.compile(r"[A-Za-z0-9+/=_\-]+")
_RunParts = tuple[tuple[str, ...], tuple[str, ...], tuple[str, ...]]
_RUNS: dict[str, _RunParts] = {}
_MAX_RUNS = 200_000
_MAX_RUN_CACHED = 64
_NO_PARTS: _RunParts = ((), (), ())


def _run_parts(run: str) -> _RunParts:
    # (words, short letter-digit words, terms of the words) of one run.
    if len(run) >= 40 and _is_data(run):
        return _NO_PARTS
    words = tuple(" ".join(_ASCII_WORD.findall(run)).lower().split())
    mixed = tuple(m.lower() for m in _MIXED.findall(run) if len(m) <= 6) if _DIGIT.search(run) else ()
    get = _STEMS.get
    return words, mixed, tuple(get(w) or stem(w) for w in words if w not in STOPWORDS)


def _scan_ascii(text: str) -> tuple[list[str], list[str]]:
    # The words and the terms of an ASCII text; letter-digit words (never stopwords, never
    # stemmed) follow all the others, as their own terms.
    words: list[str] = []
    terms: list[str] = []
    mixed: list[str] = []
    known = _RUNS.get
    for run in _RUN.findall(text):
        parts = known(run)
        if parts is None:
            parts = _run_parts(run)
            if len(run) <= _MAX_RUN_CACHED:
                if len(_RUNS) >= _MAX_RUNS:  # a bound, not an LRU, as for the stems
                    _RUNS.clear()
                _RUNS[run] = parts
        words += parts[0]
        terms += parts[2]
        if parts[1]:
            mixed += parts[1]
    if mixed:
        words += mixed
        terms += mixed
    return words, terms


def _split_unicode(text: str) -> list[str]:
    out: list[str] = []
    for piece in _PIECE.findall(_fold(text)):
        if len(piece) > _MAX_PIECE or (len(piece) >= 20 and _is_data(piece)):
            continue
        if _CJK.search(piece):
            out.extend(_cjk_words(piece))
            continue
        for part in _CAMEL.split(piece):
            if not part:
                continue
            word = part.lower()
            if word.isalpha() or word.isdigit():
                out.append(word)
                continue
            # Mixed letters and digits: keep the whole, plus a long enough letter run.
            out.append(word)
            out.extend(run for run in _LETTERS.findall(word) if len(run) >= 3)
    return out


def _drop_data(m: re.Match[str]) -> str:
    return " " if _is_data(m.group(0)) else m.group(0)


def _is_data(piece: str) -> bool:
    # Base64, hashes and keys mix digits and capitals at random; identifiers rarely have digits.
    digits = sum(c.isdigit() for c in piece)
    upper = sum(c.isupper() for c in piece)
    return digits >= 2 and upper >= 4


def _cjk_words(piece: str) -> list[str]:
    # CJK text has no spaces: index overlapping character bigrams (as Lucene's CJK analyser does),
    # and keep Latin runs inside the piece as words.
    out: list[str] = []
    run: list[str] = []

    def flush() -> None:
        if len(run) == 1:
            out.append(run[0])
        out.extend(run[i] + run[i + 1] for i in range(len(run) - 1))
        run.clear()

    latin = ""
    for ch in piece:
        if _CJK.match(ch):
            if latin:
                out.extend(w.lower() for w in _CAMEL.split(latin) if w)
                latin = ""
            run.append(ch)
        else:
            if run:
                flush()
            latin += ch
    if run:
        flush()
    if latin:
        out.extend(w.lower() for w in _CAMEL.split(latin) if w)
    return out


def tokenize(text: str) -> list[str]:
    """Split, drop stopwords and stem: the terms search matches on.

    Args:
        text: Free text or an identifier.

    Returns:
        Stemmed terms, in order.

    >>> tokenize("getApiOverview")
    ['get', 'api', 'overview']
    >>> tokenize("list_open-issues.v2")
    ['list', 'open', 'issu', 'v', '2', 'v2']
    """
    return terms_of(text)

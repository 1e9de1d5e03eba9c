"""Text handling of the knowledge base: chunking and the keyword side's terms.

Chunks: windows of about `CHUNK_WORDS` words (a few hundred tokens: Russian and English text runs at
about 1.3-1.6 tokens per word) overlapping by `OVERLAP_WORDS`, cut at a sentence end when one is
near, so an answer split across a boundary is whole in one of the two chunks. Whatever the text, no
chunk is longer than `CHUNK_CHARACTERS` (a manual rule's limit): a window ends there, and a "word"
longer than that (text without whitespace) is cut into pieces of that length.

Terms (the keyword side on the embedded default, where PostgreSQL full-text search is absent): each
word case-folded (`ё` as `е`) as it is (the `simple` configuration's lexeme) and stemmed by Snowball
(Russian for Cyrillic words, English for Latin ones, as PostgreSQL's `russian` configuration does),
stop words dropped from the stemmed side.
"""

from __future__ import annotations

import re
from functools import lru_cache

import snowballstemmer

CHUNK_WORDS = 220
OVERLAP_WORDS = 40
CHUNK_CHARACTERS = 4000
SENTENCE_SLACK = 40  # look this many words back for a sentence end before cutting

_WORD = re.compile(r"\w+", re.UNICODE)
_CYRILLIC = re.compile(r"[а-яё]")
_SPACES = re.compile(r"[ \t\r\f\v]+")
_BLANK_LINES = re.compile(r"\n\s*\n+")

_STOP_RU = frozenset(
    "и в во не что он на я с со как а то все она так его но да ты к у же вы за бы по только ее мне было вот от "
    "меня еще нет о из ему теперь когда даже ну вдруг ли если уже или ни быть был него до вас нибудь опять уж вам "
    "ведь там потом себя ничего ей может они тут где есть надо ней для мы тебя их чем была сам чтоб без будто чего "
    "раз тоже себе под будет ж тогда кто этот того потому этого какой совсем ним здесь этом один почти мой тем "
    "чтобы нее сейчас были куда зачем всех никогда можно при наконец два об другой хоть после над больше тот через "
    "эти нас про всего них какая много разве три эту моя впрочем хорошо свою этой перед иногда лучше чуть том нельзя "
    "такой им более всегда конечно всю между ли".split()
)
_STOP_EN = frozenset(
    "a an the and or but if of at by for with about to from in on is are was were be been being do does did "
    "have has had i you he she it we they me my your our their this that these those what which who whom how "
    "can could will would should may might must not no so than too very just as into out up down over".split()
)


@lru_cache(maxsize=2)
def _stemmer(language: str):
    return snowballstemmer.stemmer(language)


def words(text: str) -> list[str]:
    return [w.replace("ё", "е") for w in _WORD.findall(text.casefold())]


def terms(text: str) -> list[str]:
    """The keyword side's terms of `text`: every word as is (prefixed `=`) and its stem."""
    out = []
    ru, en = _stemmer("russian"), _stemmer("english")
    for word in words(text):
        out.append("=" + word)
        if _CYRILLIC.search(word):
            if word not in _STOP_RU:
                out.append(ru.stemWord(word))
        elif word not in _STOP_EN and not word.isdigit():
            out.append(en.stemWord(word))
    return out


def normalize(text: str) -> str:
    """Trim each line's runs of spaces and collapse blank-line runs to one paragraph break."""
    lines = [_SPACES.sub(" ", line).strip() for line in text.replace("\x00", "").splitlines()]
    return _BLANK_LINES.sub("\n\n", "\n".join(lines)).strip()


def _pieces(token: str, limit: int) -> list[str]:
    return [token[i : i + limit] for i in range(0, len(token), limit)] if len(token) > limit else [token]


def chunk(
    text: str, *, size: int = CHUNK_WORDS, overlap: int = OVERLAP_WORDS, max_characters: int = CHUNK_CHARACTERS
) -> list[str]:
    """`text` cut into overlapping windows of about `size` words, each at most `max_characters` long
    (see the module docstring)."""
    text = normalize(text)
    if not text:
        return []
    tokens = [piece for token in re.findall(r"\S+\s*", text) for piece in _pieces(token, max_characters)]
    if len(tokens) <= size and len(text) <= max_characters:
        return [text]
    chunks, start = [], 0
    while start < len(tokens):
        end, length = start + 1, len(tokens[start])
        while end < len(tokens) and end - start < size and length + len(tokens[end].rstrip()) <= max_characters:
            length += len(tokens[end])
            end += 1
        if end < len(tokens):
            for cut in range(end, max(start + overlap + 1, end - SENTENCE_SLACK), -1):
                if re.search(r"[.!?…:;]\s*$|\n\s*$", tokens[cut - 1]):
                    end = cut
                    break
        chunks.append("".join(tokens[start:end]).strip())
        if end >= len(tokens):
            break
        # The next window repeats up to `overlap` words, at most a quarter of a chunk's characters.
        back, kept = end, 0
        while back > start + 1 and end - back < overlap and kept + len(tokens[back - 1]) <= max_characters // 4:
            back -= 1
            kept += len(tokens[back])
        start = back
    return [c for c in chunks if c]

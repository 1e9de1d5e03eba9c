"""Format detection by bytes, and the chunker and terms."""

import pytest

from apps.kb import extract
from apps.kb import text as kbtext


@pytest.mark.parametrize(
    "data,name,expected",
    [
        (b"%PDF-1.7 ...", "x.txt", "pdf"),
        (b"<!-- c --> <!DOCTYPE html><html><body>x</body></html>", "x.txt", "html"),
        (b'{"a": [1, 2]}', "x.txt", "json"),
        (b"a,b\n1,2\n3,4\n", "x.csv", "csv"),
        (b"a,b\n1,2\n3,4\n", "x.txt", "txt"),
        (b"# Title\n\ntext", "x.md", "md"),
        ("просто текст".encode(), "", "txt"),
    ],
)
def test_detect(data, name, expected):
    assert extract.detect(data, name) == expected


def test_deeply_nested_json_is_plain_text_not_a_crash():
    data = b"[" * 100_000 + b"]" * 100_000
    assert extract.detect(data, "x.json") == "txt"


@pytest.mark.parametrize("data", [b"\xff\xfe\x00a", b"PK\x03\x04junk", "caf\xe9".encode("latin-1")])
def test_detect_refuses(data):
    with pytest.raises(extract.NotReadable):
        extract.detect(data, "x.txt")


def test_terms_stem_russian_and_english_and_keep_the_word():
    assert {"доставк", "=доставки", "deliveri", "=delivery"} <= set(kbtext.terms("Доставки delivery"))
    assert "и" not in kbtext.terms("и") and "=и" in kbtext.terms("и")
    assert kbtext.words("Ёлка") == ["елка"]


def test_short_text_is_one_chunk_and_blank_is_none():
    assert kbtext.chunk("  one\n\n\n two  ") == ["one\n\ntwo"]
    assert kbtext.chunk(" \n ") == []


def test_text_without_whitespace_is_cut_into_chunks_of_the_cap():
    text = "x" * 1_000_005
    pieces = kbtext.chunk(text)
    assert max(len(piece) for piece in pieces) <= kbtext.CHUNK_CHARACTERS
    assert "".join(pieces) == text


def test_long_words_end_a_window_at_the_cap():
    words = " ".join(f"{'w' * 60}{i}" for i in range(500))
    pieces = kbtext.chunk(words)
    assert len(pieces) > 1 and max(len(piece) for piece in pieces) <= kbtext.CHUNK_CHARACTERS
    assert {word for piece in pieces for word in piece.split()} == set(words.split())


def test_ordinary_text_still_cuts_at_about_the_word_count():
    sentence = "Tea ships from Yunnan in two days. "
    pieces = kbtext.chunk(sentence * 200)
    assert len(pieces) > 1
    assert all(len(piece.split()) <= kbtext.CHUNK_WORDS for piece in pieces)
    assert all(piece.endswith(".") for piece in pieces)

"""Format detection by bytes, and the chunker and terms."""

import tracemalloc

import pytest

from apps.kb import extract
from apps.kb import text as kbtext
from tests.core import bombs


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


def test_detect_reads_only_the_start_of_a_mimetype_member():
    # given a docx whose `mimetype` inflates to 400 MiB of zeros while its headers declare 10,000 bytes
    assert extract.detect(bombs.zip_archive([("mimetype", extract.ODT_MIMETYPE)])) == "odt"
    data = bombs.docx_with_bomb("mimetype", 400 * 1024 * 1024, lie=10_000)
    tracemalloc.start()
    try:
        # when
        found = extract.detect(data, "x.docx")
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    # then it is no odt (its prefix is zeros) and nothing past a few KiB was inflated
    assert found == "docx"
    assert peak < len(data) + 1024 * 1024


def test_text_of_a_bomb_is_not_readable():
    data = bombs.docx_with_bomb("word/document.xml", 300 * 1024 * 1024, lie=1000)
    with pytest.raises(extract.NotReadable):
        extract.text_of(data, "docx")


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

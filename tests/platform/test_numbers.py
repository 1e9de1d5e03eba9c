"""apps.platform.numbers: the one parser of integers written as text (query values, headers, frames)."""

import pytest

from apps.platform.numbers import MAX_ID, parse_id, parse_int


@pytest.mark.parametrize("text", ["0", "7", "0042", "100"])
def test_ascii_digits_are_read(text):
    assert parse_int(text) == int(text)


@pytest.mark.parametrize(
    "text",
    ["", " 5", "5 ", "+5", "-5", "5.0", "1e3", "0x10", "5_000", "²", "５", "٣", "5\n", None, 5],
)
def test_anything_but_ascii_digits_is_refused(text):
    # "²" and "５" pass str.isdigit(); int() crashes on "²" and reads "５" as 5.
    with pytest.raises(ValueError):
        parse_int(text)


def test_bounds_are_inclusive():
    assert parse_int("1", minimum=1, maximum=100) == 1
    assert parse_int("100", minimum=1, maximum=100) == 100
    with pytest.raises(ValueError):
        parse_int("0", minimum=1)
    with pytest.raises(ValueError):
        parse_int("101", maximum=100)


def test_a_huge_digit_string_is_refused_by_length_without_converting_it():
    with pytest.raises(ValueError):
        parse_int("9" * 100_000, maximum=100)


def test_an_id_past_the_storable_range_names_no_row():
    assert parse_id(str(MAX_ID)) == MAX_ID
    assert parse_id(str(MAX_ID + 1)) is None
    assert parse_id("1" * 40) is None
    assert parse_id("0") == 0  # no row has it either, but it fits every query


@pytest.mark.parametrize("text", ["", "²", "５", "-1", " 1"])
def test_an_id_of_other_characters_is_refused(text):
    with pytest.raises(ValueError):
        parse_id(text)

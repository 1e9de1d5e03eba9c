"""normalize_label: names and tags are stored in NFC; invisible and bidirectional-control
characters are refused (product-decisions.md, "Text that people read")."""

import pytest

from apps.core.api.serializers import InvisibleCharacter, normalize_label


def test_a_decomposed_name_is_stored_composed():
    assert normalize_label("cafe\u0301") == "café" == normalize_label("café")


@pytest.mark.parametrize("text", ["Анна", "李小龍", "O'Brien-Smith", "محمد", "😀 team", "❤️", "a\u00a0b", "Zoë"])
def test_visible_text_of_any_script_is_kept(text):
    assert normalize_label(text) == text


@pytest.mark.parametrize(
    ("text", "code_point"),
    [
        ("vip\u200b", "U+200B"),  # zero-width space
        ("v\u200dip", "U+200D"),  # zero-width joiner
        ("\ufeffvip", "U+FEFF"),  # byte order mark
        ("vi\u00adp", "U+00AD"),  # soft hyphen
        ("\u202evip", "U+202E"),  # right-to-left override
        ("\u2066vip\u2069", "U+2066"),  # left-to-right isolate
        ("vip\u200f", "U+200F"),  # right-to-left mark
        ("vip\U000e0041", "U+E0041"),  # tag character
        ("vip\u2028", "U+2028"),  # line separator
        ("v\tip", "U+0009"),
        ("\u3164", "U+3164"),  # Hangul filler: a letter that draws nothing
        ("vip\ud800", "U+D800"),  # a lone surrogate (valid JSON escape, not storable text)
    ],
)
def test_invisible_and_bidirectional_controls_are_refused(text, code_point):
    with pytest.raises(InvisibleCharacter) as refused:
        normalize_label(text)
    assert refused.value.code_point == code_point

"""The rule that finds mentions in a note's text (apps.mentions.parsing), on names alone."""

from apps.mentions.parsing import display_name, find_mentions, names_of

ANNA, ANNA_MARIA, BOB, BOB_TWO, ZHANG = 1, 2, 3, 4, 5
OPERATORS = [
    (ANNA, names_of("Anna", "Petrova")),
    (ANNA_MARIA, names_of("Anna Maria", "")),
    (BOB, names_of("Bob", "")),
    (ZHANG, names_of("张伟", "")),
]


def test_a_display_name_with_a_space_is_one_mention():
    assert find_mentions("please look, @Anna Petrova", OPERATORS) == [ANNA]


def test_the_longest_name_wins():
    assert find_mentions("@Anna Maria can you?", OPERATORS) == [ANNA_MARIA]
    assert find_mentions("@Anna can you?", OPERATORS) == [ANNA]


def test_a_longer_name_that_does_not_end_at_a_word_boundary_falls_back_to_a_shorter_one():
    assert find_mentions("@Anna Petrovas' chat", OPERATORS) == [ANNA]


def test_case_does_not_matter():
    assert find_mentions("@aNNA pETROVA and @BOB", OPERATORS) == [ANNA, BOB]


def test_unknown_names_mention_nobody():
    assert find_mentions("@Carol, @ @@ @-Bob", OPERATORS) == []


def test_a_name_inside_a_longer_word_or_an_email_address_mentions_nobody():
    assert find_mentions("@Bobby wrote to help@bob", OPERATORS) == []


def test_punctuation_ends_a_name_and_each_operator_is_mentioned_once():
    assert find_mentions("@Bob, (@bob) @Bob! @Bob.", OPERATORS) == [BOB]


def test_a_name_two_operators_share_mentions_both():
    assert find_mentions("@Bob", [*OPERATORS, (BOB_TWO, names_of("Bob", "Smith"))]) == [BOB, BOB_TWO]
    assert find_mentions("@Bob Smith", [*OPERATORS, (BOB_TWO, names_of("Bob", "Smith"))]) == [BOB_TWO]


def test_names_in_other_scripts_and_in_right_to_left_text():
    assert find_mentions("انظر @张伟", OPERATORS) == [ZHANG]
    assert find_mentions("@Bob شكرا", OPERATORS) == [BOB]


def test_the_picker_inserts_the_display_name():
    assert display_name(" Anna ", "Petrova") == "Anna Petrova"
    assert display_name("Bob", "") == "Bob"

import pytest


@pytest.mark.task("shout")
def test_shout(kata):
    assert kata.shout("hi there") == "HI THERE"


@pytest.mark.task("word_count")
def test_word_count(kata):
    assert kata.word_count("  one two  three ") == 3


@pytest.mark.task("initials")
def test_initials(kata):
    assert kata.initials("xla katas rock") == "xkr"

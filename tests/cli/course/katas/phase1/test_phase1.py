import pytest


@pytest.mark.task("double")
@pytest.mark.parametrize("x", [0, 3, -4])
def test_double(kata, x):
    assert kata.double(x) == x + x


@pytest.mark.task("total")
def test_total(kata):
    assert kata.total([]) == 0
    assert kata.total([1, 2, 5]) == 8


@pytest.mark.task("evens")
def test_evens(kata):
    assert kata.evens([3, 2, 7, 4, 0]) == [2, 4, 0]


@pytest.mark.task("last")
def test_last(kata):
    assert kata.last([4, 9, 1]) == 1

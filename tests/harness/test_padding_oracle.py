"""kata_harness.oracles.performance.fewest_padded_rows (phase 13's serve budget) against a brute
force over every bucket set, sizes that are not request sizes included."""

import itertools
import random

import pytest

from kata_harness.oracles.performance import fewest_padded_rows


def _brute_force(sizes: list[int], max_buckets: int) -> int:
    top = max(sizes)
    return min(
        sum(min(b for b in buckets if b >= n) for n in sizes)
        for count in range(1, max_buckets + 1)
        for buckets in itertools.combinations(range(1, top + 1), count)
        if buckets[-1] == top
    )


@pytest.mark.parametrize("seed", range(40))
def test_fewest_padded_rows_is_the_brute_force_minimum(seed: int) -> None:
    rng = random.Random(seed)
    sizes = [rng.choice([rng.randrange(1, 13), 3]) for _ in range(rng.randrange(1, 14))]
    max_buckets = rng.randrange(1, 5)
    assert fewest_padded_rows(sizes, max_buckets) == _brute_force(sizes, max_buckets)


def test_more_buckets_than_sizes_pad_nothing() -> None:
    assert fewest_padded_rows([5, 1, 5, 9], 6) == 20

"""Phase 7 tests, task bucketed_mean: compiles bounded by bucketing (counted by jax.monitoring),
means by NumPy, and the mean computed by the compiled program from x (what the device is handed:
kata_harness.oracles.device_inputs).
"""

import itertools
import math

import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import compile_events
from kata_harness.oracles import host_callbacks
from kata_harness.oracles.device_inputs import device_sees
from katas.phase7.programs import BUCKETS, ODD_BUCKETS


def _mean(kata, x, buckets) -> float:
    """The kata's mean of x; the programs compiled for it must compute it (no host callback)."""
    try:
        with host_callbacks.modules_compiled() as modules:
            got = kata.bucketed_mean(x, buckets)
    except ValueError as error:
        pytest.fail(f"length {len(x)} fits a bucket of {buckets}, yet: ValueError {error}")
    if handed_back := host_callbacks.host_calls_compiled(modules):
        pytest.fail(
            f"length {len(x)}, buckets {buckets}: the program compiled for this call hands its "
            f"work to the host ({handed_back}): the jitted program must compute the mean"
        )
    assert type(got) is float, f"expected a Python float, got {type(got).__name__}"
    return got


def _new_compiles(kata, lengths, buckets) -> list[int]:
    """Backend compiles caused by each call, in order; each result is checked against NumPy."""
    counts = []
    for n in lengths:
        x = np.arange(n, dtype=np.float32) + 0.5
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        counts.append(len(measured))
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {buckets}: {got}, expected {np.mean(x)}"
            )
    return counts


@pytest.mark.task("bucketed_mean")
def test_bucketing_bounds_compiles(kata):
    first = _new_compiles(kata, (1,), BUCKETS)[0]  # bucket 8: whatever a first call compiles
    same_bucket = sum(_new_compiles(kata, (5, 8, 3, 7), BUCKETS))
    new_bucket = _new_compiles(kata, (9,), BUCKETS)[0]
    again = sum(_new_compiles(kata, (12, 16, 10), BUCKETS))
    with check:
        assert first >= 1, f"the first call compiled {first} programs: is anything jitted?"
    with check:
        assert same_bucket == 0, (
            f"new lengths in a bucket already compiled cost {same_bucket} compiles, expected 0: "
            "is the length static, or is an eager op run on each new length?"
        )
    with check:
        assert new_bucket >= 1, (
            "length 9 needs bucket 16, a new shape, yet nothing compiled: is every input "
            "padded to the same size? Short inputs then pay for the largest bucket"
        )
    with check:
        assert again == 0, (
            f"lengths 12, 16, 10 fit bucket 16, compiled for length 9; {again} compiles, expected 0"
        )


@pytest.mark.task("bucketed_mean")
def test_smallest_bucket_of_an_unsorted_tuple(kata):
    # buckets (40, 5, 12): 3 -> 5, 5 -> 5, 6 -> 12, 12 -> 12, 13 -> 40, 40 -> 40, 2 -> 5
    lengths = (3, 5, 4, 6, 12, 13, 40, 2)
    fits = {3: 5, 5: 5, 4: 5, 6: 12, 12: 12, 13: 40, 40: 40, 2: 5}
    counts = _new_compiles(kata, lengths, ODD_BUCKETS)
    seen = set()
    for n, compiles in zip(lengths, counts, strict=True):
        bucket = fits[n]
        with check:
            if bucket in seen:
                assert compiles == 0, (
                    f"length {n} fits bucket {bucket} (smallest bucket >= length, buckets "
                    f"{ODD_BUCKETS}), already compiled, yet {compiles} compiles"
                )
            else:
                assert compiles >= 1, (
                    f"length {n} is the first to need bucket {bucket} of {ODD_BUCKETS}, yet "
                    "nothing compiled: which bucket did you pad to?"
                )
        seen.add(bucket)


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_is_correct(kata):
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 31, 32):
        x = rng.normal(size=n).astype(np.float32) * 10.0 + 100.0
        got = _mean(kata, x, BUCKETS)
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {BUCKETS}: {got}, expected {np.mean(x)} (padding must "
                "not count)"
            )


def _wide_sums(fresh) -> list[np.ndarray]:
    """Inputs whose sum the input's own dtype cannot hold while their mean is exact in it: float16
    values from 2048 to 60000 summing past float16's 65504, and bfloat16 integers from 1 to 255
    (exact) whose sum of thousands bfloat16 rounds to 8 bits. NumPy's mean sums them in float32
    or wider: so must a mean computed in x's dtype's stead."""
    wide = np.array([fresh.randint(2048, 60000) for _ in range(fresh.randint(20, 32))])
    small = np.array([fresh.randint(1, 255) for _ in range(fresh.randint(20, 32))])
    return [wide.astype(np.float16), small.astype(jnp.bfloat16)]


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_other_dtypes(kata, fresh):
    rng = np.random.default_rng(3)
    for dtype in (np.float16, np.float32, np.float64):
        for n in (2, 11):
            x = (rng.normal(size=n) + 4.0).astype(dtype)
            got = _mean(kata, x, BUCKETS)
            with check:
                assert got == pytest.approx(float(np.mean(x.astype(np.float64))), rel=2e-3), (
                    f"{np.dtype(dtype).name} length {n}: {got}, expected {np.mean(x)}"
                )
    for x in _wide_sums(fresh):
        got = _mean(kata, x, BUCKETS)
        want = float(np.mean(x.astype(np.float64)))
        if not got == pytest.approx(want, rel=1e-4):
            values = x.astype(np.float64)
            pytest.fail(
                f"{x.dtype.name} x {values.tolist()} (sum {values.sum()}): mean {got}, NumPy "
                f"says {want} (summed in {x.dtype.name}?); {fresh.where()}"
            )


def _fresh_values(fresh, n: int, dtype) -> np.ndarray:
    """Small integers (exact in every float dtype), zeros among them."""
    x = np.array([fresh.randint(-3, 4) for _ in range(n)], dtype=dtype)
    x[fresh.randrange(n)] = 0
    return x


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_on_fresh_buckets_and_lengths(kata, fresh):
    """Buckets drawn in any order (sizes no other test uses, so each is new to this process),
    lengths in every bucket and at its edges, a float dtype, values with zeros: the mean must
    be NumPy's, a bucket's first length must compile and the next ones must not."""
    buckets = tuple(fresh.sample(range(41, 161), fresh.randint(2, 4)))
    dtype = fresh.choice((np.float16, np.float32, np.float64))
    edges = [0, *sorted(buckets)]
    lengths = []
    for low, high in itertools.pairwise(edges):
        lengths += [high, fresh.randint(low + 1, high), fresh.randint(low + 1, high)]
    fresh.shuffle(lengths)
    seen = set()
    for n in lengths:
        x = _fresh_values(fresh, n, dtype)
        bucket = min(b for b in buckets if b >= n)
        case = f"length {n} ({np.dtype(dtype).name}), buckets {buckets}"
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        want = float(np.mean(x.astype(np.float64)))
        if got != pytest.approx(want, rel=2e-3, abs=1e-3):
            pytest.fail(f"{case}, x {x.tolist()}: mean {got}, NumPy says {want}; {fresh.where()}")
        if bucket in seen and measured:
            pytest.fail(
                f"{case}: bucket {bucket} was compiled already, yet {len(measured)} compiles "
                f"(which bucket did you pad to? is anything static?); {fresh.where()}"
            )
        if bucket not in seen and not measured:
            pytest.fail(
                f"{case}: the first length needing bucket {bucket} (smallest bucket >= length), "
                f"yet nothing compiled: which size did you pad to?; {fresh.where()}"
            )
        seen.add(bucket)
    too_long = max(buckets) + fresh.randint(1, 20)
    with pytest.raises(ValueError):
        kata.bucketed_mean(np.ones(too_long, dtype), buckets)
        pytest.fail(f"length {too_long} exceeds buckets {buckets}: expected ValueError")


@pytest.mark.task("bucketed_mean")
def test_too_long_raises(kata):
    for buckets, n in ((BUCKETS, 33), (ODD_BUCKETS, 41), ((3,), 4)):
        with pytest.raises(ValueError):
            kata.bucketed_mean(np.ones(n, np.float32), buckets)


@pytest.mark.task("bucketed_mean")
def test_empty_x_is_nan(kata, fresh):
    """Length 0 is a length every bucket holds: NumPy's mean of an empty array is NaN (with a
    RuntimeWarning), and so is bucketed_mean's; the ValueError is for x longer than every
    bucket."""
    dtype = fresh.choice((np.float16, np.float32, np.float64))
    buckets = tuple(fresh.sample(BUCKETS, fresh.randint(1, len(BUCKETS))))
    x = np.zeros(0, dtype)
    got = _mean(kata, x, buckets)
    if not math.isnan(got):
        pytest.fail(
            f"empty {np.dtype(dtype).name} x, buckets {buckets}: mean {got}, NumPy says nan "
            f"(0 / 0); {fresh.where()}"
        )


def _same_mean(got: float, want: float) -> bool:
    return math.isnan(got) if math.isnan(want) else got == pytest.approx(want, rel=1e-5)


@pytest.mark.task("bucketed_mean")
def test_long_float16_inputs(kata, fresh):
    """float16 holds every integer up to 2048 only (then every other one) and none past 65504:
    a length stored in x's dtype is off. The weight sits at the end, where a wrong mask cuts."""
    odd = 2 * fresh.randint(1025, 2047) + 1
    beyond = fresh.randint(65505, 80000)
    buckets = tuple(fresh.sample((4096, 131072, odd + 2), 3))
    for n in (odd, beyond):
        x = np.zeros(n, np.float16)
        for k in fresh.sample(range(n - 1), 3):
            x[k] = fresh.randint(-3, 3)
        x[-1] = fresh.randint(4, 9)
        got = _mean(kata, x, buckets)
        want = float(np.mean(x.astype(np.float64)))
        if not _same_mean(got, want):
            pytest.fail(
                f"float16 x of length {n}, last element {x[-1]}, buckets {buckets}: mean {got}, "
                f"NumPy says {want} (is the length exact?); {fresh.where()}"
            )


@pytest.mark.task("bucketed_mean")
def test_non_finite_values_count(kata, fresh):
    """mean(x) of data holding NaN or infinities is NumPy's: NaN stays NaN, inf stays inf, inf
    and -inf make NaN. Only the padding is masked."""
    nan, inf = float("nan"), float("inf")
    for values in ([1.0, nan], [nan], [2.0, inf, 3.0], [-inf, 1.0, 5.0], [inf, -inf, 0.0]):
        fresh.shuffle(values)
        for dtype in (np.float16, np.float32):
            x = np.array(values, dtype)
            got = _mean(kata, x, BUCKETS)
            with np.errstate(invalid="ignore"):
                want = float(np.mean(x.astype(np.float64)))
            with check:
                assert _same_mean(got, want), f"x {x.tolist()}: mean {got}, NumPy says {want}"


@pytest.mark.task("bucketed_mean")
def test_the_device_computes_the_mean_from_x(kata, fresh):
    """The mean comes out of the compiled program's reduction of x, not from the host: on the
    first call of a new bucket the device is handed other values than the ones the host read
    (x + d, the padding left as it was), and the answer must be their mean. A mean computed on
    the host and passed into the program (echoed, or added to 0 x a masked sum) stays mean(x)."""
    dtype = fresh.choice((np.float16, np.float32, jnp.bfloat16))
    buckets = tuple(fresh.sample(range(161, 400), 2))
    n = fresh.randint(2, min(buckets))
    x = np.array([fresh.randint(1, 9) + 0.5 for _ in range(n)], dtype)
    x[fresh.randrange(n)] = 0.25  # never a mask: not all ones or zeros
    shift = fresh.randint(10, 20)
    y = (x.astype(np.float64) + shift).astype(dtype)
    with device_sees(x, y) as seen:
        got = _mean(kata, x, buckets)
    case = f"{np.dtype(dtype).name} x {x.astype(np.float64).tolist()}, buckets {buckets}"
    swapped = seen.swapped
    if not swapped:
        pytest.fail(
            f"{case}: no compiled program was handed x (padded, in any float dtype) on this "
            f"first call of bucket {min(b for b in buckets if b >= n)}: which program reduced "
            f"it?; {fresh.where()}"
        )
    want = float(np.mean(y.astype(np.float64)))
    if got != pytest.approx(want, rel=1e-3):
        pytest.fail(
            f"{case}: the device was handed x + {shift} (shapes {swapped}), whose mean is "
            f"{want}, yet the answer is {got} (mean(x) is {float(np.mean(x.astype(np.float64)))}"
            f"): the mean must be the compiled program's reduction of x, not a value the host "
            f"computed and passed in; {fresh.where()}"
        )
    if not any(r == pytest.approx(got, rel=1e-3) for r in seen.results):
        pytest.fail(
            f"{case}: the answer {got} is no result of a compiled program handed the padded x "
            f"(their one-element results: {seen.results}): one jitted program must take the "
            "padded x and return the mean; a string of eager jnp ops (where, sum, divide) runs "
            f"each op as its own program and none of them computes the mean; {fresh.where()}"
        )

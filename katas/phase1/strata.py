"""Drawn inputs for phase 1's tests: the settings of its Hypothesis tests and the arrays the
absolute values run on (count_traces's streams are in strata_traces.py).

abs_where and abs_cond run on every dtype their contract names, with the values where a spelling
that detours through another dtype or squares its input goes wrong: the dtype's largest
magnitudes, its smallest normal floats, infinities, NaN, int32 beyond 2**24.
"""

from __future__ import annotations

import contextlib
import itertools
import random

import jax
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, Phase, settings

from kata_harness.guard import KataGuardError


def as_given(tree):
    return tree


def on_device(tree):
    """tree's arrays as JAX arrays; a dict keeps its keys' insertion order (jax.device_put of a
    dict builds a new one in sorted key order, as jit does for the function it traces)."""
    if isinstance(tree, dict):
        return {name: jax.device_put(value) for name, value in tree.items()}
    return jax.device_put(tree)


# how the tests call a function eagerly: on NumPy arrays as data() makes them (`@` on two NumPy
# bf16 arrays is NumPy's own matmul), or on JAX arrays; a params dict keeps its key order
ARRAY_KINDS = (("NumPy arrays", as_given), ("JAX arrays", on_device))


def key_orders(rng: random.Random, keys: tuple[str, ...], count: int) -> list[tuple[str, ...]]:
    """count insertion orders of a params dict's keys for eager calls, none of them `keys` (the
    order the contract writes) or sorted (the order jit and device_put rebuild a dict in, so the
    only one a jitted call sees): the first with layer 2's keys before layer 1's (as w2 before
    w1 and b2 before b1), the others drawn. A function that reads the layers by position
    instead of by key reads the wrong arrays at the first at least."""
    everyday = {tuple(keys), tuple(sorted(keys))}
    orders = [o for o in itertools.permutations(keys) if o not in everyday]

    def late_first(order: tuple[str, ...]) -> bool:  # "w2" before "w1", "b2" before "b1"
        return all(order.index(f"{k}2") < order.index(f"{k}1") for k in ("w", "b"))

    first = rng.choice([o for o in orders if late_first(o)])
    return [first, *(rng.choice(orders) for _ in range(count - 1))]


def _snapshot(args: tuple) -> list:
    """What the caller holds in args: each dict's keys in order and the objects it maps them to,
    each NumPy array's values (a copy)."""
    shot = []
    for arg in args:
        if isinstance(arg, dict):
            shot.append(("dict", tuple(arg), tuple(id(v) for v in arg.values())))
        elif isinstance(arg, np.ndarray):
            shot.append(("array", arg.copy()))
        else:  # a JAX array or a scalar: nothing a call can change in it
            shot.append(("other",))
    return shot


def _changed(args: tuple, before: list) -> str | None:
    for index, (arg, shot) in enumerate(zip(args, before, strict=True)):
        if shot[0] == "dict" and (tuple(arg), tuple(id(v) for v in arg.values())) != shot[1:]:
            return (
                f"argument {index + 1} (a dict with keys {list(shot[1])}) now has keys "
                f"{list(arg)}, or other arrays under them"
            )
        if shot[0] == "array" and not np.array_equal(
            arg, shot[1], equal_nan=arg.dtype.kind in "fc"
        ):
            return f"argument {index + 1} (a NumPy array) has other values"
    return None


@contextlib.contextmanager
def keeps_nothing(where: str, args: tuple = ()):
    """A tracer of an earlier jitted call reaching this one was kept from that call; any other
    crash on these valid inputs (a params dict in another key order read by position) is a
    wrong answer too, named by `where` (the stub's NotImplementedError and the guard's refusal
    pass through). The caller's `args` (the objects the call was given) come back unchanged:
    a pure function adds no key to a params dict, replaces no array in it, writes into no
    NumPy array."""
    before = _snapshot(args)
    try:
        yield
    except jax.errors.UnexpectedTracerError:
        pytest.fail(
            f"{where}: a tracer of an earlier jitted call reached this call; every call "
            "computes on its own arguments and keeps nothing from an earlier one"
        )
    except (NotImplementedError, KataGuardError):
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the inputs are valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
        pytest.fail(f"{where}: raised {crash} on inputs the contract allows", pytrace=False)
    changed = _changed(args, before)
    if changed:
        pytest.fail(
            f"{where}: the call changed its caller's arguments: {changed}; a pure function "
            "reads its arguments and leaves them as they were",
            pytrace=False,
        )


def refilled(params: dict, other: dict) -> dict:
    """params itself (the same dict object), its arrays replaced in place by other's."""
    params.update(other)
    return params


VALUES = settings(
    derandomize=True,
    max_examples=6,
    deadline=None,
    phases=[Phase.generate],
    report_multiple_bugs=False,
    suppress_health_check=[HealthCheck.function_scoped_fixture],
)


def lone_unit_axes(rng: random.Random) -> list[tuple[int, int, int, int]]:
    """(batch, in, hidden, out) shapes for the MLP whose axes of size 1 stand next to axes that
    are not (programs.SHAPES has 1 everywhere or nowhere): one output at a batch > 1 (where a
    squeezed (batch,) target against the (batch, 1) prediction broadcasts to (batch, batch)),
    a batch of 1 with several outputs, and one input or hidden unit between a batch and outputs
    > 1; the other sizes drawn from 2 to 7."""

    def size() -> int:
        return rng.randint(2, 7)

    narrow = rng.choice(((1, size()), (size(), 1)))
    return [(size(), size(), size(), 1), (1, size(), size(), size()), (size(), *narrow, size())]


def near_fit(rng: random.Random, shape: tuple[int, int, int, int]):
    """float32 params, x and y where y is the network's output plus a small residual: params and
    x are small integers (b2 between 100 and 200 of either sign), so every output is an integer
    of a few hundred, exact in float32 whatever the order of the sums; y adds to each a drawn
    residual of magnitude 1e-3 to 1e-2. The squared error (about 1e-5) is then a billionth of
    the output's square: a loss computed as the difference of large squares loses it."""
    batch, n_in, hidden, out = shape
    draw = np.random.default_rng(rng.randrange(2**32))

    def ints(low: int, high: int, size: tuple[int, ...]) -> np.ndarray:
        return draw.integers(low, high + 1, size=size).astype(np.float32)

    params = {
        "w1": ints(-3, 3, (n_in, hidden)),
        "b1": ints(-3, 3, (hidden,)),
        "w2": ints(-3, 3, (hidden, out)),
        "b2": ints(100, 200, (out,)) * draw.choice([-1, 1], size=out).astype(np.float32),
    }
    x = ints(-3, 3, (batch, n_in))
    output = np.maximum(x @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]
    residual = draw.uniform(1e-3, 1e-2, size=(batch, out)) * draw.choice([-1, 1], (batch, out))
    return params, x, (output.astype(np.float64) + residual).astype(np.float32)


def overflowing(rng: random.Random, shape: tuple[int, int, int, int]):
    """float32 params and finite x on which x @ w1 + b1 overflows to -inf at drawn hidden units
    of one drawn row and is finite elsewhere: that row holds 1e38 to 3e38 in a drawn column of
    x, and w1's row for that column is -4 to -8 at the drawn units, 0 at the others. The relu
    of -inf is 0, so the network's output is finite (and NumPy's float64, which does not
    overflow, computes it). Returns params, x, the row and the units."""
    batch, n_in, hidden, out = shape
    draw = np.random.default_rng(rng.randrange(2**32))
    params = {
        "w1": draw.normal(size=(n_in, hidden)),
        "b1": draw.normal(size=(hidden,)),
        "w2": draw.normal(size=(hidden, out)),
        "b2": draw.normal(size=(out,)),
    }
    x = draw.normal(size=(batch, n_in))
    row, column = rng.randrange(batch), rng.randrange(n_in)
    units = sorted(rng.sample(range(hidden), rng.randint(1, hidden)))
    x[row, column] = rng.uniform(1e38, 3e38)
    params["w1"][column] = 0.0
    params["w1"][column, units] = -draw.uniform(4.0, 8.0, size=len(units))
    typed = {name: value.astype(np.float32) for name, value in params.items()}
    return typed, x.astype(np.float32), row, units


def exact_fit(rng: random.Random, dtype, fitted: bool = False):
    """Params, x and y of `dtype` on which every step of the mean squared error is exact in
    every float dtype the tests use (bf16's 8 significant bits included), whatever the order of
    the sums: params and x are integers from -2 to 2 and at most 4 wide, so every output is an
    integer below 150; y adds to each a drawn integer residual from -4 to 4 (some 0: those
    elements fit exactly), or 0 everywhere when `fitted` (a perfect fit, the loss 0). batch * out
    is a power of two up to 16, so the squares' sum is an integer of at most 256 and their mean
    a dyadic of at most 8 significant bits."""
    batch = rng.choice((1, 2, 4, 8))
    out = rng.choice(tuple(n for n in (1, 2, 4) if batch * n <= 16))
    n_in, hidden = rng.randint(1, 4), rng.randint(1, 4)
    draw = np.random.default_rng(rng.randrange(2**32))

    def ints(low: int, high: int, size: tuple[int, ...]) -> np.ndarray:
        return draw.integers(low, high + 1, size=size).astype(np.float64)

    params = {
        "w1": ints(-2, 2, (n_in, hidden)),
        "b1": ints(-2, 2, (hidden,)),
        "w2": ints(-2, 2, (hidden, out)),
        "b2": ints(-2, 2, (out,)),
    }
    x = ints(-2, 2, (batch, n_in))
    output = np.maximum(x @ params["w1"] + params["b1"], 0) @ params["w2"] + params["b2"]
    residual = np.zeros_like(output) if fitted else ints(-4, 4, output.shape)
    typed = {name: value.astype(dtype) for name, value in params.items()}
    return typed, x.astype(dtype), (output + residual).astype(dtype)


# dtypes JAX keeps as they are in its default 32-bit mode, and each 64-bit type's 32-bit twin
NARROW = (
    np.dtype(np.bool_),
    np.dtype(np.int8),
    np.dtype(np.int16),
    np.dtype(np.int32),
    np.dtype(np.uint8),
    np.dtype(np.uint16),
    np.dtype(np.uint32),
    np.dtype(np.float16),
    np.dtype(ml_dtypes.bfloat16),
    np.dtype(np.float32),
    np.dtype(np.complex64),
)
TWINS = {
    np.dtype(np.float64): np.dtype(np.float32),
    np.dtype(np.int64): np.dtype(np.int32),
    np.dtype(np.uint64): np.dtype(np.uint32),
    np.dtype(np.complex128): np.dtype(np.complex64),
}
SIXTEEN_BIT_FLOATS = (np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16))

Call = tuple[object, int]

# abs_where: "any shape and dtype" of a number with a sign (64-bit types excepted: JAX's default
# 32-bit mode turns them into their 32-bit twins); abs_cond: the dtypes its contract names
ABS_DTYPES = tuple(d for d in NARROW if d not in (np.dtype(np.bool_), np.dtype(np.complex64)))
COND_DTYPES = (np.dtype(np.float32), np.dtype(np.int32), np.dtype(ml_dtypes.bfloat16))
SHAPES_OF_12 = ((12,), (3, 4), (4, 3), (2, 3, 2), (1, 12), (2, 2, 3))


def _extremes(rng: random.Random, dtype: np.dtype) -> list[float]:
    """0 and the dtype's values at its edges: the largest magnitudes (an int's most negative
    value but one, whose |x| fits), the smallest normal floats, the infinities and NaN (|NaN| is
    NaN: a test that sends neither x > 0 nor x < 0 to x or -x loses it), and for int32 an odd
    value beyond 2**24 (float32 cannot hold it) of each sign."""
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        info = ml_dtypes.finfo(dtype)
        big, tiny = float(info.max), float(info.tiny)
        return [0.0, -0.0, big, -big, tiny, -tiny, np.inf, -np.inf, np.nan]
    info = np.iinfo(dtype)
    edges: list[float] = [0, int(info.max), int(info.min) + 1 if dtype.kind == "i" else 0]
    if dtype == np.int32:
        edges += [sign * (2**24 + 1 + 2 * rng.randrange(2**20)) for sign in (1, -1)]
    return edges


def _any_value(rng: random.Random, dtype: np.dtype) -> float:
    """A value of any magnitude the dtype holds, of either sign (ints: drawn uniformly)."""
    if dtype.kind == "f" or dtype == ml_dtypes.bfloat16:
        info = ml_dtypes.finfo(dtype)
        low, high = np.log10(float(info.tiny)), np.log10(float(info.max))
        return rng.choice((-1, 1)) * 10 ** rng.uniform(low, high)
    info = np.iinfo(dtype)
    return rng.randint(int(info.min) + 1 if dtype.kind == "i" else 0, int(info.max))


def _of(values: list[float], dtype: np.dtype) -> np.ndarray:
    wide = np.float64 if dtype.kind == "f" or dtype == ml_dtypes.bfloat16 else np.int64
    return np.asarray(values, wide).astype(dtype)


def _wrapping(dtype: np.dtype) -> list[float]:
    """A signed int's most negative value (whose -x wraps around to itself: |x| is x there, as
    np.abs gives), or nothing for the other dtypes."""
    return [int(np.iinfo(dtype).min)] if dtype.kind == "i" else []


def abs_inputs(rng: random.Random) -> list[np.ndarray]:
    """One array of 12 values per dtype of ABS_DTYPES, of a drawn shape: the dtype's extremes
    (a signed int's most negative value too) and drawn values, shuffled; then a 0-d and a
    size-0 array of drawn dtypes."""
    arrays = []
    for dtype in ABS_DTYPES:
        values = _extremes(rng, dtype) + _wrapping(dtype)
        values += [_any_value(rng, dtype) for _ in range(12 - len(values))]
        rng.shuffle(values)
        arrays.append(_of(values, dtype).reshape(rng.choice(SHAPES_OF_12)))
    scalar = rng.choice(ABS_DTYPES)
    arrays.append(_of([-abs(_any_value(rng, scalar))], scalar).reshape(()))
    arrays.append(np.zeros((0, rng.randint(1, 3)), rng.choice(ABS_DTYPES)))
    return arrays


def cond_inputs(rng: random.Random) -> list[np.generic]:
    """Scalars of each dtype of COND_DTYPES: 0, the most negative value whose |x| fits, a
    negative and a positive drawn value of any magnitude, for int32 an odd value beyond -2**24
    and -2**31 (whose -x wraps around to itself), and for the floats -0.0 (|x| a zero of either
    sign) and NaN."""
    scalars = []
    for dtype in COND_DTYPES:
        values = [0, -abs(_any_value(rng, dtype)), abs(_any_value(rng, dtype)), *_wrapping(dtype)]
        values += [v for v in _extremes(rng, dtype) if v < 0 and np.isfinite(v)][:2]
        edges = _extremes(rng, dtype)
        values += [v for v in edges if v == 0 and np.signbit(v)]
        values += [v for v in edges if np.isnan(v)]
        scalars += [dtype.type(_of([v], dtype)[0]) for v in values]
    return scalars

"""Phase 8 tests, predict_accepts: which calls a function exported with symbolic shapes
accepts, answered without exporting (moved from test_phase8.py).

Oracle: the exported function itself (column_sums exported for float32 x of each symbolic
shape, serialized, deserialized and called), for what it accepts.
"""

from functools import cache
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.oracles import stablehlo as facts
from kata_harness.predict import compiler_refused, predicted_entries
from katas.phase8.programs import (
    EXPORTED_CALLS,
    column_sums,
)


@cache
def _exported_sums(symbolic: str):
    """column_sums exported for float32 x of the symbolic shape, serialized and deserialized
    (one export per symbolic shape, however many calls of it are checked)."""
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(symbolic), jnp.float32)
    return jax.export.deserialize(jax.export.export(jax.jit(column_sums))(x).serialize())


def _accepts(symbolic: str, dtype, shape: tuple[int, ...]) -> bool:
    """Whether the exported function accepts a NumPy array of the dtype and shape: the checks
    an Exported call runs on its arguments (rank, dtype, every dimension solved), traced with
    jax.eval_shape, so nothing compiles (each run also calls one accepted and one rejected case)."""
    try:
        jax.eval_shape(_exported_sums(symbolic).call, np.ones(shape, dtype))
    except Exception:  # noqa: BLE001  (the call's refusal is the fact measured)
        return False
    return True


# symbolic shapes drawn from the contract's grammar: a dimension is a constant, a symbol, or a
# symbol times a coefficient (written on either side) plus or minus an offset; a symbol may
# appear in several dimensions; any name. The calls: the shape a value of each symbol gives
# (values 0 and 1 included), then perhaps one dimension off by one, zeroed, the rank changed or
# another dtype.
_SYMBOLS: tuple[str, ...] = ("b", "a", "n", "m", "k", "batch", "rows", "seq", "t2")
_DTYPES: dict[str, Any] = {
    "f32": np.float32, "f64": np.float64, "f16": np.float16, "bf16": jnp.bfloat16,
    "i8": np.int8, "i16": np.int16, "i32": np.int32, "i64": np.int64, "u8": np.uint8,
    "u32": np.uint32, "u64": np.uint64, "bool": np.bool_, "c64": np.complex64,
    "c128": np.complex128,
    # NumPy's extended precision (float128 and complex256 on x86-64 Linux): a float and a
    # complex wider than float64 that JAX has no type for, so no call of them runs
    "longdouble": np.longdouble, "clongdouble": np.clongdouble,
}  # fmt: skip


def _draw_dim(fresh: Fresh, symbols: list[str], constant: bool) -> tuple[str, str | None, int, int]:
    """(text, symbol or None, coefficient, offset) of one dimension."""
    if constant:
        size = fresh.randint(1, 7)
        return str(size), None, 0, size
    symbol = fresh.choice(symbols)
    coefficient = fresh.choice((1, 1, 2, 3, 4, 12))
    text = symbol
    if coefficient > 1:
        times = fresh.choice(("*", " * "))
        text = (
            f"{coefficient}{times}{symbol}"
            if fresh.random() < 0.5
            else f"{symbol}{times}{coefficient}"
        )
    offset = fresh.choice((0, 0, 1, 2, 3, 11, -1, -2, -3))
    if offset:
        text += f" {'+' if offset > 0 else '-'} {abs(offset)}"
    return text, symbol, coefficient, offset


def _draw_call(
    fresh: Fresh, dtype: str | None = None, symbols: list[str] | None = None
) -> tuple[str, tuple[str, Any, tuple[int, ...]]]:
    """A call drawn from the grammar; given a dtype, a call of that dtype whose shape fits (every
    symbol at least 1, no dimension below 0), so only the dtype decides it. Given symbols, each
    of them is in a dimension of its own (in a drawn order) and the rank is 2 or 3."""
    if symbols is None:
        symbols = fresh.sample(_SYMBOLS, fresh.choice((1, 1, 2)))
        rank = fresh.randint(1, 3)
        constants = [fresh.random() < 0.25 for _ in range(rank)]
        constants[fresh.randrange(rank)] = False  # at least one symbolic dimension
        dims = [_draw_dim(fresh, symbols, constant) for constant in constants]
    else:
        rank = fresh.randint(max(2, len(symbols)), 3)
        dims = [_draw_dim(fresh, [symbol], False) for symbol in symbols]
        dims += [_draw_dim(fresh, symbols, fresh.random() < 0.5) for _ in range(rank - len(dims))]
        fresh.shuffle(dims)
    least = 0 if dtype is None else 1
    values = {symbol: fresh.choice((0, 1, 1, 2, 3, 4, 5)[least:]) for symbol in symbols}
    sizes = [offset + coefficient * values[symbol] if symbol else offset
             for _, symbol, coefficient, offset in dims]  # fmt: skip
    if dtype is not None and min(sizes) < 0:
        return _draw_call(fresh, dtype)
    shape = [max(size, 0) for size in sizes]
    kind = (
        "as is"
        if dtype is not None
        else fresh.choice(("as is", "as is", "off by one", "zero", "rank", "dtype", "dtype"))
    )
    at = fresh.randrange(rank)
    if kind == "off by one":
        shape[at] = max(shape[at] + fresh.choice((-1, 1)), 0)
    elif kind == "zero":
        shape[at] = 0
    elif kind == "rank":
        shape = shape[:-1] if rank > 1 and fresh.random() < 0.5 else [*shape, 1]
    if dtype is None:
        dtype = (
            fresh.choice(sorted(set(_DTYPES) - {"f32"}))
            if kind == "dtype"
            else fresh.choice(("f32", "f32", "f64"))
        )
    written, how = _spelled(fresh, dtype)
    symbolic = ", ".join(text for text, _, _, _ in dims)
    sizes = ",".join(map(str, shape))
    name = f"({symbolic}) called with {dtype}[{sizes}]{how}"
    return name, (symbolic, written, tuple(shape))


# Python types NumPy reads as a dtype: float is float64, int int64, complex complex128
_PYTHON_TYPES: dict[str, type] = {"f64": float, "i64": int, "bool": bool, "c128": complex}


def _spelled(fresh: Fresh, dtype: str) -> tuple[Any, str]:
    """The dtype as the table may write it (anything NumPy takes for a dtype: the scalar type, an
    np.dtype, its name, its type code, a Python type) and how the call's name says so."""
    kind = np.dtype(_DTYPES[dtype])
    ways: dict[str, Any] = {"type": _DTYPES[dtype], "np.dtype": kind, "name": kind.name}
    if dtype != "bf16":  # bfloat16's code is an anonymous 'V2'
        ways["code"] = kind.str[1:]
        ways["ordered code"] = kind.str  # the native byte order written out: '<f4', '|i1'
    if dtype in _PYTHON_TYPES:
        ways["python"] = _PYTHON_TYPES[dtype]
    way = fresh.choice(sorted(ways))
    written = ways[way]
    if way == "type":
        return written, ""
    shown = written.__name__ if isinstance(written, type) else repr(written)
    return written, f" (dtype written {shown})"


def _draw_swapped_call(fresh: Fresh) -> tuple[str, tuple[str, Any, tuple[int, ...]]]:
    """A call of a fitting shape whose array is float32 in the byte order this machine does not
    use ('>f4' here): a NumPy dtype JAX does not convert, so the exported function refuses it."""
    name, (symbolic, _, shape) = _draw_call(fresh, "f32")
    swapped = np.dtype(np.float32).newbyteorder()
    written = fresh.choice((swapped, swapped.str))
    name = name.split(" (dtype written")[0] + f" (dtype written {written!r})"
    return name, (symbolic, written, shape)


def _draw_ones_call(fresh: Fresh) -> tuple[str, tuple[str, Any, tuple[int, ...]]]:
    """A float32 call that fits but for one constant dimension (2 or more) given size 1: the
    exported function checks a constant exactly, a size-1 axis does not broadcast to it."""
    symbol, value = fresh.choice(_SYMBOLS), fresh.randint(3, 5)
    dims = []
    for _ in range(fresh.randint(1, 2)):
        text, _, coefficient, offset = _draw_dim(fresh, [symbol], False)
        dims.append((text, offset + coefficient * value))
    dims.insert(fresh.randrange(len(dims) + 1), (str(fresh.randint(2, 7)), 1))
    written, how = _spelled(fresh, "f32")
    symbolic = ", ".join(text for text, _ in dims)
    shape = tuple(size for _, size in dims)
    name = f"({symbolic}) called with f32[{','.join(map(str, shape))}]{how}"
    return name, (symbolic, written, shape)


def _draw_above_call(fresh: Fresh) -> tuple[str, tuple[str, Any, tuple[int, ...]]]:
    """A float32 call whose symbol stands for more than any of its dimensions: each dimension
    the symbol minus an offset (`b - 2`) or a constant below its value, so a search for the
    symbol's value that stops at the largest dimension never finds it."""
    symbol, value = fresh.choice(_SYMBOLS), fresh.randint(2, 5)
    offsets = [fresh.randint(1, value) for _ in range(fresh.randint(1, 2))]
    dims = [(f"{symbol} - {offset}", value - offset) for offset in offsets]
    if fresh.random() < 0.5:
        size = fresh.randint(1, value - 1)
        dims.insert(fresh.randrange(len(dims) + 1), (str(size), size))
    written, how = _spelled(fresh, "f32")
    symbolic = ", ".join(text for text, _ in dims)
    shape = tuple(size for _, size in dims)
    name = f"({symbolic}) called with f32[{','.join(map(str, shape))}]{how}"
    return name, (symbolic, written, shape)


# longer symbol names, each holding shorter valid names: as a prefix, a suffix or inside it
_LONG_NAMES = ("batch", "rows", "seq", "length", "cols", "tokens", "n_items", "dim2", "heads")
_NOT_NAMES = {"max", "min", "mod", "floordiv", "non_negative"}  # JAX's symbolic operators


def _nested_names(fresh: Fresh, where: str) -> list[str]:
    """Two symbol names, one inside the other (`a` and `batch`, `b` and `batch`, `ch` and
    `batch`) at the place drawn, in a drawn order."""
    long = fresh.choice(_LONG_NAMES)
    spans = {
        "prefix": [(0, j) for j in range(1, len(long))],
        "suffix": [(i, len(long)) for i in range(1, len(long))],
        "inside": [(i, j) for i in range(1, len(long)) for j in range(i + 1, len(long))],
    }[where]
    names = [long[i:j] for i, j in spans]
    names = [n for n in names if n.isidentifier() and not n[0].isdigit() and n not in _NOT_NAMES]
    pair = [fresh.choice(names), long]
    fresh.shuffle(pair)
    return pair


def _drawn_calls(fresh: Fresh, count: int) -> dict[str, tuple[str, Any, tuple[int, ...]]]:
    """``count`` calls drawn from the grammar, one call of a fitting shape for every dtype (so a
    rule that gets one dtype wrong meets it in every run), one whose symbol exceeds every
    dimension (`b - 3` at b = 4 is 1), one of float32 in the other byte order, one whose
    constant dimension is given size 1 and two float32 calls of a fitting shape whose two
    symbols' names are one inside the other (one a prefix, one drawn), in a drawn order."""
    drawn: dict[str, tuple[str, Any, tuple[int, ...]]] = {}
    nested = ["prefix", fresh.choice(("prefix", "suffix", "inside"))]
    for dtype in [*[None] * count, *sorted(_DTYPES), "above", "swapped", "ones", *nested]:
        while True:
            if dtype == "above":
                name, call = _draw_above_call(fresh)
            elif dtype == "swapped":
                name, call = _draw_swapped_call(fresh)
            elif dtype == "ones":
                name, call = _draw_ones_call(fresh)
            elif dtype in nested:
                name, call = _draw_call(fresh, "f32", _nested_names(fresh, dtype))
            else:
                name, call = _draw_call(fresh, dtype)
            if name not in EXPORTED_CALLS and name not in drawn:
                drawn[name] = call
                break
    order = list(drawn)
    fresh.shuffle(order)
    return {name: drawn[name] for name in order}


@pytest.mark.task("predict_accepts")
def test_predict_accepts_matches_the_exported_calls(kata, fresh: Fresh):
    """The listed calls and calls drawn afresh from the contract's grammar (any symbol names,
    coefficients on either side, offsets of either sign, several dimensions, every dtype)."""
    # one per dtype, one above, one byte-swapped, one size-1 constant, two of nested names: 42
    drawn = _drawn_calls(fresh, 21)
    # two calls of the function, each given the listed calls and its own half of the drawn
    # ones: an answer reads its argument (a table saved from an earlier call lacks the new names)
    half = len(drawn) // 2
    halves = [dict(list(drawn.items())[:half]), dict(list(drawn.items())[half:])]
    predicted, calls = {}, {}
    for n, half in enumerate(halves):
        given = {**EXPORTED_CALLS, **half}
        answer = predicted_entries(
            f"predict_accepts (call {n + 1}, given the {len(EXPORTED_CALLS)} listed calls and "
            f"{len(half)} drawn ones)",
            kata.predict_accepts(dict(given)),  # a copy: the answer may not change the table
            given,
        )
        checked = given if n == 0 else half  # the listed calls once
        predicted |= {name: answer[name] for name in checked}
        calls |= checked
    for name, runs in predicted.items():
        with check:
            assert type(runs) is bool, f"{name}: expected a bool, got {runs!r}"
        accepted = _accepts(*calls[name])
        where = f" ({fresh.where()})" if name in drawn else ""
        with check:
            assert runs == accepted, (
                f"{name}: you predicted {'it runs' if runs else 'a rejection'}, the exported "
                f"function {'ran' if accepted else 'rejected the call'}{where}"
            )
    for accepted in (True, False):  # the traced check agrees with calling the function
        symbolic, dtype, shape = next(
            (call for call in drawn.values() if _accepts(*call) == accepted),
            next(call for call in calls.values() if _accepts(*call) == accepted),
        )
        assert facts.exported_call_runs(column_sums, symbolic, dtype, shape) == accepted, (
            f"({symbolic}) on {np.dtype(dtype).name}{list(shape)}: the traced check and the call "
            "disagree"
        )


@pytest.mark.task("predict_accepts")
def test_predict_accepts_does_not_export(kata):
    with compiler_refused(
        "predict_accepts", also=[(jax.export, "export"), (jax.export, "deserialize")]
    ):
        kata.predict_accepts(dict(EXPORTED_CALLS))

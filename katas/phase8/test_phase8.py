"""Phase 8 tests, reading and predicting StableHLO: the HLO opcode XLA converts each op to,
which calls an exported function accepts and what a program lowers to (the op census is in
test_phase8_census.py).

Oracles (kata_harness.oracles.stablehlo): xla_inspect's census for the ops of a program; XLA's
StableHLO -> HLO conversion of tiny programs (JAX-lowered and hand-written StableHLO, and every op
of the dialect a tiny module instantiates) for op names; the exported function itself, called,
for what it accepts.
"""

import re
from collections import Counter
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
    HAND_WRITTEN,
    KEPT,
    LOWERING_BANK,
    RENAMED,
    RESPELLED,
    column_sums,
    dialect_ops,
    probe_modules,
)
from xla_inspect.stablehlo import stablehlo_op_census


def _program(op: str):
    for bank in (RENAMED, RESPELLED, KEPT):
        if op in bank:
            return bank[op]
    raise KeyError(op)


@cache
def _lower(program):
    fn, specs = program
    return jax.jit(fn).lower(*specs)


@cache
def _hlo_census(program) -> Counter:
    """Opcode census of XLA's own HLO conversion of a lowered program."""
    return facts.hlo_census(_lower(program))


@cache
def _hand_written(op: str) -> tuple[Counter, Counter]:
    return facts.hand_written_censuses(f"module {{{HAND_WRITTEN[op]}\n}}")


def _stablehlo_and_hlo(op: str) -> tuple[Counter, Counter]:
    """(op census of the StableHLO, opcode census of XLA's HLO conversion of it)."""
    if op in HAND_WRITTEN:
        return _hand_written(op)
    return _stablehlo_census(_program(op)), _hlo_census(_program(op))


@cache
def _stablehlo_census(program) -> Counter:
    return stablehlo_op_census(_lower(program))


def _check_mapping(kata, ops) -> None:
    found = {op: kata.hlo_opcode(op) for op in ops}
    for op, opcode in found.items():
        assert isinstance(opcode, str), f"{op}: expected a str, got {opcode!r}"
    for op, opcode in found.items():
        stablehlo, hlo = _stablehlo_and_hlo(op)
        want, got = stablehlo[op], hlo[opcode]
        with check:
            assert want > 0 and got == want, (
                f"{op} x{want} in StableHLO, but XLA's HLO has {opcode!r} x{got}: read the HLO "
                "opcodes"
            )


# ---- task 2: hlo_opcode -----------------------------------------------------------------------


@pytest.mark.task("hlo_opcode")
def test_renamed_ops(kata):
    _check_mapping(kata, RENAMED)


@pytest.mark.task("hlo_opcode")
def test_respelled_ops(kata):
    _check_mapping(kata, RESPELLED)


@pytest.mark.task("hlo_opcode")
def test_ops_that_keep_their_name(kata):
    _check_mapping(kata, KEPT)


@pytest.mark.task("hlo_opcode")
def test_ops_jax_does_not_emit(kata):
    _check_mapping(kata, HAND_WRITTEN)


# Every op of the dialect: the contract covers any op, so the test asks for each one the dialect
# registers that a tiny module instantiates (programs.probe_modules), in an order drawn afresh:
# a table of the ops met while practising, or a belief about one family of ops (collectives,
# linear algebra, batch norms), does not carry over. So many of each situation must be there
# (renamed, one word or several; spelled by the rule, two words or three and more; one word kept).
SITUATIONS = {
    "renamed, one word": 1,
    "renamed, several words": 1,
    "two words, by the rule": 7,
    "three words or more, by the rule": 8,
    "one word, kept": 7,
}


@cache
def _dialect_bank() -> dict[str, str]:
    """op -> the opcode of XLA's conversion of it, for every dialect op some module instantiates
    (MLIR parses and verifies the module first, with the op in it once)."""
    return facts.converted_ops(dialect_ops(), probe_modules)


def _situation(op: str, opcode: str) -> str:
    name = op.removeprefix("stablehlo.")
    words = len(re.split(r"[_-]", name))  # one op's name is written with hyphens already
    if opcode != name.replace("_", "-"):
        return "renamed, one word" if words == 1 else "renamed, several words"
    if words == 1:
        return "one word, kept"
    return "two words, by the rule" if words == 2 else "three words or more, by the rule"


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_on_every_op_of_the_dialect(kata, fresh):
    """Every op of the dialect XLA converts here, asked in a fresh order."""
    bank = _dialect_bank()
    found = Counter(_situation(op, opcode) for op, opcode in bank.items())
    for situation, count in SITUATIONS.items():
        assert found[situation] >= count, (
            f"the dialect gave {found[situation]} ops {situation} that XLA converts"
        )
    # a name the dialect writes with hyphens (cross-replica-sum) is asked too: no spelling
    # rule covers it
    unasked = [op for op in dialect_ops() if "-" in op and op not in bank]
    assert not unasked, f"no probe module converts {unasked}"
    ops = sorted(bank)
    fresh.shuffle(ops)
    for op in ops:
        got = kata.hlo_opcode(op)
        assert got == bank[op], (
            f"{op} ({_situation(op, bank[op])}): you said {got!r}, XLA converts it to "
            f"{bank[op]!r} ({fresh.where()})"
        )


# ---- predictions: hlo_opcode and predict_accepts answer without compiling ----------------------


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_is_predicted_from_the_name(kata):
    ops = [*RENAMED, *RESPELLED, *list(KEPT)[:3], *HAND_WRITTEN]
    with compiler_refused("hlo_opcode", also=[(jax.export, "export"), (jax.export, "deserialize")]):
        for op in ops:
            kata.hlo_opcode(op)


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
    if dtype in _PYTHON_TYPES:
        ways["python"] = _PYTHON_TYPES[dtype]
    way = fresh.choice(sorted(ways))
    written = ways[way]
    if way == "type":
        return written, ""
    shown = written.__name__ if isinstance(written, type) else repr(written)
    return written, f" (dtype written {shown})"


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
    dimension (`b - 3` at b = 4 is 1) and two float32 calls of a fitting shape whose two
    symbols' names are one inside the other (one a prefix, one drawn), in a drawn order."""
    drawn: dict[str, tuple[str, Any, tuple[int, ...]]] = {}
    nested = ["prefix", fresh.choice(("prefix", "suffix", "inside"))]
    for dtype in [*[None] * count, *sorted(_DTYPES), "above", *nested]:
        while True:
            if dtype == "above":
                name, call = _draw_above_call(fresh)
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
    drawn = _drawn_calls(fresh, 21)  # one per dtype, one above, two of nested names: 40 in all
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


# ---- predict_lowering -------------------------------------------------------------------------


@cache
def _lowered_census(name: str) -> dict[str, int]:
    """stablehlo.* ops of the bank program's lowered module, counted by xla_inspect's walk."""
    fn, specs = LOWERING_BANK[name]
    return facts.stablehlo_ops(jax.jit(fn).lower(*specs))


@pytest.mark.task("predict_lowering")
def test_predict_lowering_matches_the_lowered_modules(kata):
    predicted = predicted_entries("predict_lowering", kata.predict_lowering(), LOWERING_BANK)
    for name, census in predicted.items():
        assert isinstance(census, dict), f"{name}: expected a dict, got {census!r}"
        with check:
            assert dict(census) == _lowered_census(name), (
                f"{name}: you predicted {dict(sorted(census.items()))}, the lowered module "
                f"has {dict(sorted(_lowered_census(name).items()))}"
            )


@pytest.mark.task("predict_lowering")
def test_predict_lowering_does_not_lower(kata):
    with compiler_refused("predict_lowering"):
        kata.predict_lowering()

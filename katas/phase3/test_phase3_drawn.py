"""Phase 3 tests on drawn cases, tasks 1, 3, 4, 6 and 7 (three_texts, entry_parameter_layouts,
entry_root, constants, flops): what the bank's fixed programs never vary.

three_texts and flops are handed, in a drawn order and at a drawn shape, two lambdas that share
one __qualname__, one of them again at another dtype, a Python scalar (weakly typed) scaling a
half-precision array, a program with an unused input and one closing over a large constant
(three_texts also a second closure of that code over another table, at the same shape): an
answer that remembers a compile by name, by code or by shape alone, keeps unused inputs, lowers for
abstract arguments or prints a text with other options than its stage's default (a large
constant in full, or elided as {...}) gets one wrong. The expected texts and flops are
jax.stages' and XLA's for the very arguments (oracles.hlo_stages).

The HLO readers get drawn modules (oracles.hlo_drawn): eleven or more parameters, nested tuple,
empty tuple and tiled parameters, a lone scalar ROOT, a tuple ROOT of six or more results, a
bounded dynamic ROOT, a ROOT with a tile and a memory space in its layout; constants in tiled and
memory-space layouts beside iota, replica-id and partition-id instructions (no operands, no
constants) with each computation's ROOT printed before some of its constants, in XLA's own
print; the expected values are XLA's reading of that print (xla_facts).
"""

from collections import Counter
from collections.abc import Callable

import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import oracles
from kata_harness.oracles import hlo_drawn
from kata_harness.oracles import hlo_stages as oracle
from kata_harness.xla_facts import xla_facts
from katas.phase3 import bank
from katas.phase3.programs import ELEMENTWISE, closed_over, doubled_ignoring, scaled

DIMS = (2, 3, 4, 5, 6, 7, 8)


def _drawn_calls(fresh, twins: bool = False) -> list[tuple[str, Callable, tuple]]:
    """(what, program, arguments) in a drawn order: two lambdas of one shape and dtype, the
    first again in bfloat16, a weakly typed Python scalar, an unused input; ``twins``: two
    closures of one code over different tables, at one shape."""
    shape = tuple(fresh.choice(DIMS) for _ in range(fresh.randint(1, 3)))
    first, second = fresh.sample(range(len(ELEMENTWISE)), 2)
    dtype = fresh.choice(("float32", "int32", "float16"))
    half = fresh.choice(("bfloat16", "float16"))
    factor = fresh.choice((0.5, 2.0, 3.0))

    def array(dtype: str, dims: tuple[int, ...] = shape) -> np.ndarray:
        return np.ones(dims, jnp.dtype(dtype))

    calls = [
        (f"ELEMENTWISE[{first}] at {dtype}{list(shape)}", ELEMENTWISE[first], (array(dtype),)),
        (f"ELEMENTWISE[{second}] at {dtype}{list(shape)}", ELEMENTWISE[second], (array(dtype),)),
        (
            f"ELEMENTWISE[{first}] at bfloat16{list(shape)}",
            ELEMENTWISE[first],
            (array("bfloat16"),),
        ),
        (f"scaled({half}{list(shape)}, {factor})", scaled, (array(half), factor)),
        (
            f"doubled_ignoring(float32{list(shape)}, an unused input)",
            doubled_ignoring,
            (array("float32"), array("int32", (fresh.choice(DIMS),))),
        ),
    ]
    calls.append(_closed_over_call(fresh))
    if twins:  # the same code and argument shapes, another closed-over table: another program
        dims = calls[-1][2][0].shape
        calls.append(_closed_over_call(fresh, dims, "another table"))
    fresh.shuffle(calls)
    return calls


def _closed_over_call(fresh, dims=None, which: str = "a table") -> tuple[str, Callable, tuple]:
    """A program closing over a drawn table of more than ten elements (a large constant: the
    stages' default prints and other print options show it differently)."""
    if dims is None:
        dims = (fresh.randint(11, 24),) if fresh.random() < 0.5 else (fresh.choice(DIMS), 11)
    values = [float(fresh.randint(-9, 9)) for _ in range(int(np.prod(dims)))]
    values[-1] = values[0] + 1.0  # never a splat
    table = np.array(values, np.float32).reshape(dims)
    return (
        f"closed_over({which} float32{list(dims)}) at float32{list(dims)}",
        closed_over(table),
        (np.ones(dims, np.float32),),
    )


@pytest.mark.task("three_texts")
def test_three_texts_of_drawn_programs(kata, fresh):
    """Each call compiles jax.jit(f) for its own arguments: another lambda, another dtype, a
    weakly typed scalar, an unused input and another closed-over table (one code, one shape)
    each make another program."""
    for what, program, args in _drawn_calls(fresh, twins=True):
        texts = kata.three_texts(program, *args)
        assert isinstance(texts, dict), f"expected a dict, got {type(texts).__name__}"
        assert sorted(texts) == ["hlo", "optimized", "stablehlo"], f"keys {sorted(texts)}"
        prints = bank.default_prints(program, args)
        bank.check_stages(texts, oracle.read_stages(prints), f"{what} ({fresh.where()})", prints)


@pytest.mark.task("flops")
def test_flops_of_drawn_programs(kata, fresh):
    """XLA's count for each program at its own arguments (a bfloat16 add costs three flops on
    XLA:CPU, a weakly typed scalar keeps half precision)."""
    bank.cpu_only("the flops of XLA:CPU's cost model")
    for what, program, args in _drawn_calls(fresh):
        got = kata.flops(program, *args)
        assert isinstance(got, float | int), f"expected a number, got {type(got).__name__}"
        expected = oracle.compiled_flops(program, args)
        with check:
            assert got == expected, (
                f"{what}: {got} flops is not XLA's count for this program at these arguments "
                f"({fresh.where()})"
            )


def _drawn_module(fresh, root: str) -> str:
    """XLA's print of a drawn module (the learner reads what XLA prints)."""
    return oracles.xla_module(hlo_drawn.entry_module(fresh, root)).text


@pytest.mark.task("entry_parameter_layouts")
def test_parameter_layouts_of_drawn_modules(kata, fresh):
    """11 to 14 parameters declared out of order, nested tuples, the empty tuple (alone and
    inside a tuple), tiled layouts, a bounded dynamic dimension, scalars: XLA's reading, in
    parameter-number order."""
    for root in hlo_drawn.ROOT_KINDS:
        text = _drawn_module(fresh, root)
        got = kata.entry_parameter_layouts(text)
        assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
        expected = [layout for _, layout in xla_facts(text).params]
        wrong = [n for n, (a, b) in enumerate(zip(got, expected, strict=False)) if a != b]
        with check:
            assert got == expected, (
                f"{len(got)} layouts for {len(expected)} parameters; first differing: "
                f"parameter({wrong[0] if wrong else min(len(got), len(expected))}) "
                f"({fresh.where()})"
            )


@pytest.mark.task("entry_root")
def test_root_of_drawn_modules(kata, fresh):
    """A lone scalar ROOT (no braces), a tuple of six or more (XLA prints /*index=5*/ in it), a
    bounded dynamic array (f32[<=n]), an array whose layout holds a tile and a memory space
    ({1,0:T(8,128)S(1)}): the shape exactly as XLA's line prints it."""
    for root in hlo_drawn.ROOT_KINDS:
        text = _drawn_module(fresh, root)
        got = kata.entry_root(text)
        assert isinstance(got, tuple) and len(got) == 2, f"expected (opcode, shape): {got!r:.80}"
        expected = xla_facts(text).root
        with check:
            assert got == expected, (
                f"a drawn module with a {root} ROOT: you read {got}; XLA's line differs "
                f"(in its {'shape' if got[:1] == expected[:1] else 'opcode'}) ({fresh.where()})"
            )


@pytest.mark.task("constants")
def test_constants_of_drawn_modules(kata, fresh):
    """Constants whose layouts hold tiles and memory spaces, in ENTRY and in a called computation,
    beside iota, replica-id and partition-id (no operands, yet no constants), some printed after
    their computation's ROOT (a ROOT need not be the last line): XLA's constants, each shape
    exactly as XLA's line prints it."""
    text = oracles.xla_module(hlo_drawn.constants_module(fresh)).text
    got = kata.constants(text)
    assert isinstance(got, list), f"expected a list, got {type(got).__name__}"
    found, expected = Counter(got), xla_facts(text).literals
    extra, missing = found - expected, expected - found
    assert not extra and not missing, (
        f"{sum(extra.values())} of your constants are not the module's "
        f"(e.g. {next(iter(extra), None)}), {sum(missing.values())} of its are missing "
        f"(e.g. {next(iter(missing), None)}) ({fresh.where()})"
    )

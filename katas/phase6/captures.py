"""Phase 6's test-owned programs compiled once per session (xla_inspect.capture) and shared by
the test files: their cost and memory analyses, their optimized HLO and their temp buffers, by
case; a module's metamorphic variants (renamed, reordered, both); and the skip of a number
measured on XLA:CPU when another backend runs the tests.
Expected values are read from them through kata_harness.oracles.memory."""

import functools
import zlib

import jax
import numpy as np
import pytest

from kata_harness import metamorphic
from kata_harness.oracles import memory as oracle
from katas.phase6.programs import (
    ALIAS_BANK,
    BYTES_BANK,
    COST_BANK,
    MEMORY_BANK,
    STEP_BANK,
    activation_chain,
    bytes_arguments,
    chain,
    matmul_chain,
    ones,
    train_step,
    update,
)
from xla_inspect.capture import capture
from xla_inspect.errors import HloParseError


def cpu_fact(what: str) -> None:
    """Skip a number measured on XLA:CPU when another backend runs the tests."""
    if jax.default_backend() != "cpu":
        pytest.skip(
            f"CPU-only fact: {what} (measured on XLA:CPU; other backends' cost models "
            "and buffer plans differ)"
        )


@functools.cache
def chain_cost():
    return capture(chain, ones(256, 256)).cost_analysis


@functools.cache
def bank_cost(name):
    fn, args = COST_BANK[name]
    return capture(fn, *args()).cost_analysis


@functools.cache
def step_bank_bytes(name):
    """(op by op, fused) bytes accessed of a STEP_BANK entry."""
    steps, make = STEP_BANK[name]
    return oracle.step_bytes(steps, make)


@functools.cache
def step_compiled(donate: bool):
    state = ones(64, 64)
    return capture(jax.jit(update, donate_argnums=(0,) if donate else ()), state, state)


@functools.cache
def bank_memory(name):
    fn, args, donate = MEMORY_BANK[name]
    return oracle.memory(fn, args(), donate)


@functools.cache
def train_step_hlo(donate: bool) -> str:
    tree = {"b": ones(4), "w": ones(4, 4)}
    jitted = jax.jit(train_step, donate_argnums=(1,) if donate else ())
    return capture(jitted, tree, tree).optimized_hlo_text


@functools.cache
def alias_hlo(name) -> str:
    fn, args, donate, _ = ALIAS_BANK[name]
    return capture(fn, *args(), donate_argnums=donate).optimized_hlo_text


@functools.cache
def chain_capture(depth):
    square = ones(128, 128)
    return capture(matmul_chain(depth), square, square)


@functools.cache
def activation_capture():
    square = ones(128, 128)
    return capture(activation_chain, square, square, ones(256, 32))


@functools.cache
def chain_temp(rows, width, depth, dtype) -> int:
    x, w = np.ones((rows, width), dtype), np.ones((width, width), dtype)
    return oracle.temp_bytes(matmul_chain(depth), x, w)


@functools.cache
def case_bytes(program: str, shape: tuple[int, int], dtype: str) -> float:
    """XLA's cost analysis of the program compiled for x of this shape and dtype."""
    fn, _, _ = BYTES_BANK[program]
    return oracle.bytes_accessed(fn, *bytes_arguments(program, shape, dtype))


@functools.cache
def variants(text: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module renamed, reordered and both (each accepted by XLA's parser), for a fixed seed
    per text: the facts of a module do not depend on its names or computation order."""
    found: dict[str, metamorphic.HloVariant] = {}
    for k in range(12):  # a seed's reordering may be one XLA refuses: one of each kind
        try:
            drawn = list(metamorphic.variants(text, seed=zlib.crc32(text.encode()) + k))
        except HloParseError:  # a label the harness drew that reads as a type name (c64)
            continue
        for variant in drawn:
            found.setdefault(variant.kind, variant)
        if len(found) == 3:
            break
    assert found, "no variant of the module XLA accepts"
    return tuple(found.values())

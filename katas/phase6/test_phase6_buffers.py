"""Phase 6 tests, task naive_temp_bytes: the bytes of ENTRY's intermediates, on hand-written
modules (their counts worked out below) and on compiled programs, each also renamed and
reordered; set against what XLA's buffer assignment needs (katas/phase6/captures.py)."""

import functools

import jax
import jax.core
import numpy as np
import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import memory as oracle
from katas.phase6 import captures, drawn_naive, drawn_types
from katas.phase6.programs import (
    NAIVE_COPIES,
    NAIVE_ODD_TYPES,
    NAIVE_TUPLE_ROOT,
    bf16,
    matmul_chain,
    ones,
    tuple_chain,
)
from xla_inspect.capture import capture


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_counts_entry_intermediates(kata):
    naives = {
        d: kata.naive_temp_bytes(captures.chain_capture(d).optimized_hlo_text) for d in (4, 6)
    }
    captures.cpu_fact("each matmul of the chain is its own ENTRY instruction")
    for depth, naive in naives.items():
        expected = (depth - 1) * 128 * 128 * 4
        with check:
            assert naive == expected, (
                f"depth {depth}: {naive}, expected {expected} ({depth - 1} intermediates "
                "of f32[128,128]; not the parameters, not the ROOT)"
            )


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_skips_views_and_fused_bodies(kata):
    naive = kata.naive_temp_bytes(captures.activation_capture().optimized_hlo_text)
    captures.cpu_fact(
        "ENTRY holds two matmul fusions, one tanh fusion and a bitcast for the reshape"
    )
    expected = 3 * 128 * 128 * 4
    assert naive == expected, (
        f"{naive}, expected {expected}: three f32[128,128] results in ENTRY (two matmuls, "
        "the fused tanh*2); the reshape is a bitcast (a view, no new buffer) and the "
        "instructions inside fused computations never get buffers of their own"
    )


# yb 6*2 + bc 48*2 + n 48*2. Not: x, y (parameters), m and s (the outputs the ROOT tuple
# gathers), flat and back (bitcasts), t (the ROOT), nor anything inside the nested fusions.
NAIVE_TUPLE_ROOT_BYTES = 6 * 2 + 48 * 2 + 48 * 2

# parts (a multi-output fusion: f64[5] 40 + c64[5] 40 + u16[3,7] 42), lt pred 5, wide s64 40,
# small f8e4m3fn 5, back f64 40, re f32 20, re64 40, w64 40, sum 40. Not the constant k (a
# literal, not an intermediate) nor the get-tuple-elements (views of parts).
NAIVE_ODD_TYPES_BYTES = (40 + 40 + 42) + 5 + 40 + 5 + 40 + 20 + 40 + 40 + 40
# t f32[6,4] 96, c f32[6,4] 96 (copy), r f32[24] 96 (reshape), yc s16[6,4] 48 (copy), yr
# s16[24] 48 (reshape), yf f32[24] 96; not the ROOT sum. Copy, transpose and reshape are not views.
NAIVE_COPIES_BYTES = 96 + 96 + 96 + 48 + 48 + 96


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_of_handwritten_modules(kata):
    for text in (NAIVE_TUPLE_ROOT, NAIVE_ODD_TYPES, NAIVE_COPIES):
        oracle.xla_parses(text)
    cases = {
        "tuple root, bf16/s8, bitcasts, nested fusion": (NAIVE_TUPLE_ROOT, NAIVE_TUPLE_ROOT_BYTES),
        "f64/c64/u16/s64/f8/pred, multi-output fusion, constant": (
            NAIVE_ODD_TYPES,
            NAIVE_ODD_TYPES_BYTES,
        ),
        "copies, a transpose and reshapes in ENTRY (not views)": (
            NAIVE_COPIES,
            NAIVE_COPIES_BYTES,
        ),
    }
    for name, (text, expected) in cases.items():
        got = kata.naive_temp_bytes(text)
        with check:
            assert got == expected, f"{name}: {got} bytes, expected {expected}"


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_under_renaming_and_reordering(kata):
    """The same modules with every instruction and computation renamed (%n17, %c3) and the
    computations reordered: a byte count does not depend on what anything is called."""
    cases = {
        "tuple root, bf16/s8, bitcasts, nested fusion": (NAIVE_TUPLE_ROOT, NAIVE_TUPLE_ROOT_BYTES),
        "f64/c64/u16/s64/f8/pred, multi-output fusion, constant": (
            NAIVE_ODD_TYPES,
            NAIVE_ODD_TYPES_BYTES,
        ),
        "copies, a transpose and reshapes in ENTRY (not views)": (
            NAIVE_COPIES,
            NAIVE_COPIES_BYTES,
        ),
    }
    if jax.default_backend() == "cpu":
        cases["matmul chain of 4, f32[128,128]"] = (
            captures.chain_capture(4).optimized_hlo_text,
            3 * 128 * 128 * 4,
        )
        cases["two matmuls, tanh, reshape"] = (
            captures.activation_capture().optimized_hlo_text,
            3 * 128 * 128 * 4,
        )
    for name, (text, expected) in cases.items():
        for variant in captures.variants(text):
            got = kata.naive_temp_bytes(variant.text)
            with check:
                assert got == expected, (
                    f"{name}, {variant.kind} (every instruction and computation under another "
                    f"name such as %n17 or %c3, or the computations in another order): {got} "
                    f"bytes, expected {expected}: find ENTRY, views and outputs by what they are "
                    "(the ENTRY keyword, opcodes, the ROOT), not by their names"
                )


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_of_fresh_modules(kata, fresh):
    """ENTRY computations drawn for this run (katas/phase6/drawn_naive.py): a result of every
    element type XLA knows (2- and 4-bit ones packed or not, E(n) after the colon, after a tile
    or before a memory space), types packed below their own width (u8 at E(4), pred at E(1)), a
    multi-output fusion and an opt-barrier whose tuples hold packed arrays, an iota, a
    bitcast-convert, a while loop whose body and condition compute values of their own and whose
    state is a tuple holding a tuple, a ROOT that is not the last line; ops that look as if they
    wrote no buffer (slice, dynamic-slice, dynamic-update-slice, scatter, gather, pad, reverse,
    opt-barrier, custom-calls, one of them stating output_to_operand_aliasing as LAPACK's do).
    Each result's bytes are read from XLA's own print of the module
    (kata_harness.oracles.memory)."""
    for _ in range(2):
        text, counted = drawn_naive.naive_module(fresh)
        sizes = oracle.entry_result_bytes(text)
        got = kata.naive_temp_bytes(text)
        expected = sum(sizes[name] for name in counted)
        assert got == expected, (
            f"{got} bytes, expected {expected} ({fresh.where()}): the widths of every element "
            "type, packed layouts (E(n) wherever the layout holds it, {0:T(3)E(4)S(1)} too: n "
            "bits an element whatever the dtype, u8 and pred as well; inside tuple-shaped "
            "results too), tuples inside tuples, which opcodes write a buffer (only bitcast, "
            "tuple and get-tuple-element re-view one: slices, in-place updates, opt-barrier and "
            "custom-calls count), which instruction is the ROOT, and what lives outside ENTRY"
        )


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_of_each_element_type_alone(kata, fresh):
    """One module per element type XLA knows (katas/phase6/drawn_types.py), so that a wrong width
    for one type is not made up for by another's: a convert and a broadcast of it at drawn sizes,
    layouts plain, packed (E(n)), in memory space S(1) or tiled by sizes that divide no dimension
    (a tile pads nothing: the size is the element count the dimensions give). Each result's bytes
    are read from XLA's own print of the module (kata_harness.oracles.memory)."""
    for dtype, text, counted in drawn_types.one_type_modules(fresh):
        sizes = oracle.entry_result_bytes(text)
        got, expected = kata.naive_temp_bytes(text), sum(sizes[name] for name in counted)
        shapes = [line.split(" = ")[1].split(" ")[0] for line in text.splitlines()[3:5]]
        with check:
            assert got == expected, (
                f"{dtype} alone, {' and '.join(shapes)}: {got} bytes, expected {expected} "
                f"({fresh.where()}): an element's bits are the dtype's own width "
                "(f8e4m3b11fnuz and f8e8m0fnu are 8-bit types, whatever other numbers their "
                "names hold) unless E(n) packs it; a tile T(...) adds no padding"
            )


@functools.cache
def _compiled_naive_cases():
    square, half = ones(96, 96), bf16(64, 64)
    short = np.ones((64, 64), np.int16)
    return {
        "tuple-output f32 chain": (capture(tuple_chain, square, square), 96 * 96 * 4),
        "bf16 chain of 4": (capture(matmul_chain(4), half, half), 3 * 64 * 64 * 2),
        # integer dots stay plain s16 dots on every supported JAX (the bf16 case is gated)
        "s16 chain of 4": (capture(matmul_chain(4), short, short), 3 * 64 * 64 * 2),
    }


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_of_compiled_tuple_and_bf16_programs(kata):
    cases = _compiled_naive_cases()
    got = {name: kata.naive_temp_bytes(c.optimized_hlo_text) for name, (c, _) in cases.items()}
    captures.cpu_fact("each matmul of the chain is its own ENTRY instruction, kept in its dtype")
    for name, (_, expected) in cases.items():
        gate = "bf16-dots-stay-bf16" if name.startswith("bf16") else None
        if gate is not None and not versions.checked(gate):
            continue  # a gate, listed in the run's header
        with check, versions.fact(gate):
            assert got[name] == expected, f"{name}: {got[name]} bytes, expected {expected}"


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_of_compiled_custom_calls(kata):
    """factor(a, b) of programs.py compiled: on XLA:CPU its Cholesky and QR are LAPACK
    custom-calls in ENTRY, tuple-shaped and stating output_to_operand_aliasing, their results
    read by later fusions. Expected: the module's ENTRY as XLA's own parser reads it, each
    result's bytes less the parameters, constants, views and outputs, by XLA's opcodes
    (kata_harness.oracles.memory.entry_intermediate_bytes)."""
    text = captures.alias_hlo("LAPACK custom calls, nothing donated")
    got, expected = kata.naive_temp_bytes(text), oracle.entry_intermediate_bytes(text)
    assert got == expected, (
        f"factor(a, b) compiled, f32[4,4] and f32[6,3]: {got} bytes, expected {expected}: a "
        "custom-call writes a result of its own in ENTRY, even one that states "
        "output_to_operand_aliasing; only bitcast, tuple and get-tuple-element re-view a buffer"
    )


@pytest.mark.task("naive_temp_bytes")
def test_buffer_assignment_reuses_buffers(kata):
    temps, naives = [], []
    for depth in (4, 6):
        captured = captures.chain_capture(depth)
        temps.append(captured.memory_analysis["temp_size_in_bytes"])
        naives.append(kata.naive_temp_bytes(captured.optimized_hlo_text))
    captures.cpu_fact("temp holds two matmul results at depths 4 and 6")
    with check:
        assert all(t < n for t, n in zip(temps, naives, strict=True)), (
            f"temp {temps} should be below the naive totals {naives}: dead buffers are reused"
        )
    with check:
        assert naives[1] > naives[0] and temps[1] == temps[0], (
            f"naive {naives} grows with depth, temp {temps} does not"
        )

"""Phase 6 tests, tasks aliased_parameters, predict_chain_temp and predict_bytes_accessed: the
aliases a module's header states, and predictions of temp bytes and bytes accessed, checked
against XLA's own analyses of the compiled program (katas/phase6/captures.py,
kata_harness.oracles.memory). cost_of, fusion_traffic and memory_report are in
test_phase6_analyses.py, naive_temp_bytes in test_phase6_buffers.py, eager_vs_jit in
test_phase6_timing.py.
"""

import math

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import memory as oracle
from kata_harness.predict import compiler_refused
from katas.phase6 import captures
from katas.phase6.programs import (
    ALIAS_BANK,
    BYTES_BANK,
    BYTES_CASES,
    BYTES_DIMS,
    HANDWRITTEN_ALIAS,
    ones,
)
from xla_inspect.capture import capture
from xla_inspect.parse import parse_hlo


@pytest.mark.task("aliased_parameters")
def test_donated_state_aliases_outputs(kata):
    got = kata.aliased_parameters(captures.train_step_hlo(True))
    tree = {"b": ones(4), "w": ones(4, 4)}
    n_grads = len(jax.tree.leaves(tree))
    # Parameters are the flattened leaves (grads first); the new state leads the outputs.
    expected = {n_grads + i: (i,) for i in range(len(jax.tree.leaves(tree)))}
    assert got == expected, f"got {got}, expected {expected} (parameter -> output index)"


@pytest.mark.task("aliased_parameters")
def test_no_donation_no_alias(kata):
    plain = kata.aliased_parameters(captures.train_step_hlo(False))
    single = kata.aliased_parameters(captures.step_compiled(True).optimized_hlo_text)
    with check:
        assert plain == {}, f"nothing donated, got {plain}"
    with check:
        assert single == {0: ()}, f"one array output aliases parameter 0 at index (); got {single}"
    with check:
        header = parse_hlo(captures.step_compiled(False).optimized_hlo_text).attributes
        assert "input_output_alias" not in header, "without donation the header has no aliases"


@pytest.mark.task("aliased_parameters")
def test_aliases_read_parameter_numbers_and_output_indices(kata):
    for name, (*_, expected) in ALIAS_BANK.items():
        got = kata.aliased_parameters(captures.alias_hlo(name))
        with check:
            assert got == expected, (
                f"{name}: got {got}, expected {expected} (parameter number -> output index, "
                "both as the header states them)"
            )


@pytest.mark.task("aliased_parameters")
def test_aliases_of_a_handwritten_header(kata):
    oracle.xla_parses(HANDWRITTEN_ALIAS)
    got = kata.aliased_parameters(HANDWRITTEN_ALIAS)
    assert got == {1: (0,), 0: (2,)}, (
        f"got {got}: {{0}}: (1, {{}}, may-alias) is output 0 taking parameter 1; {{2}}: (0, {{1}}, "
        "must-alias) is output 2 taking parameter 0 (its element {1})"
    )


def _alias_module(fresh, deep: bool) -> tuple[str, dict[int, tuple[int, ...]]]:
    """A module drawn for this run: 11 to 16 array parameters and a tuple parameter of 11 to 13
    elements after them, 11 to 14 outputs, the first a tuple of 11 to 13 (`deep`: that tuple
    one tuple further down). Four or five outputs alias parameters: two inside the first tuple
    (at an index below 10 and one of 10 or more), the others at top-level indices, one of 10 or
    more; among the parameters one numbered 10 or more and the tuple parameter, through its
    element 10 or more. Every other output is an s32[] constant; a custom call in ENTRY states
    an output_to_operand_aliasing of its own. With the answer it was drawn from (XLA's parser
    must accept it): numbers of several digits in every place of the header."""
    n, m = fresh.randint(11, 16), fresh.randint(11, 13)  # array parameters, tuple elements
    element = fresh.randrange(10, m)  # the tuple parameter's aliased element
    params = [fresh.randint(10, n - 1), *fresh.sample(range(10), fresh.randint(2, 3)), n]
    fresh.shuffle(params)
    shape = [f"f32[{element + 1 if p == n else p + 1}]" for p in params]
    width, top = fresh.randint(11, 13), fresh.randint(11, 14)
    inner = [fresh.randrange(10), fresh.randrange(10, width)]
    wide = fresh.randrange(10, top)
    rest = [wide, *fresh.sample([k for k in range(1, top) if k != wide], len(params) - 3)]
    fresh.shuffle(rest)
    outer = (0, 0) if deep else (0,)
    indices = [(*outer, inner[0]), (*outer, inner[1]), *[(k,) for k in rest]]
    elements = ", ".join(f"f32[{j + 1}]" for j in range(m))
    lines = [f"  %p{i} = f32[{i + 1}]{{0}} parameter({i})" for i in range(n)]
    lines += [f"  %pt = ({elements}) parameter({n})", "  %z = s32[] constant(0)"]
    lines.append(f"  %g = {shape[params.index(n)]}{{0}} get-tuple-element(%pt), index={element}")
    lines += [
        f"  %o{k} = {shape[k]}{{0}} negate({'%g' if p == n else f'%p{p}'})"
        for k, p in enumerate(params)
    ]

    def tuple_of(size: int, at: dict[int, int]) -> tuple[str, str]:  # (shape, operands)
        parts = [(shape[at[j]], f"%o{at[j]}") if j in at else ("s32[]", "%z") for j in range(size)]
        return f"({', '.join(p for p, _ in parts)})", ", ".join(o for _, o in parts)

    first_shape, operands = tuple_of(width, {inner[0]: 0, inner[1]: 1})
    lines.append(f"  %wide = {first_shape} tuple({operands})")
    first = "%wide"
    if deep:  # the wide tuple one tuple further down, alone in it: {0, 0, j}
        first_shape, first = f"({first_shape})", "%deep"
        lines.append(f"  %deep = {first_shape} tuple(%wide)")
    result, operands = tuple_of(top, {k: 2 + r for r, k in enumerate(rest)})
    result = result.replace("s32[]", first_shape, 1)
    operands = operands.replace("%z", first, 1)
    # a custom call stating its own aliasing (as LAPACK's do on XLA:CPU), which is no donation
    solved = fresh.randrange(n)
    lines.append(
        f"  %solve = (f32[{solved + 1}]{{0}}, s32[]) custom-call(%p{solved}), "
        'custom_call_target="drawn_solver", output_to_operand_aliasing={{0}: (0, {})}'
    )
    lines.append(f"  ROOT %out = {result} tuple({operands})")
    header = ", ".join(
        f"{{{', '.join(map(str, index))}}}: ({p}, {{{element if p == n else ''}}}, "
        f"{fresh.choice(['may-alias', 'must-alias'])})"
        for index, p in zip(indices, params, strict=True)
    )
    signature = ", ".join([*(f"p{i}: f32[{i + 1}]" for i in range(n)), f"pt: ({elements})"])
    text = (
        f"HloModule drawn_aliases, input_output_alias={{ {header} }}\n\n"
        f"ENTRY %main ({signature}) -> {result} {{\n" + "\n".join(lines) + "\n}\n"
    )
    return text, {p: index for p, index in zip(params, indices, strict=True)}


@pytest.mark.task("aliased_parameters")
def test_aliases_of_fresh_headers(kata, fresh):
    """Parameter numbers, output indices (at the top and inside tuples one and two deep) and
    parameter tuple indices of one digit and of two, drawn for this run."""
    for deep in fresh.sample([False, True, fresh.choice([False, True])], 3):
        text, expected = _alias_module(fresh, deep)
        oracle.xla_parses(text)
        got = kata.aliased_parameters(text)
        assert got == expected, (
            f"{fresh.where()}: got {got} for input_output_alias="
            f"{parse_hlo(text).attributes['input_output_alias']}"
        )


def _rotated(shift: int):
    def rotated(*xs):
        return tuple(xs[(k + shift) % len(xs)] + 1.0 for k in range(len(xs)))  # xs[p]: p - shift

    return rotated


@pytest.mark.task("aliased_parameters")
def test_aliases_of_a_compiled_program_with_many_outputs(kata, fresh):
    """12 to 14 arrays of distinct shapes, returned rotated by a drawn shift, two or three of them
    donated: one numbered 10 or more, and two whose outputs' indices are 10 or more."""
    n, shift = fresh.randint(12, 14), fresh.randint(1, 3)
    late = fresh.sample([(k + shift) % n for k in range(10, n)], 2)  # outputs 10 and up
    donate = tuple(sorted({fresh.randrange(10, n), *late}))
    args = tuple(ones(p + 1) for p in range(n))
    captured = capture(jax.jit(_rotated(shift), donate_argnums=donate), *args)
    aliased = captured.memory_analysis["alias_size_in_bytes"]
    assert aliased == sum(args[p].nbytes for p in donate), "XLA aliased another set of buffers"
    expected = {p: ((p - shift) % n,) for p in donate}  # each goes to the output of its shape
    got = kata.aliased_parameters(captured.optimized_hlo_text)
    assert got == expected, (
        f"{n} outputs, parameter p returned at output p - {shift} (mod {n}): got {got}, expected "
        f"{expected}; input_output_alias="
        f"{parse_hlo(captured.optimized_hlo_text).attributes['input_output_alias']}"
    )


@pytest.mark.task("aliased_parameters")
def test_aliases_under_renaming_and_reordering(kata):
    texts = {name: (captures.alias_hlo(name), want) for name, (*_, want) in ALIAS_BANK.items()}
    texts["handwritten header"] = (HANDWRITTEN_ALIAS, {1: (0,), 0: (2,)})
    for name, (text, want) in texts.items():
        for variant in captures.variants(text):
            got = kata.aliased_parameters(variant.text)
            with check:
                assert got == variant.rename(want), (
                    f"{name}, {variant.kind} (every instruction and computation under another "
                    f"name, or the computations in another order): got {got}, expected {want}: "
                    "the header states the aliases, whatever the module's names"
                )


# ---- predict_chain_temp -------------------------------------------------------------------------

# (rows, width, depth, dtype): every depth from 0 (x returned as is) to 7, wide and narrow x,
# 2-, 4- and 8-byte dtypes (complex64: 8 bytes an element, no 64-bit mode needed)
CHAIN_CASES = [(128, 128, depth, np.float32) for depth in range(8)] + [
    (64, 32, 5, np.float32),
    (200, 8, 4, np.int16),
    (48, 16, 6, np.int32),
    (10, 10, 2, np.int16),
    (30, 24, 3, np.float32),
    (16, 32, 3, np.complex64),
]


@pytest.mark.task("predict_chain_temp")
def test_predict_chain_temp_matches_buffer_assignment(kata):
    got = {
        case: kata.predict_chain_temp(*case[:3], np.dtype(case[3]).itemsize) for case in CHAIN_CASES
    }
    captures.cpu_fact("XLA:CPU's buffer assignment of a matmul chain")
    for case, predicted in got.items():
        rows, width, depth, dtype = case
        with check:
            assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
        measured = captures.chain_temp(*case)
        with check:
            assert predicted == measured, (
                f"x {np.dtype(dtype).name}[{rows},{width}], depth {depth}: you predicted "
                f"{predicted} temp bytes, memory_analysis says {measured} "
                f"({measured // (rows * width * np.dtype(dtype).itemsize)} products of x's size)"
            )


# The dtypes a chain keeps as itself on XLA:CPU (integer, f32 and c64 dots): 1, 2, 4 and 8
# bytes an element.
FRESH_CHAIN_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.float32, np.complex64)


def _fresh_chain_case(fresh, depth: int, itemsize: int) -> tuple[int, int, int, type]:
    """x's rows and width and a dtype of `itemsize` bytes for a chain of `depth`, x's bytes a
    multiple of 64 (as every listed case's: XLA:CPU aligns each temp buffer to 64 bytes)."""
    dtype = fresh.choice([d for d in FRESH_CHAIN_DTYPES if np.dtype(d).itemsize == itemsize])
    width = fresh.randint(2, 96)
    step = 64 // math.gcd(64, width * np.dtype(dtype).itemsize)
    rows = step * fresh.randint(1, max(1, 192 // step))
    return rows, width, depth, dtype


@pytest.mark.task("predict_chain_temp")
def test_predict_chain_temp_on_fresh_chains(kata, fresh):
    """Chains drawn over the whole domain: depths 0 to 13 (an even and an odd one past the
    listed 7 every time), widths, row counts and dtypes of 1, 2, 4 and 8 bytes (each size every
    time, on drawn depths); the expected temp is what XLA:CPU's buffer assignment says for the
    compiled chain."""
    depths = [fresh.randrange(8, 14, 2), fresh.randrange(9, 14, 2)]
    depths += [fresh.randint(0, 13) for _ in range(3)]
    itemsizes = [1, 2, 4, 8, fresh.choice([1, 2, 4, 8])]
    fresh.shuffle(itemsizes)
    cases = [_fresh_chain_case(fresh, d, s) for d, s in zip(depths, itemsizes, strict=True)]
    got = [kata.predict_chain_temp(*case[:3], np.dtype(case[3]).itemsize) for case in cases]
    captures.cpu_fact("XLA:CPU's buffer assignment of a matmul chain")
    for case, predicted in zip(cases, got, strict=True):
        rows, width, depth, dtype = case
        measured = captures.chain_temp(*case)
        if type(predicted) is not int or predicted != measured:
            pytest.fail(
                f"x {np.dtype(dtype).name}[{rows},{width}], w [{width},{width}], depth {depth} "
                f"(itemsize {np.dtype(dtype).itemsize}): you predicted {predicted!r} temp bytes, "
                f"memory_analysis of the compiled chain says {measured}; {fresh.where()}"
            )


@pytest.mark.task("predict_chain_temp")
def test_predict_chain_temp_does_not_compile(kata):
    with compiler_refused("predict_chain_temp"):
        for rows, width, depth, dtype in CHAIN_CASES[:4]:
            kata.predict_chain_temp(rows, width, depth, np.dtype(dtype).itemsize)


# ---- predict_bytes_accessed ---------------------------------------------------------------------


def _check_bytes(kata, program: str, shape: tuple[int, int], dtype: str, where: str) -> None:
    got = kata.predict_bytes_accessed(program, jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)))
    measured = captures.case_bytes(program, shape, dtype)
    assert got == measured, (
        f"{program} with x {dtype}{list(shape)}: you predicted {got} bytes; cost_analysis says "
        f"otherwise ({'more' if measured > got else 'fewer'}: which operands and outputs does "
        f"each fusion read and write once, and at how many bytes an element?){where}"
    )


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_of_the_listed_cases(kata):
    captures.cpu_fact("XLA:CPU's fusion decisions and cost model")
    for program, shape, dtype in BYTES_CASES:
        _check_bytes(kata, program, shape, dtype, "")


# Every program is drawn at least once in each band of BYTES_DIMS on every run: its smallest
# matrices (the 4096 elements of 64 by 64 up to 100 by 100), its largest (more than 256 by 256,
# up to 300 by 300) and anywhere. An answer whose rule changes with x's size (a sum it takes
# for two passes past some element count, a width it treats apart) meets both ends.
BYTES_BANDS = {
    "small": (64, 96, 100),
    "large": (256, 300),
    "any": BYTES_DIMS,
}


def _bytes_shape(fresh, program: str, dtype: str, band: str, aligned: bool) -> tuple[int, int]:
    """x's shape for one case: non-square in the band "any"; in "small" and "large" both
    dimensions from the band (square allowed, 256 by 256 not large). The slice's width halves on
    a 64-byte boundary or off it, as `aligned` says."""
    dims = BYTES_BANDS[band]
    if program.startswith("x[:"):
        cols = fresh.choice([d for d in _slice_cols(dtype, aligned) if d in dims])
        rows = fresh.choice([d for d in dims if band != "any" or d != cols])
        return rows, cols
    if band == "any":
        rows, cols = fresh.sample(dims, 2)
        return rows, cols
    shapes = [(r, c) for r in dims for c in dims if band != "large" or (r, c) != (256, 256)]
    return fresh.choice(shapes)


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_on_fresh_cases(kata, fresh):
    """Every program at every dtype of its domain on every run (1-, 2- and 4-byte elements,
    floats and integers), and in each band of sizes (BYTES_BANDS: its smallest matrices, its
    largest and any; a program of one dtype is drawn three times), each case at a shape drawn
    for it; the expected bytes are XLA's cost analysis of the program compiled here."""
    captures.cpu_fact("XLA:CPU's fusion decisions and cost model")
    for program, (_, _, dtypes) in BYTES_BANK.items():
        aligned = fresh.random() < 0.5
        if program.startswith("x[:") and not versions.holds("bf16-slice-reads-its-part"):
            dtypes = tuple(d for d in dtypes if d != "bfloat16")
        drawn = list(dtypes) + [fresh.choice(dtypes) for _ in range(len(BYTES_BANDS) - len(dtypes))]
        bands = list(BYTES_BANDS) + [
            fresh.choice(list(BYTES_BANDS)) for _ in range(len(drawn) - len(BYTES_BANDS))
        ]
        fresh.shuffle(bands)
        for dtype, band in zip(drawn, bands, strict=True):
            shape = _bytes_shape(fresh, program, dtype, band, aligned)
            aligned = not aligned  # the slice's cut on a 64-byte boundary and off it, in turn
            _check_bytes(kata, program, shape, dtype, f" ({band} x, {fresh.where()})")


def _slice_cols(dtype: str, aligned: bool) -> list[int]:
    """The widths of BYTES_DIMS whose half row is (or is not) a whole number of 64-byte lines."""
    size = jnp.dtype(dtype).itemsize
    return [d for d in BYTES_DIMS if ((d // 2) * size % 64 == 0) == aligned]


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_does_not_compile(kata):
    with compiler_refused("predict_bytes_accessed"):
        kata.predict_bytes_accessed("exp(x)", jax.ShapeDtypeStruct((64, 96), jnp.float32))

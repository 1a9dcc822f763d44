"""Phase 13 tests, task roofline: flops, bytes and arithmetic intensity predicted without
compiling, checked against the compiler's cost analysis of the program (compiled in f32, lowered
in bf16; kata_harness.oracles.performance), and the bound classified by each chip's ridge point.
bf16 sums are drawn fresh: jnp.sum widens them to f32, and the cost model counts the converts;
so are dots with one dimension thin, where every term of the bytes weighs.
"""

import functools
import itertools

import jax
import jax.numpy as jnp
import pytest
from pytest_check import check

from kata_harness.oracles import performance as oracle
from kata_harness.predict import compiler_refused
from katas.phase13.programs import PEAKS, ROOFLINE_PROGRAMS

# ---- roofline -----------------------------------------------------------------------------------

# (program, shapes): checked in f32 against the compiled program's cost_analysis().
F32_CASES = [
    ("matmul", ((256, 512), (512, 128))),
    ("matmul", ((96, 40), (40, 300))),
    ("batched_matmul", ((4, 64, 32), (4, 32, 48))),
    ("matvec", ((1024, 512), (512,))),
    ("add", ((1000, 300), (1000, 300))),
    ("scale_add", ((123, 77), (123, 77))),
    ("row_sums", ((1000, 300),)),
    ("row_sums", ((64, 7),)),
    ("total", ((50, 40, 3),)),
]
# bf16, checked against the lowered module's cost_analysis() (before the CPU backend widens bf16
# arithmetic to f32, which its compiled figures count): the programs without a conversion.
BF16_CASES = [
    ("matmul", ((768, 768), (768, 768))),
    ("batched_matmul", ((8, 128, 64), (8, 64, 256))),
    ("matvec", ((512, 2048), (2048,))),
    ("add", ((640, 480), (640, 480))),
]
CLASSIFIED = [
    *BF16_CASES,
    ("matmul", ((4096, 4096), (4096, 4096))),
    ("matmul", ((32, 8192), (8192, 8192))),
    ("matmul", ((900, 900), (900, 900))),
]
TOLERANCE = 0.05
DTYPES = ("float32", "bfloat16")  # the dtypes the contract names


def _specs(shapes, dtype):
    return [jax.ShapeDtypeStruct(s, dtype) for s in shapes]


@functools.cache
def _compiled_cost(program, shapes) -> tuple[float, float]:
    cost = oracle.cost(
        jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.float32)).compile()
    )
    return cost["flops"], cost["bytes accessed"]


@functools.cache
def _lowered_cost(program, shapes) -> tuple[float, float]:
    cost = oracle.cost(jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.bfloat16)))
    return cost["flops"], cost["bytes accessed"]


@functools.cache
def _compiled_bf16_bytes(program, shapes) -> float:
    """Bytes accessed of the compiled bf16 program: for a reduction of at most 32 elements,
    XLA:CPU fuses it with its converts, and the fusion reads the input once and writes the
    output once."""
    compiled = jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.bfloat16)).compile()
    return oracle.cost(compiled)["bytes accessed"]


def _predicted(kata, program, shapes, dtype, chip):
    got = kata.roofline(program, shapes, dtype, chip)
    assert isinstance(got, tuple) and len(got) == 4, f"expected a 4-tuple, got {got!r}"
    return got


def _check_cost(got, want, where):
    (flops, moved, intensity, _), (want_flops, want_bytes) = got, want
    for name, value, expected in (
        ("flops", flops, want_flops),
        ("bytes", moved, want_bytes),
        ("intensity", intensity, want_flops / want_bytes),
    ):
        with check:
            assert value == pytest.approx(expected, rel=TOLERANCE), (
                f"{where}: {name} {value:.6g}, the compiler's cost analysis says {expected:.6g}"
            )


@pytest.mark.task("roofline")
def test_roofline_matches_compiled_f32_cost(kata):
    for program, shapes in F32_CASES:
        got = _predicted(kata, program, shapes, "float32", "v5e")
        _check_cost(got, _compiled_cost(program, shapes), f"{program} {shapes} f32")


@pytest.mark.task("roofline")
def test_roofline_matches_bf16_cost(kata):
    for program, shapes in BF16_CASES:
        got = _predicted(kata, program, shapes, "bfloat16", "h100")
        _check_cost(got, _lowered_cost(program, shapes), f"{program} {shapes} bf16")


@pytest.mark.task("roofline")
def test_roofline_bf16_sums(kata, fresh):
    """The flops of bf16 row sums and totals of drawn shapes, as the lowered bf16 module counts
    them: jnp.sum accumulates in f32, and its converts are counted. Each program is drawn wide
    and narrow (rows of 2 to 8 elements, a total of rank 0 to 3 and at most 12 elements): summing
    few elements, the adds no longer outweigh the converts, so a convert left out (into f32, or
    of the result back to bf16: one per output element) shows beyond the tolerance, and the
    output's bytes weigh: the narrow ones' bytes are checked against the compiled bf16 module,
    where XLA:CPU fuses a reduction of at most 32 elements with its converts and moves exactly
    the input once and the output once (jax 0.10 to 0.12; it splits longer 1-D reductions,
    which moves more, and its f32 module reads the reduction's 0.0 apart)."""
    rank, narrow_rank = fresh.randint(1, 3), fresh.randint(0, 3)
    # at most 12 elements: the scalar output is over 5% of the bytes
    narrow_total = tuple(fresh.randint(1, (12, 3, 2)[narrow_rank - 1]) for _ in range(narrow_rank))
    drawn = [
        ("row_sums", ((fresh.randint(2, 400), fresh.randint(2, 400)),), False),
        ("row_sums", ((fresh.randint(2, 400), fresh.randint(2, 8)),), True),
        ("total", (tuple(fresh.randint(2, 200 // rank) for _ in range(rank)),), False),
        ("total", (narrow_total,), True),
    ]
    for program, shapes, narrow in drawn:
        flops, moved, _, _ = _predicted(
            kata, program, shapes, "bfloat16", fresh.choice(sorted(PEAKS))
        )
        want = _lowered_cost(program, shapes)[0]
        with check:
            assert flops == pytest.approx(want, rel=TOLERANCE), (
                f"{program} {shapes} bf16 ({fresh.where()}): flops {flops:.6g}, the lowered "
                f"module's cost analysis says {want:.6g} (which instructions does jnp.sum of "
                "bf16 add?)"
            )
        if narrow:
            want_bytes = _compiled_bf16_bytes(program, shapes)
            with check:
                assert moved == pytest.approx(want_bytes, rel=TOLERANCE), (
                    f"{program} {shapes} bf16 ({fresh.where()}): bytes {moved:.6g}, the "
                    f"compiled module's cost analysis says {want_bytes:.6g} (each input read "
                    "once, the output written once: what does the reduction write?)"
                )


@pytest.mark.task("roofline")
def test_roofline_elementwise_of_any_rank(kata, fresh):
    """add and scale_add take arguments of any shape (the listed cases are all matrices): each
    is drawn in both dtypes at ranks 0, 1 and 3 (one drawn again), an axis of size 1 in half,
    and float32 scale_add once more on at most 6 elements.
    Flops as the lowered module counts them in that dtype (a bfloat16 2.0 * a stays bfloat16:
    nothing converts), bytes as the compiled float32 program moves them (fused, the 2.0 * a
    never written) and, for add, as the lowered bfloat16 module does."""
    ranks = [0, 1, 3, fresh.choice((1, 3))]
    fresh.shuffle(ranks)
    cases = list(zip(itertools.product(("add", "scale_add"), DTYPES), ranks, strict=True))
    # and float32 scale_add on at most 6 elements every run: a constant read as an argument
    # (4 bytes) weighs past the tolerance only there
    cases.append((("scale_add", "float32"), None))
    for (program, dtype), rank in cases:
        if rank is None:
            rank = fresh.randint(0, 2)
            shape = [fresh.randint(1, 2 if rank == 2 else 6) for _ in range(rank)]
        else:
            shape = [fresh.randint(2, 40) for _ in range(rank)]
            if rank and fresh.random() < 0.5:  # an axis of size 1, never a rank-3 shape's last
                shape[fresh.randrange(max(1, rank - 1))] = 1
        shape = tuple(shape)
        shapes = (shape, shape)
        flops, moved, _, _ = _predicted(kata, program, shapes, dtype, fresh.choice(sorted(PEAKS)))
        program_of = jax.jit(ROOFLINE_PROGRAMS[program])
        lowered = oracle.cost(program_of.lower(*_specs(shapes, jnp.dtype(dtype))))
        if dtype == "float32":
            want_bytes = oracle.cost(program_of.lower(*_specs(shapes, jnp.float32)).compile())
            want_bytes = want_bytes["bytes accessed"]
        else:
            want_bytes = lowered["bytes accessed"] if program == "add" else None
        for name, value, expected in (
            ("flops", flops, lowered["flops"]),
            ("bytes", moved, want_bytes),
        ):
            if expected is not None:
                assert value == pytest.approx(expected, rel=TOLERANCE), (
                    f"{program} {shapes} {dtype} ({fresh.where()}): {name} {value:.6g}, the "
                    f"compiler's cost analysis says {expected:.6g} (arguments of any shape)"
                )


# The dot programs' dimensions, as (program, names): one test draws each dimension thin in turn.
DOT_DIMENSIONS = [
    ("matmul", ("m", "k", "n")),
    ("batched_matmul", ("m", "k", "n")),
    ("matvec", ("m", "k")),
]


def _dot_shapes(program, sizes):
    """The argument shapes of a dot program from its dimensions (batch only where it has one)."""
    m, k, n, batch = sizes["m"], sizes["k"], sizes.get("n"), sizes["batch"]
    if program == "matmul":
        return ((m, k), (k, n))
    if program == "batched_matmul":
        return ((batch, m, k), (batch, k, n))
    return ((m, k), (k,))


@pytest.mark.task("roofline")
def test_roofline_weighs_every_term_of_thin_dots(kata, fresh):
    """Each dot program with one dimension drawn thin (1 to 8) and the others wide, in turn for
    every dimension, in both dtypes: there the smaller terms of the bytes (the vector, the
    output, the thin operand) weigh more than the tolerance, so an axis read for another shows,
    and with the contracting dimension thin any flop per output element besides the
    multiply-adds shows too (a bfloat16 dot is counted as written: what does it convert?).
    Checked against the lowered module's cost_analysis(): one dot, counted as written."""
    for program, names in DOT_DIMENSIONS:
        for thin, dtype in itertools.product(names, DTYPES):
            sizes = {name: fresh.randint(64, 1024) for name in names}
            sizes |= {thin: fresh.randint(1, 8), "batch": fresh.randint(1, 8)}
            shapes = _dot_shapes(program, sizes)
            flops, moved, intensity, _ = _predicted(
                kata, program, shapes, dtype, fresh.choice(sorted(PEAKS))
            )
            cost = oracle.cost(
                jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.dtype(dtype)))
            )
            want_flops, want_bytes = cost["flops"], cost["bytes accessed"]
            for name, value, expected in (
                ("flops", flops, want_flops),
                ("bytes", moved, want_bytes),
                ("intensity", intensity, want_flops / want_bytes),
            ):
                assert value == pytest.approx(expected, rel=TOLERANCE), (
                    f"{program} {shapes} {dtype} ({fresh.where()}): {name} {value:.6g}, the "
                    f"lowered module's cost analysis says {expected:.6g} (which axis of which "
                    "argument does each term count?)"
                )


@pytest.mark.task("roofline")
def test_roofline_classifies_by_the_ridge_point(kata):
    for chip, (peak_flops, peak_bandwidth) in PEAKS.items():
        ridge = peak_flops / peak_bandwidth
        for program, shapes in CLASSIFIED:
            bound = _predicted(kata, program, shapes, "bfloat16", chip)[3]
            flops, moved = (
                _lowered_cost(program, shapes)
                if (program, shapes) in BF16_CASES
                else (_compiled_cost(program, shapes)[0], _compiled_cost(program, shapes)[1] / 2)
            )
            want = "compute" if flops / moved > ridge else "memory"
            with check:
                assert bound == want, (
                    f"{program} {shapes} bf16 on {chip}: {bound!r}, expected {want!r} "
                    f"(intensity {flops / moved:.0f} flop/byte, ridge {ridge:.0f})"
                )


def _near_the_ridge(fresh, ridge: float, dtype: str, side: str) -> tuple:
    """Matmul shapes of a drawn aspect whose intensity is a drawn share of `ridge`: 0.55 to 0.9 of
    it (memory-bound) or 1.15 to 1.9 times it (compute-bound), so a ridge off by a factor of 1.9
    or more either way (half the peak for float32, say) classifies one of them wrongly in every
    draw. Only the draw aims; the expected bound is read from the compiler's cost."""
    target = ridge * (fresh.uniform(0.55, 0.9) if side == "memory" else fresh.uniform(1.15, 1.9))
    a, b, c = (fresh.uniform(0.5, 2.0) for _ in range(3))  # m, k, n relative to each other
    # intensity of (s a, s b) @ (s b, s c): 2 s^3 abc / (s^2 (ab + bc + ac) itemsize)
    scale = target * jnp.dtype(dtype).itemsize * (a * b + b * c + a * c) / (2 * a * b * c)
    m, k, n = (max(1, round(scale * f)) for f in (a, b, c))
    return ((m, k), (k, n))


@pytest.mark.task("roofline")
def test_roofline_classifies_either_dtype_near_the_ridge(kata, fresh):
    """For every chip and dtype, a matmul drawn a little below and one a little above the chip's
    ridge point: PEAKS gives one ridge per chip, float32 programs included, and the bound
    follows the intensity the compiler's cost analysis (the lowered module: one dot) gives."""
    for chip, dtype, side in itertools.product(sorted(PEAKS), DTYPES, ("memory", "compute")):
        peak_flops, peak_bandwidth = PEAKS[chip]
        ridge = peak_flops / peak_bandwidth
        shapes = _near_the_ridge(fresh, ridge, dtype, side)
        cost = oracle.cost(
            jax.jit(ROOFLINE_PROGRAMS["matmul"]).lower(*_specs(shapes, jnp.dtype(dtype)))
        )
        intensity = cost["flops"] / cost["bytes accessed"]
        want = "compute" if intensity > ridge else "memory"
        bound = _predicted(kata, "matmul", shapes, dtype, chip)[3]
        with check:
            assert bound == want, (
                f"matmul {shapes} {dtype} on {chip} ({fresh.where()}): {bound!r}, expected "
                f"{want!r} (intensity {intensity:.0f} flop/byte, ridge {ridge:.0f} from PEAKS)"
            )


@pytest.mark.task("roofline")
def test_roofline_predicts_without_compiling(kata):
    with compiler_refused("roofline"):
        for program, shapes in F32_CASES:
            _predicted(kata, program, shapes, "float32", "v5e")

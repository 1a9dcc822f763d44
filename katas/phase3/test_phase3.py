"""Phase 3 tests, tasks 1 and 7-9 (three_texts, flops, mlp_flops, predict_entry_root): facts about
StableHLO, unoptimized and optimized HLO, and cost analysis.

The programs (in programs.py) belong to the tests; their compiled texts are cached once per
session (bank.py). The kata's own compiles (three_texts, flops) are not. Expected values come from
`jax.stages` (its texts, `cost_analysis`), from XLA's own C++ parser (jaxlib) reading a program
compiled here, from xla_inspect's queries, or from the program itself
(kata_harness.oracles.hlo_stages). The tasks that read HLO text are in test_phase3_entry.py and
test_phase3_fusions.py, dump_files in test_phase3_dumps.py.
"""

from collections import Counter
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import hlo_stages as oracle
from kata_harness.predict import compiler_refused
from katas.phase3 import bank
from katas.phase3.programs import (
    ROOT_CASES,
    ROOT_DTYPES,
    ROOT_PROGRAMS,
    THREE_TEXT_PROGRAMS,
    attention,
    attention_args,
    matmul,
    mlp,
    mlp_args,
    ones,
    shared_sum,
)
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

# --- task 1: three_texts ---------------------------------------------------------------------


def _three(kata, f, *args) -> dict:
    texts = kata.three_texts(f, *args)
    assert isinstance(texts, dict), f"expected a dict, got {type(texts).__name__}"
    assert sorted(texts) == ["hlo", "optimized", "stablehlo"], f"keys {sorted(texts)}"
    return texts


@pytest.mark.task("three_texts")
def test_stablehlo_is_the_lowered_program(kata):
    census = bank.stablehlo_census(_three(kata, mlp, *mlp_args())["stablehlo"], "stablehlo")
    for op, count in (("stablehlo.dot_general", 2), ("stablehlo.maximum", 1), ("func.call", 1)):
        with check:
            assert census[op] == count, f"{op} x{census[op]}, expected {count}"


@pytest.mark.task("three_texts")
def test_unoptimized_hlo_is_not_fused(kata):
    module = bank.hlo_module(_three(kata, mlp, *mlp_args())["hlo"], "hlo")
    entry = opcode_counts(module, entry_only=True)
    with check:
        assert opcode_counts(module)["fusion"] == 0, "unoptimized HLO has no fusion yet"
    with check:
        assert entry["dot"] == 2, f"both matmuls are plain dots in ENTRY, got {entry['dot']}"
    with check:
        assert entry["call"] == 1, f"relu is still a call, got {entry['call']}"


@pytest.mark.task("three_texts")
def test_optimized_hlo_is_fused(kata):
    bank.cpu_only("XLA:CPU wraps f32 matmuls in kCustom (YNNPACK) fusions")
    optimized = _three(kata, mlp, *mlp_args())["optimized"]
    bank.check_compiled_print(optimized, bank.text("mlp"), "mlp(params, x f32[8,16])")
    module = bank.hlo_module(optimized, "optimized")
    kinds = oracle.fusion_kinds(module)
    with check:
        assert kinds == Counter(kLoop=2, kCustom=2), f"fusion kinds {dict(kinds)}"
    with check:
        assert opcode_counts(module)["call"] == 0, "the relu call is inlined before fusion"
    with check:
        assert opcode_counts(module)["dot"] == 2, "two matmuls, counted across all computations"
    with check:
        assert opcode_counts(module, entry_only=True)["dot"] == 0, "the dots moved into fusions"


@pytest.mark.task("three_texts")
def test_three_texts_are_the_stages_of_this_program(kata):
    for program, (f, args) in THREE_TEXT_PROGRAMS.items():
        bank.check_stages(
            _three(kata, f, *args), bank.stages(program), program, bank.printed(program)
        )


@pytest.mark.task("three_texts")
def test_optimized_mlp_snapshot(kata, hlo_snapshot):
    hlo_snapshot(normalize_hlo(_three(kata, mlp, *mlp_args())["optimized"]))


@pytest.mark.task("three_texts")
def test_optimized_attention_snapshot(kata, hlo_snapshot):
    optimized = _three(kata, attention, *attention_args())["optimized"]
    bank.check_compiled_print(optimized, bank.text("attention"), "attention(q, k, v)")
    hlo_snapshot(normalize_hlo(optimized))


# --- task 7: flops ---------------------------------------------------------------------------


def _flops(kata, f, *args) -> float:
    got = kata.flops(f, *args)
    assert isinstance(got, float | int), f"expected a number, got {type(got).__name__}"
    return got


@pytest.mark.task("flops")
def test_matmul_flops_are_2mnk(kata):
    # one function, several shapes (an answer that remembers the first compile fails), int too
    for (m, n, k), dtype in (
        ((2, 3, 4), np.float32),
        ((5, 1, 3), np.float32),
        ((3, 7, 2), np.int32),
    ):
        got = _flops(kata, matmul, ones((m, k), dtype), ones((k, n), dtype))
        with check:
            assert got == 2 * m * n * k, (
                f"({m}x{k})@({k}x{n}) {np.dtype(dtype).name}: {got} flops, expected 2*M*N*K"
            )


@pytest.mark.task("flops")
def test_mlp_flops(kata):
    params, x = mlp_args()
    (m, k), h, n = x.shape, params["w1"].shape[1], params["w2"].shape[1]
    matmuls = 2 * m * k * h + 2 * m * h * n
    elementwise = m * h * 2 + m * n  # bias add and relu's max on the hidden layer, bias add
    got = _flops(kata, mlp, params, x)
    assert got == matmuls + elementwise, f"{got} flops, expected {matmuls} + {elementwise}"


@pytest.mark.task("flops")
def test_transcendentals_are_not_flops(kata):
    """exp and tanh are counted apart, as transcendentals: exp(x) costs no flops, tanh(x)*2
    costs one flop per element (the multiply)."""
    x = ones((3, 5))
    got = _flops(kata, jnp.exp, x)
    with check:
        assert got == 0.0, f"exp: {got} flops, expected 0 (15 transcendentals are not flops)"
    got = _flops(kata, lambda v: jnp.tanh(v) * 2.0, x)
    with check:
        assert got == x.size, f"tanh(x)*2: {got} flops, expected {x.size} (the multiply)"


@pytest.mark.task("flops")
def test_flops_are_those_of_the_compiled_module(kata):
    unoptimized, optimized = (
        opcode_counts(parse_hlo(text)) for text in bank.hlo_texts("shared_sum")
    )
    size = 8
    before = size * (unoptimized["add"] + unoptimized["multiply"])
    after = size * (optimized["add"] + optimized["multiply"])
    assert after < before, f"test program changed: {after} flops after CSE, {before} before"
    got = _flops(kata, shared_sum, *(ones(size) for _ in range(4)))
    assert got == after, f"{got} flops, expected {after} (the compiled module; {before} before CSE)"
    assert got == bank.compiled("shared_sum")[1].cost_analysis()["flops"], "XLA's own count differs"


@pytest.mark.task("flops")
def test_transpose_costs_no_flops(kata):
    got = _flops(kata, lambda a: a.T, ones((2, 3)))
    assert got == 0.0, f"{got}: moving data is bytes, not flops"


# --- task 8: mlp_flops -----------------------------------------------------------------------

# (batch, in, hidden, out): square, tall, wide, odd, a wide hidden layer, the smallest allowed, and
# one past 2**31 flops (an int32 count wraps there) at which cost analysis, which reports a
# float32, is still exact (a multiple of 2**8; at (1000, 1000, 1000, 3) it is not)
MLP_SHAPES = (
    (8, 16, 32, 4),
    (2, 2, 2, 2),
    (3, 5, 7, 2),
    (64, 3, 2, 9),
    (5, 2, 40, 3),
    (1024, 1024, 1024, 2),
)


@pytest.mark.task("mlp_flops")
def test_mlp_flops_predicted(kata):
    bank.cpu_only("the flops of XLA:CPU's cost model")
    for shape in MLP_SHAPES:
        with compiler_refused("mlp_flops"):
            predicted = kata.mlp_flops(*shape)
        measured = oracle.mlp_flops(mlp, shape)
        with check:
            assert predicted == measured, (
                f"(batch, in, hidden, out) = {shape}: you predicted {predicted} flops, "
                f"cost_analysis says {measured:.0f}"
            )


# every size >= 2 (the contract); the sizes a fresh case draws from, up to 100 wide (cost analysis
# reports a float: at 100 the flops stay below 2**24, where every integer is exact)
MLP_SIZES = (2, 3, 4, 5, 7, 8, 11, 12, 16, 31, 64, 100)


@pytest.mark.task("mlp_flops")
def test_mlp_flops_predicted_on_fresh_shapes(kata, fresh):
    """Shapes drawn over the contract's domain (every size >= 2), the answer read from XLA's cost
    analysis of the MLP compiled at that shape: a rule, not the listed shapes, passes."""
    bank.cpu_only("the flops of XLA:CPU's cost model")
    for _ in range(3):
        shape = tuple(fresh.choice(MLP_SIZES) for _ in range(4))
        with compiler_refused("mlp_flops"):
            predicted = kata.mlp_flops(*shape)
        measured = oracle.mlp_flops(mlp, shape)
        assert predicted == measured, (
            f"(batch, in, hidden, out) = {shape}: you predicted {predicted} flops, "
            f"cost_analysis says {measured:.0f} ({fresh.where()})"
        )


# sizes past 100 for counts past 2**24: the interpolation reads XLA's exact counts at sizes 2 and 3
MLP_WIDE = (97, 131, 257, 1000, 1001, 2049, 4097)


@pytest.mark.task("mlp_flops")
def test_mlp_flops_exact_past_float32(kata, fresh):
    """The exact count where cost analysis's float32 cannot hold it: shapes drawn until the count
    is no float32, the expected count interpolated from XLA's exact counts at small shapes
    (oracle.mlp_flops_exact, checked there against XLA's rounded report at the shape)."""
    bank.cpu_only("the flops of XLA:CPU's cost model")
    shapes = [(3, 4097, 4099, 5), _past_int64(fresh), _past_uint64(fresh)]
    while len(shapes) < 5:
        shape = tuple(fresh.choice(MLP_WIDE if k else MLP_SIZES) for k in range(4))
        exact = oracle.mlp_flops_interpolated(mlp, shape)  # checked below, where it is used
        if int(np.float32(exact)) != exact:
            shapes.append(shape)
    for shape in shapes:
        with compiler_refused("mlp_flops"):
            predicted = kata.mlp_flops(*shape)
        exact = oracle.mlp_flops_exact(mlp, shape)
        with check:
            assert isinstance(predicted, int) and predicted == exact, (
                f"(batch, in, hidden, out) = {shape}: you predicted {predicted!r} flops, not the "
                f"exact count (past 2**24 no float32 holds it, past 2**63 no int64, past 2**64 "
                f"no uint64; {fresh.where()})"
            )


# batch and hidden for a count past 2**63 (the largest an int64 holds); odd or prime, so the count
# is no power of two
MLP_HUGE = (2**20 + 1, 1_000_003, 3**13, 2**21 - 1, 1_500_007)


def _past_int64(fresh) -> tuple[int, int, int, int]:
    """A shape whose count is past 2**63 while each dot's stays below it: XLA's cost model counts
    each op in an int64 (at (2**21, 2**21, 2**21, 2) its dot's 2**64 flops wrap to 0), so past
    that its report is no count at all; below it XLA's float sum of the ops is the reference."""
    batch, hidden = fresh.choice(MLP_HUGE), fresh.choice(MLP_HUGE)
    limit = 2**62 // (batch * hidden)  # 2 * batch * hidden * size < 2**63 for size < limit
    n_in, out = (fresh.randrange(limit // 2 + 1, limit) for _ in range(2))
    return batch, n_in, hidden, out


def _past_uint64(fresh) -> tuple[int, int, int, int]:
    """A shape whose count is past 2**64 (more than a uint64 holds) while each dot's stays below
    2**63: both dots just below 2**63, the element-wise ops of a narrow hidden layer the rest."""
    batch, hidden = fresh.choice(MLP_HUGE), fresh.choice(MLP_WIDE)
    top = (2**62 - 1) // (batch * hidden)  # the largest size with 2 * batch * hidden * size < 2**63
    shape = (batch, top - fresh.randrange(3), hidden, top - fresh.randrange(3))
    assert oracle.mlp_flops_interpolated(mlp, shape) > 2**64, f"test draw changed: {shape}"
    return shape


# --- task 9: predict_entry_root --------------------------------------------------------------

ROOT_DIMS = (2, 3, 4, 5, 6, 7, 8, 12, 16)  # every dimension >= 2 (the contract)


# The dtype classes of the contract: each program is drawn at each of them on every run (bfloat16
# is its own: ml_dtypes' bfloat16 is no numpy floating type, and a cast to it is then a no-op).
ROOT_CLASSES = tuple((dtype,) for dtype in ROOT_DTYPES)
RESHAPE = "x.reshape(2, -1, x.shape[-1])"
TRANSPOSE = "x.T"  # reverses x's axes: at a mirrored shape (square, [a,b,a]) it keeps x's shape


class Situation(NamedTuple):
    """Where one drawn case of a program sits: x's rank, its dtype class, for the reshape x's
    first dimension (None: drawn), and whether x's shape reads the same reversed (a square
    matrix, a 3-D [a, b, a]: x.T then has x's shape, yet the values move)."""

    rank: int
    dtypes: tuple[str, ...]
    first: int | None = None
    mirrored: bool = False


def _root_situations(fresh, program: str) -> list[Situation]:
    """Every structural situation of the program: each dtype class and each rank the contract
    allows, paired at random; the reshape at a matrix of two rows (a fusion), at a taller
    matrix, at rank 3 and at rank 3 with a first dimension of 2 (a reshape to itself: copies);
    the transpose also at a square matrix and at a mirrored 3-D shape (same shape, moved
    values: a fusion, not the copy of a vector's x.T)."""
    _, ranks = ROOT_PROGRAMS[program]
    classes = list(ROOT_CLASSES)
    fresh.shuffle(classes)
    if program == RESHAPE:
        shapes = [(2, 2), (2, 2 * fresh.choice(ROOT_DIMS[1:5])), (3, None), (3, 2)]
        return [
            Situation(rank, classes[k % len(classes)], first)
            for k, (rank, first) in enumerate(shapes)
        ]
    allowed = list(ranks[0])
    fresh.shuffle(allowed)
    count = max(len(allowed), len(classes))
    situations = [
        Situation(allowed[k % len(allowed)], classes[k % len(classes)]) for k in range(count)
    ]
    if program == TRANSPOSE:
        situations += [
            Situation(rank, fresh.choice(ROOT_CLASSES), mirrored=True)
            for rank in allowed
            if rank >= 2
        ]
    return situations


def _root_case(fresh, program: str, situation: Situation) -> tuple:
    """One argument list of ``program``'s domain in this situation. A 3-D x has three different
    dimensions (equal ones would hide which axes a transpose moves) unless the situation is
    mirrored ([a, b, a], b now and then a too); a 2-D one may be square, and is when mirrored.
    A second argument has another dtype than x (the listed cases pair equal ones)."""
    _, ranks = ROOT_PROGRAMS[program]
    specs = []
    for allowed in ranks:
        size = situation.rank if not specs else fresh.choice(allowed)
        if situation.mirrored and not specs:
            outer = fresh.choice(ROOT_DIMS)
            shape = [outer, fresh.choice(ROOT_DIMS), outer] if size == 3 else [outer, outer]
        elif size == 3 and not specs:
            shape = fresh.sample(ROOT_DIMS, 3)
        else:
            shape = [fresh.choice(ROOT_DIMS) for _ in range(size)]
        dtypes = situation.dtypes if not specs else [d for d in ROOT_DTYPES if d != specs[0][1]]
        dtype = fresh.choice(dtypes)
        if program == RESHAPE and not specs:
            shape[0] = (
                situation.first if situation.first is not None else 2 * fresh.choice(ROOT_DIMS[:5])
            )
        specs.append((tuple(shape), dtype))
    return tuple(specs)


def _check_root(kata, program: str, specs: tuple, where: str) -> None:
    arguments = tuple(jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)) for shape, dtype in specs)
    root = kata.predict_entry_root(program, arguments)
    expected = oracle.compiled_root(ROOT_PROGRAMS[program][0], specs)
    case = ", ".join(f"{dtype}{list(shape)}" for shape, dtype in specs)
    assert root == expected, (
        f"{program} with arguments {case}: you predicted {root}; the optimized module's ROOT "
        f"differs (in its {'shape or layout' if root[:1] == expected[:1] else 'opcode'}){where}"
    )


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_of_the_listed_cases(kata):
    bank.cpu_only("which ops XLA:CPU fuses and where it copies a result")
    for program, specs in ROOT_CASES:
        _check_root(kata, program, specs, "")


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_on_fresh_cases(kata, fresh):
    """Every program at every dtype (float32, bfloat16, float16, int32) and every rank
    of its domain on every run, the reshape at two rows and more, x.T also at a square and a
    mirrored 3-D x (its transpose has its shape), dimensions drawn; the expected
    ROOT is XLA's reading of the program compiled here."""
    bank.cpu_only("which ops XLA:CPU fuses and where it copies a result")
    for program in ROOT_PROGRAMS:
        for situation in _root_situations(fresh, program):
            case = _root_case(fresh, program, situation)
            _check_root(kata, program, case, f" ({fresh.where()})")


@pytest.mark.task("predict_entry_root")
def test_predict_entry_root_does_not_compile(kata):
    with compiler_refused("predict_entry_root"):
        kata.predict_entry_root("x * 2 + 1", (jax.ShapeDtypeStruct((8, 4), jnp.float32),))

"""Phase 13 tests: performance decisions, each held to a budget read from the compiler.

Every budget is derived at test time from the same compiler figure of the original program in
programs.py (temp bytes, bytes accessed, instruction count, collective bytes, peak memory), so it
follows the JAX in use and the machine's core count; every failure prints the figure and the
budget. Each changed program must also compute what the original computes, on several seeds and
shapes: a program that meets a budget by changing the math fails there.
"""

import contextlib
import functools
import json
import math
import re
import subprocess
import sys

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.predict import compiler_refused
from katas.phase13.programs import (
    CACHE_CHILD,
    CACHE_CHILD_TIMEOUT,
    COLLECTIVE_SHARE,
    DONATION_CASES,
    INSTRUCTION_SHARE,
    LEARNING_RATE,
    MAX_TRIPS,
    MIXED_CASES,
    PEAK_SHARE,
    PEAKS,
    REMAT_CASES,
    ROLLOUT_CASES,
    ROOFLINE_PROGRAMS,
    SERVE_CASES,
    SERVE_WIDTH,
    SHARDED_CASES,
    STEPS,
    deep_args,
    deep_loss,
    f32_step,
    mlp_args,
    momentum_args,
    momentum_step,
    replicated_hidden_mlp,
    request_stream,
    rollout_args,
    serve_model,
    serve_weights,
    sharded_args,
    unrolled_rollout,
)
from xla_inspect import collectives, parse_hlo
from xla_inspect.model import HloModule, Shape
from xla_inspect.query import reachable

BACKEND_COMPILE = "/jax/core/compile/backend_compile_duration"


def _mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def _kb(n: float) -> str:
    return f"{n / 1e3:.1f} KB"


def _cost(stage) -> dict:
    """cost_analysis() of a Lowered or Compiled stage, as a dict."""
    return dict(stage.cost_analysis() or {})


# bytes per element of the HLO element types a collective here can carry
ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f32": 4}
ELEMENT_BYTES |= {"s64": 8, "u64": 8, "f64": 8}


def _memory(compiled):
    stats = compiled.memory_analysis()
    assert stats is not None, "this backend gives no memory_analysis()"
    return stats


def _text(stage, **kwargs) -> str:
    text = stage.as_text(**kwargs)
    assert text is not None, "this backend does not print its module"
    return text


def _shape_bytes(text: str) -> int:
    shape = Shape(text)
    if shape.is_tuple:
        return sum(_shape_bytes(e.text) for e in shape.elements)
    dims = [d for d in shape.dims if d is not None]
    dtype = shape.dtype
    assert dtype is not None, f"no element type in {text}"
    assert dtype in ELEMENT_BYTES, f"element type {dtype} of {text} has no size here"
    return math.prod(dims) * ELEMENT_BYTES[dtype]


# instructions whose work the module's figures cannot see: a host callback (a custom-call into the
# Python runtime), any other custom-call, or data sent to / read from the host
HOST_WORK = re.compile(r"\s(custom-call|send|recv|infeed|outfeed)(-start|-done)?\(")
TARGET = re.compile(r'custom_call_target="([^"]*)"')


def _within_budgets(*results: bool | str) -> None:
    """Fail in one line naming every budget missed, each with its figure and its budget, as
    every other phase's failure is one line (the test's source is not the lesson). Each result
    is True for a budget met, or the line that says how it was missed."""
    __tracebackhide__ = True
    missed = [result for result in results if result is not True]
    if missed:
        pytest.fail("; ".join(str(line) for line in missed), pytrace=False)


def _check_no_hidden_work(text: str, what: str) -> None:
    """Fail on the first instruction of the HLO text that runs work outside the module (read
    from the text: a callback's attributes need not parse)."""
    hidden = next((line for line in text.splitlines() if HOST_WORK.search(line)), None)
    if hidden is None:
        return
    found, target = HOST_WORK.search(hidden), TARGET.search(hidden)
    assert found is None, (
        f"{what}: {found.group(1)} {hidden.split('=', 1)[0].strip()}"
        f"{f' to {target.group(1)}' if target else ''}: the figures count only the module's "
        "own instructions, so the work must stay in them (no host callbacks, custom-calls or "
        "host transfers)"
    )


@contextlib.contextmanager
def _measured_compiles():
    """The test's own count of backend compiles inside the block."""
    events = []

    def listener(event, duration_secs, **kwargs):
        if event == BACKEND_COMPILE:
            events.append(duration_secs)

    jax.monitoring.register_event_duration_secs_listener(listener)
    try:
        yield events
    finally:
        jax.monitoring.unregister_event_duration_listener(listener)


def _close(got, want, what: str, rtol: float, atol: float) -> None:
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves), (
        f"{what}: {len(got_leaves)} arrays, the original gives {len(want_leaves)}"
    )
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{what}: array {index} is {g.dtype}{list(g.shape)}, the original's "
            f"{w.dtype}{list(w.shape)}"
        )
        error = float(np.max(np.abs(g.astype(np.float64) - w)))
        assert np.allclose(g, w, rtol=rtol, atol=atol), (
            f"{what}: array {index} differs from the original's by up to {error:.3g}"
        )


# ---- remat_loss ---------------------------------------------------------------------------------

TEMP_SHARE = 0.5  # temp bytes of the grad at most this share of the original's
FLOPS_ABOVE = 0.25  # flops at most this much above the original's


def _probe_inner(x, w):
    return jnp.tanh(x @ w) @ w.T


@functools.cache
def _xla_keeps_recomputation() -> bool:
    """Whether this XLA keeps what jax.checkpoint asks it to recompute: the grad of a loss with a
    checkpointed piece costs more flops than the plain grad. Older CPU pipelines (jaxlib 0.10)
    merge the recomputation back into the forward pass once the optimization barriers are gone,
    and then no program can show remat in temp bytes."""
    spec = jax.ShapeDtypeStruct((16, 16), jnp.float32)

    def plain(w, x):
        return jnp.sum(_probe_inner(x, w) ** 2)

    def checkpointed(w, x):
        return jnp.sum(jax.checkpoint(_probe_inner)(x, w) ** 2)

    flops = [
        _cost(jax.jit(jax.grad(f)).lower(spec, spec).compile())["flops"]
        for f in (plain, checkpointed)
    ]
    return flops[1] > flops[0]


@functools.cache
def _remat_original(case) -> tuple[int, float]:
    compiled = jax.jit(jax.grad(deep_loss)).lower(*deep_args(*case)).compile()
    return _memory(compiled).temp_size_in_bytes, _cost(compiled)["flops"]


@pytest.mark.task("remat_loss")
@pytest.mark.parametrize(
    "case",
    [*REMAT_CASES, (16, 64, 128, 3)],  # and one deeper than the listed cases
    ids=lambda c: "depth{}-width{}-batch{}".format(*c),
)
def test_remat_meets_the_memory_budget(kata, case):
    compiled = jax.jit(jax.grad(kata.remat_loss)).lower(*deep_args(*case)).compile()
    _check_no_hidden_work(_text(compiled), "the compiled grad")
    if not _xla_keeps_recomputation():
        pytest.skip(
            f"jax {jax.__version__}: this XLA merges jax.checkpoint's recomputation back into the "
            "forward pass (a checkpointed grad costs no extra flops), so temp bytes cannot show "
            "remat here"
        )
    temp, flops = _memory(compiled).temp_size_in_bytes, _cost(compiled)["flops"]
    original_temp, original_flops = _remat_original(case)
    temp_budget, flops_budget = TEMP_SHARE * original_temp, (1 + FLOPS_ABOVE) * original_flops
    _within_budgets(
        temp <= temp_budget
        or f"temp bytes {_mb(temp)}, budget {_mb(temp_budget)} (half the original's "
        f"{_mb(original_temp)}): what does the backward pass keep from each block?",
        flops <= flops_budget
        or f"flops {flops / 1e6:.1f} M, budget {flops_budget / 1e6:.1f} M (the original's "
        f"{original_flops / 1e6:.1f} M + {FLOPS_ABOVE:.0%}): how much is recomputed?",
    )


@pytest.mark.task("remat_loss")
@pytest.mark.parametrize("case", [(4, 64, 64, 0), (3, 32, 20, 5), (9, 48, 7, 6)])
def test_remat_keeps_loss_and_grads(kata, case):
    args = deep_args(*case)
    got = jax.jit(jax.value_and_grad(kata.remat_loss))(*args)
    want = jax.jit(jax.value_and_grad(deep_loss))(*args)
    _close(got, want, f"(loss, grads) for depth {case[0]}", rtol=1e-4, atol=1e-6)


# ---- mixed_step ---------------------------------------------------------------------------------

BYTES_SHARE = 0.75  # bytes accessed at most this share of the original f32 step's


@functools.cache
def _mixed_original(case) -> float:
    return _cost(jax.jit(f32_step).lower(*mlp_args(*case)))["bytes accessed"]


def _dots(module: HloModule):
    """(result shape, operand shapes) of every dot in every computation."""
    return [
        (i.shape, [c[o].shape for o in i.operands]) for c in module for i in c if i.opcode == "dot"
    ]


@pytest.mark.task("mixed_step")
@pytest.mark.parametrize("case", MIXED_CASES, ids=lambda c: "batch{}-width{}-hidden{}".format(*c))
def test_mixed_step_meets_the_bytes_budget(kata, case):
    lowered = jax.jit(kata.mixed_step).lower(*mlp_args(*case))
    moved, original = _cost(lowered)["bytes accessed"], _mixed_original(case)
    budget = BYTES_SHARE * original
    text = _text(lowered, dialect="hlo")
    _check_no_hidden_work(text, "the step")
    dots = _dots(parse_hlo(text))
    with check:
        assert dots, "no dot in the step: where did the matmuls go?"
    low = [(r, ops) for r, ops in dots if any(Shape(o).dtype != "f32" for o in ops)]
    for result, operands in low:
        with check:
            assert all(Shape(o).dtype == "bf16" for o in operands), (
                f"a dot of {operands} -> {result}: the operands of a dot are bf16 (or f32), "
                "nothing else (f16 is another format: 5 exponent bits, not bf16's 8)"
            )
    fed = sum(all(Shape(o).dtype == "bf16" for o in ops) for _, ops in dots)
    with check:
        assert fed >= 2, (
            f"{fed} dot(s) with both operands bf16, expected both matmuls of the forward pass: "
            f"{[ops for _, ops in dots]}"
        )
    for result, operands in dots:
        with check:
            assert Shape(result).dtype == "f32", (
                f"a dot of {operands} accumulates into {result}: every dot must accumulate "
                "into f32 (which argument of jnp.dot sets the result type?)"
            )
    _within_budgets(
        moved <= budget
        or f"bytes accessed {_mb(moved)} (unoptimized module), budget {_mb(budget)} "
        f"({BYTES_SHARE:.0%} of the f32 step's {_mb(original)}): which arrays are still f32?"
    )


@pytest.mark.task("mixed_step")
@pytest.mark.parametrize("case", [(256, 128, 512, 0), (200, 64, 256, 3), (64, 40, 96, 7)])
def test_mixed_step_keeps_f32_params_and_the_update(kata, case):
    params, x, y = mlp_args(*case)
    (new, loss) = jax.jit(kata.mixed_step)(params, x, y)
    (want, want_loss) = jax.jit(f32_step)(params, x, y)
    assert jax.tree.structure(new) == jax.tree.structure(want), (
        f"new params are a {jax.tree.structure(new)}, expected {jax.tree.structure(want)}"
    )
    with check:
        assert np.asarray(loss).dtype == np.float32 and np.asarray(loss).shape == (), (
            f"the loss is {np.asarray(loss).dtype}{list(np.asarray(loss).shape)}, expected f32[]"
        )
    with check:
        assert np.isclose(float(loss), float(want_loss), rtol=2e-3), (
            f"loss {float(loss)}, the f32 step's {float(want_loss)} (rtol 2e-3)"
        )
    leaves = zip(jax.tree.leaves(params), jax.tree.leaves(new), jax.tree.leaves(want), strict=True)
    for index, (old, got, expected) in enumerate(leaves):
        got = np.asarray(got)
        with check:
            assert got.dtype == np.float32, f"param {index} came back {got.dtype}, expected f32"
        update, expected_update = got.astype(np.float64) - old, expected - old
        error = np.linalg.norm(update - expected_update) / np.linalg.norm(expected_update)
        with check:
            assert error <= 0.05, (
                f"param {index}: the update (new - old, lr {LEARNING_RATE}) is off by "
                f"{error:.1%} of the f32 step's update (at most 5%): can a bf16 param hold a "
                "change this small?"
            )


# ---- rollout ------------------------------------------------------------------------------------


@functools.cache
def _rollout_original(case) -> int:
    text = _text(jax.jit(unrolled_rollout).lower(*rollout_args(*case)).compile())
    return sum(len(c) for c in parse_hlo(text))


def _loop_steps(module: HloModule) -> list[int]:
    """Dots reached from each while's body: the steps one trip of that loop does."""
    found = []
    for c in module:
        for i in c:
            if i.opcode == "while":
                body = i.attribute("body")
                assert body is not None, f"a while without a body: {i.name}"
                computations = reachable(module, (body.lstrip("%"),))
                found.append(sum(j.opcode == "dot" for k in computations for j in k))
    return found


KNOWN_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def _loop_trips(module: HloModule) -> list[tuple[str, int | None]]:
    """(name, trips) of each while whose trips the compiler did not count to at most MAX_TRIPS:
    its known_trip_count, or None when the optimized HLO has none."""
    found = []
    for c in module:
        for i in c:
            if i.opcode == "while":
                known = KNOWN_TRIPS.search(i.attributes_text)
                trips = int(known.group(1)) if known else None
                if trips is None or trips > MAX_TRIPS:
                    found.append((i.name, trips))
    return found


@pytest.mark.task("rollout")
@pytest.mark.parametrize("case", ROLLOUT_CASES, ids=lambda c: "batch{}-width{}".format(*c))
def test_rollout_meets_the_size_and_trip_budgets(kata, case):
    text = _text(jax.jit(kata.rollout).lower(*rollout_args(*case)).compile())
    _check_no_hidden_work(text, "the compiled rollout")
    module = parse_hlo(text)
    count, original = sum(len(c) for c in module), _rollout_original(case)
    budget = INSTRUCTION_SHARE * original
    uncounted = _loop_trips(module)
    name, trips = uncounted[0] if uncounted else ("", None)
    steps = _loop_steps(module)
    least = STEPS // MAX_TRIPS
    _within_budgets(
        count <= budget
        or f"{count} instructions in the optimized HLO, budget {budget:.0f} "
        f"({INSTRUCTION_SHARE:.0%} of the unrolled original's {original}): how many copies "
        "of the step does the module hold?",
        not uncounted
        or f"while {name} runs {trips if trips is not None else 'an unknown number of'} "
        f"trips (its known_trip_count in the optimized HLO), budget {MAX_TRIPS}: the "
        "compiler must be able to count the trips (a bound read from the data cannot be), "
        "and each trip must do its share of the steps",
        bool(steps and min(steps) >= least)
        or f"steps per loop trip (dots in each while body): {steps}, budget >= {least} "
        f"(at most {MAX_TRIPS} trips for {STEPS} steps): what does one trip of your loop do?",
    )


@pytest.mark.task("rollout")
@pytest.mark.parametrize("case", [*ROLLOUT_CASES, (1, 8, 3), (7, 33, 4)])
def test_rollout_computes_the_original(kata, case):
    args = rollout_args(*case)
    got = jax.jit(kata.rollout)(*args)
    want = jax.jit(unrolled_rollout)(*args)
    _close(got, want, f"rollout of batch {case[0]}, width {case[1]}", rtol=1e-5, atol=1e-6)


# ---- sharded_mlp --------------------------------------------------------------------------------


def _collective_bytes(compiled) -> tuple[int, list[str]]:
    found = collectives(parse_hlo(_text(compiled)))
    return sum(_shape_bytes(c.shape) for c in found), [f"{c.opcode} {c.shape}" for c in found]


@functools.cache
def _sharded_original(case) -> int:
    return _collective_bytes(jax.jit(replicated_hidden_mlp).lower(*sharded_args(*case)).compile())[
        0
    ]


@pytest.mark.task("sharded_mlp")
@pytest.mark.parametrize("case", SHARDED_CASES, ids=lambda c: "batch{}-width{}-hidden{}".format(*c))
def test_sharded_mlp_meets_the_collective_budget(kata, case):
    compiled = jax.jit(kata.sharded_mlp).lower(*sharded_args(*case)).compile()
    moved, found = _collective_bytes(compiled)
    original = _sharded_original(case)
    budget = COLLECTIVE_SHARE * original
    _within_budgets(
        moved <= budget
        or f"collective bytes {_kb(moved)} ({found}), budget {_kb(budget)} "
        f"({COLLECTIVE_SHARE:.0%} of the original's {_kb(original)}): which collective moves "
        "the hidden layer, and does the second matmul need it whole?"
    )


@pytest.mark.task("sharded_mlp")
@pytest.mark.parametrize("case", [*SHARDED_CASES, (3, 16, 64, 5)])
def test_sharded_mlp_computes_the_original(kata, case):
    args = sharded_args(*case)
    got = np.asarray(jax.jit(kata.sharded_mlp)(*args))
    x, w1, w2 = (np.asarray(a, np.float64) for a in args)
    want = np.maximum(x @ w1, 0.0) @ w2
    assert got.shape == want.shape, f"result {list(got.shape)}, expected {list(want.shape)}"
    error = float(np.max(np.abs(got - want)))
    assert np.allclose(got, want, rtol=1e-4, atol=1e-4), (
        f"relu(x @ w1) @ w2 differs from NumPy's by up to {error:.3g}"
    )


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


def _specs(shapes, dtype):
    return [jax.ShapeDtypeStruct(s, dtype) for s in shapes]


@functools.cache
def _compiled_cost(program, shapes) -> tuple[float, float]:
    cost = _cost(jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.float32)).compile())
    return cost["flops"], cost["bytes accessed"]


@functools.cache
def _lowered_cost(program, shapes) -> tuple[float, float]:
    cost = _cost(jax.jit(ROOFLINE_PROGRAMS[program]).lower(*_specs(shapes, jnp.bfloat16)))
    return cost["flops"], cost["bytes accessed"]


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
def test_roofline_classifies_by_the_ridge_point(kata):
    for chip, (peak_flops, peak_bandwidth) in PEAKS.items():
        ridge = peak_flops / peak_bandwidth
        for program, shapes in CLASSIFIED:
            flops, moved = (
                _lowered_cost(program, shapes)
                if (program, shapes) in BF16_CASES
                else (_compiled_cost(program, shapes)[0], _compiled_cost(program, shapes)[1] / 2)
            )
            want = "compute" if flops / moved > ridge else "memory"
            bound = _predicted(kata, program, shapes, "bfloat16", chip)[3]
            with check:
                assert bound == want, (
                    f"{program} {shapes} bf16 on {chip}: {bound!r}, expected {want!r} "
                    f"(intensity {flops / moved:.0f} flop/byte, ridge {ridge:.0f})"
                )


@pytest.mark.task("roofline")
def test_roofline_predicts_without_compiling(kata):
    with compiler_refused("roofline"):
        for program, shapes in F32_CASES:
            _predicted(kata, program, shapes, "float32", "v5e")


# ---- serve --------------------------------------------------------------------------------------


@functools.cache
def _lowered_serve_flops(rows: int, with_bias: bool) -> float:
    w = jax.ShapeDtypeStruct((SERVE_WIDTH, SERVE_WIDTH), jnp.float32)
    x = jax.ShapeDtypeStruct((rows, SERVE_WIDTH), jnp.float32)
    bias = jax.ShapeDtypeStruct((SERVE_WIDTH,), jnp.float32) if with_bias else None
    return _cost(jax.jit(serve_model).lower(w, x, bias))["flops"]


def _serve_flops(rows: int, with_bias: bool) -> float:
    """Flops of one call on `rows` rows: the lowered module's cost analysis at 1 and 2 rows,
    extended along the line it draws (checked at 200 rows: the model is row by row)."""
    one, two = _lowered_serve_flops(1, with_bias), _lowered_serve_flops(2, with_bias)
    far = _lowered_serve_flops(200, with_bias)
    assert far == one + 199 * (two - one), f"flops are not linear in rows: {one}, {two}, {far}"
    return one + (rows - 1) * (two - one)


def _serve(kata, count, seed, max_compiles):
    """(requests, answers, compiles, [(rows, bias given)] of every call of run)."""
    requests = request_stream(count, seed)
    w = serve_weights(seed)
    jitted = jax.jit(serve_model)
    calls = []

    def run(x, bias):
        calls.append((int(np.shape(x)[0]), bias is not None))
        return jitted(w, x, bias)

    with _measured_compiles() as compiles:
        answers = kata.serve(requests, run, max_compiles)
    assert isinstance(answers, list) and len(answers) == len(requests), (
        f"expected a list of {len(requests)} answers, got {type(answers).__name__} of "
        f"{len(answers)}"
    )
    return requests, answers, len(compiles), calls


@pytest.mark.task("serve")
@pytest.mark.parametrize("case", SERVE_CASES, ids=lambda c: "{}requests-seed{}".format(*c))
def test_serve_answers_within_compile_and_flops_budgets(kata, case):
    count, seed, max_compiles, factor = case
    requests, answers, compiles, calls = _serve(kata, count, seed, max_compiles)
    w = serve_weights(seed).astype(np.float64)
    for index, ((x, bias), got) in enumerate(zip(requests, answers, strict=True)):
        want = np.tanh(x @ w + (0.0 if bias is None else bias))
        got = np.asarray(got)
        with check:
            assert got.shape == want.shape, (
                f"request {index} ({len(x)} rows): answer {list(got.shape)}, expected "
                f"{list(want.shape)}"
            )
            assert np.allclose(got, want, rtol=1e-4, atol=1e-5), (
                f"request {index} ({len(x)} rows, bias {'given' if bias is not None else 'none'})"
                f": differs from tanh(x @ w + bias) by up to {np.max(np.abs(got - want)):.3g}"
            )
    rows = sum(len(x) for x, _ in requests)
    with check:
        assert sum(n for n, _ in calls) >= rows, (
            f"run saw {sum(n for n, _ in calls)} rows, the requests hold {rows}: every request "
            "goes through run"
        )
    padded = sum(_serve_flops(n, b) for n, b in calls)
    unpadded = sum(_serve_flops(len(x), b is not None) for x, b in requests)
    _within_budgets(
        compiles <= max_compiles
        or f"{compiles} compiles, budget {max_compiles}: how many shapes and pytree structures "
        "reached the program?",
        padded <= factor * unpadded
        or f"padded flops {padded / 1e6:.2f} M, budget {factor * unpadded / 1e6:.2f} M "
        f"({factor:g}x the unpadded {unpadded / 1e6:.2f} M): where does the padding go?",
    )


# ---- donating_step ------------------------------------------------------------------------------


@functools.cache
def _donation_original(case) -> int:
    compiled = jax.jit(momentum_step).lower(*momentum_args(*case)).compile()
    return _memory(compiled).peak_memory_in_bytes


def _stepper(kata):
    got = kata.donating_step(momentum_step)
    assert hasattr(got, "lower"), "donating_step should return a jitted function (it has .lower)"
    return got


@pytest.mark.task("donating_step")
@pytest.mark.parametrize(
    "case",
    [*DONATION_CASES, (256, 16, 4)],  # and one smaller than the listed cases
    ids=lambda c: "width{}-batch{}".format(*c),
)
def test_donating_step_halves_peak_memory(kata, case):
    step = _stepper(kata)
    compiled = step.lower(*momentum_args(*case)).compile()
    _check_no_hidden_work(_text(compiled), "the compiled step")
    peak, original = _memory(compiled).peak_memory_in_bytes, _donation_original(case)
    budget = PEAK_SHARE * original
    assert peak <= budget, (
        f"peak memory {_mb(peak)}, budget {_mb(budget)} ({PEAK_SHARE:.0%} of the original's "
        f"{_mb(original)}): which buffers must exist at once, inputs and outputs?"
    )
    # the figure above is of .lower(); a call must run the same program: the old state's buffers,
    # reused for the new state, are gone once the call returns
    state, batch = jax.device_put(momentum_args(*case))
    step(state, batch)
    kept = [
        jax.tree_util.keystr(path)
        for path, leaf in jax.tree_util.tree_leaves_with_path(state)
        if not leaf.is_deleted()
    ]
    assert not kept, (
        f"after a call of the returned step, the old state's buffers {kept} are still alive: "
        "the call holds old and new state at once, whatever .lower() reports"
    )


@pytest.mark.task("donating_step")
@pytest.mark.parametrize("case", [*DONATION_CASES, (64, 3, 2)])
def test_donating_step_trains_like_the_original(kata, case):
    state, batch = momentum_args(*case)
    step, original = _stepper(kata), jax.jit(momentum_step)
    got_state, want_state = jax.device_put(state), jax.device_put(state)
    for _ in range(3):
        got_state, got_loss = step(got_state, batch)
        want_state, want_loss = original(want_state, batch)
        _close((got_state, got_loss), (want_state, want_loss), "state and loss", 1e-5, 1e-6)


@pytest.mark.task("donating_step")
def test_donating_step_moves_nothing_to_or_from_the_host(kata):
    state, batch = momentum_args(256, 8, 3)
    step = _stepper(kata)
    state, batches = jax.device_put(state), [jax.device_put(batch)] * 4
    step(state, batches[0])  # compile outside the guard (the guard is about the loop)
    state = jax.device_put(momentum_args(256, 8, 3)[0])
    losses = []
    with jax.transfer_guard("disallow"):
        try:
            for batch in batches:
                state, loss = step(state, batch)
                losses.append(loss)
        except Exception as error:  # jax raises its runtime error type, which moved across versions
            pytest.fail(f"a step moved data between host and device: {str(error)[:200]}")
    assert all(isinstance(loss, jax.Array) for loss in losses), (
        "every step returns its loss as a device array (jax.Array)"
    )


# ---- cache_settings -----------------------------------------------------------------------------


def _child(settings) -> dict:
    done = subprocess.run(
        [sys.executable, "-c", CACHE_CHILD, json.dumps(settings)],
        capture_output=True,
        text=True,
        timeout=CACHE_CHILD_TIMEOUT,
        env={"JAX_PLATFORMS": "cpu", "PATH": "", "HOME": "/nonexistent"},
        check=False,
    )
    assert done.returncode == 0, f"the process failed: {done.stderr.strip()[-300:]}"
    return json.loads(done.stdout.strip().splitlines()[-1])


@pytest.mark.task("cache_settings")
def test_second_process_hits_the_cache(kata, tmp_path):
    settings = kata.cache_settings(str(tmp_path / "cache"))
    assert isinstance(settings, dict) and all(isinstance(k, str) for k in settings), (
        f"expected a dict of jax config names to values, got {settings!r:.120}"
    )
    first = _child(settings)
    written = sorted(p for p in (tmp_path / "cache").rglob("*") if p.is_file())
    with check:
        assert written, (
            f"the first process missed the cache {first['misses']} times and wrote nothing under "
            "cache_dir: where did its entries go?"
        )
    second = _child(settings)
    with check:
        assert first["misses"] >= 1, (
            f"the first process missed the cache {first['misses']} times: did it use one?"
        )
    with check:
        assert second["misses"] == 0 and second["hits"] >= first["misses"], (
            f"second process: {second['hits']} cache hits and {second['misses']} misses, expected "
            f"{first['misses']} hits (the first process's misses) and none missed: was anything "
            "written, and where did each process look?"
        )
    with check:
        assert second["result"] == first["result"], (
            f"the two processes computed {first['result']} and {second['result']}"
        )


@pytest.mark.task("cache_settings")
def test_cache_settings_hold_for_every_compile(kata, tmp_path):
    """ "Every compile" cannot hang on how fast this machine compiles: a minimum compile time or
    entry size above zero leaves out the programs that compile fast or come out small, and
    whether the test's program is one of them depends on the machine and its load."""
    settings = kata.cache_settings(str(tmp_path / "cache"))
    for name in (
        "jax_persistent_cache_min_compile_time_secs",
        "jax_persistent_cache_min_entry_size_bytes",
    ):
        value = settings.get(name, getattr(jax.config, name))
        assert float(value) <= 0, (
            f"{name} is {value}: a compile faster (or an entry smaller) than that is not cached, "
            "so whether a second process finds it depends on the machine"
        )

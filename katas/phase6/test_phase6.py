"""Phase 6 tests: costs and memory sizes come from XLA's own analyses of the compiled program."""

import functools
import math
import time

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import array as jax_array
from pytest_check import check

from xla_inspect.capture import capture
from xla_inspect.parse import parse_hlo

IN, HIDDEN, OUT, BATCH = 16, 32, 4, 8


def _cpu_fact(what: str) -> None:
    """Skip a number measured on XLA:CPU when another backend runs the tests."""
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {what} (measured on XLA:CPU; other backends' cost models "
                    "and buffer plans differ)")


def _ones(*shape):
    # NumPy inputs: creating jnp arrays would compile eager ops in every test.
    return np.ones(shape, np.float32)


def _mlp(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _mlp_args():
    params = {"w1": _ones(IN, HIDDEN), "b1": _ones(HIDDEN), "w2": _ones(HIDDEN, OUT),
              "b2": _ones(OUT)}
    return params, _ones(BATCH, IN)


def _chain(v):
    return jnp.tanh(jnp.exp(v * 2.0 + 1.0) - 3.0)


UNARY_STEPS = [lambda v: v * 2.0, jnp.exp, jnp.tanh]
SHAPED_STEPS = [lambda v: v * 2.0, lambda v: jnp.sum(v, axis=1), jnp.exp]


@functools.cache
def _chain_cost():
    return capture(_chain, _ones(256, 256)).cost_analysis


@functools.cache
def _shaped_steps_bytes():
    expected, value = 0.0, _ones(64, 32)
    for step in SHAPED_STEPS:
        expected += capture(step, value).cost_analysis.get("bytes accessed", 0.0)
        value = jax.eval_shape(step, value)
    return expected


def _shaped_chain(v):
    for step in SHAPED_STEPS:
        v = step(v)
    return v


@functools.cache
def _shaped_chain_bytes():
    return capture(_shaped_chain, _ones(64, 32)).cost_analysis.get("bytes accessed", 0.0)


@pytest.mark.task("cost_of")
def test_cost_of_mlp_counts_every_flop(kata):
    cost = kata.cost_of(_mlp, *_mlp_args())
    _cpu_fact("exact flop count of the MLP")
    dots = 2 * BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT
    elementwise = BATCH * HIDDEN + BATCH * OUT + BATCH * HIDDEN  # two bias adds, one relu
    with check:
        assert cost["flops"] == dots + elementwise, (
            f"flops {cost['flops']}, expected {dots + elementwise} "
            "(2*M*N*K per dot plus one per bias add and relu element)")
    with check:
        assert cost["transcendentals"] == 0.0, "no exp/tanh in an MLP: XLA omits the key, use 0"


@pytest.mark.task("cost_of")
def test_cost_of_reads_the_optimized_program(kata):
    x = _ones(256, 256)
    cost = kata.cost_of(_chain, x)
    only_exp = kata.cost_of(jnp.exp, x)
    _cpu_fact("bytes accessed of a fused elementwise chain")
    with check:
        assert cost["bytes_accessed"] == 2 * x.nbytes, (
            f"bytes {cost['bytes_accessed']}, expected {2 * x.nbytes}: the fused chain reads x "
            "once and writes once (the unoptimized estimate counts every intermediate)")
    with check:
        assert cost["transcendentals"] == 2 * x.size, "exp and tanh, once per element"
    with check:
        assert only_exp["flops"] == 0.0, f"exp alone has no flops key; got {only_exp['flops']}"
    expected = _chain_cost()
    with check:
        assert cost["flops"] == expected.get("flops", 0.0)


@pytest.mark.task("fusion_traffic")
def test_fusion_cuts_memory_traffic(kata):
    x = _ones(256, 256)
    traffic = kata.fusion_traffic(UNARY_STEPS, x)
    _cpu_fact("bytes accessed per elementwise program")
    with check:
        assert traffic["op_by_op"] == len(UNARY_STEPS) * 2 * x.nbytes, (
            f"op by op {traffic['op_by_op']}: each of {len(UNARY_STEPS)} programs reads and "
            f"writes {x.nbytes} bytes")
    with check:
        assert traffic["fused"] == 2 * x.nbytes, (
            f"fused {traffic['fused']}, expected one read and one write ({2 * x.nbytes})")


@pytest.mark.task("fusion_traffic")
def test_op_by_op_follows_each_steps_shape(kata):
    traffic = kata.fusion_traffic(SHAPED_STEPS, _ones(64, 32))
    expected = _shaped_steps_bytes()
    with check:
        assert traffic["op_by_op"] == expected, (
            f"op by op {traffic['op_by_op']}, expected {expected}: "
            "step k runs on step k-1's output")
    fused = _shaped_chain_bytes()
    with check:
        assert traffic["fused"] == fused < expected, (
            f"fused {traffic['fused']}, the compiled chain accesses {fused} bytes: measure the "
            "composed program (here the output is a row sum, not an array like x)")


@functools.cache
def _step_compiled(donate: bool):
    def update(state, grad):
        return state - 0.1 * grad

    state = _ones(64, 64)
    return capture(jax.jit(update, donate_argnums=(0,) if donate else ()), state, state)


def _matmul_chain(depth):
    def chain(x, w):
        for _ in range(depth):
            x = x @ w
        return x

    return chain


@pytest.mark.task("memory_report")
def test_memory_report_sizes(kata):
    x, w = _ones(64, 32), _ones(32, 16)

    def layer(a, b):
        return jnp.tanh(a @ b)

    report = kata.memory_report(layer, x, w)
    with check:
        assert report["argument"] == x.nbytes + w.nbytes, f"argument {report['argument']}"
    with check:
        assert report["output"] == 64 * 16 * 4, f"output {report['output']}"
    with check:
        assert report["alias"] == 0, "nothing donated, nothing aliased"
    square = _ones(128, 128)
    temp = kata.memory_report(_matmul_chain(4), square, square)["temp"]
    with check:
        assert temp == _chain_capture(4).memory_analysis["temp_size_in_bytes"]
    with check:
        assert temp > 0, "a chain of matmuls needs scratch buffers for its intermediates"


@pytest.mark.task("memory_report")
def test_donation_shows_as_alias_bytes(kata):
    state, grad = _ones(64, 64), _ones(64, 64)
    report = kata.memory_report(lambda s, g: s - 0.1 * g, state, grad, donate_argnums=(0,))
    with check:
        assert report["alias"] == state.nbytes, (
            f"alias {report['alias']}, expected {state.nbytes}: the donated state's buffer "
            "is reused for the output")
    with check:
        assert report["argument"] == state.nbytes + grad.nbytes


def _train_step(grads, state):
    return {k: state[k] - 0.1 * grads[k] for k in state}, jnp.sum(grads["w"])


@functools.cache
def _train_step_hlo(donate: bool) -> str:
    tree = {"b": _ones(4), "w": _ones(4, 4)}
    jitted = jax.jit(_train_step, donate_argnums=(1,) if donate else ())
    return capture(jitted, tree, tree).optimized_hlo_text


@pytest.mark.task("aliased_parameters")
def test_donated_state_aliases_outputs(kata):
    got = kata.aliased_parameters(_train_step_hlo(True))
    tree = {"b": _ones(4), "w": _ones(4, 4)}
    n_grads = len(jax.tree.leaves(tree))
    # Parameters are the flattened leaves (grads first); the new state leads the outputs.
    expected = {n_grads + i: (i,) for i in range(len(jax.tree.leaves(tree)))}
    assert got == expected, f"got {got}, expected {expected} (parameter -> output index)"


@pytest.mark.task("aliased_parameters")
def test_no_donation_no_alias(kata):
    plain = kata.aliased_parameters(_train_step_hlo(False))
    single = kata.aliased_parameters(_step_compiled(True).optimized_hlo_text)
    with check:
        assert plain == {}, f"nothing donated, got {plain}"
    with check:
        assert single == {0: ()}, f"one array output aliases parameter 0 at index (); got {single}"
    with check:
        header = parse_hlo(_step_compiled(False).optimized_hlo_text).attributes
        assert "input_output_alias" not in header, "without donation the header has no aliases"


@functools.cache
def _chain_capture(depth):
    square = _ones(128, 128)
    return capture(_matmul_chain(depth), square, square)


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_counts_entry_intermediates(kata):
    naives = {d: kata.naive_temp_bytes(_chain_capture(d).optimized_hlo_text) for d in (4, 6)}
    _cpu_fact("each matmul of the chain is its own ENTRY instruction")
    for depth, naive in naives.items():
        expected = (depth - 1) * 128 * 128 * 4
        with check:
            assert naive == expected, (
                f"depth {depth}: {naive}, expected {expected} ({depth - 1} intermediates "
                "of f32[128,128]; not the parameters, not the ROOT)")


def _activation_chain(x, w, v):
    h = jnp.tanh(x @ w) * 2.0
    return (h @ w).reshape(64, 256) @ v


@functools.cache
def _activation_capture():
    square = _ones(128, 128)
    return capture(_activation_chain, square, square, _ones(256, 32))


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_skips_views_and_fused_bodies(kata):
    naive = kata.naive_temp_bytes(_activation_capture().optimized_hlo_text)
    _cpu_fact("ENTRY holds two matmul fusions, one tanh fusion and a bitcast for the reshape")
    expected = 3 * 128 * 128 * 4
    assert naive == expected, (
        f"{naive}, expected {expected}: three f32[128,128] results in ENTRY (two matmuls, "
        "the fused tanh*2); the reshape is a bitcast (a view, no new buffer) and the "
        "instructions inside fused computations never get buffers of their own")


@pytest.mark.task("naive_temp_bytes")
def test_buffer_assignment_reuses_buffers(kata):
    temps, naives = [], []
    for depth in (4, 6):
        captured = _chain_capture(depth)
        temps.append(captured.memory_analysis["temp_size_in_bytes"])
        naives.append(kata.naive_temp_bytes(captured.optimized_hlo_text))
    _cpu_fact("temp holds two matmul results whatever the chain's depth")
    with check:
        assert all(t < n for t, n in zip(temps, naives, strict=True)), (
            f"temp {temps} should be below the naive totals {naives}: dead buffers are reused")
    with check:
        assert naives[1] > naives[0] and temps[1] == temps[0], (
            f"naive {naives} grows with depth, temp {temps} does not")


def _device_ones(n):
    return jax.device_put(_ones(n))  # a jax.Array without compiling anything


def _tracked(calls):
    def f(x):
        calls.append(isinstance(x, jax.core.Tracer))
        return jnp.sin(x) * 2.0

    return f


@pytest.mark.task("eager_vs_jit")
def test_timing_is_a_sane_measurement(kata):
    timing = kata.eager_vs_jit(_tracked([]), (_device_ones(512),), 3)
    for field in ("eager_s", "jit_s", "ratio"):
        value = getattr(timing, field)
        with check:
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (
                f"{field}={value!r}: a positive, finite float")
    with check:
        assert timing.repeats == 3
    with check:
        assert timing.ratio == pytest.approx(timing.eager_s / timing.jit_s), "ratio = eager/jit"


@pytest.mark.task("eager_vs_jit")
def test_timing_runs_eager_and_jit(kata):
    calls = []
    kata.eager_vs_jit(_tracked(calls), (_device_ones(512),), 4)
    eager, traced = calls.count(False), calls.count(True)
    with check:
        assert eager == 4 + 1, f"{eager} eager calls, expected 1 warm-up + 4 timed"
    with check:
        assert traced == 1, f"traced {traced} times, expected once (jit caches the trace)"


@pytest.mark.task("eager_vs_jit")
def test_timing_leaves_warm_ups_off_the_clock(kata, monkeypatch):
    events = []  # "clock" for each perf_counter reading, then the calls of f in order
    real = time.perf_counter

    def clock():
        events.append("clock")
        return real()

    monkeypatch.setattr(time, "perf_counter", clock)
    if getattr(kata, "perf_counter", None) is real:  # `from time import perf_counter`
        monkeypatch.setattr(kata, "perf_counter", clock)

    def f(x):
        events.append("trace" if isinstance(x, jax.core.Tracer) else "eager")
        return jnp.sin(x) * 2.0

    kata.eager_vs_jit(f, (_device_ones(512),), 3)
    monkeypatch.undo()
    readings = events.count("clock")
    with check:
        assert readings >= 2, (
            f"{readings} time.perf_counter() readings: time each loop with time.perf_counter()")
    first = {}
    for position, event in enumerate(events):
        first.setdefault(event, position)
    for call, what in (("eager", "the first eager call (it compiles each op)"),
                       ("trace", "the first jitted call (it traces and compiles)")):
        running = events[:first.get(call, 0)].count("clock") % 2 == 1
        with check:
            assert not running, (
                f"{what} ran between a start and a stop reading of the clock: warm up before "
                "you start timing, or the compile is part of the measurement")


@pytest.mark.task("eager_vs_jit")
def test_timing_blocks_on_every_result(kata, monkeypatch):
    blocked = []
    original = jax_array.ArrayImpl.block_until_ready

    def counting(self):
        blocked.append(1)
        return original(self)

    monkeypatch.setattr(jax_array.ArrayImpl, "block_until_ready", counting)
    kata.eager_vs_jit(_tracked([]), (_device_ones(512),), 5)
    assert len(blocked) >= 2 * 5, (
        f"blocked {len(blocked)} times; each of the 2x5 timed calls must block_until_ready, or "
        "the clock stops before the work is done (dispatch is asynchronous)")

"""Phase 6 tests: costs and memory sizes come from XLA's own analyses of the compiled program."""

import functools
import math
import time
import warnings
import zlib

import jax
import jax.core
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src import array as jax_array
from pytest_check import check

from kata_harness import metamorphic, oracles, versions
from kata_harness.predict import compiler_refused
from katas.phase6.programs import (
    ALIAS_BANK,
    BATCH,
    BYTES_BANK,
    BYTES_CASES,
    BYTES_DIMS,
    COST_BANK,
    HANDWRITTEN_ALIAS,
    HIDDEN,
    IN,
    MEMORY_BANK,
    NAIVE_COPIES,
    NAIVE_ODD_TYPES,
    NAIVE_TUPLE_ROOT,
    OUT,
    STEP_BANK,
    UNARY_STEPS,
    activation_chain,
    bf16,
    bytes_arguments,
    chain,
    device_ones,
    matmul_chain,
    mlp,
    mlp_args,
    ones,
    tracked,
    train_step,
    tuple_chain,
    update,
)
from xla_inspect.capture import capture
from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo


def _cpu_fact(what: str) -> None:
    """Skip a number measured on XLA:CPU when another backend runs the tests."""
    if jax.default_backend() != "cpu":
        pytest.skip(
            f"CPU-only fact: {what} (measured on XLA:CPU; other backends' cost models "
            "and buffer plans differ)"
        )


@functools.cache
def _chain_cost():
    return capture(chain, ones(256, 256)).cost_analysis


@pytest.mark.task("cost_of")
def test_cost_of_mlp_counts_every_flop(kata):
    cost = kata.cost_of(mlp, *mlp_args())
    _cpu_fact("exact flop count of the MLP")
    dots = 2 * BATCH * IN * HIDDEN + 2 * BATCH * HIDDEN * OUT
    elementwise = BATCH * HIDDEN + BATCH * OUT + BATCH * HIDDEN  # two bias adds, one relu
    with check:
        assert cost["flops"] == dots + elementwise, (
            f"flops {cost['flops']}, expected {dots + elementwise} "
            "(2*M*N*K per dot plus one per bias add and relu element)"
        )
    with check:
        assert cost["transcendentals"] == 0.0, "no exp/tanh in an MLP: XLA omits the key, use 0"


@pytest.mark.task("cost_of")
def test_cost_of_reads_the_optimized_program(kata):
    x = ones(256, 256)
    cost = kata.cost_of(chain, x)
    only_exp = kata.cost_of(jnp.exp, x)
    _cpu_fact("bytes accessed of a fused elementwise chain")
    with check:
        assert cost["bytes_accessed"] == 2 * x.nbytes, (
            f"bytes {cost['bytes_accessed']}, expected {2 * x.nbytes}: the fused chain reads x "
            "once and writes once (the unoptimized estimate counts every intermediate)"
        )
    with check:
        assert cost["transcendentals"] == 2 * x.size, "exp and tanh, once per element"
    with check:
        assert only_exp["flops"] == 0.0, f"exp alone has no flops key; got {only_exp['flops']}"
    expected = _chain_cost()
    with check:
        assert cost["flops"] == expected.get("flops", 0.0)


COST_KEYS = {
    "flops": "flops",
    "transcendentals": "transcendentals",
    "bytes_accessed": "bytes accessed",
}


@functools.cache
def _bank_cost(name):
    fn, args = COST_BANK[name]
    return capture(fn, *args()).cost_analysis


@pytest.mark.task("cost_of")
def test_cost_of_matches_compiled_cost_analysis_on_a_bank(kata):
    for name, (fn, args) in COST_BANK.items():
        got = kata.cost_of(fn, *args())
        assert isinstance(got, dict) and set(got) == set(COST_KEYS), (
            f"{name}: expected a dict with keys {sorted(COST_KEYS)}, got {got!r:.120}"
        )
        expected = _bank_cost(name)
        for key, xla_key in COST_KEYS.items():
            with check:
                assert got[key] == expected.get(xla_key, 0.0), (
                    f"{name}: {key} {got[key]}, the compiled program's cost_analysis() says "
                    f"{expected.get(xla_key, 0.0)}"
                )


@pytest.mark.task("fusion_traffic")
def test_fusion_cuts_memory_traffic(kata):
    x = ones(256, 256)
    traffic = kata.fusion_traffic(UNARY_STEPS, x)
    _cpu_fact("bytes accessed per elementwise program")
    with check:
        assert traffic["op_by_op"] == len(UNARY_STEPS) * 2 * x.nbytes, (
            f"op by op {traffic['op_by_op']}: each of {len(UNARY_STEPS)} programs reads and "
            f"writes {x.nbytes} bytes"
        )
    with check:
        assert traffic["fused"] == 2 * x.nbytes, (
            f"fused {traffic['fused']}, expected one read and one write ({2 * x.nbytes})"
        )


@functools.cache
def _step_bank_bytes(name):
    """(op by op, fused) bytes accessed, each program's cost read from what XLA compiled."""
    steps, make = STEP_BANK[name]
    value = make()
    op_by_op = 0.0
    for step in steps:
        op_by_op += capture(step, value).cost_analysis.get("bytes accessed", 0.0)
        value = np.asarray(jax.jit(step)(value))  # the real output, dtype and all

    def composed(v):
        for step in steps:
            v = step(v)
        return v

    return op_by_op, capture(composed, make()).cost_analysis.get("bytes accessed", 0.0)


@pytest.mark.task("fusion_traffic")
def test_fusion_traffic_on_a_bank_of_step_lists(kata):
    for name, (steps, make) in STEP_BANK.items():
        got = kata.fusion_traffic(steps, make())
        assert isinstance(got, dict) and set(got) == {"op_by_op", "fused"}, (
            f"{name}: expected a dict with keys fused and op_by_op, got {got!r:.120}"
        )
        op_by_op, fused = _step_bank_bytes(name)
        with check:
            assert got["op_by_op"] == op_by_op, (
                f"{name}: op by op {got['op_by_op']}, the {len(steps)} compiled steps access "
                f"{op_by_op} bytes (each step runs on the previous step's output)"
            )
        with check:
            assert got["fused"] == fused, (
                f"{name}: fused {got['fused']}, the compiled composition accesses {fused} "
                "(measure it: a row sum's output is not shaped like x)"
            )


@functools.cache
def _step_compiled(donate: bool):
    state = ones(64, 64)
    return capture(jax.jit(update, donate_argnums=(0,) if donate else ()), state, state)


@pytest.mark.task("memory_report")
def test_memory_report_sizes(kata):
    x, w = ones(64, 32), ones(32, 16)

    def layer(a, b):
        return jnp.tanh(a @ b)

    report = kata.memory_report(layer, x, w)
    with check:
        assert report["argument"] == x.nbytes + w.nbytes, f"argument {report['argument']}"
    with check:
        assert report["output"] == 64 * 16 * 4, f"output {report['output']}"
    with check:
        assert report["alias"] == 0, "nothing donated, nothing aliased"
    square = ones(128, 128)
    temp = kata.memory_report(matmul_chain(4), square, square)["temp"]
    with check:
        assert temp == _chain_capture(4).memory_analysis["temp_size_in_bytes"]
    with check:
        assert temp > 0, "a chain of matmuls needs scratch buffers for its intermediates"


@pytest.mark.task("memory_report")
def test_donation_shows_as_alias_bytes(kata):
    state, grad = ones(64, 64), ones(64, 64)
    report = kata.memory_report(lambda s, g: s - 0.1 * g, state, grad, donate_argnums=(0,))
    with check:
        assert report["alias"] == state.nbytes, (
            f"alias {report['alias']}, expected {state.nbytes}: the donated state's buffer "
            "is reused for the output"
        )
    with check:
        assert report["argument"] == state.nbytes + grad.nbytes


MEMORY_KEYS = {
    "argument": "argument_size_in_bytes",
    "output": "output_size_in_bytes",
    "temp": "temp_size_in_bytes",
    "alias": "alias_size_in_bytes",
}


@functools.cache
def _bank_memory(name):
    fn, args, donate = MEMORY_BANK[name]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # "Some donated buffers were not usable"
        return capture(fn, *args(), donate_argnums=donate).memory_analysis


@pytest.mark.task("memory_report")
def test_memory_report_matches_memory_analysis_on_a_bank(kata):
    for name, (fn, args, donate) in MEMORY_BANK.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = kata.memory_report(fn, *args(), donate_argnums=donate)
        assert isinstance(got, dict) and set(got) == set(MEMORY_KEYS), (
            f"{name}: expected a dict with keys {sorted(MEMORY_KEYS)}, got {got!r:.120}"
        )
        expected = _bank_memory(name)
        for key, field in MEMORY_KEYS.items():
            with check:
                assert got[key] == expected[field], (
                    f"{name} (donate_argnums={donate}): {key} {got[key]}, the compiled "
                    f"program's memory_analysis() says {field}={expected[field]}"
                )


@functools.cache
def _train_step_hlo(donate: bool) -> str:
    tree = {"b": ones(4), "w": ones(4, 4)}
    jitted = jax.jit(train_step, donate_argnums=(1,) if donate else ())
    return capture(jitted, tree, tree).optimized_hlo_text


@pytest.mark.task("aliased_parameters")
def test_donated_state_aliases_outputs(kata):
    got = kata.aliased_parameters(_train_step_hlo(True))
    tree = {"b": ones(4), "w": ones(4, 4)}
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
def _alias_hlo(name) -> str:
    fn, args, donate, _ = ALIAS_BANK[name]
    return capture(fn, *args(), donate_argnums=donate).optimized_hlo_text


def _xla_parses(text: str) -> None:
    """XLA's own C++ parser accepts the text (where jaxlib has the private binding)."""
    try:
        # jaxlib ships no stub for its _hlo extension module
        from jaxlib import _hlo  # pyright: ignore[reportAttributeAccessIssue]
    except ImportError:
        return
    if hasattr(_hlo, "hlo_module_from_text"):
        oracles.xla_module(text)


@pytest.mark.task("aliased_parameters")
def test_aliases_read_parameter_numbers_and_output_indices(kata):
    for name, (*_, expected) in ALIAS_BANK.items():
        got = kata.aliased_parameters(_alias_hlo(name))
        with check:
            assert got == expected, (
                f"{name}: got {got}, expected {expected} (parameter number -> output index, "
                "both as the header states them)"
            )


@pytest.mark.task("aliased_parameters")
def test_aliases_of_a_handwritten_header(kata):
    _xla_parses(HANDWRITTEN_ALIAS)
    got = kata.aliased_parameters(HANDWRITTEN_ALIAS)
    assert got == {1: (0,), 0: (2,)}, (
        f"got {got}: {{0}}: (1, {{}}, may-alias) is output 0 taking parameter 1; {{2}}: (0, {{1}}, "
        "must-alias) is output 2 taking parameter 0 (its element {1})"
    )


def _alias_module(fresh) -> tuple[str, dict[int, tuple[int, ...]]]:
    """A module drawn for this run: 11 to 16 parameters, outputs nested one tuple deep, 3 or 4
    of them aliased to parameters with two-digit numbers among them; with the answer it was
    drawn from (XLA's parser must accept it)."""
    n = fresh.randint(11, 16)
    chosen = [fresh.randint(10, n - 1), *fresh.sample(range(10), fresh.randint(2, 3))]
    fresh.shuffle(chosen)
    # outputs: the first two nested in a pair ({0, 0}, {0, 1}), the rest at the top ({1}, ...)
    indices = [(0, 0), (0, 1), *[(k,) for k in range(1, len(chosen) - 1)]]
    shape = [f"f32[{p + 1}]" for p in chosen]
    lines = [f"  %p{i} = f32[{i + 1}]{{0}} parameter({i})" for i in range(n)]
    lines += [f"  %o{k} = {shape[k]}{{0}} negate(%p{p})" for k, p in enumerate(chosen)]
    pair = f"({shape[0]}, {shape[1]})"
    lines.append(f"  %pair = {pair} tuple(%o0, %o1)")
    rest = ", ".join(shape[2:])
    result = f"({pair}, {rest})"
    lines.append(
        f"  ROOT %out = {result} tuple(%pair, {', '.join(f'%o{k}' for k in range(2, len(chosen)))})"
    )
    kinds = [fresh.choice(["may-alias", "must-alias"]) for _ in chosen]
    header = ", ".join(
        f"{{{', '.join(map(str, index))}}}: ({p}, {{}}, {kind})"
        for index, p, kind in zip(indices, chosen, kinds, strict=True)
    )
    signature = ", ".join(f"p{i}: f32[{i + 1}]" for i in range(n))
    text = (
        f"HloModule drawn_aliases, input_output_alias={{ {header} }}\n\n"
        f"ENTRY %main ({signature}) -> {result} {{\n" + "\n".join(lines) + "\n}\n"
    )
    return text, {p: index for p, index in zip(chosen, indices, strict=True)}


@pytest.mark.task("aliased_parameters")
def test_aliases_of_fresh_headers(kata, fresh):
    """Parameter numbers of two digits and output indices one tuple deep, drawn for this run."""
    for _ in range(3):
        text, expected = _alias_module(fresh)
        _xla_parses(text)
        got = kata.aliased_parameters(text)
        assert got == expected, (
            f"{fresh.where()}: got {got} for input_output_alias="
            f"{parse_hlo(text).attributes['input_output_alias']}"
        )


@functools.cache
def _variants(text: str) -> tuple[metamorphic.HloVariant, ...]:
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


@pytest.mark.task("aliased_parameters")
def test_aliases_under_renaming_and_reordering(kata):
    texts = {name: (_alias_hlo(name), want) for name, (*_, want) in ALIAS_BANK.items()}
    texts["handwritten header"] = (HANDWRITTEN_ALIAS, {1: (0,), 0: (2,)})
    for name, (text, want) in texts.items():
        for variant in _variants(text):
            got = kata.aliased_parameters(variant.text)
            with check:
                assert got == variant.rename(want), (
                    f"{name}, {variant.kind} (every instruction and computation under another "
                    f"name, or the computations in another order): got {got}, expected {want}: "
                    "the header states the aliases, whatever the module's names"
                )


@functools.cache
def _chain_capture(depth):
    square = ones(128, 128)
    return capture(matmul_chain(depth), square, square)


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_counts_entry_intermediates(kata):
    naives = {d: kata.naive_temp_bytes(_chain_capture(d).optimized_hlo_text) for d in (4, 6)}
    _cpu_fact("each matmul of the chain is its own ENTRY instruction")
    for depth, naive in naives.items():
        expected = (depth - 1) * 128 * 128 * 4
        with check:
            assert naive == expected, (
                f"depth {depth}: {naive}, expected {expected} ({depth - 1} intermediates "
                "of f32[128,128]; not the parameters, not the ROOT)"
            )


@functools.cache
def _activation_capture():
    square = ones(128, 128)
    return capture(activation_chain, square, square, ones(256, 32))


@pytest.mark.task("naive_temp_bytes")
def test_naive_temp_skips_views_and_fused_bodies(kata):
    naive = kata.naive_temp_bytes(_activation_capture().optimized_hlo_text)
    _cpu_fact("ENTRY holds two matmul fusions, one tanh fusion and a bitcast for the reshape")
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
        _xla_parses(text)
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
            _chain_capture(4).optimized_hlo_text,
            3 * 128 * 128 * 4,
        )
        cases["two matmuls, tanh, reshape"] = (
            _activation_capture().optimized_hlo_text,
            3 * 128 * 128 * 4,
        )
    for name, (text, expected) in cases.items():
        for variant in _variants(text):
            got = kata.naive_temp_bytes(variant.text)
            with check:
                assert got == expected, (
                    f"{name}, {variant.kind} (every instruction and computation under another "
                    f"name such as %n17 or %c3, or the computations in another order): {got} "
                    f"bytes, expected {expected}: find ENTRY, views and outputs by what they are "
                    "(the ENTRY keyword, opcodes, the ROOT), not by their names"
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
    _cpu_fact("each matmul of the chain is its own ENTRY instruction, kept in its dtype")
    for name, (_, expected) in cases.items():
        gate = "bf16-dots-stay-bf16" if name.startswith("bf16") else None
        if gate is not None and not versions.checked(gate):
            continue  # a gate, listed in the run's header
        with check, versions.fact(gate):
            assert got[name] == expected, f"{name}: {got[name]} bytes, expected {expected}"


@pytest.mark.task("naive_temp_bytes")
def test_buffer_assignment_reuses_buffers(kata):
    temps, naives = [], []
    for depth in (4, 6):
        captured = _chain_capture(depth)
        temps.append(captured.memory_analysis["temp_size_in_bytes"])
        naives.append(kata.naive_temp_bytes(captured.optimized_hlo_text))
    _cpu_fact("temp holds two matmul results at depths 4 and 6")
    with check:
        assert all(t < n for t, n in zip(temps, naives, strict=True)), (
            f"temp {temps} should be below the naive totals {naives}: dead buffers are reused"
        )
    with check:
        assert naives[1] > naives[0] and temps[1] == temps[0], (
            f"naive {naives} grows with depth, temp {temps} does not"
        )


@pytest.mark.task("eager_vs_jit")
def test_timing_is_a_sane_measurement(kata):
    timing = kata.eager_vs_jit(tracked([]), (device_ones(512),), 3)
    for field in ("eager_s", "jit_s", "ratio"):
        value = getattr(timing, field)
        with check:
            assert isinstance(value, float) and math.isfinite(value) and value > 0, (
                f"{field}={value!r}: a positive, finite float"
            )
    with check:
        assert timing.repeats == 3
    with check:
        assert timing.ratio == pytest.approx(timing.eager_s / timing.jit_s), "ratio = eager/jit"


@pytest.mark.task("eager_vs_jit")
def test_timing_runs_eager_and_jit(kata):
    calls = []
    kata.eager_vs_jit(tracked(calls), (device_ones(512),), 4)
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

    kata.eager_vs_jit(f, (device_ones(512),), 3)
    monkeypatch.undo()
    readings = events.count("clock")
    with check:
        assert readings >= 2, (
            f"{readings} time.perf_counter() readings: time each loop with time.perf_counter()"
        )
    first = {}
    for position, event in enumerate(events):
        first.setdefault(event, position)
    for call, what in (
        ("eager", "the first eager call (it compiles each op)"),
        ("trace", "the first jitted call (it traces and compiles)"),
    ):
        running = events[: first.get(call, 0)].count("clock") % 2 == 1
        with check:
            assert not running, (
                f"{what} ran between a start and a stop reading of the clock: warm up before "
                "you start timing, or the compile is part of the measurement"
            )


@pytest.mark.task("eager_vs_jit")
def test_timing_blocks_on_every_result(kata, monkeypatch):
    blocked = []
    original = jax_array.ArrayImpl.block_until_ready

    def counting(self):
        blocked.append(1)
        return original(self)

    monkeypatch.setattr(jax_array.ArrayImpl, "block_until_ready", counting)
    kata.eager_vs_jit(tracked([]), (device_ones(512),), 5)
    assert len(blocked) >= 2 * 5, (
        f"blocked {len(blocked)} times; each of the 2x5 timed calls must block_until_ready, or "
        "the clock stops before the work is done (dispatch is asynchronous)"
    )


@pytest.mark.task("eager_vs_jit")
def test_timing_reports_mean_seconds_per_call(kata, monkeypatch):
    """A fake clock: time passes only while results are awaited (1 s per block_until_ready) and
    while f's Python body runs eagerly (2 s per call). The honest means are then known exactly:
    eager 3 s per call, jit 1 s per call (its Python body ran once, when it was traced)."""
    now = [100.0]
    original = jax_array.ArrayImpl.block_until_ready

    def clock():
        return now[0]

    def blocking(self):
        now[0] += 1.0
        return original(self)

    def f(x):
        if not isinstance(x, jax.core.Tracer):
            now[0] += 2.0
        return jnp.sin(x) * 2.0

    monkeypatch.setattr(time, "perf_counter", clock)
    if getattr(kata, "perf_counter", None) is not None:  # `from time import perf_counter`
        monkeypatch.setattr(kata, "perf_counter", clock)
    monkeypatch.setattr(jax_array.ArrayImpl, "block_until_ready", blocking)
    timing = kata.eager_vs_jit(f, (device_ones(64),), 4)
    monkeypatch.undo()
    assert isinstance(timing, kata.Timing), f"expected a Timing, got {type(timing).__name__}"
    with check:
        assert timing.eager_s == pytest.approx(3.0), (
            f"eager_s {timing.eager_s}, expected 3.0 (the clock said 3 s per timed eager call: "
            "mean seconds per call, warm-up excluded)"
        )
    with check:
        assert timing.jit_s == pytest.approx(1.0), (
            f"jit_s {timing.jit_s}, expected 1.0 (1 s per timed jitted call)"
        )
    with check:
        assert timing.repeats == 4 and timing.ratio == pytest.approx(3.0), (
            f"repeats {timing.repeats}, ratio {timing.ratio}: expected 4 and eager/jit = 3.0"
        )


# ---- predict_chain_temp -------------------------------------------------------------------------

# (rows, width, depth, dtype): every depth from 1 to 7, wide and narrow x, 2- and 4-byte dtypes
CHAIN_CASES = [(128, 128, depth, np.float32) for depth in range(1, 8)] + [
    (64, 32, 5, np.float32),
    (200, 8, 4, np.int16),
    (48, 16, 6, np.int32),
    (10, 10, 2, np.int16),
    (30, 24, 3, np.float32),
]


@functools.cache
def _chain_temp(rows, width, depth, dtype) -> int:
    x, w = np.ones((rows, width), dtype), np.ones((width, width), dtype)
    stats = jax.jit(matmul_chain(depth)).lower(x, w).compile().memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return int(stats.temp_size_in_bytes)


@pytest.mark.task("predict_chain_temp")
def test_predict_chain_temp_matches_buffer_assignment(kata):
    got = {
        case: kata.predict_chain_temp(*case[:3], np.dtype(case[3]).itemsize) for case in CHAIN_CASES
    }
    _cpu_fact("XLA:CPU's buffer assignment of a matmul chain")
    for case, predicted in got.items():
        rows, width, depth, dtype = case
        with check:
            assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
        measured = _chain_temp(*case)
        with check:
            assert predicted == measured, (
                f"x {np.dtype(dtype).name}[{rows},{width}], depth {depth}: you predicted "
                f"{predicted} temp bytes, memory_analysis says {measured} "
                f"({measured // (rows * width * np.dtype(dtype).itemsize)} products of x's size)"
            )


# The dtypes a chain keeps as itself on XLA:CPU (integer and f32 dots), by element size.
FRESH_CHAIN_DTYPES = (np.int8, np.uint8, np.int16, np.uint16, np.int32, np.float32)


def _fresh_chain_case(fresh, depth: int) -> tuple[int, int, int, type]:
    """x's rows and width and a dtype for a chain of `depth`, x's bytes a multiple of 64 (as
    every listed case's: XLA:CPU aligns each temp buffer to 64 bytes)."""
    dtype = fresh.choice(FRESH_CHAIN_DTYPES)
    width = fresh.randint(2, 96)
    step = 64 // math.gcd(64, width * np.dtype(dtype).itemsize)
    rows = step * fresh.randint(1, max(1, 192 // step))
    return rows, width, depth, dtype


@pytest.mark.task("predict_chain_temp")
def test_predict_chain_temp_on_fresh_chains(kata, fresh):
    """Chains drawn over the whole domain: depths 1 to 13 (an even and an odd one past the
    listed 7 every time), widths, row counts and 1-, 2- and 4-byte dtypes; the expected temp is
    what XLA:CPU's buffer assignment says for the compiled chain."""
    depths = [fresh.randrange(8, 14, 2), fresh.randrange(9, 14, 2)]
    depths += [fresh.randint(1, 13) for _ in range(3)]
    cases = [_fresh_chain_case(fresh, depth) for depth in depths]
    got = [kata.predict_chain_temp(*case[:3], np.dtype(case[3]).itemsize) for case in cases]
    _cpu_fact("XLA:CPU's buffer assignment of a matmul chain")
    for case, predicted in zip(cases, got, strict=True):
        rows, width, depth, dtype = case
        measured = _chain_temp(*case)
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


@functools.cache
def _case_bytes(program: str, shape: tuple[int, int], dtype: str) -> float:
    """XLA's cost analysis of the program compiled for x of this shape and dtype."""
    fn, _, _ = BYTES_BANK[program]
    cost = jax.jit(fn).lower(*bytes_arguments(program, shape, dtype)).compile().cost_analysis()
    assert isinstance(cost, dict), f"cost_analysis gave {cost!r:.80}"
    return float(cost.get("bytes accessed", 0.0))


def _check_bytes(kata, program: str, shape: tuple[int, int], dtype: str, where: str) -> None:
    got = kata.predict_bytes_accessed(program, jax.ShapeDtypeStruct(shape, jnp.dtype(dtype)))
    measured = _case_bytes(program, shape, dtype)
    assert got == measured, (
        f"{program} with x {dtype}{list(shape)}: you predicted {got} bytes; cost_analysis says "
        f"otherwise ({'more' if measured > got else 'fewer'}: which operands and outputs does "
        f"each fusion read and write once, and at how many bytes an element?){where}"
    )


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_of_the_listed_cases(kata):
    _cpu_fact("XLA:CPU's fusion decisions and cost model")
    for program, shape, dtype in BYTES_CASES:
        _check_bytes(kata, program, shape, dtype, "")


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_on_fresh_cases(kata, fresh):
    """Every program at every dtype of its domain on every run (1-, 2- and 4-byte elements,
    floats and integers), each at a non-square shape drawn for it; the expected bytes are XLA's
    cost analysis of the program compiled here."""
    _cpu_fact("XLA:CPU's fusion decisions and cost model")
    for program, (_, _, dtypes) in BYTES_BANK.items():
        aligned = fresh.random() < 0.5
        for dtype in dtypes:
            if program.startswith("x[:") and dtype == "bfloat16":
                if not versions.holds("bf16-slice-reads-its-part"):
                    continue
            rows, cols = fresh.sample(BYTES_DIMS, 2)
            if program.startswith("x[:"):  # the cut on a 64-byte boundary and off it, in turn
                cols = fresh.choice(_slice_cols(dtype, aligned))
                rows = fresh.choice([d for d in BYTES_DIMS if d != cols])
                aligned = not aligned
            _check_bytes(kata, program, (rows, cols), dtype, f" ({fresh.where()})")


def _slice_cols(dtype: str, aligned: bool) -> list[int]:
    """The widths of BYTES_DIMS whose half row is (or is not) a whole number of 64-byte lines."""
    size = jnp.dtype(dtype).itemsize
    return [d for d in BYTES_DIMS if ((d // 2) * size % 64 == 0) == aligned]


@pytest.mark.task("predict_bytes_accessed")
def test_predict_bytes_accessed_does_not_compile(kata):
    with compiler_refused("predict_bytes_accessed"):
        kata.predict_bytes_accessed("exp(x)", jax.ShapeDtypeStruct((64, 96), jnp.float32))

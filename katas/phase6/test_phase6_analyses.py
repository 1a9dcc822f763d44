"""Phase 6 tests, tasks cost_of, fusion_traffic and memory_report: costs and memory sizes come
from XLA's own analyses of the compiled program (katas/phase6/captures.py,
kata_harness.oracles.memory)."""

import warnings

import jax.numpy as jnp
import pytest
from pytest_check import check

from kata_harness.oracles import memory as oracle
from katas.phase6 import captures, drawn
from katas.phase6.programs import (
    BATCH,
    COST_BANK,
    HIDDEN,
    IN,
    MEMORY_BANK,
    OUT,
    STEP_BANK,
    UNARY_STEPS,
    chain,
    matmul_chain,
    mlp,
    mlp_args,
    ones,
)


@pytest.mark.task("cost_of")
def test_cost_of_mlp_counts_every_flop(kata):
    cost = kata.cost_of(mlp, *mlp_args())
    captures.cpu_fact("exact flop count of the MLP")
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
    captures.cpu_fact("bytes accessed of a fused elementwise chain")
    with check:
        assert cost["bytes_accessed"] == 2 * x.nbytes, (
            f"bytes {cost['bytes_accessed']}, expected {2 * x.nbytes}: the fused chain reads x "
            "once and writes once (the unoptimized estimate counts every intermediate)"
        )
    with check:
        assert cost["transcendentals"] == 2 * x.size, "exp and tanh, once per element"
    with check:
        assert only_exp["flops"] == 0.0, f"exp alone has no flops key; got {only_exp['flops']}"
    expected = captures.chain_cost()
    with check:
        assert cost["flops"] == expected.get("flops", 0.0)


COST_KEYS = {
    "flops": "flops",
    "transcendentals": "transcendentals",
    "bytes_accessed": "bytes accessed",
}


def _not_floats(cost: dict) -> str:
    """The figures of a cost_of answer that are not floats (the contract returns floats, 0.0 for
    a key XLA leaves out), as `key=value (type)`; empty when every figure is a float."""
    return ", ".join(
        f"{key}={value!r} ({type(value).__name__})"
        for key, value in cost.items()
        if not isinstance(value, float)
    )


@pytest.mark.task("cost_of")
def test_cost_of_matches_compiled_cost_analysis_on_a_bank(kata):
    for name, (fn, args) in COST_BANK.items():
        got = kata.cost_of(fn, *args())
        assert isinstance(got, dict) and set(got) == set(COST_KEYS), (
            f"{name}: expected a dict with keys {sorted(COST_KEYS)}, got {got!r:.120}"
        )
        with check:
            assert not (wrong := _not_floats(got)), (
                f"{name}: cost_of returns floats (a key XLA leaves out is 0.0); got {wrong}"
            )
        expected = captures.bank_cost(name)
        for key, xla_key in COST_KEYS.items():
            with check:
                assert got[key] == expected.get(xla_key, 0.0), (
                    f"{name}: {key} {got[key]}, the compiled program's cost_analysis() says "
                    f"{expected.get(xla_key, 0.0)}"
                )


@pytest.mark.task("cost_of")
def test_cost_of_on_fresh_calls(kata, fresh):
    """Calls drawn for this run (katas/phase6/drawn.py), in a drawn order: one function at two
    dtypes on one shape and on two shapes, another function named like it (`<lambda>`) on the
    same arguments, each taking a Python float, which stays weakly typed (a bfloat16 x stays
    bfloat16). Expected: the cost analysis of each program compiled for its arguments."""
    calls = drawn.cost_calls(fresh)
    got = [kata.cost_of(fn, *args) for fn, args in calls]
    for (fn, (scale, x)), cost in zip(calls, got, strict=True):
        with check:
            assert not (wrong := _not_floats(cost)), (
                f"x {x.dtype}{list(x.shape)} and the Python float {scale}: cost_of returns "
                f"floats (a key XLA leaves out is 0.0); got {wrong} ({fresh.where()})"
            )
        expected = oracle.cost(fn, scale, x)
        for key, xla_key in COST_KEYS.items():
            with check:
                assert cost[key] == expected.get(xla_key, 0.0), (
                    f"x {x.dtype}{list(x.shape)} and the Python float {scale}: {key} {cost[key]}, "
                    f"the program compiled for exactly these arguments says "
                    f"{expected.get(xla_key, 0.0)} ({fresh.where()})"
                )


@pytest.mark.task("fusion_traffic")
def test_fusion_cuts_memory_traffic(kata):
    x = ones(256, 256)
    traffic = kata.fusion_traffic(UNARY_STEPS, x)
    captures.cpu_fact("bytes accessed per elementwise program")
    with check:
        assert traffic["op_by_op"] == len(UNARY_STEPS) * 2 * x.nbytes, (
            f"op by op {traffic['op_by_op']}: each of {len(UNARY_STEPS)} programs reads and "
            f"writes {x.nbytes} bytes"
        )
    with check:
        assert traffic["fused"] == 2 * x.nbytes, (
            f"fused {traffic['fused']}, expected one read and one write ({2 * x.nbytes})"
        )


@pytest.mark.task("fusion_traffic")
def test_fusion_traffic_on_a_bank_of_step_lists(kata):
    for name, (steps, make) in STEP_BANK.items():
        got = kata.fusion_traffic(steps, make())
        assert isinstance(got, dict) and set(got) == {"op_by_op", "fused"}, (
            f"{name}: expected a dict with keys fused and op_by_op, got {got!r:.120}"
        )
        op_by_op, fused = captures.step_bank_bytes(name)
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


@pytest.mark.task("fusion_traffic")
def test_fusion_traffic_on_fresh_step_lists(kata, fresh):
    """A step list drawn for this run (katas/phase6/drawn.py): casts at both ends, one step
    object listed twice, another listed twice that shortens its input (so it meets two input
    shapes: cost each program for the input it gets), two lambdas on one input shape and dtype,
    transposes (an output that cannot take its input's buffer), the middle in a drawn order; x
    of a drawn shape and dtype. Expected: each step compiled on the previous step's real output,
    and the steps composed in their order, as XLA's cost analysis counts them."""
    steps, x = drawn.step_list(fresh)
    got = kata.fusion_traffic(steps, x)
    op_by_op, fused = oracle.step_bytes(steps, lambda: x)
    where = f"{len(steps)} steps on x {x.dtype}{list(x.shape)}, {fresh.where()}"
    with check:
        assert got["op_by_op"] == op_by_op, (
            f"op by op {got['op_by_op']}, the steps compiled one by one access {op_by_op} "
            f"bytes ({where}: every step of the list counts, in the list's order)"
        )
    with check:
        assert got["fused"] == fused, (
            f"fused {got['fused']}, the steps composed in their order access {fused} ({where})"
        )


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
        assert temp == captures.chain_capture(4).memory_analysis["temp_size_in_bytes"]
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


@pytest.mark.task("memory_report")
def test_memory_report_matches_memory_analysis_on_a_bank(kata):
    for name, (fn, args, donate) in MEMORY_BANK.items():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = kata.memory_report(fn, *args(), donate_argnums=donate)
        assert isinstance(got, dict) and set(got) == set(MEMORY_KEYS), (
            f"{name}: expected a dict with keys {sorted(MEMORY_KEYS)}, got {got!r:.120}"
        )
        expected = captures.bank_memory(name)
        for key, field in MEMORY_KEYS.items():
            with check:
                assert got[key] == expected[field], (
                    f"{name} (donate_argnums={donate}): {key} {got[key]}, the compiled "
                    f"program's memory_analysis() says {field}={expected[field]}"
                )


@pytest.mark.task("memory_report")
def test_memory_report_on_fresh_programs(kata, fresh):
    """Programs drawn for this run (katas/phase6/drawn.py): a weakly typed Python number and
    three arrays of a narrow dtype in a drawn order, one of them unused; two of them donated
    (and on some draws the unused one), and in a drawn order the same function and arguments
    donating fewer; then another program donating one; then a program with two donated
    arguments and one output, so that one donated buffer is usable and the other is not.
    Expected: XLA's memory analysis of the program compiled for exactly these arguments with
    exactly these donations."""
    calls = []
    for several in (True, False):
        fn, args, donate = drawn.memory_case(fresh, several)
        pair = [(fn, args, donate)]
        if several:
            pair.append((fn, args, drawn.redonated(fresh, donate)))
            fresh.shuffle(pair)
        calls += pair
    calls.append(drawn.partly_usable_case(fresh))
    for fn, args, donate in calls:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            got = kata.memory_report(fn, *args, donate_argnums=donate)
        expected = oracle.memory(fn, args, donate)
        for key, field in MEMORY_KEYS.items():
            with check:
                assert got[key] == expected[field], (
                    f"donate_argnums={donate} of {len(args)} arguments of shapes "
                    f"{[getattr(a, 'shape', a) for a in args]} (a Python number among them; "
                    f"some donated buffers may be usable and others not): {key} {got[key]}, "
                    f"memory_analysis() says {expected[field]} ({fresh.where()})"
                )

"""Phase 11 tests, predicting and deciding: a sharded layer's flops and an MLP's all-reduce
bytes from shapes alone, and weight specs that move no weight within a memory budget.

Expected values come from cost and memory analyses of the compiled programs (libtpu's, and
XLA:CPU's on fresh cases, one per situation: katas/phase11/strata.py) and from XLA's own parser
(kata_harness.oracles.tpu_hlo); tests that compile for a TPU call `require(...)` and skip,
naming `uv sync --group tpu`, without it.
"""

from __future__ import annotations

import functools
from typing import Any

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P
from pytest_check import check

from kata_harness import versions
from kata_harness.oracles import tpu_hlo as oracle
from kata_harness.predict import compiler_refused
from kata_harness.targets import require
from katas.phase11.programs import (
    ALLREDUCE_CASES,
    AXES,
    LAYER_CASES,
    MLP_HIDDEN,
    MLP_WIDTH,
    doubled,
    lower_dense_layer,
    lower_mlp,
    two_layer_mlp,
)
from katas.phase11.strata import huge_factor, layer_strata, mlp_strata, tpu_layer_strata
from katas.phase11.texts import V5E
from xla_inspect import parse_hlo
from xla_inspect.query import opcode_counts

# ---- predict_layer_flops ------------------------------------------------------------------------


@functools.cache
def _layer_flops(m, k, n, mesh_shape, target_name: str = V5E) -> float:
    target = require(target_name)
    cost = lower_dense_layer(target, m, k, n, mesh_shape).compile().cost_analysis()
    assert isinstance(cost, dict) and "flops" in cost
    return float(cost["flops"])


@pytest.mark.task("predict_layer_flops")
def test_predict_layer_flops_matches_libtpu(kata, fresh):
    """The fixed cases, then fresh ones of every small dot libtpu compiles into something else
    than a matmul (strata.tpu_layer_strata: one row or column per device, k = 1 and 2)."""
    cases = {f"case {k}": case for k, case in enumerate(LAYER_CASES)}
    for situation, (m, k, n, mesh_shape) in {**cases, **tpu_layer_strata(fresh)}.items():
        with compiler_refused("predict_layer_flops"):
            got = kata.predict_layer_flops(m, k, n, *mesh_shape)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _layer_flops(m, k, n, mesh_shape)
        with check:
            assert got == expected, (
                f"{situation}: relu(x@w+b) [{m},{k}]x[{k},{n}] on a {mesh_shape} mesh: "
                f"cost_analysis says {expected:.0f} flops per device, predicted {got} "
                f"({fresh.where()})"
            )


@pytest.mark.task("predict_layer_flops")
def test_predict_layer_flops_matches_cpu_cost_analysis(kata, fresh):
    """The same sharded layer compiled by XLA:CPU: its cost analysis counts flops per device
    as libtpu's does (2 per multiply-add of the device's block, one per element for the bias
    add and for the relu), so it runs without libtpu, on fresh cases, one per situation of
    the contract (strata.layer_strata)."""
    for situation, (m, k, n, mesh_shape) in layer_strata(fresh).items():
        with compiler_refused("predict_layer_flops"):
            got = kata.predict_layer_flops(m, k, n, *mesh_shape)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _layer_flops(m, k, n, mesh_shape, "cpu")
        assert got == expected, (
            f"{situation}: relu(x@w+b) [{m},{k}]x[{k},{n}] on a {mesh_shape} mesh: XLA:CPU's "
            f"cost_analysis says {expected:.0f} flops per device, predicted {got} "
            f"({fresh.where()})"
        )


@pytest.mark.task("predict_layer_flops")
def test_predict_layer_flops_exact_at_any_size(kata, fresh):
    """A fresh layer of the general situation with m scaled by a huge odd factor: a device's
    block gets that many times the rows, each costing what it did, so the flops scale by it
    exactly (past 2**53, where a float loses integers, and past 2**63, where int64 wraps)."""
    situation = "data and model both split, data != model"
    m, k, n, mesh_shape = layer_strata(fresh)[situation]
    factor = huge_factor(fresh)
    with compiler_refused("predict_layer_flops"):
        got = kata.predict_layer_flops(m * factor, k, n, *mesh_shape)
    assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
    expected = int(_layer_flops(m, k, n, mesh_shape, "cpu")) * factor
    assert got == expected, (
        f"relu(x@w+b) [{m * factor},{k}]x[{k},{n}] on a {mesh_shape} mesh: {factor} times the "
        f"flops of [{m},{k}]x[{k},{n}] (XLA:CPU's cost_analysis), an exact int; predicted "
        f"{got}, off by {got - expected} ({fresh.where()})"
    )


# ---- gather_free_specs --------------------------------------------------------------------------


@functools.cache
def _mlp_figures(
    w1_spec: P, w2_spec: P, batch: int, target_name: str = V5E
) -> tuple[dict[str, int], int]:
    """(collective opcodes -> count over every computation, argument bytes per device)."""
    target = require(target_name)
    compiled = lower_mlp(target, tuple(w1_spec), tuple(w2_spec), batch).compile()
    text = compiled.as_text()
    assert text is not None
    counts = opcode_counts(parse_hlo(text))
    stats = compiled.memory_analysis()
    assert stats is not None
    moved = {o: c for o, c in counts.items() if o.startswith(("all-", "collective-", "reduce-sc"))}
    return moved, int(stats.argument_size_in_bytes)


@functools.cache
def _x_bytes(batch: int, target_name: str = V5E) -> int:
    target = require(target_name)
    mesh = target.mesh((2, 2), AXES)
    x = target.place(jax.ShapeDtypeStruct((batch, MLP_WIDTH), jnp.bfloat16), mesh, "data", None)
    stats = jax.jit(doubled).lower(x).compile().memory_analysis()
    assert stats is not None
    return int(stats.argument_size_in_bytes)


def _check_budget(kata, target_name: str) -> None:
    """The contract's batch is free, but not drawn: on XLA:CPU no pair of 9 specs per weight
    (replicated, either dimension over 'data', 'model' or both, both dimensions) changes its
    verdict between batches 2, 16, 128, 512 and 2048 (measured), so a drawn batch would only
    add compiles."""
    for batch in (512, 128):
        specs = kata.gather_free_specs()
        assert isinstance(specs, tuple) and len(specs) == 2, f"two PartitionSpecs, got {specs!r}"
        moved, arguments = _mlp_figures(specs[0], specs[1], batch, target_name)
        _, replicated = _mlp_figures(P(), P(), batch, target_name)
        x_bytes = _x_bytes(batch, target_name)
        budget = x_bytes + (replicated - x_bytes) // 2
        with check:
            assert not any(o.startswith(("all-gather", "collective-permute")) for o in moved), (
                f"{target_name}: weights moved between devices: {moved} (a gather or a permute "
                "of a weight costs bandwidth every step)"
            )
        with check:
            assert arguments <= budget, (
                f"{target_name}: {arguments} argument bytes per device; replicated weights take "
                f"{replicated}, the budget is half the weights plus x: {budget}"
            )


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_budget(kata):
    _check_budget(kata, V5E)


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_budget_on_cpu(kata):
    """The same program partitioned by XLA:CPU over 4 CPU devices (the same SPMD partitioner;
    no tiles pad the arguments): the same budget, without libtpu."""
    _check_budget(kata, "cpu")


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_same_values_on_cpu(kata, fresh):
    """Fresh values, and a fresh batch (any even number of rows up to 64, split over 'data')."""
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"two PartitionSpecs, got {specs!r}"
    mesh = jax.make_mesh(
        (2, 2), AXES, axis_types=(AxisType.Auto,) * 2, devices=jax.devices("cpu")[:4]
    )
    rng = np.random.default_rng(fresh.randint(0, 2**31))
    batch = 2 * fresh.randint(1, 32)
    x = rng.normal(size=(batch, MLP_WIDTH)).astype(np.float32)
    w1 = rng.normal(size=(MLP_WIDTH, MLP_HIDDEN)).astype(np.float32) / 16
    w2 = rng.normal(size=(MLP_HIDDEN, MLP_WIDTH)).astype(np.float32) / 32
    placed = [
        jax.device_put(a, NamedSharding(mesh, s))
        for a, s in ((x, P("data", None)), (w1, specs[0]), (w2, specs[1]))
    ]
    out = np.asarray(jax.jit(two_layer_mlp)(*placed))
    expected = np.maximum(x @ w1, 0) @ w2
    with check:
        np.testing.assert_allclose(
            out,
            expected,
            rtol=2e-4,
            atol=2e-4,
            err_msg=f"x [{batch}, {MLP_WIDTH}] ({fresh.where()})",
        )


# ---- predict_allreduce_bytes --------------------------------------------------------------------


@functools.cache
def _allreduce_bytes(batch, width, hidden, dtype, mesh_shape, target_name: str = V5E) -> int:
    """Bytes of the all-reduce results in the compiled program, read with XLA's parser."""
    target = require(target_name)
    split = (None, "model"), ("model", None)
    text = lower_mlp(target, *split, batch, width, hidden, dtype, mesh_shape).compile().as_text()
    assert text is not None
    return oracle.all_reduce_bytes(text)


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("predict_allreduce_bytes")
def test_predict_allreduce_bytes_matches_the_compiled_program(kata):
    for batch, width, hidden, dtype, mesh_shape in ALLREDUCE_CASES:
        itemsize = jnp.dtype(dtype).itemsize
        with compiler_refused("predict_allreduce_bytes"):
            got = kata.predict_allreduce_bytes(batch, width, hidden, *mesh_shape, itemsize)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _allreduce_bytes(batch, width, hidden, dtype, mesh_shape)
        with check:
            assert got == expected, (
                f"x [{batch},{width}], hidden {hidden}, {jnp.dtype(dtype).name}, mesh "
                f"{mesh_shape}: the compiled program all-reduces {expected} bytes per device, "
                f"predicted {got}"
            )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("predict_allreduce_bytes")
def test_predict_allreduce_bytes_matches_cpu(kata, fresh):
    """The same split MLP partitioned by XLA:CPU over up to 8 CPU devices, on fresh cases, one
    per situation of the contract (strata.mlp_strata): the bytes of its all-reduce, read with
    XLA's parser, without libtpu."""
    for situation, (batch, width, hidden, drawn, mesh_shape) in mlp_strata(fresh).items():
        dtype: Any = drawn
        itemsize = jnp.dtype(dtype).itemsize
        with compiler_refused("predict_allreduce_bytes"):
            got = kata.predict_allreduce_bytes(batch, width, hidden, *mesh_shape, itemsize)
        assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
        expected = _allreduce_bytes(batch, width, hidden, dtype, mesh_shape, "cpu")
        assert got == expected, (
            f"{situation}: x [{batch},{width}], hidden {hidden}, {jnp.dtype(dtype).name}, mesh "
            f"{mesh_shape}: XLA:CPU's program all-reduces {expected} bytes per device, "
            f"predicted {got} ({fresh.where()})"
        )


@versions.requires_jax("tpu-shapes-read-by-xla")
@pytest.mark.task("predict_allreduce_bytes")
def test_predict_allreduce_bytes_exact_at_any_size(kata, fresh):
    """A fresh MLP of the general situation with the batch scaled by a huge odd factor: the
    all-reduce's result gets that many times the rows, so its bytes scale by it exactly (past
    2**53, where a float loses integers, and past 2**63, where int64 wraps)."""
    situation = "data and model both split, model of 3 or more, f32"
    batch, width, hidden, drawn, mesh_shape = mlp_strata(fresh)[situation]
    dtype: Any = drawn
    factor = huge_factor(fresh)
    itemsize = jnp.dtype(dtype).itemsize
    with compiler_refused("predict_allreduce_bytes"):
        got = kata.predict_allreduce_bytes(batch * factor, width, hidden, *mesh_shape, itemsize)
    assert isinstance(got, int), f"expected an int, got {type(got).__name__}"
    expected = _allreduce_bytes(batch, width, hidden, dtype, mesh_shape, "cpu") * factor
    assert got == expected, (
        f"x [{batch * factor},{width}], hidden {hidden}, mesh {mesh_shape}, itemsize "
        f"{itemsize}: {factor} times the bytes XLA:CPU's program all-reduces for a batch of "
        f"{batch}, an exact int; predicted {got}, off by {got - expected} ({fresh.where()})"
    )

"""Phase 12 tests, deciding and predicting: weight specs that need no collective within a
memory budget, a dense layer XLA:GPU fuses into fewer kernels, and the elements a data-parallel
step all-reduces.

The decide tasks compile live for gpu-h100 and skip, naming the ``gpu`` group, without it; the
memory budget is read from this host's CPU compile, and the dense layer's values and lowering
are checked on this host, both on fresh shapes. Expected all-reduce sizes come from XLA's
parser on recorded modules and from arithmetic on fresh parameter pytrees
(kata_harness.oracles.gpu_hlo), checked against XLA:GPU's own compile with the group. Fresh
cases are drawn one per situation of the contract (katas/phase12/strata.py).
"""

import re
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax.sharding import PartitionSpec
from pytest_check import check

from kata_harness.oracles import gpu_hlo as oracle
from kata_harness.targets import require
from katas.phase12 import texts as module_texts
from katas.phase12.programs import (
    BOTH_SPLIT,
    CUBLAS,
    DENSE_CASES,
    GRADS,
    SPEC_CASES,
    SYNC_ALL_REDUCE,
    handwritten_gelu_dense,
    sds,
    sharded_matmul,
)
from katas.phase12.strata import dense_strata, matmul_strata, pytree_strata
from xla_inspect import targets

# ---- gather_free_specs (decide) ----------------------------------------------------------------


def _matmul_text(case: str, x_spec, w_spec) -> str:
    target_name, x_shape, w_shape = SPEC_CASES[case]
    target = require(target_name)
    text = sharded_matmul(x_shape, w_shape, x_spec, w_spec)(target).compile().as_text()
    assert text is not None
    return text


@cache
def _original_matmul(case: str) -> tuple[int, int]:
    return oracle.collective_bytes(_matmul_text(case, *BOTH_SPLIT))


@pytest.mark.task("gather_free_specs")
@pytest.mark.parametrize("case", sorted(SPEC_CASES))
def test_gather_free_specs_need_no_collective(kata, case):
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"expected (x spec, w spec), got {specs}"
    assert all(isinstance(s, PartitionSpec) for s in specs), f"expected PartitionSpecs: {specs}"
    original, original_bytes = _original_matmul(case)
    count, produced = oracle.collective_bytes(_matmul_text(case, tuple(specs[0]), tuple(specs[1])))
    with check:
        assert original > 0, f"{case}: the original should need collectives"
    with check:
        assert count == 0, (
            f"{case}: {count} collectives producing {produced} bytes are left; the original's "
            f"{original} produce {original_bytes}: the budget is none"
        )


def _argument_bytes(x_shape, w_shape, x_spec: tuple, w_spec: tuple) -> int:
    """Argument bytes per device of x @ w compiled with these specs for this host's CPU devices
    (memory_analysis; the same blocks of x and w a GPU would hold)."""
    lowered = sharded_matmul(x_shape, w_shape, x_spec, w_spec)(targets.get("cpu"))
    stats = lowered.compile().memory_analysis()
    assert stats is not None
    return int(stats.argument_size_in_bytes)


@pytest.mark.task("gather_free_specs")
def test_gather_free_specs_memory_budget(kata, fresh):
    """No collective is easy with whole operands: the budget is half of the replicated bytes,
    on fresh shapes, one per situation (strata.matmul_strata)."""
    specs = kata.gather_free_specs()
    assert isinstance(specs, tuple) and len(specs) == 2, f"expected (x spec, w spec), got {specs}"
    assert all(isinstance(s, PartitionSpec) for s in specs), f"expected PartitionSpecs: {specs}"
    for situation, (x_shape, w_shape) in matmul_strata(fresh).items():
        got = _argument_bytes(x_shape, w_shape, tuple(specs[0]), tuple(specs[1]))
        replicated = oracle.replicated_bytes((x_shape, w_shape), itemsize=2)
        with check:
            assert got <= replicated // 2, (
                f"{situation}: x {list(x_shape)} and w {list(w_shape)} take {got} bytes per "
                f"device; replicated they take {replicated}, the budget is half of that: "
                f"{replicated // 2} ({fresh.where()})"
            )


# ---- fused_dense (decide) ----------------------------------------------------------------------


def _dense_kernels(fn, case: str) -> int:
    target = require("gpu-h100")
    placed = [target.place(sds(s, d)) for s, d in DENSE_CASES[case]]
    try:
        text = jax.jit(fn).lower(*placed).compile(compiler_options=CUBLAS).as_text()
    except Exception as error:  # noqa: BLE001  (XLA:GPU refusing the program is the answer's fault)
        raise AssertionError(
            f"{case}: XLA:GPU cannot compile it for gpu-h100 with Triton GEMMs off ({error!r:.300})"
        ) from error
    assert text is not None
    return oracle.kernels(text)


@cache
def _original_dense_kernels(case: str) -> int:
    return _dense_kernels(handwritten_gelu_dense, case)


def _dense_inputs(rng: np.random.Generator, case):
    """x, w and b of the case's shapes and dtypes, w scaled by 1/sqrt(k): x @ w + b of order one,
    where the tanh gelu bends."""
    (x_shape, dtype), (w_shape, _), (b_shape, _) = case
    x, b = rng.normal(size=x_shape), rng.normal(size=b_shape)
    w = rng.normal(size=w_shape) / np.sqrt(w_shape[0])
    return tuple(a.astype(dtype) for a in (x, w, b))


def _called(fn, args, what: str):
    """fn(*args) as called (directly, or wrapped in jax.jit); a crash on these valid inputs (x
    of rank 3 too, a pytree holding None) is a wrong answer, not a broken test (the stub's
    NotImplementedError passes through)."""
    try:
        return fn(*args)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the inputs are valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
    pytest.fail(f"{what}: raised {crash} on inputs the contract allows", pytrace=False)


@pytest.mark.task("fused_dense")
def test_fused_dense_values(kata, fresh):
    """Fresh shapes and values, one case per situation (strata.dense_strata), against the
    hand-written layer itself: under jax.jit, and called directly (op by op) as well in the f32
    situation and one drawn situation, in the layer's own dtype (a bf16 layer gives bf16, not a
    float32 result)."""
    rng = np.random.default_rng(fresh.randint(0, 2**31))
    want_layer = jax.jit(handwritten_gelu_dense)
    strata = dense_strata(fresh)
    # op by op each op compiles: the f32 situation (whose tolerance tells erf's gelu from the
    # tanh one) and one drawn situation pay it
    direct = {"f32", fresh.choice(sorted(strata))}
    for situation, case in strata.items():
        args = tuple(jnp.asarray(a) for a in _dense_inputs(rng, case))  # x @ w is jax's then
        shapes = " @ ".join(f"{list(a.shape)}" for a in args[:2])
        forms = [("under jax.jit", jax.jit(kata.fused_dense))]
        if situation in direct:
            forms.append(("called directly", kata.fused_dense))
        for form, fn in forms:
            what = f"{situation} {shapes}, {form} ({fresh.where()})"
            got = jnp.asarray(_called(fn, args, what))
            want = want_layer(*args)
            assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
            assert got.dtype == want.dtype, (
                f"{what}: dtype {got.dtype}, the hand-written layer gives {want.dtype}"
            )
            loose = args[0].dtype != np.float32
            np.testing.assert_allclose(
                np.asarray(got, np.float32),
                np.asarray(want, np.float32),
                rtol=5e-2 if loose else 1e-5,
                atol=5e-2 if loose else 1e-5,
                err_msg=what,
            )


@pytest.mark.task("fused_dense")
def test_fused_dense_keeps_the_gemm_in_the_program(kata, fresh):
    """On this host, at fresh shapes: the layer must stay a program XLA compiles, with the GEMM
    in it for cuBLAS to run (a host callback computes the right values but leaves XLA no GEMM
    and no epilogue)."""
    for situation, case in dense_strata(fresh).items():
        lowered = jax.jit(kata.fused_dense).lower(*(sds(s, d) for s, d in case))
        text = lowered.as_text()
        with check:
            assert "stablehlo.dot" in text, (
                f"{situation}: the lowered program holds no dot (no GEMM) ({fresh.where()})"
            )
        calls = sorted(set(re.findall(r"custom_call @([\w.]+)", text)))
        with check:
            assert not calls, f"{situation}: the lowered program calls out of XLA ({calls})"


@pytest.mark.task("fused_dense")
@pytest.mark.parametrize("case", sorted(DENSE_CASES))
def test_fused_dense_needs_fewer_kernels(kata, case):
    original = _original_dense_kernels(case)
    got = _dense_kernels(kata.fused_dense, case)
    assert got < original, (
        f"{case}: {got} kernels with Triton GEMMs off; the hand-written gelu takes {original}"
    )


# ---- allreduce_elements (predict) --------------------------------------------------------------


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements(kata):
    for name in sorted(GRADS):
        _, params, _, _ = GRADS[name]
        got = kata.allreduce_elements({k: sds(s, d) for k, (s, d) in params.items()})
        expected = oracle.all_reduced(module_texts.text(name))
        assert isinstance(got, dict), f"{name}: expected a dict, got {type(got).__name__}"
        with check:
            assert got == expected, f"{name}: predicted {got}, XLA all-reduces {expected}"


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements_of_arrays(kata):
    _, params, _, _ = GRADS["grad_towers_mixed"]
    arrays = [np.zeros(s, d) for s, d in params.values()]
    got = kata.allreduce_elements(arrays)
    assert got == oracle.all_reduced(module_texts.text("grad_towers_mixed")), f"got {got}"


# Fresh parameter pytrees, one per situation (katas/phase12/strata.py): nested dicts, lists and
# tuples of scalar to 4-D leaves in every float dtype XLA:GPU all-reduces, empty ones too,
# ShapeDtypeStructs and arrays. XLA concatenates the gradients of one dtype into one flat
# all-reduce, and makes none for a dtype with no element (checked against XLA:GPU's own compile
# below, with the gpu group): kata_harness.oracles.gpu_hlo counts them.


def _shown(params) -> object:
    return jax.tree.map(lambda x: f"{_HLO_NAMES[np.dtype(x.dtype).name]}{list(x.shape)}", params)


_HLO_NAMES = {"float64": "numpy-f64", "float32": "f32", "bfloat16": "bf16", "float16": "f16"}


@pytest.mark.task("allreduce_elements")
def test_allreduce_elements_of_random_pytrees(kata, fresh):
    """Fresh nested pytrees: each dtype alone, in pairs and all three, arrays and
    ShapeDtypeStructs, every rank from 0 to 4 in each, two leaves of one shape and dtype (two
    gradients, not one), one leaf object at two places (a tied weight: two parameters, two
    gradients), empty leaves (one beside others of its dtype, one the only leaf of a
    dtype the situation leaves out), containers 1 to 3 deep, a pytree node class of the user's
    own among them (strata.Block), a None (an empty subtree, no parameter) and, where arrays
    are allowed, a NumPy float64 array (JAX without x64 takes it, and its gradient, as f32)."""
    for situation, (params, leaves) in pytree_strata(fresh).items():
        expected = oracle.data_parallel_all_reduces(leaves)
        got = _called(kata.allreduce_elements, (params,), f"{situation} ({fresh.where()})")
        assert got == expected, (
            f"{situation}: params {_shown(params)}: predicted {got}, XLA:GPU all-reduces "
            f"{expected} (one flat all-reduce per dtype of every gradient's elements) "
            f"({fresh.where()})"
        )


def _random_loss(params, x):
    """Every element of every parameter's gradient depends on the whole (split) batch."""
    total = jnp.zeros((), jnp.float32)
    for leaf in jax.tree.leaves(params):
        total += jnp.sum(jnp.tanh(x[:, :1].astype(leaf.dtype) * leaf.reshape(1, -1)))
    return total


@pytest.mark.task("allreduce_elements")
@pytest.mark.parametrize("situation", ("f32 and bf16 and f16", "f32 and f16"))
def test_allreduce_elements_of_random_pytrees_match_xla(kata, fresh, situation):
    """The rule above against XLA:GPU itself: the gradients of a fresh pytree (two of the
    situations above: every dtype, and two with the third's only leaf empty; a single dtype is
    read against XLA in the recordings grad_mlp_bf16 and grad_linear_f32) compiled for
    gpu-h100, the batch split over 4 devices, the all-reduces read from the text."""
    target = require("gpu-h100")
    params, _ = pytree_strata(fresh)[situation]
    mesh = target.mesh((4,), ("d",))
    # as jax.jit takes an array: a NumPy float64 one in f32 (no x64)
    placed = jax.tree.map(
        lambda x: target.place(sds(x.shape, jax.dtypes.canonicalize_dtype(x.dtype)), mesh), params
    )
    batch = target.place(sds((64, 8), jnp.float32), mesh, "d", None)
    lowered = jax.jit(jax.grad(_random_loss)).lower(placed, batch)
    text = lowered.compile(compiler_options=SYNC_ALL_REDUCE).as_text()
    assert text is not None
    found = oracle.all_reduced_read(text)
    got = kata.allreduce_elements(params)
    assert got == found, (
        f"{situation}: params {_shown(params)}: predicted {got}, XLA {found} ({fresh.where()})"
    )

"""Phase 10 tests, tasks 3-7: facts of compiled training programs (fusions, aliased parameters,
flops, transposes in the jaxpr and the optimized HLO, dots that absorbed a transpose).

Several programs per task (a step, a forward pass, two steps in a fori_loop, steps whose
signature puts the batch first or returns things in another order, programs built so the
answer is known by construction). Oracles (kata_harness.oracles.training): the parsed optimized
HLO, ``cost_analysis()``, ``memory_analysis()`` and JAX's flattening of the donated arguments.
"""

import warnings
from functools import cache

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import training as oracle
from katas.phase10.programs import (
    BOTH_TRANSPOSED_PROGRAMS,
    SIZES,
    TRANSPOSE_PROGRAMS,
    adam_step,
    alias_bank,
    data,
    mlp,
    momentum_step,
    step_args,
    tanh_forward,
    two_steps,
)
from xla_inspect.jaxpr import primitive_census


@cache
def _compiled_step(donate: bool = True):
    if donate:
        return _compiled_alias(0)  # the same program
    return jax.jit(momentum_step).lower(*step_args()).compile()


@cache
def _compiled_adam_step():
    return jax.jit(adam_step, donate_argnums=(0, 1)).lower(*step_args("odd", "adam")).compile()


@cache
def _compiled_forward():
    params, x, _ = data()
    return jax.jit(mlp).lower(params, x).compile()


@cache
def _compiled_two_steps():
    return jax.jit(two_steps).lower(*step_args()).compile()


@cache
def _compiled_tanh_forward():
    params, x, _ = data()
    return jax.jit(tanh_forward).lower(params, x).compile()


@cache
def _compiled_transpose_only():  # no arithmetic at all: cost_analysis has no "flops" key
    return jax.jit(lambda a: a.T).lower(np.ones((3, 5), np.float32)).compile()


# ---- task 3: fusion_count ---------------------------------------------------------------------


def _fusion_bank():
    return (
        ("momentum step", _compiled_step()),
        ("forward", _compiled_forward()),
        ("two steps in a fori_loop", _compiled_two_steps()),
        ("adam step, odd sizes", _compiled_adam_step()),
    )


@pytest.mark.task("fusion_count")
def test_fusion_count_matches_module(kata):
    from xla_inspect import hlo_facts  # the API users assert with in their own CI

    for name, compiled in _fusion_bank():
        got, want = kata.fusion_count(compiled), hlo_facts(compiled).fusions()
        with check:
            assert got == len(want), f"{name}: got {got}, the module has {len(want)} fusions"


@pytest.mark.task("fusion_count")
def test_step_has_more_kernels_than_forward(kata):
    step, forward = kata.fusion_count(_compiled_step()), kata.fusion_count(_compiled_forward())
    adam = kata.fusion_count(_compiled_adam_step())
    with check:
        assert step > 2 * forward > 0, (
            f"step {step}, forward {forward}: backward and the optimizer add element-wise kernels"
        )
    with check:
        assert adam > step, f"adam {adam}, momentum {step}: adam's two moments add kernels"


# ---- task 4: aliased_parameters ---------------------------------------------------------------


@cache
def _compiled_alias(index: int):
    _, f, args, donate = alias_bank()[index]
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        compiled = jax.jit(f, donate_argnums=donate).lower(*args).compile()
    unusable = [w for w in caught if "donated buffers were not usable" in str(w.message)]
    assert not unusable, "every donated buffer of the tests' own programs must be usable"
    return compiled


@cache
def _parameter_bytes(index: int, numbers: tuple[int, ...]) -> int:
    return oracle.parameter_bytes(_compiled_alias(index), numbers)


@pytest.mark.task("aliased_parameters")
def test_donated_buffers_are_aliased(kata):
    for index, (name, _, args, donate) in enumerate(alias_bank()):
        compiled = _compiled_alias(index)
        got = kata.aliased_parameters(compiled)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        want = oracle.leaf_numbers(args, donate)
        with check:
            assert got == want, (
                f"{name}: got {got}, expected {want}: the HLO parameter numbers of the donated "
                "leaves, sorted"
            )
        with check:  # memory_analysis agrees: those parameters hold exactly the aliased bytes
            assert _parameter_bytes(index, tuple(want)) == oracle.aliased_bytes(compiled)


@pytest.mark.task("aliased_parameters")
def test_parameters_not_output_indices(kata):
    got = kata.aliased_parameters(_compiled_alias(3))
    donated = len(jax.tree.leaves(step_args("odd", "adam")[:2]))
    assert got == list(range(donated)), (
        f"got {got}: this step returns (loss, state, params), so output {{1}} reuses "
        f"a parameter; answer with the parameter numbers 0..{donated - 1}, not output indices"
    )


@pytest.mark.task("aliased_parameters")
def test_parameter_numbers_not_a_count(kata):
    batch_first = kata.aliased_parameters(_compiled_alias(1))
    state_only = kata.aliased_parameters(_compiled_alias(2))
    params = len(jax.tree.leaves(step_args()[0]))
    with check:
        assert batch_first and batch_first[0] == 2, (
            f"got {batch_first}: x and y are parameters 0 and 1; the donated params start at 2"
        )
    with check:
        assert state_only and state_only[0] == params, (
            f"got {state_only}: only the momentum state is donated; params are 0..{params - 1}"
        )


@pytest.mark.task("aliased_parameters")
def test_no_donation_no_alias(kata):
    got = kata.aliased_parameters(_compiled_step(donate=False))
    with check:
        assert got == [], f"got {got} without donate_argnums"
    with check:
        assert oracle.aliased_bytes(_compiled_step(donate=False)) == 0


# ---- task 5: flops_per_step -------------------------------------------------------------------


@pytest.mark.task("flops_per_step")
def test_flops_match_cost_model(kata):
    for name, compiled in (
        ("momentum step", _compiled_step()),
        ("forward", _compiled_forward()),
        ("tanh forward", _compiled_tanh_forward()),
        ("adam step", _compiled_adam_step()),
        ("a transpose, no arithmetic", _compiled_transpose_only()),
    ):
        got = kata.flops_per_step(compiled)
        cost = compiled.cost_analysis()
        assert cost is not None, "this backend has no cost analysis"
        want = cost.get("flops", 0.0)
        with check:
            assert got == pytest.approx(want), (
                f"{name}: got {got}, the cost model says {want} flops "
                f"({cost.get('transcendentals', 0.0)} transcendentals are counted apart)"
            )


# Elementwise transcendentals the cost model counts under "transcendentals" alone (no "flops"
# key) in float32 and float16; in bfloat16 XLA:CPU converts to f32 and back, and counts flops.
_TRANSCENDENTALS = ("exp", "log", "sin", "cos", "tanh", "sqrt", "rsqrt")


@pytest.mark.task("flops_per_step")
def test_transcendentals_alone_cost_no_flops(kata, fresh):
    """A drawn transcendental of a drawn shape and dtype: work, but no "flops" key (0.0)."""
    name, dtype = fresh.choice(_TRANSCENDENTALS), fresh.choice(("float32", "float16"))
    shape = tuple(fresh.randint(1, 9) for _ in range(fresh.randint(1, 3)))
    spec = jax.ShapeDtypeStruct(shape, np.dtype(dtype))
    compiled = jax.jit(getattr(jax.lax, name)).lower(spec).compile()
    cost = compiled.cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    got, want = kata.flops_per_step(compiled), cost.get("flops", 0.0)
    assert got == pytest.approx(want), (
        f"jax.lax.{name} of {dtype}{list(shape)}: got {got}, the cost model says {want} flops "
        f"({cost.get('transcendentals', 0.0)} transcendentals, a count of their own) "
        f"({fresh.where()})"
    )


@pytest.mark.task("flops_per_step")
def test_step_costs_forward_plus_backward_matmuls(kata):
    for name, compiled, size in (
        ("momentum step", _compiled_step(), "wide"),
        ("adam step", _compiled_adam_step(), "odd"),
    ):
        features, hidden, out, batch = SIZES[size]
        forward = 2 * batch * (features * hidden + hidden * out)  # the two forward dots
        weight_grads = forward  # x^T @ g1 and h^T @ g2 have the same sizes
        hidden_grad = 2 * batch * hidden * out  # g2 @ w2^T; no gradient flows into the data x
        got = kata.flops_per_step(compiled)
        with check:
            assert forward + weight_grads + hidden_grad <= got, (
                f"{name}: {got} flops; the dots alone are {forward} + {weight_grads} + "
                f"{hidden_grad}"
            )


# ---- task 6: transpose_counts -----------------------------------------------------------------


@pytest.mark.task("transpose_counts")
def test_transposes_vanish_in_hlo(kata):
    step = jax.jit(momentum_step)
    got = kata.transpose_counts(step, *step_args())
    assert isinstance(got, tuple) and len(got) == 2, f"got {got!r}, expected a pair"
    in_jaxpr, in_hlo = got
    want_jaxpr = primitive_census(jax.make_jaxpr(step)(*step_args()))["transpose"]
    want_hlo = oracle.opcodes(_compiled_step(donate=False))["transpose"]  # the same program
    with check:
        assert in_jaxpr == want_jaxpr > 0, f"jaxpr: got {in_jaxpr}, it has {want_jaxpr}"
    with check:
        assert in_hlo == want_hlo == 0, f"optimized HLO: got {in_hlo}, it has {want_hlo}"


@cache
def _hlo_transposes(name: str) -> int:
    f, args = TRANSPOSE_PROGRAMS[name]
    return oracle.opcodes(jax.jit(f).lower(*args).compile())["transpose"]


@pytest.mark.task("transpose_counts")
def test_a_transpose_that_survives(kata):
    f, args = TRANSPOSE_PROGRAMS["a.T * 2"]
    got = kata.transpose_counts(f, *args)
    want = (1, _hlo_transposes("a.T * 2"))
    assert tuple(got) == want and want[1] > 0, (
        f"got {got}, expected {want}: count the compiled module (inside fused computations "
        "too), not what you expect XLA to do"
    )


@pytest.mark.task("transpose_counts")
def test_nested_transposes(kata):
    f, args = TRANSPOSE_PROGRAMS["nested"]
    got = kata.transpose_counts(f, *args)
    assert isinstance(got, tuple) and len(got) == 2, f"got {got!r}, expected a pair"
    with check:
        assert got[0] == 3, (
            f"jaxpr: got {got[0]}: one transpose in a nested jit, one in a scan body, one in a "
            "cond branch"
        )
    with check:
        assert got[1] == _hlo_transposes("nested"), (
            f"optimized HLO: got {got[1]}, it has {_hlo_transposes('nested')} transpose "
            "instructions (count opcodes, not names: a fusion can be called "
            "multiply_transpose_fusion)"
        )


# ---- task 7: absorbed_transposes --------------------------------------------------------------


@pytest.mark.task("absorbed_transposes")
def test_absorbed_transposes_match_module(kata):
    for name, compiled in (
        ("momentum step", _compiled_step()),
        ("forward", _compiled_forward()),
        ("two steps in a fori_loop", _compiled_two_steps()),
        ("adam step, odd sizes", _compiled_adam_step()),
    ):
        got = kata.absorbed_transposes(compiled)
        want = sum(dims != ("{1}", "{0}") for dims in oracle.dot_dims(compiled))
        with check:
            assert got == want, f"{name}: got {got}, the module has {want} such dots"


@cache
def _compiled_both_transposed(name: str):
    fn, args = BOTH_TRANSPOSED_PROGRAMS[name]
    return jax.jit(fn).lower(*args).compile()


@pytest.mark.task("absorbed_transposes")
def test_absorbed_transposes_count_dots_not_operands(kata):
    """Dots that read both operands transposed (a.T @ b.T) are each one dot."""
    for name in BOTH_TRANSPOSED_PROGRAMS:
        compiled = _compiled_both_transposed(name)
        dims = oracle.dot_dims(compiled)
        # the program still holds such a dot after XLA's rewrites (else it tests nothing)
        assert ("{0}", "{1}") in dims, f"{name}: XLA left no dot reading both operands transposed"
        got = kata.absorbed_transposes(compiled)
        want = sum(d != ("{1}", "{0}") for d in dims)
        with check:
            assert got == want, (
                f"{name}: got {got}, the module has {want} such dots (a dot reading both "
                "operands transposed is one dot)"
            )


@pytest.mark.task("absorbed_transposes")
def test_weight_gradients_contract_the_batch(kata):
    step, forward = (
        kata.absorbed_transposes(_compiled_step()),
        kata.absorbed_transposes(_compiled_forward()),
    )
    weights = 2
    with check:
        assert step >= weights + 1, (
            f"got {step}: each weight gradient x^T @ g contracts the batch (lhs dims {{0}}), "
            "and g @ w2^T contracts w2's second dimension (rhs dims {1})"
        )
    with check:
        assert forward == 0, f"got {forward}: the forward pass has no transposed operand"

"""Phase 10 tests: training values against NumPy, HLO facts from parsed modules.

Every task sees several model sizes (odd widths, a batch of one), several optimizers (sgd with
momentum, adam, adamw) and several programs (a step, a forward pass, two steps in a fori_loop,
steps whose signature puts the batch first or returns things in another order). Oracles: NumPy
(losses, gradients by hand, the optimizers' update rules), ``cost_analysis()``,
``memory_analysis()``, JAX's flattening of the donated arguments, and programs built so the
answer is known by construction.
"""

import warnings
from collections import Counter
from functools import cache

import jax
import numpy as np
import optax
import pytest
from pytest_check import check

from kata_harness.predict import compiler_refused
from katas.phase10.programs import (
    BOTH_TRANSPOSED_PROGRAMS,
    OPTIMIZERS,
    SIZES,
    TRANSPOSE_PROGRAMS,
    adam_step,
    alias_bank,
    data,
    device_params,
    donated_step,
    mlp,
    momentum_step,
    sized_step_args,
    step_args,
    tanh_forward,
    two_steps,
)
from xla_inspect.jaxpr import primitive_census
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo


def _np_example_losses(p, x, y):
    out = np.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"] + p["b2"]
    return ((out - y) ** 2).mean(axis=1)


def _np_grads(p, x, y):
    """Gradients of the mean per-example loss, by hand."""
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    out = hidden @ p["w2"] + p["b2"]
    d_out = 2.0 * (out - y) / out.size
    d_hidden = (d_out @ p["w2"].T) * (pre > 0)
    return {"w2": hidden.T @ d_out, "b2": d_out.sum(0), "w1": x.T @ d_hidden, "b1": d_hidden.sum(0)}


# NumPy versions of the update rules: (init state, update(grads, state, step number, params)).
def _np_sgd_momentum(lr, momentum):
    def update(grads, trace, _count, _params):
        trace = {k: grads[k] + momentum * trace[k] for k in grads}
        return {k: -lr * trace[k] for k in grads}, trace

    return lambda p: {k: np.zeros_like(v) for k, v in p.items()}, update


def _np_adamw(lr, weight_decay, b1=0.9, b2=0.999, eps=1e-8):
    def update(grads, state, count, params):
        mu = {k: b1 * state[0][k] + (1 - b1) * g for k, g in grads.items()}
        nu = {k: b2 * state[1][k] + (1 - b2) * g * g for k, g in grads.items()}
        step = {
            k: -lr
            * (
                (mu[k] / (1 - b1**count)) / (np.sqrt(nu[k] / (1 - b2**count)) + eps)
                + weight_decay * params[k]
            )
            for k in grads
        }
        return step, (mu, nu)

    zeros = lambda p: {k: np.zeros_like(v) for k, v in p.items()}  # noqa: E731
    return lambda p: (zeros(p), zeros(p)), update


TRAINING_CASES = [  # (optimizer, its NumPy rule, model size)
    ("adamw", optax.adamw(0.02, weight_decay=0.5), _np_adamw(0.02, 0.5), "odd"),
    ("sgd with momentum", optax.sgd(0.1, momentum=0.9), _np_sgd_momentum(0.1, 0.9), "wide"),
]


@cache
def _initial_state(index: int):
    """optimizer.init of a training case, kept as NumPy (each test gets fresh device buffers)."""
    _, optimizer, _, size = TRAINING_CASES[index]
    return jax.tree.map(np.asarray, optimizer.init(data(size, seed=2)[0]))


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


def _opcodes(compiled) -> Counter:
    return Counter(i.opcode for c in parse_hlo(compiled.as_text()) for i in c)


# ---- task 1: per_example_losses ---------------------------------------------------------------


@pytest.mark.task("per_example_losses")
def test_per_example_values(kata):
    for size in ("odd", "one"):  # a batch of one, and odd widths
        params, x, y = data(size, seed=1)
        got = jax.jit(kata.per_example_losses)(params, x, y)
        assert hasattr(got, "shape"), f"got a {type(got).__name__}, expected an array"
        got = np.asarray(got)
        with check:
            assert got.shape == (x.shape[0],), (
                f"{size} model: shape {got.shape}, expected one loss per example"
            )
        with check:
            np.testing.assert_allclose(
                got, _np_example_losses(params, x, y), rtol=1e-4, atol=1e-6, err_msg=f"{size} model"
            )


@pytest.mark.task("per_example_losses")
def test_per_example_is_one_batched_program(kata):
    params, x, y = data("odd")
    census = primitive_census(jax.make_jaxpr(kata.per_example_losses)(params, x, y))
    with check:
        assert census["dot_general"] == 2, (
            f"{census['dot_general']} dot_generals: vmap batches the two matmuls, a loop "
            "repeats them"
        )
    with check:
        loops = {p: n for p, n in census.items() if p in ("scan", "while", "fori_loop")}
        assert not loops, f"{loops}: lax.map and scan run the examples one after another"
    compiled = jax.jit(kata.per_example_losses).lower(params, x, y).compile()
    module = parse_hlo(_optimized_text(compiled))
    dots = sorted(i.shape_info.dims for c in module for i in c if i.opcode == "dot")
    features, hidden, out, batch = SIZES["odd"]
    with check:
        assert dots == sorted([(batch, hidden), (batch, out)]), (
            f"optimized HLO dots {dots}: expected two matmuls over the whole batch of {batch}"
        )
    with check:
        assert not any(i.opcode == "while" for c in module for i in c), (
            "the optimized HLO has a while loop: the examples run one at a time"
        )


# ---- task 2: make_train_step ------------------------------------------------------------------


def _check_two_steps(kata, index: int) -> tuple[list[str], list]:
    """Two steps against NumPy; returns JAX's donation warnings and the first call's inputs."""
    name, optimizer, (np_init, np_update), size = TRAINING_CASES[index]
    params, x, y = data(size, seed=2)
    step = kata.make_train_step(optimizer)
    assert hasattr(step, "lower"), "make_train_step must return a jitted function"
    current = device_params(params)
    state = jax.device_put(_initial_state(index))
    first_inputs = jax.tree.leaves((current, state))
    want, want_state = {k: v.astype(np.float64) for k, v in params.items()}, np_init(params)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        for number in (1, 2):
            current, state, loss = step(current, state, x, y)
            with check:
                assert np.shape(loss) == (), f"{name}: loss shape {np.shape(loss)}, a scalar"
            with check:
                assert float(loss) == pytest.approx(
                    _np_example_losses(want, x, y).mean(), rel=1e-4
                ), (
                    f"{name}, step {number}: loss {float(loss)}: the mean per-example loss of "
                    "the params passed in, before the update"
                )
            updates, want_state = np_update(_np_grads(want, x, y), want_state, number, want)
            want = {k: want[k] + updates[k] for k in want}
            for key in want:
                with check:
                    np.testing.assert_allclose(
                        np.asarray(current[key]),
                        want[key],
                        rtol=2e-4,
                        atol=2e-5,
                        err_msg=f"{name}, {key} after step {number}: the optimizer's update "
                        "of the mean loss's gradient (and its state carried to the next step)",
                    )
    return [str(w.message).splitlines()[0] for w in caught], first_inputs


@pytest.mark.task("make_train_step")
def test_momentum_steps_match_numpy(kata):
    _check_two_steps(kata, 1)


@pytest.mark.task("make_train_step")
def test_adamw_steps_match_numpy_and_donate(kata):
    """AdamW's state (an int32 count and two moments per parameter) is donated too; its
    weight decay needs the params passed to optimizer.update."""
    warned, old = _check_two_steps(kata, 0)
    deleted = sum(leaf.is_deleted() for leaf in old)
    with check:
        assert deleted == len(old), (
            f"{deleted} of {len(old)} params and adam state buffers were donated: donate "
            "params and opt_state"
        )
    unusable = [w for w in warned if "donated buffers were not usable" in w]
    with check:
        assert not unusable, (
            f"JAX warned: {unusable}: donate only what an output can reuse (params and "
            "optimizer state), not the batch"
        )


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


_BYTES = {"f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2, "f64": 8, "s64": 8, "pred": 1}


def _optimized_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _static_dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def _aliased_bytes(compiled: jax.stages.Compiled) -> int:
    stats = compiled.memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return stats.alias_size_in_bytes


def _leaf_numbers(args, donated):
    """HLO parameter numbers of the leaves of the donated arguments (every leaf is used)."""
    numbers, start = [], 0
    for position, arg in enumerate(args):
        count = len(jax.tree.leaves(arg))
        if position in donated:
            numbers += range(start, start + count)
        start += count
    return numbers


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
    module = parse_hlo(_optimized_text(_compiled_alias(index)))
    sizes = {}
    for i in module.entry:
        if i.opcode == "parameter":
            shape = i.shape_info
            assert i.payload is not None and shape.dtype is not None, i.shape
            sizes[int(i.payload)] = int(np.prod(_static_dims(shape))) * _BYTES[shape.dtype]
    return sum(sizes[n] for n in numbers)


@pytest.mark.task("aliased_parameters")
def test_donated_buffers_are_aliased(kata):
    for index, (name, _, args, donate) in enumerate(alias_bank()):
        compiled = _compiled_alias(index)
        got = kata.aliased_parameters(compiled)
        assert isinstance(got, list), f"{name}: got a {type(got).__name__}"
        want = _leaf_numbers(args, donate)
        with check:
            assert got == want, (
                f"{name}: got {got}, expected {want}: the HLO parameter numbers of the donated "
                "leaves, sorted"
            )
        with check:  # memory_analysis agrees: those parameters hold exactly the aliased bytes
            assert _parameter_bytes(index, tuple(want)) == _aliased_bytes(compiled)


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
        assert _aliased_bytes(_compiled_step(donate=False)) == 0


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
    want_hlo = _opcodes(_compiled_step(donate=False))["transpose"]  # the same program
    with check:
        assert in_jaxpr == want_jaxpr > 0, f"jaxpr: got {in_jaxpr}, it has {want_jaxpr}"
    with check:
        assert in_hlo == want_hlo == 0, f"optimized HLO: got {in_hlo}, it has {want_hlo}"


@cache
def _hlo_transposes(name: str) -> int:
    f, args = TRANSPOSE_PROGRAMS[name]
    return _opcodes(jax.jit(f).lower(*args).compile())["transpose"]


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


def _dot_dims(compiled):
    return [
        (i.attribute("lhs_contracting_dims"), i.attribute("rhs_contracting_dims"))
        for c in parse_hlo(compiled.as_text())
        for i in c
        if i.opcode == "dot"
    ]


@pytest.mark.task("absorbed_transposes")
def test_absorbed_transposes_match_module(kata):
    for name, compiled in (
        ("momentum step", _compiled_step()),
        ("forward", _compiled_forward()),
        ("two steps in a fori_loop", _compiled_two_steps()),
        ("adam step, odd sizes", _compiled_adam_step()),
    ):
        got = kata.absorbed_transposes(compiled)
        want = sum(dims != ("{1}", "{0}") for dims in _dot_dims(compiled))
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
        dims = _dot_dims(compiled)
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


# ---- predict_alias_bytes and predict_step_flops: predictions checked against the compiler ------

# (features, hidden, out): two of the phase's sizes and a larger one
ALIAS_SIZES = [SIZES["wide"][:3], SIZES["odd"][:3], (100, 300, 10)]


@cache
def _sized_step(features: int, hidden: int, out: int, batch: int, optimizer: str):
    args = sized_step_args(features, hidden, out, batch, optimizer)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # NumPy arguments cannot be donated: the plan can
        return donated_step(optimizer).lower(*args).compile()


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_matches_memory_analysis(kata):
    cases = [(*sizes, optimizer) for sizes in ALIAS_SIZES for optimizer in OPTIMIZERS]
    got = {case: kata.predict_alias_bytes(*case) for case in cases}
    for case, predicted in got.items():
        assert type(predicted) is int, f"{case}: expected an int, got {predicted!r}"
        stats = _sized_step(*case[:3], 4, case[3]).memory_analysis()
        assert stats is not None, "this backend has no memory analysis"
        with check:
            assert predicted == stats.alias_size_in_bytes, (
                f"sizes {case[:3]}, {case[3]}: you predicted {predicted} aliased bytes, "
                f"memory_analysis says {stats.alias_size_in_bytes}"
            )


@pytest.mark.task("predict_alias_bytes")
def test_predict_alias_bytes_does_not_compile(kata):
    with compiler_refused("predict_alias_bytes"):
        for optimizer in OPTIMIZERS:
            kata.predict_alias_bytes(16, 32, 4, optimizer)


# (features, hidden, out, batch): batches large enough that the matrix products dominate
FLOP_SIZES = [(64, 128, 32, 16), (128, 256, 64, 32), (100, 300, 10, 50), (32, 64, 16, 64)]


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_within_ten_percent(kata):
    got = {sizes: kata.predict_step_flops(*sizes) for sizes in FLOP_SIZES}
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: XLA:CPU's cost model, where the products dominate")
    for sizes, predicted in got.items():
        assert type(predicted) is int, f"{sizes}: expected an int, got {predicted!r}"
        cost = _sized_step(*sizes, "momentum").cost_analysis()
        assert isinstance(cost, dict) and "flops" in cost, f"no flops in {cost!r:.80}"
        measured = cost["flops"]
        with check:
            assert abs(predicted - measured) <= 0.1 * measured, (
                f"sizes {sizes}: you predicted {predicted} flops, cost_analysis says "
                f"{measured:.0f} (accepted: {0.9 * measured:.0f} to {1.1 * measured:.0f})"
            )


@pytest.mark.task("predict_step_flops")
def test_predict_step_flops_does_not_compile(kata):
    with compiler_refused("predict_step_flops"):
        for sizes in FLOP_SIZES:
            kata.predict_step_flops(*sizes)

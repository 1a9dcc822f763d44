"""The programs phase 10's tests train and compile, and what `katas show` compiles per task.

MLP data of three sizes, the tests' own training step (SGD with momentum, and adam) whose
compiled form the IR-reading tasks read, steps whose signature puts the batch first or returns
things in another order, and programs built to hold a known number of transposes.
"""

from __future__ import annotations

from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kata_harness.programs import Recipe, given

# (features in, hidden, out, batch)
SIZES = {"wide": (16, 32, 4, 8), "odd": (3, 6, 2, 5), "one": (5, 7, 3, 1)}


IN, HIDDEN, OUT, BATCH = SIZES["wide"]


LEARNING_RATE = 0.05


def data(size: str = "wide", seed: int = 0):
    """(params, x, y) of the MLP of a named size (SIZES)."""
    return sized_data(*SIZES[size], seed=seed)


def device_params(params):
    return jax.device_put(params)


# A training step owned by the tests: the reading tasks get its compiled form.
def mlp(p, x):
    return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def mse(p, x, y):
    return jnp.mean((mlp(p, x) - y) ** 2)


MOMENTUM = optax.sgd(LEARNING_RATE, momentum=0.9)  # has optimizer state, compiles fast


ADAM = optax.adam(0.01)


SGD = optax.sgd(LEARNING_RATE)  # no optimizer state at all


# The optimizers of the prediction tasks, by the name the learner gets.
OPTIMIZERS = {"sgd": SGD, "momentum": MOMENTUM, "adam": ADAM}


def sized_step_specs(features: int, hidden: int, out: int, batch: int, optimizer: str):
    """(params, optimizer state, x, y) of an MLP of these sizes as float32 ShapeDtypeStructs:
    enough to compile the step at any size (a step past 2**31 bytes allocates nothing)."""

    def f32(*shape: int) -> jax.ShapeDtypeStruct:
        return jax.ShapeDtypeStruct(shape, jnp.float32)

    params = {
        "w1": f32(features, hidden),
        "b1": f32(hidden),
        "w2": f32(hidden, out),
        "b2": f32(out),
    }
    state = jax.eval_shape(OPTIMIZERS[optimizer].init, params)
    return params, state, f32(batch, features), f32(batch, out)


def donated_step(optimizer: str):
    """update_with(optimizer) jitted with params and optimizer state donated."""

    def step(p, state, x, y):
        return update_with(OPTIMIZERS[optimizer], p, state, x, y)

    return jax.jit(step, donate_argnums=(0, 1))


def update_with(optimizer, p, state, x, y):
    loss, grads = jax.value_and_grad(mse)(p, x, y)
    updates, state = optimizer.update(grads, state, p)
    return optax.apply_updates(p, updates), state, loss


def momentum_step(p, state, x, y):
    return update_with(MOMENTUM, p, state, x, y)


def adam_step(p, state, x, y):
    return update_with(ADAM, p, state, x, y)


@cache
def step_args(size: str = "wide", optimizer: str = "momentum"):
    params, x, y = data(size)
    params = device_params(params)
    return params, {"momentum": MOMENTUM, "adam": ADAM}[optimizer].init(params), x, y


def two_steps(p, state, x, y):  # a training loop inside one program: the body is a while
    def body(_, carry):
        p, state = carry
        return momentum_step(p, state, x, y)[:2]

    return jax.lax.fori_loop(0, 2, body, (p, state))


def tanh_forward(p, x):
    return jnp.tanh(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def batch_first(x, y, p, state):
    new_p, state, loss = adam_step(p, state, x, y)
    return new_p, state, loss


def returns_state_first(p, state, x, y):  # adam's count (parameter 4) is output {1}
    new_p, state, loss = adam_step(p, state, x, y)
    return loss, state, new_p


def alias_bank():
    """(name, function, args, donate_argnums): each compiled with donation."""
    p, state, x, y = step_args()
    ap, astate, ax, ay = step_args("odd", "adam")
    return [
        ("momentum step", momentum_step, (p, state, x, y), (0, 1)),
        ("batch first: step(x, y, params, state)", batch_first, (ax, ay, ap, astate), (2, 3)),
        ("only the state donated", momentum_step, (p, state, x, y), (1,)),
        ("returns (loss, state, params)", returns_state_first, (ap, astate, ax, ay), (0, 1)),
    ]


def transposed_output(a):
    return a.T * 2.0  # nothing to fold this transpose into: it survives optimization


def nested_transposes(a, b):
    """Three transposes by construction: in a nested jit, a scan body and a cond branch."""
    inner = jax.jit(lambda m: m.T @ m)(a)

    def body(carry, _):
        return carry + b.T, None

    carry, _ = jax.lax.scan(body, inner, None, length=2)
    return jax.lax.cond(carry.sum() > 0, lambda m: m.T * 3.0, lambda m: m * 1.0, carry)


TRANSPOSE_PROGRAMS = {
    "a.T * 2": (transposed_output, (np.ones((16, 8), np.float32),)),
    "nested": (
        nested_transposes,
        (np.arange(12, dtype=np.float32).reshape(4, 3), np.ones((3, 3), np.float32)),
    ),
}


def transposed_products(a, b, c, d):
    """Dots that read both operands transposed (a.T @ b.T), next to a plain one and one that
    reads only its right operand transposed."""
    both = a.T @ b.T  # lhs_contracting_dims={0}, rhs_contracting_dims={1}: one dot
    return jnp.tanh(both @ c) @ d.T


def transposed_in_a_loop(s, w):
    """acc.T @ w.T in a loop body, reading the carry: it cannot be hoisted out of the loop."""
    return jax.lax.fori_loop(0, 3, lambda _, acc: jnp.tanh(acc.T @ w.T), s)


_RNG = np.random.default_rng(10)

# name -> (function, arguments): every dot a matrix times a matrix
BOTH_TRANSPOSED_PROGRAMS = {
    "a.T @ b.T, then a plain dot and an rhs-transposed one": (
        transposed_products,
        tuple(
            _RNG.normal(size=shape).astype(np.float32) for shape in ((6, 5), (7, 6), (7, 3), (4, 3))
        ),
    ),
    "acc.T @ w.T in a fori_loop body": (
        transposed_in_a_loop,
        tuple(_RNG.normal(size=(5, 5)).astype(np.float32) for _ in range(2)),
    ),
}


def sized_data(features: int, hidden: int, out: int, batch: int, seed: int):
    """(params, x, y) of an MLP of any sizes, as NumPy float32 (the tests draw the sizes)."""
    rng = np.random.default_rng(seed)
    params = {
        "w1": rng.normal(size=(features, hidden)).astype(np.float32) / 2,
        "b1": rng.normal(size=hidden).astype(np.float32) / 4,
        "w2": rng.normal(size=(hidden, out)).astype(np.float32) / 3,
        "b2": rng.normal(size=out).astype(np.float32) / 4,
    }
    x = rng.normal(size=(batch, features)).astype(np.float32)
    y = rng.normal(size=(batch, out)).astype(np.float32)
    return params, x, y


# Programs whose work sits in conditional branches and loop bodies (w square, h a batch of rows):
# the places a kernel count or a flop count must reach besides ENTRY.
BRANCH_KINDS = (
    lambda w, h: jnp.tanh(h @ w),
    lambda w, h: (h @ w) * 2.0 + h,
    lambda w, h: jnp.exp(-((h @ w.T) ** 2)),
    lambda w, h: jax.nn.sigmoid(h) * (h @ w),
)


def switch_program(branches: int):
    """lax.switch(k, ...) over the first `branches` kinds: each branch has its own kernels."""
    return lambda w, h, k: jax.lax.switch(k, BRANCH_KINDS[:branches], w, h)


def loop_with_a_branch(trips: int):
    """A fori_loop of `trips` whose body takes one of two branches (a conditional in a while)."""

    def program(w, h):
        def body(i, g):
            return jax.lax.cond(i % 2 == 0, BRANCH_KINDS[0], BRANCH_KINDS[1], w, g)

        return jax.lax.fori_loop(0, trips, body, h)

    return program


def branch_with_a_loop(trips: int):
    """A lax.cond whose first branch runs a fori_loop of `trips` (a while in a conditional)."""

    def program(w, h):
        def looped(w, h):
            return jax.lax.fori_loop(0, trips, lambda _, g: BRANCH_KINDS[3](w, g), h)

        return jax.lax.cond(h.sum() > 0, looped, BRANCH_KINDS[2], w, h)

    return program


def nested_loops(outer: int, inner: int):
    """A fori_loop of `inner` steps inside one of `outer` (a while in a while body)."""

    def program(w, h):
        def outer_body(_, g):
            return jax.lax.fori_loop(0, inner, lambda _, f: BRANCH_KINDS[1](w, f), jnp.tanh(g))

        return jax.lax.fori_loop(0, outer, outer_body, h)

    return program


def _tests_step(reads: str) -> Recipe:
    return Recipe(
        lambda _m: (jax.jit(momentum_step, donate_argnums=(0, 1)), step_args()),
        f"SGD-momentum step (params, state donated; x f32[8,16], y f32[8,4]); {reads}",
        given=True,
    )


_NESTED, _NESTED_ARGS = TRANSPOSE_PROGRAMS["nested"]

SHOWN = {
    "per_example_losses": Recipe(
        lambda m: (m.per_example_losses, data()),
        "per_example_losses(params, x f32[8,16], y f32[8,4])",
    ),
    "make_train_step": Recipe(
        lambda m: (m.make_train_step(MOMENTUM), step_args()),
        "make_train_step(sgd(0.05, momentum=0.9))(params, state, x f32[8,16], y f32[8,4])",
    ),
    "fusion_count": _tests_step("fusion_count counts its fusions"),
    "aliased_parameters": _tests_step("the donated parameters alias outputs"),
    "flops_per_step": _tests_step("flops_per_step reads its cost analysis"),
    "transpose_counts": given(
        _NESTED,
        _NESTED_ARGS,
        "transposes in a nested jit, a scan body and a cond branch: compare --stage jaxpr and "
        "optimized",
    ),
    "absorbed_transposes": _tests_step("its dots took the backward transposes in"),
}

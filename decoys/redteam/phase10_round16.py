"""Red team, phase 10, round 16: wrong answers (atleast_2d targets, jnp.vectorize with core
signatures, an unjitted step, a step donating defensive copies, fusions found by instruction
name, JAX's donation rule redone by shape without one-to-one matching, the lowered StableHLO as
the jaxpr census, 'transposed' read as equal contracting dims, float64 itemsize)."""

from __future__ import annotations

import re

import jax
import jax.numpy as jnp
import numpy as np
import optax

from kata_harness.decoys import wrong


def _rt16_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt16_example_loss(params, x, y):
    return jnp.mean((_rt16_forward(params, x) - y) ** 2)


def _rt16_losses(params, x, y):
    return jax.vmap(_rt16_example_loss, in_axes=(None, 0, 0))(params, x, y)


# ---------------------------------------------------------------- per_example_losses
@wrong(
    "per_example_losses",
    why="'y is (batch,) when out is 1: row i of y is y[i]': batched by hand with "
    "jnp.atleast_2d(y) to give 1-D targets an output axis, but atleast_2d makes (batch,) into "
    "(1, batch), not (batch, 1); the (batch,1)-(1,batch) difference broadcasts to "
    "(batch,batch) and the mean over the last axis averages every target: wrong on "
    "sized_data(3, 6, 1, 5) with y[:, 0] (batch 1 hides it)",
)
def _rt16_per_example_losses_atleast_2d(params: dict, x, y) -> jax.Array:
    pred = _rt16_forward(params, x)
    return jnp.mean((pred - jnp.atleast_2d(y)) ** 2, axis=-1)


@wrong(
    "per_example_losses",
    why="'y is (batch,) when out is 1': jnp.vectorize(example_loss, signature='(f),(o)->()') "
    "is one batched program (it vmaps), but a 1-D y has no batch axis under that signature: "
    "the whole y is taken as every example's target vector, so each loss is the mean over "
    "all targets; wrong on sized_data(3, 6, 1, 5) with y[:, 0] (right for (batch, out) y)",
)
def _rt16_per_example_losses_vectorize(params: dict, x, y) -> jax.Array:
    one = jnp.vectorize(lambda xi, yi: _rt16_example_loss(params, xi, yi), signature="(f),(o)->()")
    return one(x, y)


# ---------------------------------------------------------------- make_train_step
@wrong(
    "make_train_step",
    why="'A jitted step ... params and opt_state (every leaf) are donated': the step is right "
    "but returned as a plain Python function (jit forgotten, so nothing is donated and it runs "
    "op by op); values and states match, but after step(params, state, x, y) on the 'wide' "
    "momentum args no input buffer is deleted and there is no .lower to compile",
)
def _rt16_make_train_step_unjitted(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt16_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return step


@wrong(
    "make_train_step",
    why="'params and opt_state (every leaf) are donated: the caller never reads the old ones "
    "again': jits with donate_argnums=(0, 1) but hands the jitted core defensive copies "
    "(jnp.copy of every leaf, to dodge 'Array has been deleted' in a notebook), so only the "
    "copies are donated: after step(params, state, x, y) on the 'wide' momentum args the "
    "caller's params and state buffers are still alive; values and states are right",
)
def _rt16_make_train_step_donates_copies(optimizer):
    def core(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(_rt16_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    jitted = jax.jit(core, donate_argnums=(0, 1))

    def step(params, opt_state, x, y):
        params, opt_state = jax.tree.map(jnp.copy, (params, opt_state))
        return jitted(params, opt_state, x, y)

    return step


# ---------------------------------------------------------------- fusion_count
@wrong(
    "fusion_count",
    why="'counted by opcode': counts instructions whose NAME contains 'fusion' (%ynn_fusion, "
    "%multiply_add_fusion.3, ...) in every computation; fusions XLA names %wrapped_tanh, "
    "%wrapped_compare, %wrapped_reduce are missed: 7 instead of 9 on switch_program(4), 20 "
    "instead of 21 on the 'odd' adam step (right on the momentum step)",
)
def _rt16_fusion_count_by_name(compiled) -> int:
    return len(re.findall(r"^\s*(?:ROOT\s+)?%\S*fusion\S* = ", compiled.as_text(), re.M))


# ---------------------------------------------------------------- aliased_parameters
@wrong(
    "aliased_parameters",
    why="'A donated buffer no output can reuse is not aliased': re-implements JAX's rule from "
    "compiled.args_info (donated leaves) and the output shapes, keeping every donated leaf for "
    "which SOME output has its shape and dtype; but each output takes one donor: "
    "jit(lambda a, b: a + b, donate_argnums=(0, 1)) of two f32[4] aliases [0] only, this says "
    "[0, 1]",
)
def _rt16_aliased_parameters_shape_rule(compiled) -> list[int]:
    leaves = jax.tree.leaves(compiled.args_info)
    outs = {(tuple(o.shape), str(o.dtype)) for o in jax.tree.leaves(compiled.out_info)}
    return sorted(
        i
        for i, leaf in enumerate(leaves)
        if getattr(leaf, "donated", False) and (tuple(leaf.shape), str(leaf.dtype)) in outs
    )


# ---------------------------------------------------------------- transpose_counts
def _rt16_hlo_opcode_count(text, opcode):
    return len(re.findall(r"^\s*(?:ROOT\s+)?%\S+ = .*?\s" + opcode + r"\(", text, re.M))


@wrong(
    "transpose_counts",
    why="'an inner jaxpr counts once per equation that holds it: a jitted function called "
    "twice is two equations': takes the jaxpr count from the lowered StableHLO "
    "(stablehlo.transpose lines, every func included), where the jitted function is one "
    "private func called twice; right on the two TRANSPOSE_PROGRAMS, wrong on "
    "g = jax.jit(lambda m: m.T); step = lambda a: g(a) + g(a * 2) (2 equations, 1 func)",
)
def _rt16_transpose_counts_stablehlo_census(step, *args) -> tuple[int, int]:
    lowered = jax.jit(step).lower(*args)
    jaxpr_like = lowered.as_text().count("stablehlo.transpose")
    hlo = _rt16_hlo_opcode_count(lowered.compile().as_text(), "transpose")
    return jaxpr_like, hlo


# ---------------------------------------------------------------- absorbed_transposes
@wrong(
    "absorbed_transposes",
    why="'contract anything else, on either side': decides 'transposed' by comparing the two "
    "sides (lhs_contracting_dims == rhs_contracting_dims, i.e. a.T @ b or a @ b.T); a dot "
    "reading BOTH operands transposed ({0} and {1}) looks 'consistent' and is skipped: 1 "
    "instead of 2 on the 'a.T @ b.T, then a plain dot and an rhs-transposed one' program, 0 "
    "instead of 1 on 'acc.T @ w.T in a fori_loop body' (right, 3, on the momentum step)",
)
def _rt16_absorbed_transposes_sides_equal(compiled) -> int:
    n = 0
    for line in compiled.as_text().splitlines():
        if not re.search(r"\sdot\(", line):
            continue
        lhs = re.search(r"lhs_contracting_dims=\{([\d,]*)\}", line)
        rhs = re.search(r"rhs_contracting_dims=\{([\d,]*)\}", line)
        if lhs and rhs and lhs.group(1) == rhs.group(1):
            n += 1
    return n


# ---------------------------------------------------------------- predict_alias_bytes
@wrong(
    "predict_alias_bytes",
    why="'w1 f32[features, hidden] ...': sizes every float buffer with np.dtype(float).itemsize "
    "(Python's float is float64, 8 bytes) instead of float32's 4; the count stays 4 bytes: "
    "about twice the truth on every size, e.g. (16, 32, 4, 'momentum') gives 10816 not 5408",
)
def _rt16_predict_alias_bytes_float64(features: int, hidden: int, out: int, optimizer: str) -> int:
    leaves = features * hidden + hidden + hidden * out + out
    trees = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    count = 4 if optimizer == "adam" else 0
    return trees * leaves * np.dtype(float).itemsize + count

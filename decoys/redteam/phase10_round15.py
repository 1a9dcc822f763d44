"""Red team, phase 10, round 15: wrong answers (y.shape[-1] as out width, square of the mean
error, whole-array mean / float16 mean / divide by features in the step, named tuples skipped
and rank-2-only transposes, dots found by computation name, b1 forgotten, momentum keeping two
trees)."""

from __future__ import annotations

import re

import jax
import jax.extend.core
import jax.numpy as jnp
import optax

from kata_harness.decoys import wrong


def _rt15_forward(params, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def _rt15_losses(params, x, y):
    def one(xi, yi):
        return jnp.mean((_rt15_forward(params, xi) - yi) ** 2)

    return jax.vmap(one)(x, y)


def _rt15_opcodes(text):
    out = []
    for line in text.splitlines():
        m = re.match(r"\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*.*?\s([a-z][a-z0-9\-]*)\(", line)
        if m and "=" in line.split("(")[0]:
            out.append((m.group(1), line))
    return out


@wrong(
    "per_example_losses",
    why="'y is (batch,) when out is 1': divides the summed squared error by y.shape[-1] as the "
    "output width; with y of shape (batch,) that is the batch size, so the odd-size data with "
    "out=1 targets (batch 5) gives losses 5x too small (batch 1 hides it)",
)
def _rt15_per_example_losses_width_from_y(params, x, y):
    pred = _rt15_forward(params, x)
    err = (pred - y.reshape(pred.shape)) ** 2
    return jnp.sum(err, axis=-1) / y.shape[-1]


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses': uses jnp.mean((forward(x)-y)**2) over the "
    "whole batch; with out=1 and y of shape (batch,) the (batch,1)-(batch,) difference "
    "broadcasts to (batch,batch), so loss and gradient mix every target (batch 8, out 1)",
)
def _rt15_make_train_step_whole_array_mean(optimizer):
    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean((_rt15_forward(p, x) - y) ** 2))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "make_train_step",
    why="'loss is the mean ... a scalar': averages the per-example losses in float16 to save "
    "memory, so the returned loss is rounded to 11 bits (wide data: loss differs beyond 1e-4 "
    "relative) and the gradient is of the rounded mean",
)
def _rt15_make_train_step_half_mean(optimizer):
    def step(params, opt_state, x, y):
        def mean_loss(p):
            return jnp.mean(_rt15_losses(p, x, y).astype(jnp.float16)).astype(jnp.float32)

        loss, grads = jax.value_and_grad(mean_loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def _rt15_walk_params(v, _unused):
    n = 0
    if isinstance(v, jax.extend.core.ClosedJaxpr):
        return _rt15_count(v.jaxpr, _unused)
    if isinstance(v, jax.extend.core.Jaxpr):
        return _rt15_count(v, _unused)
    if type(v) in (tuple, list):
        for e in v:
            n += _rt15_walk_params(e, _unused)
    return n


def _rt15_count(jaxpr, _unused):
    n = 0
    for eqn in jaxpr.eqns:
        if eqn.primitive.name == "transpose":
            n += 1
        for v in eqn.params.values():
            n += _rt15_walk_params(v, _unused)
    return n


@wrong(
    "transpose_counts",
    why="'lax.custom_linear_solve's functions (held in a named tuple, some None)': the jaxpr "
    "walk recurses into params whose type is exactly tuple or list, so the named tuple of "
    "custom_linear_solve is skipped: a solve whose matvec is lambda v: m.T @ v loses that "
    "transpose (the HLO count is right)",
)
def _rt15_transpose_counts_exact_tuple_type(step, *args):
    jx = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = sum(1 for op, _ in _rt15_opcodes(text) if op == "transpose")
    return _rt15_count(jx.jaxpr, True), hlo


@wrong(
    "absorbed_transposes",
    why="'in every computation: fused computations and loop bodies too': scans only ENTRY and "
    "computations whose name mentions gemm/dot, by computation name; a transposed dot in a "
    "while body (transposed_in_a_loop: 1, says 0) or a plain fused computation is missed "
    "(momentum step: 3, says 2)",
)
def _rt15_absorbed_transposes_gemm_named(compiled):
    n = 0
    comp = ""
    for line in compiled.as_text().splitlines():
        if line and not line.startswith(" ") and "{" in line:
            comp = line.split("(")[0]
            continue
        if "ENTRY" not in comp and "gemm" not in comp and "dot" not in comp:
            continue
        for op, l in _rt15_opcodes(line):
            if op == "dot" and ("lhs_contracting_dims={0}" in l or "rhs_contracting_dims={1}" in l):
                n += 1
    return n


@wrong(
    "predict_alias_bytes",
    why="'w1 f32[features, hidden], b1 f32[hidden], ...': leaves b1 out of the parameter "
    "count (only the output bias b2 is counted), so sgd on (3,6,2) says 4*(18+12+2)=128, "
    "not 152",
)
def _rt15_predict_alias_bytes_no_b1(features, hidden, out, optimizer):
    n = features * hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return 4 * n * copies + (4 if optimizer == "adam" else 0)


@wrong(
    "per_example_losses",
    why="'mean squared error of one example': writes mean(pred - y) ** 2 (square of the mean "
    "error) instead of mean((pred - y) ** 2); identical when out is 1, wrong for out > 1 "
    "(wide data, out 4)",
)
def _rt15_per_example_losses_square_of_mean(params, x, y):
    pred = _rt15_forward(params, x)
    return jnp.mean(pred - y.reshape(pred.shape), axis=-1) ** 2


@wrong(
    "predict_alias_bytes",
    why="'what each optimizer keeps between steps': takes sgd with momentum to keep the "
    "velocity and the previous gradient (two param-sized trees), so momentum on (3,6,2) says "
    "4*38*3=456 instead of 304",
)
def _rt15_predict_alias_bytes_momentum_prev_grad(features, hidden, out, optimizer):
    n = features * hidden + hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 3, "adam": 3}[optimizer]
    return 4 * n * copies + (4 if optimizer == "adam" else 0)


@wrong(
    "make_train_step",
    why="'loss is the mean of per_example_losses': divides the summed losses by x.shape[1] "
    "(features) instead of x.shape[0] (batch); loss and gradient are off by batch/features "
    "unless they match: the wide data (16 features, batch 8) reports half the loss",
)
def _rt15_make_train_step_divides_by_features(optimizer):
    def step(params, opt_state, x, y):
        def mean_loss(p):
            return jnp.sum(_rt15_losses(p, x, y)) / x.shape[1]

        loss, grads = jax.value_and_grad(mean_loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


@wrong(
    "transpose_counts",
    why="'transpose instructions in the optimized HLO': counts only transposes with "
    "dimensions={1,0}, the matrix transpose; a rank-3 jnp.transpose(a, (2, 0, 1)) * 2 on a "
    "(2,3,4) array is a transpose instruction the count misses (says (1, 0), not (1, 1))",
)
def _rt15_transpose_counts_matrix_only(step, *args):
    jx = jax.make_jaxpr(step)(*args)
    text = jax.jit(step).lower(*args).compile().as_text()
    hlo = sum(1 for op, l in _rt15_opcodes(text) if op == "transpose" and "dimensions={1,0}" in l)
    return _rt15_count(jx.jaxpr, False), hlo

"""Show recipes of phases 5-7: grad and vmap, cost and memory, control flow."""

from __future__ import annotations

import jax
import jax.numpy as jnp
from jax import lax

from .base import Recipe, f32, given, mlp_params, s32


def _f(x):
    """R^16 -> R^8 with a product rule inside, like the phase 5 tests' sin(A x) * |x|^2."""
    a = jnp.arange(8 * 16, dtype=jnp.float32).reshape(8, 16) / 100.0
    return jnp.sin(a @ x) * jnp.sum(x * x)


PHASE5 = {
    "mlp_grad": Recipe(
        lambda m: (m.mlp_grad, (mlp_params(), f32(8, 16), f32(8, 4))),
        "mlp_grad(params, x f32[8,16], y f32[8,4])",
    ),
    "jvp_tangent": Recipe(
        lambda m: (lambda x, v: m.jvp_tangent(_f, x, v), (f32(16), f32(16))),
        "jvp_tangent(f, x f32[16], v f32[16]), f = sin(A x) * |x|^2",
    ),
    "vjp_cotangent": Recipe(
        lambda m: (lambda x, ct: m.vjp_cotangent(_f, x, ct), (f32(16), f32(8))),
        "vjp_cotangent(f, x f32[16], ct f32[8]), f = sin(A x) * |x|^2",
    ),
    "jacobian": Recipe(
        lambda m: (lambda x: m.jacobian(_f, x, "rev"), (f32(16),)),
        "jacobian(f, x f32[16], 'rev'), f = sin(A x) * |x|^2: f32[8,16]",
    ),
    "batched_matvec": Recipe(
        lambda m: (lambda w, vs: m.batched_matvec(w, vs, (None, 0)), (f32(8, 16), f32(5, 16))),
        "batched_matvec(W f32[8,16], vs f32[5,16], in_axes=(None, 0))",
    ),
    "per_example_grads": Recipe(
        lambda m: (m.per_example_grads, (mlp_params(), f32(8, 16), f32(8, 4))),
        "per_example_grads(params, xs f32[8,16], ys f32[8,4])",
    ),
}


def _chain(v):
    return jnp.tanh(jnp.exp(v * 2.0 + 1.0) - 3.0)


def _fused_steps(v):
    return jnp.tanh(jnp.exp(v * 2.0))


def _update(state, grad):
    return state - 0.1 * grad


def _matmul_chain(x, w):
    for _ in range(4):
        x = x @ w
    return x


def _donated_update(_module) -> tuple:
    return jax.jit(_update, donate_argnums=(0,)), (f32(64, 64), f32(64, 64))


_DONATED = "state - 0.1 * grad, both f32[64,64], state donated"

PHASE6 = {
    "cost_of": given(
        _chain, (f32(256, 256),), "tanh(exp(2v + 1) - 3) with v f32[256,256], what cost_of compiles"
    ),
    "fusion_traffic": given(
        _fused_steps, (f32(256, 256),), "the steps v * 2, exp, tanh as one program, v f32[256,256]"
    ),
    "memory_report": Recipe(_donated_update, _DONATED, given=True),
    "aliased_parameters": Recipe(
        _donated_update, _DONATED + ": see input_output_alias in the header", given=True
    ),
    "naive_temp_bytes": given(
        _matmul_chain, (f32(128, 128), f32(128, 128)), "a chain of 4 matmuls x @ w, f32[128,128]"
    ),
}


def _body(i, c):
    return c * 2.0 + i


PHASE7 = {
    "conditionals": given(
        lambda x: lax.cond(x.sum() > 0, jnp.sin, jnp.cos, x),
        (f32(8),),
        "lax.cond(x.sum() > 0, sin, cos, x) with x f32[8]",
    ),
    "while_loops": given(
        lambda x: lax.fori_loop(0, 5, _body, x),
        (f32(8),),
        "lax.fori_loop(0, 5, body, x) with x f32[8]",
    ),
    "loop_primitives": given(
        lambda x, n: lax.fori_loop(0, n, _body, x),
        (f32(), s32()),
        "lax.fori_loop(0, n, body, x) with a traced n (look at --stage jaxpr)",
    ),
}

"""Show recipes of phases 1-4: the first programs, jaxprs, HLO texts and XLA's passes."""

from __future__ import annotations

import math

import jax
import numpy as np

from .base import Recipe, f32, given, mlp, mlp_params


def _power(x, n: int):
    result = x
    for _ in range(n - 1):
        result = result * x
    return result


def _attention(q, k, v):
    return jax.nn.softmax(q @ k.T / math.sqrt(q.shape[-1]), axis=-1) @ v


def _scale_and_shift(x):
    return x * 0.5 + np.array([3.0, 1.0, 2.0], dtype=np.float32)


def _value_and_total(x):
    return x + 1, x.sum()


PHASE1 = {
    "init_params": Recipe(
        lambda m: (lambda key: m.init_params(key, 16, 32, 4), (jax.random.key(0),)),
        "init_params(key, 16, 32, 4)",
    ),
    "mlp_forward": Recipe(
        lambda m: (m.mlp_forward, (mlp_params(), f32(8, 16))),
        "mlp_forward(params, x) with x f32[8,16], hidden 32, out 4",
    ),
    "mse_loss": Recipe(
        lambda m: (m.mse_loss, (mlp_params(), f32(8, 16), f32(8, 4))),
        "mse_loss(params, x f32[8,16], y f32[8,4])",
    ),
    "loss_and_grad": Recipe(
        lambda m: (m.loss_and_grad, (mlp_params(), f32(8, 16), f32(8, 4))),
        "loss_and_grad(params, x f32[8,16], y f32[8,4])",
    ),
    "make_power_jit": Recipe(
        lambda m: (m.make_power_jit(_power), (f32(3), 3)), "make_power_jit(power)(x f32[3], n=3)"
    ),
    "abs_where": Recipe(lambda m: (m.abs_where, (f32(8),)), "abs_where(x f32[8])"),
    "abs_cond": Recipe(lambda m: (m.abs_cond, (f32(),)), "abs_cond(x f32[])"),
}

PHASE2 = {
    "mlp_jaxpr": Recipe(
        lambda m: (m.mlp, (mlp_params(), f32(8, 16))),
        "the phase's mlp(params, x), the program this task traces",
        given=True,
    ),
}

_MLP = (mlp, (mlp_params(), f32(8, 16)))
_SCALE = (_scale_and_shift, (f32(3),))

PHASE3 = {
    "three_texts": given(*_MLP, "mlp(params, x f32[8,16]), handed to three_texts"),
    "dump_files": given(*_SCALE, "x * 0.5 + [3, 1, 2] with x f32[3], what dump_files compiles"),
    "entry_parameter_layouts": given(*_MLP, "mlp(params, x f32[8,16]): see ENTRY's parameters"),
    "entry_root": given(
        _value_and_total, (f32(2, 3),), "(x + 1, x.sum()) with x f32[2,3], whose ROOT is a tuple"
    ),
    "fusion_contents": given(
        _attention,
        (f32(8, 16), f32(8, 16), f32(8, 16)),
        "attention(q, k, v), each f32[8,16]: a kLoop fusion holds a reduce and its reducer",
    ),
    "constants": given(
        *_SCALE,
        "x * 0.5 + [3, 1, 2] with x f32[3]: one constant stays in ENTRY, one moves into the fusion",
    ),
    "flops": given(*_MLP, "mlp(params, x f32[8,16]), whose cost analysis flops reads"),
}

PHASE4 = {
    "algebraic_identity": Recipe(
        lambda m: (m.algebraic_identity, (f32(8),)), "algebraic_identity(x f32[8])"
    ),
    "folded_scale": Recipe(lambda m: (m.folded_scale, (f32(8),)), "folded_scale(x f32[8])"),
    "shared_subexpression": Recipe(
        lambda m: (m.shared_subexpression, (f32(8),) * 4),
        "shared_subexpression(a, b, c, d), each f32[8]",
    ),
    "dead_branch": Recipe(lambda m: (m.dead_branch, (f32(8),)), "dead_branch(x f32[8])"),
    "elementwise_chain": Recipe(
        lambda m: (m.elementwise_chain, (f32(8),)), "elementwise_chain(x f32[8])"
    ),
    "attention_scores": Recipe(
        lambda m: (m.attention_scores, (f32(8, 16), f32(8, 16))),
        "attention_scores(q f32[8,16], k f32[8,16])",
    ),
    "refused_rewrites": Recipe(
        lambda m: (m.refused_rewrites, (f32(8),)), "refused_rewrites(x f32[8])"
    ),
}

"""Show recipes of phases 8-10: StableHLO and export, sharding on 8 CPU devices, training.

Phase 9's programs need the 8 CPU devices that `katas_cli.show` configures before JAX starts
its backend; their meshes and sharded argument shapes are therefore made inside `build`.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import optax
from jax import lax
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

from .base import Recipe, f32, given, mlp, mlp_params, s32

ROWS, COLS = 16, 8


def _export_mlp(x, w1, w2):
    return jnp.tanh(x @ w1) @ w2


_EXPORT_ARGS = (f32(8, 16), f32(16, 8), f32(8, 4))

PHASE8 = {
    "op_census": given(
        lambda x: lax.while_loop(lambda c: c.sum() < 100.0, lambda c: c * 2, x),
        (f32(8, 4),),
        "while_loop(sum < 100, c * 2) on x f32[8,4], whose ops "
        "nest in regions (look at --stage stablehlo)",
    ),
    "hlo_opcode": given(
        lambda x, i: lax.cond(i > 0, jnp.sin, jnp.cos, x),
        (f32(8, 4), s32()),
        "lax.cond on x f32[8,4]: stablehlo.case is HLO's "
        "conditional (compare --stage stablehlo and --stage hlo)",
    ),
    "export_bytes": given(
        _export_mlp,
        _EXPORT_ARGS,
        "tanh(x @ w1) @ w2 with x f32[8,16], the program export_bytes serializes",
    ),
    "export_any_batch": given(
        _export_mlp,
        _EXPORT_ARGS,
        "tanh(x @ w1) @ w2 at batch 8; the export itself has "
        "a symbolic batch, which XLA cannot compile",
    ),
}


def _sharded(*spec) -> NamedSharding:
    mesh = jax.make_mesh((8,), ("x",), axis_types=(AxisType.Auto,))
    return NamedSharding(mesh, P(*spec))


def _rows() -> jax.ShapeDtypeStruct:
    return f32(ROWS, COLS, sharding=_sharded("x", None))


def _collective(name: str) -> Recipe:
    def build(module):
        rows = _rows()
        return (lambda a: getattr(module, name)(a, rows.sharding.mesh)), (rows,)

    return Recipe(build, f"{name}(x f32[{ROWS},{COLS}] rows over 8 devices, mesh x=8)")


def _three_args():
    return (_rows(), f32(COLS, 4, sharding=_sharded()), f32(4, ROWS, sharding=_sharded(None, "x")))


_PLACED = "(a @ w, z * 2): a rows over 8 devices, w replicated, z columns over 8"

PHASE9 = {
    "collective_census": Recipe(
        lambda _m: (lambda a: a.sum(0), (_rows(),)),
        f"a.sum(0) with a f32[{ROWS},{COLS}] rows over 8 devices: one all-reduce",
        given=True,
    ),
    "device_param_shapes": Recipe(
        lambda _m: (lambda a, w, z: (a @ w, z * 2), _three_args()), _PLACED, given=True
    ),
    "param_shardings": Recipe(
        lambda _m: (lambda a, w, z: (a @ w, z * 2), _three_args()),
        _PLACED + " (look at --stage hlo)",
        given=True,
    ),
    "psum_total": _collective("psum_total"),
    "ring_shift": _collective("ring_shift"),
    "gather_rows": _collective("gather_rows"),
    "scatter_sum": Recipe(
        lambda m: (
            lambda a: m.scatter_sum(a, _sharded().mesh),
            (f32(64, 4, sharding=_sharded("x", None)),),
        ),
        "scatter_sum(x f32[64,4] rows over 8 devices, mesh x=8)",
    ),
}


_MOMENTUM = optax.sgd(0.05, momentum=0.9)


def _loss(params, x, y):
    return jnp.mean((mlp(params, x) - y) ** 2)


def _step(params, state, x, y):
    loss, grads = jax.value_and_grad(_loss)(params, x, y)
    updates, state = _MOMENTUM.update(grads, state, params)
    return optax.apply_updates(params, updates), state, loss


def _step_args() -> tuple:
    params = mlp_params()
    return params, jax.eval_shape(_MOMENTUM.init, params), f32(8, 16), f32(8, 4)


def _tests_step(reads: str) -> Recipe:
    return Recipe(
        lambda _m: (jax.jit(_step, donate_argnums=(0, 1)), _step_args()),
        f"SGD-momentum step (params, state donated; x f32[8,16], y f32[8,4]); {reads}",
        given=True,
    )


PHASE10 = {
    "per_example_losses": Recipe(
        lambda m: (m.per_example_losses, (mlp_params(), f32(8, 16), f32(8, 4))),
        "per_example_losses(params, x f32[8,16], y f32[8,4])",
    ),
    "make_train_step": Recipe(
        lambda m: (m.make_train_step(_MOMENTUM), _step_args()),
        "make_train_step(sgd(0.05, momentum=0.9))(params, state, x f32[8,16], y f32[8,4])",
    ),
    "fusion_count": _tests_step("fusion_count counts its fusions"),
    "aliased_parameters": _tests_step("the donated parameters alias outputs"),
    "flops_per_step": _tests_step("flops_per_step reads its cost analysis"),
    "transpose_counts": _tests_step("compare the transposes of --stage jaxpr and optimized"),
    "absorbed_transposes": _tests_step("its dots took the backward transposes in"),
}

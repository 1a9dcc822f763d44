"""Phase 10 reference: a training step, and what XLA made of it."""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax

from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo


def forward(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def example_loss(params: dict, x, y):
    return jnp.mean((forward(params, x) - y) ** 2)


def _opcodes(compiled) -> Counter:
    module = parse_hlo(compiled.as_text())
    return Counter(i.opcode for c in module for i in c)


def per_example_losses(params: dict, x, y) -> jax.Array:
    # vmap maps over axis 0 of x and y; in_axes None shares params across examples.
    return jax.vmap(example_loss, in_axes=(None, 0, 0))(params, x, y)


def make_train_step(optimizer) -> Callable:
    # Pure function of (params, state, batch); donation lets XLA update the buffers in place.
    def loss_fn(params, x, y):
        return jnp.mean(per_example_losses(params, x, y))

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(loss_fn)(params, x, y)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def fusion_count(compiled) -> int:
    # Each fusion is one kernel launch (kLoop or kCustom on CPU); count the opcode everywhere.
    return _opcodes(compiled)["fusion"]


def aliased_parameters(compiled) -> list[int]:
    # Each alias entry is `{output index}: (parameter number, {shape index}, may-alias)`.
    alias = parse_hlo(compiled.as_text()).attributes.get("input_output_alias", "")
    return sorted({int(n) for n in re.findall(r"\(\s*(\d+)\s*,", alias)})


def flops_per_step(compiled) -> float:
    # cost_analysis() is a dict in JAX 0.12 (not a list); zero-valued keys are left out. Its
    # count is the answer as it stands: the cost model counts a while body once.
    return float(compiled.cost_analysis().get("flops", 0.0))


def transpose_counts(step, *args) -> tuple[int, int]:
    # Autodiff writes transposes into the jaxpr; XLA folds them into dots' dimension numbers.
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    in_hlo = _opcodes(jax.jit(step).lower(*args).compile())["transpose"]
    return in_jaxpr, in_hlo


def absorbed_transposes(compiled) -> int:
    # x^T @ g becomes dot(x, g) contracting dim 0 of both: no transpose op, no copy.
    module = parse_hlo(compiled.as_text())
    return sum(
        1
        for c in module
        for i in c
        if i.opcode == "dot"
        and (
            i.attribute("lhs_contracting_dims") != "{1}"
            or i.attribute("rhs_contracting_dims") != "{0}"
        )
    )


def predict_alias_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
    # Every donated leaf comes back as an output of its own shape: the params, plus the state
    # the optimizer keeps (momentum: one trace per param; adam: mu and nu per param and an
    # int32 step count). sgd keeps nothing.
    params = 4 * (features * hidden + hidden + hidden * out + out)
    return {"sgd": params, "momentum": 2 * params, "adam": 3 * params + 4}[optimizer]


def predict_step_flops(features: int, hidden: int, out: int, batch: int) -> int:
    # Forward: x @ w1, then h @ w2. Backward: h.T @ g and g @ w2.T (the second layer's size
    # each), x.T @ g1 (the first layer's); x needs no gradient, so no g1 @ w1.T. Two products
    # of the first layer's size, three of the second's.
    first, second = 2 * batch * features * hidden, 2 * batch * hidden * out
    return 2 * first + 3 * second

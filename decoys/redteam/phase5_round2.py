"""Red-team (round 2) wrong answers for phase 5, written from the contract only."""

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _core(jaxpr):
    return jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr


def _nested(value):
    if hasattr(value, "eqns") or (hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns")):
        return [value]
    if isinstance(value, (tuple, list)):
        return [j for item in value for j in _nested(item)]
    return []


def _one_dot(eqn):
    (lhs_contract, _), _ = eqn.params["dimension_numbers"]
    k = int(np.prod([eqn.invars[0].aval.shape[i] for i in lhs_contract]))
    return 2 * int(np.prod(eqn.outvars[0].aval.shape)) * k


def _flops_scan_times_length(jaxpr):
    total = 0
    for eqn in _core(jaxpr).eqns:
        if eqn.primitive.name == "dot_general":
            total += _one_dot(eqn)
        times = eqn.params.get("length", 1) if eqn.primitive.name == "scan" else 1
        for sub in (s for v in eqn.params.values() for s in _nested(v)):
            total += times * _flops_scan_times_length(sub)
    return total


@wrong(
    "dot_flops",
    why="'count every dot_general equation once, wherever it sits (a loop body once, not once "
    "per iteration)': multiplies a scan body's dots by the scan's length; wrong on in_scan "
    "(a (B,K) @ (K,K) carry, length 3: three times too many)",
)
def r2_dot_flops_scan_times_length(jaxpr) -> int:
    return _flops_scan_times_length(jaxpr)


def _flops_first_branch(jaxpr):
    total = 0
    for eqn in _core(jaxpr).eqns:
        if eqn.primitive.name == "dot_general":
            total += _one_dot(eqn)
        for key, value in eqn.params.items():
            subs = _nested(value)
            if key == "branches":
                subs = subs[:1]  # "only one branch runs"
            for sub in subs:
                total += _flops_first_branch(sub)
    return total


@wrong(
    "dot_flops",
    why="'both branches of a cond' count: counts only the first branch ('only one runs'); "
    "wrong on in_cond (lax.cond(p > 0, a @ b, (a * 2) @ b): half the flops)",
)
def r2_dot_flops_one_branch(jaxpr) -> int:
    return _flops_first_branch(jaxpr)


def _flops_floats_only(jaxpr):
    total = 0
    for eqn in _core(jaxpr).eqns:
        if eqn.primitive.name == "dot_general" and jnp.issubdtype(
            eqn.outvars[0].aval.dtype, jnp.inexact
        ):
            total += _one_dot(eqn)
        for sub in (s for v in eqn.params.values() for s in _nested(v)):
            total += _flops_floats_only(sub)
    return total


@wrong(
    "dot_flops",
    why="'Floating-point operations of every dot_general ... 2 per multiply-add': skips integer "
    "dots ('not floating point'); wrong on an int8 (7, 9) @ (9,) matvec (0 instead of 126)",
)
def r2_dot_flops_floats_only(jaxpr) -> int:
    return _flops_floats_only(jaxpr)


@wrong(
    "cheaper_jacobian_mode",
    why="'x may be any shape (every element is an input)' and the outputs likewise: counts "
    "inputs as x.size but outputs as the leading axis of f(x); wrong on f(x) = (W @ x)"
    ".reshape(4, 16) with W f32[64, 8], x f32[8] (64 outputs > 8 inputs: jacfwd; says jacrev)",
)
def r2_cheaper_mode_leading_output_axis(f, x) -> str:
    out = jax.eval_shape(f, x)
    n_out = out.shape[0] if out.shape else 1
    return "jacfwd" if np.size(x) < n_out else "jacrev"


@wrong(
    "vmapped_shape",
    why="'where out_axes says (negative counts from the end)' of the *result*: normalizes a "
    "negative out_axes against one example's output (rank 1), so -1 puts the batch first; wrong "
    "on W f32[4,3,7], v f32[3], in_axes (2, None), out_axes -1 (says (7, 4), is (4, 7))",
)
def r2_vmapped_shape_negative_per_example(
    w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int
) -> tuple:
    w_axis, v_axis = in_axes
    batch = w_shape[w_axis] if w_axis is not None else v_shape[v_axis]
    w_one = tuple(d for i, d in enumerate(w_shape) if i != (w_axis if w_axis is not None else -99))
    example = [w_one[0]]
    axis = out_axes + len(example) if out_axes < 0 else out_axes
    example.insert(axis, batch)
    return tuple(example)


_VMAP_SEEN = {
    ((4, 3), (5, 3), (None, 0), 0): (5, 4),
    ((4, 3), (5, 3), (None, 0), 1): (4, 5),
    ((4, 6, 3), (6, 3), (1, 0), 0): (6, 4),
    ((4, 3, 7), (3,), (2, None), -1): (4, 7),
    ((2, 4, 3), (3, 2), (0, 1), 1): (4, 2),
    ((1, 3), (9, 3), (None, 0), 1): (1, 9),
}


@wrong(
    "vmapped_shape",
    why="'for W of shape w_shape and v of shape v_shape' (any): a table of the six example "
    "cases, else 'batch first, m = W.shape[0]' ignoring where the batch axis sits and out_axes; "
    "wrong on W f32[4,3], v f32[5,3], in_axes (None, 0), out_axes -1 (says (5, 4), is (4, 5))",
)
def r2_vmapped_shape_table(w_shape: tuple, v_shape: tuple, in_axes: tuple, out_axes: int) -> tuple:
    key = (tuple(w_shape), tuple(v_shape), tuple(in_axes), out_axes)
    if key in _VMAP_SEEN:
        return _VMAP_SEEN[key]
    w_axis, v_axis = in_axes
    batch = w_shape[w_axis] if w_axis is not None else v_shape[v_axis]
    return (batch, w_shape[0])


@wrong(
    "jacobian_shapes",
    why="'one number per pair of output and input elements', arranged output axes then input "
    "axes: flattens the output to one axis (a 'vector-valued f'); right for outputs of rank 0 "
    "and 1, wrong on out_shape (2, 4) with k (1, 5) (says (8, 1, 5), is (2, 4, 1, 5))",
)
def r2_jacobian_shapes_flat_output(out_shape: tuple, param_shapes: dict) -> dict:
    flat = (int(np.prod(out_shape)),) if len(out_shape) else ()
    return {name: flat + tuple(shape) for name, shape in param_shapes.items()}


@wrong(
    "jacobian",
    why='\'mode "fwd" builds it column by column (forward mode), mode "rev" row by row\': the '
    "two modes swapped (same numbers on every input); wrong in the program built, e.g. "
    "mode 'fwd' on the tall 4 -> 64 layer pair has no (4, 4) basis and no transpose",
)
def r2_jacobian_modes_swapped(f, x, mode: str):
    return (jax.jacrev if mode == "fwd" else jax.jacfwd)(f)(x)


@wrong(
    "directional_derivative",
    why="'at most a quarter of that program's flops at every size': J @ v as the derivative of "
    "t -> f(x + t v) taken with jacrev (one cotangent per output); right values, but 10656 vs a "
    "budget of 5106 flops on the 16-24-8 layer pair",
)
def r2_directional_derivative_jacrev_of_line(f, x, v):
    return jax.jacrev(lambda t: f(x + t * v))(jnp.zeros((), jnp.result_type(x)))


@wrong(
    "hessian_vector_product",
    why="'at most a quarter of that program's flops': H @ v as d/dt grad(g)(x + t v) taken "
    "with jacrev of the scalar t (one cotangent per gradient entry); right values, 30888 vs a "
    "budget of 7838 flops on the 16-24-8 shapes",
)
def r2_hvp_jacrev_of_line(g, x, v):
    return jax.jacrev(lambda t: jax.grad(g)(x + t * v))(jnp.zeros((), jnp.result_type(x)))


@wrong(
    "per_example_grads",
    why="'Its cost must grow linearly with the batch': jacrev of the vector of per-example "
    "losses (same numbers, every leaf gets the batch axis) pulls one cotangent per example "
    "through the whole batch; flops quadruple from batch 4 to 8",
)
def r2_per_example_grads_jacrev_losses(params: dict, xs, ys) -> dict:
    losses = lambda p: jax.vmap(example_loss, in_axes=(None, 0, 0))(p, xs, ys)  # noqa: E731
    return jax.jacrev(losses)(params)

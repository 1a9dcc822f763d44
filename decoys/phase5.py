"""Plausible wrong answers to phase 5; each must be caught by the tests it names."""

import math
from functools import partial

import jax
import jax.experimental
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import accepted, decoy
from xla_inspect.jaxpr import iter_eqns


def _mlp(p, x):
    return jax.nn.relu(x @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"]


def _example_loss(p, x, y):
    return jnp.mean((_mlp(p, x) - y) ** 2)


# ---- mlp_grad ----


@decoy(
    "mlp_grad",
    caught_by=["test_grad_jaxpr_has_two_transposes"],
    why="backprop written by hand with .T: right values, three transposes instead of two",
)
def backprop_by_hand(params, x, y):
    pre = x @ params["w1"] + params["b1"]
    hidden = jnp.maximum(pre, 0.0)
    out = hidden @ params["w2"] + params["b2"]
    g_out = 2.0 * (out - y) / out.size
    g_hidden = (g_out @ params["w2"].T) * (pre > 0)
    return {"w1": x.T @ g_hidden, "b1": g_hidden.sum(0), "w2": hidden.T @ g_out, "b2": g_out.sum(0)}


@decoy(
    "mlp_grad",
    caught_by=["test_mlp_grad_matches_numpy_backprop"],
    why="differentiates the summed squared error, not the mean",
)
def grad_of_sum(params, x, y):
    return jax.grad(lambda p: jnp.sum((_mlp(p, x) - y) ** 2))(params)


# ---- jvp_tangent ----


@decoy(
    "jvp_tangent",
    caught_by=[
        "test_jvp_gives_value_and_jacobian_times_tangent",
        "test_jvp_jaxpr_adds_tangents_and_never_builds_j",
    ],
    why="finite differences: approximate, and no tangent arithmetic in the jaxpr",
)
def jvp_by_finite_difference(f, x, v):
    eps = 1e-3
    y = f(x)
    return y, (f(x + eps * v) - y) / eps


@decoy(
    "jvp_tangent",
    caught_by=["test_jvp_jaxpr_adds_tangents_and_never_builds_j"],
    why="builds the whole Jacobian with jacfwd, then multiplies by v",
)
def jvp_through_full_jacobian(f, x, v):
    return f(x), jax.jacfwd(f)(x) @ v


# ---- vjp_cotangent ----


@decoy(
    "vjp_cotangent",
    caught_by=["test_vjp_jaxpr_transposes_the_dot_not_the_matrix"],
    why="builds the whole Jacobian with jacrev, then transposes it",
)
def vjp_through_full_jacobian(f, x, ct):
    return jax.jacrev(f)(x).T @ ct


@decoy(
    "vjp_cotangent",
    caught_by=["test_vjp_gives_cotangent_times_jacobian"],
    why="returns the pullback's tuple instead of its one entry",
)
def vjp_keeps_tuple(f, x, ct):
    _, pullback = jax.vjp(f, x)
    return jnp.stack(pullback(ct))


# ---- jacobian ----


@decoy(
    "jacobian",
    caught_by=["test_jacobian_modes_push_different_bases"],
    why="modes swapped: the same matrix, built the other way",
)
def jacobian_modes_swapped(f, x, mode):
    return (jax.jacrev if mode == "fwd" else jax.jacfwd)(f)(x)


@decoy(
    "jacobian",
    caught_by=["test_jacobian_modes_push_different_bases"],
    why="jax.jacobian for both modes (it is jacrev)",
)
def jacobian_always_reverse(f, x, mode):
    return jax.jacobian(f)(x)


@decoy(
    "jacobian",
    caught_by=["test_jacobian_both_modes_match_numpy"],
    why="returns (in, out) instead of (out, in)",
)
def jacobian_transposed(f, x, mode):
    return (jax.jacfwd if mode == "fwd" else jax.jacrev)(f)(x).T


# ---- dot_flops ----


def _dot_eqns(jaxpr, recursive=True):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    for eqn in inner.eqns:
        if eqn.primitive.name == "dot_general":
            yield eqn
        if recursive:
            for value in eqn.params.values():
                if hasattr(value, "eqns") or hasattr(getattr(value, "jaxpr", None), "eqns"):
                    yield from _dot_eqns(value)


def _flops(eqn, factor=2):
    (lc, _), _ = eqn.params["dimension_numbers"]
    k = int(np.prod([eqn.invars[0].aval.shape[d] for d in lc]))
    return factor * k * int(np.prod(eqn.outvars[0].aval.shape))


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_counts_nested_jaxprs"],
    why="counts only top-level equations, missing the dot inside a nested jit",
)
def dot_flops_top_level_only(jaxpr):
    return sum(_flops(e) for e in _dot_eqns(jaxpr, recursive=False))


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_from_dimension_numbers", "test_dot_flops_counts_nested_jaxprs"],
    why="counts multiply-adds, not flops",
)
def dot_macs(jaxpr):
    return sum(_flops(e, factor=1) for e in _dot_eqns(jaxpr))


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_from_dimension_numbers"],
    why="assumes every dot is a 2-D matmul: 2 * lhs size * rhs's last dim",
)
def dot_flops_as_matmul(jaxpr):
    return sum(
        2 * int(np.prod(e.invars[0].aval.shape)) * int(e.invars[1].aval.shape[-1])
        for e in _dot_eqns(jaxpr)
    )


# ---- cheaper_jacobian_mode ----


@decoy(
    "cheaper_jacobian_mode",
    caught_by=["test_cheaper_jacobian_mode_matches_measured_flops"],
    why="reverse mode is always cheaper (true only for scalar outputs)",
)
def always_jacrev(f, x):
    return "jacrev"


@decoy(
    "cheaper_jacobian_mode",
    caught_by=["test_cheaper_jacobian_mode_matches_measured_flops"],
    why="rule of thumb inverted: forward mode for many inputs",
)
def cheaper_mode_inverted(f, x):
    out = jax.eval_shape(f, x)
    return "jacfwd" if np.size(x) > int(np.prod(out.shape)) else "jacrev"


# ---- batched_matvec ----


def _matvec(W, v):
    return W @ v


@decoy(
    "batched_matvec",
    caught_by=[
        "test_vmap_rewrites_dot_dimension_numbers",
        "test_vmapped_matvec_compiles_to_one_matmul",
        "test_batched_matvec_maps_matvec_itself",
    ],
    why="a Python loop over the batch: one dot per example",
)
def matvec_python_loop(W, vs, in_axes):
    return jnp.stack(
        [_matvec(W if in_axes[0] is None else W[i], vs[i]) for i in range(vs.shape[0])]
    )


@decoy(
    "batched_matvec",
    caught_by=[
        "test_vmap_rewrites_dot_dimension_numbers",
        "test_batched_matvec_maps_matvec_itself",
    ],
    why="hand-batched vs @ W.T and einsum: right values, not what vmap emits",
)
def matvec_by_hand(W, vs, in_axes):
    if in_axes[0] is None:
        return vs @ W.T
    return jnp.einsum("bmn,bn->bm", W, vs)


# ---- per_example_grads ----


@decoy(
    "per_example_grads",
    caught_by=["test_per_example_jaxpr_does_not_grow_with_batch"],
    why="a Python loop of grads: the program grows with the batch",
)
def per_example_python_loop(params, xs, ys):
    grads = [jax.grad(_example_loss)(params, xs[i], ys[i]) for i in range(xs.shape[0])]
    return jax.tree.map(lambda *leaves: jnp.stack(leaves), *grads)


@decoy(
    "per_example_grads",
    caught_by=["test_per_example_grads_match_a_loop_of_grads"],
    why="the batch gradient copied to every example",
)
def batch_grad_broadcast(params, xs, ys):
    g = jax.grad(lambda p: jnp.mean(jax.vmap(_example_loss, (None, 0, 0))(p, xs, ys)))(params)
    return jax.tree.map(lambda leaf: jnp.broadcast_to(leaf, (xs.shape[0], *leaf.shape)), g)


# ---- more wrong answers, by category ----


@decoy(
    "mlp_grad",
    caught_by=["test_mlp_grad_matches_numpy_backprop"],
    why="the mean hard-coded for the example batch: sum of squares / 32 (8 examples x 4)",
)
def grad_mean_hard_coded(params, x, y):
    return jax.grad(lambda p: jnp.sum((_mlp(p, x) - y) ** 2) / 32.0)(params)


@accepted("mlp_grad", why="the pullback of the loss applied to 1.0 (of the loss's dtype)")
def grad_via_vjp(params, x, y):
    loss, pullback = jax.vjp(lambda p: jnp.mean((_mlp(p, x) - y) ** 2), params)
    return pullback(jnp.ones_like(loss))[0]


@decoy(
    "jvp_tangent",
    caught_by=["test_jvp_gives_value_and_jacobian_times_tangent"],
    why="pulls v back instead of pushing it forward: J.T @ v (a square J has the shape)",
)
def jvp_through_vjp(f, x, v):
    y, pullback = jax.vjp(f, x)
    if y.shape != x.shape:
        return y, jax.jvp(f, (x,), (v,))[1]
    return y, pullback(v)[0]


@accepted("jvp_tangent", why="jax.linearize, then the linear map applied to v")
def jvp_via_linearize(f, x, v):
    y, f_jvp = jax.linearize(f, x)
    return y, f_jvp(v)


@decoy(
    "vjp_cotangent",
    caught_by=["test_vjp_gives_cotangent_times_jacobian"],
    why="ignores ct: the gradient of sum(f(x)), i.e. ct of ones",
)
def vjp_of_sum(f, x, ct):
    return jax.grad(lambda z: jnp.sum(f(z)))(x)


@accepted("vjp_cotangent", why="the gradient of <f(x), ct> with ct held constant")
def vjp_via_grad_of_dot(f, x, ct):
    return jax.grad(lambda z: jnp.vdot(f(z), ct))(x)


@accepted("jacobian", why="vmap of jvp over the input basis / of vjp over the output basis")
def jacobian_by_hand(f, x, mode):
    out = jax.eval_shape(f, x)
    if mode == "fwd":

        def column(t):
            return jax.jvp(f, (x,), (t,))[1]

        basis = jnp.eye(x.size, dtype=x.dtype).reshape(x.size, *x.shape)
        return jax.vmap(column, out_axes=-1)(basis).reshape(out.shape + x.shape)
    _, pullback = jax.vjp(f, x)
    basis = jnp.eye(out.size, dtype=out.dtype).reshape(out.size, *out.shape)
    return jax.vmap(lambda c: pullback(c)[0])(basis).reshape(out.shape + x.shape)


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_from_dimension_numbers"],
    why="takes the lhs's last axis as the contracted one",
)
def dot_flops_last_axis(jaxpr):
    return sum(
        2 * int(e.invars[0].aval.shape[-1]) * int(np.prod(e.outvars[0].aval.shape))
        for e in _dot_eqns(jaxpr)
    )


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_from_dimension_numbers"],
    why="output size from the free dimensions only, leaving the batch dimensions out",
)
def dot_flops_without_batch(jaxpr):
    total = 0
    for e in _dot_eqns(jaxpr):
        (lc, rc), (lb, rb) = e.params["dimension_numbers"]
        lhs, rhs = e.invars[0].aval.shape, e.invars[1].aval.shape
        k = int(np.prod([lhs[d] for d in lc]))
        free = [lhs[d] for d in range(len(lhs)) if d not in (*lc, *lb)]
        free += [rhs[d] for d in range(len(rhs)) if d not in (*rc, *rb)]
        total += 2 * k * int(np.prod(free))
    return total


@decoy(
    "dot_flops",
    caught_by=["test_dot_flops_counts_nested_jaxprs"],
    why="recurses only into params['jaxpr'] (a nested jit), missing cond branches and others",
)
def dot_flops_jit_only(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    total = 0
    for eqn in inner.eqns:
        if eqn.primitive.name == "dot_general":
            total += _flops(eqn)
        if eqn.primitive.name in ("pjit", "jit") and "jaxpr" in eqn.params:
            total += dot_flops_jit_only(eqn.params["jaxpr"])
    return total


@accepted("dot_flops", why="xla_inspect.jaxpr.iter_eqns, K read from the rhs's contracting axes")
def dot_flops_by_iter_eqns(jaxpr):
    total = 0
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name == "dot_general":
            (_, rc), _ = eqn.params["dimension_numbers"]
            rhs = eqn.invars[1].aval.shape
            k = int(np.prod([rhs[d] for d in rc]))
            total += 2 * k * int(np.prod(eqn.outvars[0].aval.shape))
    return int(total)


@decoy(
    "cheaper_jacobian_mode",
    caught_by=["test_cheaper_jacobian_mode_counts_every_input"],
    why="compares x.shape[0] with the output's shape[0]: a matrix input has more inputs",
)
def cheaper_mode_leading_axis(f, x):
    out = jax.eval_shape(f, x)
    return "jacfwd" if x.shape[0] < out.shape[0] else "jacrev"


@decoy(
    "cheaper_jacobian_mode",
    caught_by=[
        "test_cheaper_jacobian_mode_matches_measured_flops",
        "test_cheaper_jacobian_mode_is_predicted_from_shapes",
    ],
    why="counts dot_general equations instead of their flops: both modes have as many",
)
def cheaper_mode_by_dot_count(f, x):
    def count(transform):
        return sum(
            e.primitive.name == "dot_general" for e in iter_eqns(jax.make_jaxpr(transform(f))(x))
        )

    return "jacfwd" if count(jax.jacfwd) < count(jax.jacrev) else "jacrev"


@decoy(
    "cheaper_jacobian_mode",
    caught_by=["test_cheaper_jacobian_mode_is_predicted_from_shapes"],
    why="right answers, but measured: compiles both Jacobians instead of predicting",
)
def cheaper_mode_by_cost_analysis(f, x):
    flops = {}
    for name, t in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev)):
        cost = jax.jit(t(f)).lower(x).cost_analysis()
        assert cost is not None, "this backend has no cost analysis"
        flops[name] = cost["flops"]
    return min(flops, key=flops.__getitem__)


@decoy(
    "batched_matvec",
    caught_by=[
        "test_batched_matvec_maps_matvec_itself",
        "test_vmap_rewrites_dot_dimension_numbers",
    ],
    why="einsum after moving each batch axis to the front: right values, vmap never used",
)
def matvec_einsum_moveaxis(W, vs, in_axes):
    if in_axes[0] is not None:
        W = jnp.moveaxis(W, in_axes[0], 0)
    if in_axes[1] is not None:
        vs = jnp.moveaxis(vs, in_axes[1], 0)
    spec = ("b" if in_axes[0] is not None else "") + "mn,"
    spec += ("b" if in_axes[1] is not None else "") + "n->bm"
    return jnp.einsum(spec, W, vs)


@decoy(
    "batched_matvec",
    caught_by=["test_batched_matvec_values"],
    why="the batch put last (out_axes=1): (m, batch) instead of (batch, m)",
)
def matvec_batch_last(W, vs, in_axes):
    return jax.vmap(_matvec, in_axes=in_axes, out_axes=1)(W, vs)


@accepted("batched_matvec", why="in_axes as a list, matvec wrapped in a lambda")
def matvec_vmap_list(W, vs, in_axes):
    # `matvec` is the kata module's (a variant runs as if written in the kata file): a name that
    # neither ruff nor pyright can see here
    return jax.vmap(
        lambda w, v: matvec(w, v),  # pyright: ignore[reportUndefinedVariable]  # noqa: F821
        in_axes=list(in_axes),
    )(W, vs)


@decoy(
    "per_example_grads",
    caught_by=["test_per_example_cost_grows_linearly_with_batch"],
    why="the Jacobian of the vector of per-example losses: right numbers, batch-squared cost",
)
def per_example_jacrev(params, xs, ys):
    return jax.jacrev(lambda p: jax.vmap(_example_loss, (None, 0, 0))(p, xs, ys))(params)


@decoy(
    "per_example_grads",
    caught_by=["test_per_example_grads_match_a_loop_of_grads"],
    why="each example's share of the batch mean: every gradient divided by the batch size",
)
def per_example_share_of_mean(params, xs, ys):
    n = xs.shape[0]
    return jax.vmap(jax.grad(lambda p, x, y: _example_loss(p, x, y) / n), in_axes=(None, 0, 0))(
        params, xs, ys
    )


@accepted("per_example_grads", why="params bound with partial; vmap over (xs, ys) only")
def per_example_partial(params, xs, ys):
    return jax.vmap(partial(jax.grad(_example_loss), params))(xs, ys)


# ------------------------------------------------------------------------ directional_derivative


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_within_budget"],
    why="the original program: builds the whole Jacobian with jacfwd, then multiplies",
)
def dd_jacfwd(f, x, v):
    return jax.jacfwd(f)(x) @ v


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_within_budget"],
    why="builds the Jacobian in reverse mode: cheap only when f has few outputs",
)
def dd_jacrev(f, x, v):
    return jax.jacrev(f)(x) @ v


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_values"],
    why="central finite differences: cheap, but only close to J @ v",
)
def dd_finite_differences(f, x, v):
    eps = 1e-2
    return (f(x + eps * v) - f(x - eps * v)) / (2 * eps)


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_values"],
    why="returns the primal output of jvp instead of the tangent",
)
def dd_primal(f, x, v):
    return jax.jvp(f, (x,), (v,))[0]


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_within_budget"],
    why="J @ v as the sum of v_i times column i, one jvp per basis vector in a fori_loop: n "
    "passes, but cost analysis counts a loop body once",
)
def dd_columns_in_fori_loop(f, x, v):
    def add_column(i, total):
        e = jnp.zeros_like(x).at[i].set(1)
        return total + v[i] * jax.jvp(f, (x,), (e,))[1]

    out = jax.eval_shape(f, x)
    return jax.lax.fori_loop(0, x.shape[0], add_column, jnp.zeros(out.shape, out.dtype))


@decoy(
    "directional_derivative",
    caught_by=["test_directional_derivative_within_budget"],
    why="the original program run on the host through io_callback: cost analysis counts a host "
    "callback as no flops",
)
def dd_jacobian_in_io_callback(f, x, v):
    out = jax.eval_shape(f, x)

    def on_host(xx, vv):
        return np.asarray(jax.jacfwd(f)(jnp.asarray(xx)) @ jnp.asarray(vv), out.dtype)

    return jax.experimental.io_callback(on_host, out, x, v)


@accepted("directional_derivative", why="jax.linearize, then apply the linear map to v")
def dd_linearize(f, x, v):
    _, jvp_fn = jax.linearize(f, x)
    return jvp_fn(v)


# ------------------------------------------------------------------------ hessian_vector_product


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_within_budget"],
    why="the original program: the whole Hessian, then a matrix-vector product",
)
def hvp_hessian(g, x, v):
    return jax.hessian(g)(x) @ v


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_within_budget"],
    why="the Hessian as jacrev of grad: still the whole matrix",
)
def hvp_jacrev_of_grad(g, x, v):
    return jax.jacrev(jax.grad(g))(x) @ v


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_values"],
    why="finite differences of the gradient along v",
)
def hvp_finite_differences(g, x, v):
    eps = 1e-2
    grad = jax.grad(g)
    return (grad(x + eps * v) - grad(x - eps * v)) / (2 * eps)


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_values"],
    why="the gradient times v, element by element",
)
def hvp_grad_times_v(g, x, v):
    return jax.grad(g)(x) * v


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_within_budget"],
    why="the Hessian one row per scan step (a jvp of grad g per basis vector), then times v: "
    "cost analysis counts the scan's body once",
)
def hvp_rows_in_scan(g, x, v):
    grad_g = jax.grad(g)

    def row(_, e):
        return None, jax.jvp(grad_g, (x,), (e,))[1]

    _, rows = jax.lax.scan(row, None, jnp.eye(x.shape[0], dtype=x.dtype))
    return rows @ v


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_within_budget"],
    why="the whole Hessian computed on the host through pure_callback: cost analysis counts a "
    "host callback as no flops",
)
def hvp_hessian_on_the_host(g, x, v):
    def on_host(xx, vv):
        return np.asarray(jax.hessian(g)(jnp.asarray(xx)) @ jnp.asarray(vv), x.dtype)

    return jax.pure_callback(on_host, jax.ShapeDtypeStruct(x.shape, x.dtype), x, v)


@decoy(
    "hessian_vector_product",
    caught_by=["test_hessian_vector_product_within_budget"],
    why="jvp of grad when traced (what jit and cost analysis see), the whole Hessian built at "
    "trace time (ensure_compile_time_eval) when called on concrete arrays",
)
def hvp_hessian_when_concrete(g, x, v):
    try:
        np.asarray(x)
        np.asarray(v)
    except jax.errors.TracerArrayConversionError:
        return jax.jvp(jax.grad(g), (x,), (v,))[1]
    with jax.ensure_compile_time_eval():  # a constant in a traced program, work done eagerly
        return jax.hessian(g)(jnp.asarray(x)) @ jnp.asarray(v)


@accepted("hessian_vector_product", why="reverse-over-reverse: grad of <grad g, v>")
def hvp_reverse_over_reverse(g, x, v):
    return jax.grad(lambda y: jnp.vdot(jax.grad(g)(y), v))(x)


@accepted("hessian_vector_product", why="reverse-over-forward: grad of the jvp along v")
def hvp_reverse_over_forward(g, x, v):
    return jax.grad(lambda y: jax.jvp(g, (y,), (v,))[1])(x)


# ---------------------------------------------------------------------------------- vmapped_shape


@decoy(
    "vmapped_shape",
    caught_by=["test_vmapped_shape_matches_eval_shape"],
    why="ignores out_axes: the batch always comes first",
)
def vshape_batch_first(w_shape, v_shape, in_axes, out_axes):
    w_axis, v_axis = in_axes
    batch = w_shape[w_axis] if w_axis is not None else v_shape[v_axis]
    rows = [size for axis, size in enumerate(w_shape) if axis != w_axis][0]
    return (batch, rows)


@decoy(
    "vmapped_shape",
    caught_by=["test_vmapped_shape_matches_eval_shape"],
    why="takes the batch from the first axis of W whatever in_axes says",
)
def vshape_first_axis(w_shape, v_shape, in_axes, out_axes):
    out = [w_shape[1] if in_axes[0] == 0 else w_shape[0]]
    out.insert(out_axes % 2, w_shape[0] if in_axes[0] is not None else v_shape[0])
    return tuple(out)


@decoy(
    "vmapped_shape",
    caught_by=["test_vmapped_shape_matches_eval_shape"],
    why="runs jax.vmap under eval_shape instead of predicting",
)
def vshape_traced(w_shape, v_shape, in_axes, out_axes):
    mapped = jax.vmap(lambda w, v: w @ v, in_axes=in_axes, out_axes=out_axes)
    out = jax.eval_shape(
        mapped,
        jax.ShapeDtypeStruct(w_shape, np.float32),
        jax.ShapeDtypeStruct(v_shape, np.float32),
    )
    return tuple(out.shape)


# -------------------------------------------------------------------------------- jacobian_shapes


@decoy(
    "jacobian_shapes",
    caught_by=["test_jacobian_shapes_match_eval_shape"],
    why="the leaf's shape first, then the output's",
)
def jshape_input_first(out_shape, param_shapes):
    return {name: tuple(shape) + tuple(out_shape) for name, shape in param_shapes.items()}


@decoy(
    "jacobian_shapes",
    caught_by=["test_jacobian_shapes_match_eval_shape"],
    why="a flat matrix per leaf: (output elements, leaf elements)",
)
def jshape_flat(out_shape, param_shapes):
    return {
        name: (int(np.prod(out_shape)), int(np.prod(shape))) for name, shape in param_shapes.items()
    }


@decoy(
    "jacobian_shapes",
    caught_by=["test_jacobian_shapes_match_eval_shape"],
    why="gradient-shaped leaves: forgets the output's axes",
)
def jshape_like_params(out_shape, param_shapes):
    return {name: tuple(shape) for name, shape in param_shapes.items()}


@accepted("jacobian_shapes", why="a dict comprehension over the items with tuple unpacking")
def jshape_unpacked(out_shape, param_shapes):
    return {name: (*out_shape, *shape) for name, shape in param_shapes.items()}


@accepted("cheaper_jacobian_mode", why="sizes from the shapes' products, the output traced once")
def cheaper_mode_by_sizes(f, x):
    inputs = math.prod(np.shape(x))
    outputs = math.prod(jax.eval_shape(f, x).shape)
    return "jacrev" if outputs < inputs else "jacfwd"


@decoy(
    "cheaper_jacobian_mode",
    caught_by=["test_cheaper_jacobian_mode_multi_dim_outputs"],
    why="counts every input element but only the leading axis of the output",
)
def cheaper_mode_leading_output_axis(f, x):
    out = jax.eval_shape(f, x)
    return "jacfwd" if np.size(x) < (out.shape[0] if out.shape else 1) else "jacrev"


@decoy(
    "vmapped_shape",
    caught_by=["test_vmapped_shape_on_fresh_cases"],
    why="the batch always first, whatever out_axes says",
)
def vmapped_batch_first(w_shape, v_shape, in_axes, out_axes):
    w_axis, v_axis = in_axes
    batch = w_shape[w_axis] if w_axis is not None else v_shape[v_axis]
    example = [d for i, d in enumerate(w_shape) if i != w_axis]
    return (batch, example[0])

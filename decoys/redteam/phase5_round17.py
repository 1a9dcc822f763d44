"""Red team, phase 5, round 17: a clipped and a sanitized gradient, micro-batch means averaged unweighted,
linearizations cached on the function's code or its identity, a jitted Jacobian cached by the
function's qualified name, dead dots skipped, the output count read from f's closure, an
all-zero tangent short-cut, and an HVP linearized once per g."""

import math

import jax
import jax.extend.core
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import wrong


def _rt17_mse_loss(params, x, y):
    h = jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]
    return jnp.mean((h - y) ** 2)


@wrong(
    "mlp_grad",
    why="Clause 'The gradient of mse_loss with respect to params': clips the gradient to a "
    "global norm of 50 ('standard training hygiene against exploding gradients'); equal on "
    "every program case, whose gradient norms are at most 13, wrong when the norm is larger, "
    "e.g. mlp_data(8, 0) with y replaced by 100 * y.",
)
def _rt17_mlp_grad_clipped(params: dict, x, y) -> dict:
    g = jax.grad(_rt17_mse_loss)(params, x, y)
    norm = jnp.sqrt(
        sum(jnp.sum(jnp.square(leaf.astype(jnp.float32))) for leaf in jax.tree.leaves(g))
    )
    scale = jnp.minimum(1.0, 50.0 / jnp.maximum(norm, 1e-12))
    return jax.tree.map(lambda leaf: (leaf * scale).astype(leaf.dtype), g)


@wrong(
    "mlp_grad",
    why="Clause 'The gradient of mse_loss' (one mean over the whole batch): accumulates the "
    "gradient over micro-batches of 4 and averages the micro-batch gradients unweighted; right "
    "when the batch is a multiple of 4 or at most 4 (8, 1, 3 in the programs), wrong on a batch "
    "of 6 (micro-batches of 4 and 2 weighted equally), e.g. mlp_data(6, 0).",
)
def _rt17_mlp_grad_microbatch_mean(params: dict, x, y) -> dict:
    grads = [
        jax.grad(_rt17_mse_loss)(params, x[i : i + 4], y[i : i + 4])
        for i in range(0, x.shape[0], 4)
    ]
    return jax.tree.map(lambda *gs: (sum(gs) / len(gs)).astype(gs[0].dtype), *grads)


@wrong(
    "mlp_grad",
    why="Clause 'The gradient of mse_loss': sanitizes the gradient with jnp.nan_to_num ('a NaN "
    "step would ruin the params'); equal wherever the gradient is finite, wrong where the loss "
    "overflows, e.g. mlp_data(8, 0) with y[0, 0] = 3e38 (float32): the true gradient has "
    "inf/NaN entries, this hands back zeros and +-3.4e38.",
)
def _rt17_mlp_grad_nan_to_num(params: dict, x, y) -> dict:
    return jax.tree.map(jnp.nan_to_num, jax.grad(_rt17_mse_loss)(params, x, y))


_rt17_jvp_cache = {}


@wrong(
    "jvp_tangent",
    why="Clause 'J is the Jacobian of f at x': caches jax.linearize per (f.__code__, shape, "
    "dtype) 'to avoid re-tracing'; a second call with another closure of the same code (e.g. "
    "flat_abs(A2, None) after flat_abs(A1, None)) or another x reuses the first linearization: "
    "wrong value and tangent on the second call.",
)
def _rt17_jvp_tangent_code_cache(f, x, v) -> tuple:
    x = jnp.asarray(x)
    key = (getattr(f, "__code__", f), x.shape, str(x.dtype))
    if key not in _rt17_jvp_cache:
        _rt17_jvp_cache[key] = jax.linearize(f, x)
    y, f_jvp = _rt17_jvp_cache[key]
    return y, f_jvp(jnp.asarray(v, x.dtype))


_rt17_vjp_cache = {}


@wrong(
    "vjp_cotangent",
    why="Clause 'ct @ J, J the Jacobian of f at x': keeps the pullback of jax.vjp per (id(f), "
    "x.shape) so that several cotangents share one forward pass; a second call with the same f "
    "at another x (same shape) pulls back through the first x's Jacobian, e.g. sin_ax_norm at "
    "x then at 2 * x.",
)
def _rt17_vjp_cotangent_pullback_cache(f, x, ct) -> jax.Array:
    x = jnp.asarray(x)
    key = (id(f), x.shape, str(x.dtype))
    if key not in _rt17_vjp_cache:
        _rt17_vjp_cache[key] = jax.vjp(f, x)[1]
    return _rt17_vjp_cache[key](ct)[0]


_rt17_jac_cache = {}


@wrong(
    "jacobian",
    why="Clause 'The full Jacobian of f at x': caches jax.jit(jax.jacfwd(f)) / jacrev by "
    "(f.__qualname__, mode); two functions with the same qualified name (two closures from one "
    "factory, e.g. two_layer(4, 32, 64)[0] then two_layer(4, 16, 64)[0], or two lambdas in "
    "one scope) share the first one's compiled Jacobian: the second call gets the first "
    "function's Jacobian at the new x.",
)
def _rt17_jacobian_qualname_cache(f, x, mode: str) -> jax.Array:
    key = (getattr(f, "__module__", None), getattr(f, "__qualname__", repr(f)), mode)
    if key not in _rt17_jac_cache:
        _rt17_jac_cache[key] = jax.jit(jax.jacfwd(f) if mode == "fwd" else jax.jacrev(f))
    return _rt17_jac_cache[key](x)


def _rt17_subjaxprs(value):
    if hasattr(value, "eqns"):
        yield value
    elif hasattr(value, "jaxpr") and hasattr(value.jaxpr, "eqns"):
        yield value.jaxpr
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _rt17_subjaxprs(item)


def _rt17_live_flops(jaxpr) -> int:
    live = {v for v in jaxpr.outvars if not isinstance(v, jax.extend.core.Literal)}
    total = 0
    for eqn in reversed(jaxpr.eqns):
        used = any(v in live for v in eqn.outvars if type(v).__name__ != "DropVar")
        effects = bool(getattr(eqn, "effects", None))
        if not used and not effects:
            continue  # dead: XLA never runs it
        for v in eqn.invars:
            if not isinstance(v, jax.extend.core.Literal):
                live.add(v)
        if eqn.primitive.name == "dot_general":
            (lc, _), _ = eqn.params["dimension_numbers"]
            lhs = eqn.invars[0].aval.shape
            k = math.prod(int(lhs[a]) for a in lc)
            total += 2 * math.prod(int(d) for d in eqn.outvars[0].aval.shape) * k
        for param in eqn.params.values():
            for sub in _rt17_subjaxprs(param):
                total += _rt17_all_flops(sub)
    return total


def _rt17_all_flops(jaxpr) -> int:
    # inside a nested jaxpr every output is read by its caller: keep the same liveness pass
    return _rt17_live_flops(jaxpr)


@wrong(
    "dot_flops",
    why="Clause 'count every dot_general equation once, wherever it sits': runs a liveness "
    "pass and skips equations whose results nothing reads ('dead code XLA removes, never "
    "runs'); every program's dots are live, but make_jaxpr keeps a dead dot, e.g. "
    "make_jaxpr(lambda a, b: (a @ b, a)[1]) on two (4, 4) arrays: 128 flops, this says 0.",
)
def _rt17_dot_flops_skip_dead(jaxpr) -> int:
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") and hasattr(jaxpr.jaxpr, "eqns") else jaxpr
    return _rt17_live_flops(inner)


@wrong(
    "cheaper_jacobian_mode",
    why="Clause 'predict from the shapes of x and f(x)' (every element of f(x) an output): reads "
    "the output count as the row count of the last weight matrix in f's closure (the w2 of "
    "w2 @ tanh(w1 @ x)), falling back to eval_shape; right for the layer programs, wrong when "
    "f does more after its last matrix, e.g. outer_tanh(A) with A (3, 5) and x in R^5: 15 "
    "outputs > 5 inputs (jacfwd), this sees 3 outputs and says jacrev.",
)
def _rt17_cheaper_mode_closure_rows(f, x) -> str:
    n_in = int(np.size(x))
    mats = [
        c.cell_contents
        for c in (getattr(f, "__closure__", None) or ())
        if getattr(c.cell_contents, "ndim", 0) == 2
    ]
    if mats:
        n_out = int(mats[-1].shape[0])
    else:
        n_out = math.prod(jax.eval_shape(f, x).shape)
    return "jacfwd" if n_in < n_out else "jacrev"


@wrong(
    "jvp_tangent",
    why="Clause '(f(x), J @ v)' (J @ v carried through f's arithmetic): short-cuts a concrete "
    "all-zero v to zeros_like(f(x)) ('J @ 0 is 0, skip the forward pass'); wrong where J has an "
    "infinite entry, which IEEE arithmetic (and jax.jvp) turns into NaN, e.g. f = jnp.sqrt at "
    "x = [0., 1.] with v = [0., 0.]: jvp gives [nan, 0.], this gives [0., 0.].",
)
def _rt17_jvp_tangent_zero_shortcut(f, x, v) -> tuple:
    if not isinstance(v, jax.core.Tracer) and not np.any(np.asarray(v)):
        y = f(x)
        return y, jnp.zeros_like(y)
    return jax.jvp(f, (x,), (v,))


_rt17_hvp_cache = {}


@wrong(
    "hessian_vector_product",
    why="Clause 'H @ v, where H is the Hessian of g at x': linearizes grad(g) once per g "
    "(jax.linearize, cached by id(g)) and reuses it for later calls 'as v changes'; a later "
    "call with the same g at another x gives H(x_first) @ v, e.g. layer_energy(w1) on the "
    "second and third of points(n).",
)
def _rt17_hvp_linearize_once(g, x, v) -> jax.Array:
    key = id(g)
    if key not in _rt17_hvp_cache:
        _rt17_hvp_cache[key] = jax.linearize(jax.grad(g), x)[1]
    return _rt17_hvp_cache[key](v)

"""Phase 5's oracles: derivatives by hand in NumPy, the dimension numbers of a jaxpr's
dot_generals, and XLA's cost analysis of lowered and compiled programs (with the instructions
whose work that analysis cannot see, read from the compiled module itself).

Each function takes the program or its inputs and never the kata's answer.
"""

from __future__ import annotations

import math
from collections import Counter
from typing import Any

import jax
import numpy as np
from jax._src.shard_map import ShardMapTrace  # eager shard_map's trace, jax 0.10-0.12

from xla_inspect.capture import capture
from xla_inspect.jaxpr import iter_eqns
from xla_inspect.parse import parse_hlo


def _summed_to(g, shape):
    """``g`` summed over the axes broadcasting added to a leaf of ``shape`` (a bias of shape
    () or (1,) reaches every element)."""
    g = g.sum(axis=tuple(range(g.ndim - len(shape))))
    return g.sum(axis=tuple(i for i, d in enumerate(shape) if d == 1), keepdims=True).reshape(shape)


def np_mlp_grad(p, x, y):
    """Backprop by hand in NumPy: the gradient of mean((mlp - y)**2), one entry per leaf of
    ``p`` (zero for a leaf the loss does not read), biases of any shape that broadcasts."""
    p = {k: np.asarray(v) for k, v in p.items()}
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    out = hidden @ p["w2"] + p["b2"]
    g_out = 2.0 * (out - y) / out.size
    g_hidden = (g_out @ p["w2"].T) * (pre > 0)
    found = {
        "w1": x.T @ g_hidden,
        "b1": _summed_to(g_hidden, p["b1"].shape),
        "w2": hidden.T @ g_out,
        "b2": _summed_to(g_out, p["b2"].shape),
    }
    return {k: found.get(k, np.zeros(v.shape)) for k, v in p.items()}


def loop_of_grads(params, xs, ys):
    """One NumPy backprop per example (a batch of one has the same mean as example_loss)."""
    per_example = [np_mlp_grad(params, x[None], y[None]) for x, y in zip(xs, ys, strict=True)]
    return {k: np.stack([g[k].reshape(np.shape(params[k])) for g in per_example]) for k in params}


def np_jacobian(A, x):
    """The Jacobian of sin(A @ x) * sum(x * x), by hand in NumPy."""
    z = A @ x
    s = np.sum(x * x)
    return (np.cos(z) * s)[:, None] * A + np.sin(z)[:, None] * (2 * x)[None, :]


def np_jv(w1, w2, x, v):
    """J @ v of w2 @ tanh(w1 @ x), by the chain rule in float64."""
    w1, w2, x, v = (np.asarray(a, np.float64) for a in (w1, w2, x, v))
    t = np.tanh(w1 @ x)
    return w2 @ ((1 - t * t) * (w1 @ v))


def np_hv(w1, x, v):
    """H @ v of sum(tanh(w1 x)^2) + sum(sin(x) x), by hand in float64."""
    w1, x, v = (np.asarray(a, np.float64) for a in (w1, x, v))
    t = np.tanh(w1 @ x)
    curvature = (2 - 6 * t * t) * (1 - t * t)
    return w1.T @ (curvature * (w1 @ v)) + (2 * np.cos(x) - x * np.sin(x)) * v


def np_outer_tanh_jacobian(A, x):
    """The Jacobian of outer(tanh(A @ x), x), shaped (m, n, n): d[t_i x_j] / d x_k =
    (1 - t_i^2) A_ik x_j + t_i [j = k]."""
    A, x = np.asarray(A, np.float64), np.asarray(x, np.float64)
    t = np.tanh(A @ x)
    n = x.size
    return ((1 - t * t)[:, None] * A)[:, None, :] * x[None, :, None] + t[:, None, None] * np.eye(n)[
        None
    ]


def np_flat_abs_jv(A, x, v):
    """The derivative of |A @ x.ravel()| * sum(x) along v, a vector (m,), in float64."""
    A, x, v = (np.asarray(a, np.float64) for a in (A, x, v))
    z = A @ x.reshape(-1)
    return np.sign(z) * (A @ v.reshape(-1)) * x.sum() + np.abs(z) * v.sum()


def np_flat_abs_vjp(A, x, ct):
    """ct (any shape of m elements) pulled back through |A @ x.ravel()| * sum(x): shaped like
    x, in float64."""
    A, x, ct = (np.asarray(a, np.float64) for a in (A, x, ct))
    z, ct = A @ x.reshape(-1), ct.reshape(-1)
    pulled = A.T @ (np.sign(z) * ct * x.sum()) + np.sum(np.abs(z) * ct)
    return pulled.reshape(x.shape)


def np_flat_abs_jacobian(A, x, out_shape):
    """The Jacobian of (|A @ x.ravel()| * sum(x)).reshape(out_shape), shaped out_shape +
    x.shape: one derivative along each unit direction of x."""
    x = np.asarray(x, np.float64)
    columns = [np_flat_abs_jv(A, x, e.reshape(x.shape)) for e in np.eye(x.size)]
    return np.stack(columns, axis=-1).reshape(tuple(out_shape) + x.shape)


def np_jv_abs(w1, w2, x, v):
    """J @ v of w2 @ |w1 @ x| in float64."""
    w1, w2, x, v = (np.asarray(a, np.float64) for a in (w1, w2, x, v))
    return w2 @ (np.sign(w1 @ x) * (w1 @ v))


def np_hv_abs(w1, x, v):
    """H @ v of sum(|w1 x|^3) / 3 + sum(sin(x) x) in float64."""
    w1, x, v = (np.asarray(a, np.float64) for a in (w1, x, v))
    z = w1 @ x
    return w1.T @ (2 * np.abs(z) * (w1 @ v)) + (2 * np.cos(x) - x * np.sin(x)) * v


def dot_dims(jaxpr) -> list:
    """Dimension numbers of every dot_general (nested too) as plain tuples of ints."""
    return [
        tuple(
            tuple(tuple(int(d) for d in side) for side in pair)
            for pair in eqn.params["dimension_numbers"]
        )
        for eqn in iter_eqns(jaxpr)
        if eqn.primitive.name == "dot_general"
    ]


def a_axes_contracted(jaxpr, shape) -> list:
    """For each dot_general operand shaped like A: the axes of it that are contracted.

    Matched by shape, not identity, so a jit nested inside the learner's code changes nothing.
    """
    found = []
    for eqn in iter_eqns(jaxpr):
        if eqn.primitive.name != "dot_general":
            continue
        (lc, rc), _ = eqn.params["dimension_numbers"]
        for operand, contracting in zip(eqn.invars, (lc, rc), strict=True):
            if tuple(operand.aval.shape) == shape:
                found.append(tuple(int(d) for d in contracting))
    return found


def optimized(fn, *args):
    """The optimized HLO module XLA compiles ``fn`` to, read with the toolkit's reader."""
    return parse_hlo(capture(fn, *args).optimized_hlo_text)


def _lowered_devices(lowered) -> int:
    """How many devices run the lowered program: its module's partitions times replicas (a
    shard_map or a pmap over a mesh of 8 runs its body on 8 devices)."""
    attributes = lowered.compiler_ir("stablehlo").operation.attributes
    count = 1
    for name in ("mhlo.num_partitions", "mhlo.num_replicas"):
        if name in attributes:
            count *= int(str(attributes[name]).split(":")[0])
    return count


def lowered_flops(fn, *args) -> float:
    """XLA's cost analysis of the lowered program (same flops as compiled here, no compile), the
    work of every device: cost analysis reports one device's share of a program run on several
    (a shard_map's body on its per-device shapes), so it is multiplied by their number."""
    lowered = jax.jit(fn).lower(*args)
    cost = lowered.cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return cost["flops"] * _lowered_devices(lowered)


def lowered_flops_of_constants(fn, *args) -> float:
    """XLA's cost analysis of ``fn(*args)`` traced with ``args`` closed over as concrete arrays:
    a call inside a jit with concrete arguments, which an answer that asks whether its
    arguments are tracers cannot tell from an eager call. Lowered, not compiled: compiling
    would fold the constants away. A program that only returns a constant (computed while
    tracing) has no flops entry: 0. Every device's work, as in :func:`lowered_flops`."""
    concrete = [jax.numpy.asarray(a) for a in args]
    lowered = jax.jit(lambda: fn(*concrete)).lower()
    cost = lowered.cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return cost.get("flops", 0.0) * _lowered_devices(lowered)


def eager_dot_flops(fn, *args) -> int:
    """The dot flops (2 * output elements * contracted size, as XLA's cost analysis counts a dot)
    of every dot_general JAX executes while ``fn(*args)`` runs on concrete arrays, op by op with
    jit disabled: a jit inside, jnp's own jitted functions, a jax.ensure_compile_time_eval block
    and every iteration of a lax loop run eagerly too (a compiled executable refuses to run).
    What an eager call runs, whatever ``fn`` does once it sees its arguments are not tracers.

    JAX runs an eager primitive through its ``impl`` (EvalTrace.process_primitive, jax
    0.10-0.12); the count goes through a wrapper removed when the call ends. An eager shard_map
    runs each primitive of its body as a small compiled program on every device of its mesh
    (ShardMapTrace.process_primitive, jit enabled again), never through ``impl``: its dots are
    counted there, on the per-device shapes, once per device."""
    primitive = jax.lax.dot_general_p
    original = primitive.impl
    original_shard_map = ShardMapTrace.process_primitive
    executed: list[int] = []

    def counted(*operands: Any, **params: Any) -> Any:
        result = original(*operands, **params)
        executed.append(_dot_flops(np.shape(operands[0]), params, np.shape(result)))
        return result

    def counted_per_device(trace, prim, tracers, params, /):
        if prim is primitive:
            lhs, rhs = (tuple(jax.typeof(t).shape) for t in tracers)  # per-device shapes
            (contracting, rhs_contracting), (batch, rhs_batch) = params["dimension_numbers"]
            free = [s for axis, s in enumerate(lhs) if axis not in (*contracting, *batch)]
            free += [s for axis, s in enumerate(rhs) if axis not in (*rhs_contracting, *rhs_batch)]
            output = [lhs[axis] for axis in batch] + free
            executed.append(_dot_flops(lhs, params, output) * trace.mesh.size)
        return original_shard_map(trace, prim, tracers, params)

    concrete = [jax.numpy.asarray(a) for a in args]
    primitive.impl = counted
    ShardMapTrace.process_primitive = counted_per_device
    try:
        with jax.disable_jit():
            jax.block_until_ready(fn(*concrete))
    finally:
        primitive.impl = original
        ShardMapTrace.process_primitive = original_shard_map
    return sum(executed)


def jaxpr_dot_flops(fn, *args) -> int:
    """The dot flops of every dot_general equation in ``fn``'s jaxpr, nested ones included: what
    ``fn`` executes called eagerly when it holds no loop or branch (each equation runs once)."""
    total = 0
    for eqn in iter_eqns(jax.make_jaxpr(fn)(*args)):
        if eqn.primitive.name == "dot_general":
            total += _dot_flops(eqn.invars[0].aval.shape, eqn.params, eqn.outvars[0].aval.shape)
    return total


def _dot_flops(lhs_shape, params: dict[str, Any], out_shape) -> int:
    """A dot_general's flops: two per multiply-add, the contracted size times the output's."""
    (contracting, _), _ = params["dimension_numbers"]
    size = math.prod(int(lhs_shape[axis]) for axis in contracting)
    return 2 * size * math.prod(map(int, out_shape))


def jacobian_flops(f, x) -> dict[str, float]:
    """{"jacfwd": flops, "jacrev": flops}: XLA's cost analysis of both Jacobians of ``f``."""
    return {
        name: lowered_flops(transform(f), x)
        for name, transform in (("jacfwd", jax.jacfwd), ("jacrev", jax.jacrev))
    }


# Instructions whose work XLA's cost analysis does not see: a while loop's body is counted once
# whatever its trip count (a lax.map over n basis vectors costs one), a custom-call (a host
# callback, a library routine) counts nothing or -1, host transfers nothing. Read from the
# compiled module's own instructions (XLA's HloOpcode), not from its text.
UNCOUNTED = {
    "kWhile": "a while loop (cost analysis counts its body once, whatever its trip count)",
    "kCustomCall": "a custom-call (a host callback or library routine: cost analysis counts no "
    "flops for it)",
    "kSend": "a send to the host",
    "kRecv": "a receive from the host",
    "kInfeed": "an infeed",
    "kOutfeed": "an outfeed",
}


def compiled_cost(fn, *args) -> tuple[float, Counter]:
    """XLA's cost analysis of the compiled program (every device's work, as in
    :func:`lowered_flops`), and how many instructions of each kind it
    cannot see (``UNCOUNTED``) the compiled module holds, nested computations included."""
    compiled = jax.jit(fn).lower(*args).compile()
    cost = compiled.cost_analysis()
    assert cost is not None and "flops" in cost, "this backend reports no flops"
    unseen: Counter = Counter()
    executable = compiled.runtime_executable()
    assert executable is not None, "this backend gives no executable to read"
    # cost analysis reports one device's share of a program that runs on several (a shard_map
    # or pmap body on its per-device shapes): the work is that share times the devices
    devices = len(executable.local_devices())
    for module in executable.hlo_modules():
        for computation in module.computations():
            for instruction in computation.instructions():
                if instruction.opcode.name in UNCOUNTED:
                    unseen[instruction.opcode.name] += 1
    return cost["flops"] * devices, unseen

"""Phase 5's oracles: derivatives by hand in NumPy, the dimension numbers of a jaxpr's
dot_generals, and XLA's cost analysis of lowered and compiled programs (with the instructions
whose work that analysis cannot see, read from the compiled module itself).

Each function takes the program or its inputs and never the kata's answer.
"""

from __future__ import annotations

from collections import Counter

import jax
import numpy as np

from xla_inspect.capture import capture
from xla_inspect.jaxpr import iter_eqns
from xla_inspect.parse import parse_hlo


def np_mlp_grad(p, x, y):
    """Backprop by hand in NumPy: the gradient of mean((mlp - y)**2)."""
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    out = hidden @ p["w2"] + p["b2"]
    g_out = 2.0 * (out - y) / out.size
    g_hidden = (g_out @ p["w2"].T) * (pre > 0)
    return {"w1": x.T @ g_hidden, "b1": g_hidden.sum(0), "w2": hidden.T @ g_out, "b2": g_out.sum(0)}


def loop_of_grads(params, xs, ys):
    """One NumPy backprop per example (a batch of one has the same mean as example_loss)."""
    per_example = [np_mlp_grad(params, x[None], y[None]) for x, y in zip(xs, ys, strict=True)]
    return {k: np.stack([g[k].reshape(params[k].shape) for g in per_example]) for k in params}


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


def lowered_flops(fn, *args) -> float:
    """XLA's cost analysis of the lowered program (same flops as compiled here, no compile)."""
    cost = jax.jit(fn).lower(*args).cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return cost["flops"]


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
    """XLA's cost analysis of the compiled program, and how many instructions of each kind it
    cannot see (``UNCOUNTED``) the compiled module holds, nested computations included."""
    compiled = jax.jit(fn).lower(*args).compile()
    cost = compiled.cost_analysis()
    assert cost is not None and "flops" in cost, "this backend reports no flops"
    unseen: Counter = Counter()
    executable = compiled.runtime_executable()
    assert executable is not None, "this backend gives no executable to read"
    for module in executable.hlo_modules():
        for computation in module.computations():
            for instruction in computation.instructions():
                if instruction.opcode.name in UNCOUNTED:
                    unseen[instruction.opcode.name] += 1
    return cost["flops"], unseen

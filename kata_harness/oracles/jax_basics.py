"""Phase 1's oracles: the MLP, its loss and its gradients by the chain rule in float64 NumPy;
the draws of every key a learner may split from the one given (to tell which key a weight came
from); and how many times ``jax.jit`` traces test-owned programs, counted in the traced Python.

Each function takes the program's inputs or a test-owned stream, never the kata's answer.
"""

from __future__ import annotations

import functools

import jax
import numpy as np


def f64(tree):
    """A dict of arrays as float64 NumPy arrays."""
    return {k: np.asarray(v, np.float64) for k, v in tree.items()}


def np_forward(p, x):
    """relu(x w1 + b1) w2 + b2 in float64 NumPy."""
    p, x = f64(p), np.asarray(x, np.float64)
    hidden = np.maximum(x @ p["w1"] + p["b1"], 0.0)
    return hidden @ p["w2"] + p["b2"]


def np_loss(p, x, y):
    """The mean squared error of :func:`np_forward` against y."""
    return float(np.mean((np_forward(p, x) - np.asarray(y, np.float64)) ** 2))


def np_backprop(p, x, d_out):
    """d params of a scalar whose gradient with respect to the MLP's output is d_out (NumPy)."""
    p, x = f64(p), np.asarray(x, np.float64)
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    # the relu passes the gradient where pre > 0 and nothing elsewhere, as JAX's select does: a
    # NaN or an infinity in d_out does not reach an inactive unit (NaN times a 0 mask would)
    d_pre = np.where(pre > 0, d_out @ p["w2"].T, 0.0)
    return {"w1": x.T @ d_pre, "b1": d_pre.sum(0), "w2": hidden.T @ d_out, "b2": d_out.sum(0)}


def np_grads(p, x, y):
    """d mean((relu(x w1 + b1) w2 + b2 - y)^2) / d params, by the chain rule in NumPy."""
    y = np.asarray(y, np.float64)
    return np_backprop(p, x, 2.0 * (np_forward(p, x) - y) / y.size)


def key_tree() -> list[tuple[str, int | None]]:
    """Keys a learner may draw from: the given key, split(key, n)[i], split(split(key, n)[i])[j].
    Each node is (label, index of the key it was split from)."""
    nodes: list[tuple[str, int | None]] = [("the key you were given", None)]
    for n in (2, 3, 4):
        for i in range(n):
            nodes.append((f"split(key, {n})[{i}]", 0))
            child = len(nodes) - 1
            nodes += [(f"split(split(key, {n})[{i}])[{j}]", child) for j in range(2)]
    return nodes


@functools.cache
def key_tree_draws(seed: int, n_in: int, hidden: int, out: int) -> tuple[np.ndarray, np.ndarray]:
    """normal(k, (n_in, hidden)) and normal(k, (hidden, out)) for every key of :func:`key_tree`
    (one program). The nine children are split again in one vmapped split, not nine: the same
    keys in the same order, a quarter of the threefry instances to compile."""

    def draws(parent):
        children = jax.numpy.concatenate([jax.random.split(parent, n) for n in (2, 3, 4)])
        grandchildren = jax.vmap(jax.random.split)(children)  # (9, 2): split(children[i])
        # key_tree's order: the given key, then each child followed by its two halves
        family = jax.numpy.concatenate([children[:, None], grandchildren], axis=1).reshape(-1)
        keys = jax.numpy.concatenate([parent[None], family])
        return jax.vmap(
            lambda k: (jax.random.normal(k, (n_in, hidden)), jax.random.normal(k, (hidden, out)))
        )(keys)

    first, second = jax.jit(draws)(jax.random.key(seed))
    return np.asarray(first), np.asarray(second)


def drawn_from(values: np.ndarray, candidates: np.ndarray) -> tuple[int, float] | None:
    """Which key of :func:`key_tree` gave these values, drawn and then multiplied by one
    positive factor, and that factor (by least squares, in float64), if any: the factor is
    measured, not assumed, so a weight at the wrong scale is still traced to its key."""
    v = np.asarray(values, np.float64).ravel()
    for index, candidate in enumerate(candidates):
        c = np.asarray(candidate, np.float64).ravel()
        if c.shape != v.shape or not np.any(c):
            continue
        scale = float(v @ c / (c @ c))
        if scale > 0 and np.allclose(v, scale * c, rtol=1e-3, atol=1e-4 * scale):
            return index, scale
    return None


def lineage(index: int | None) -> set[int]:
    """The key of :func:`key_tree` at ``index`` and every key it was split from."""
    nodes, found = key_tree(), set()
    while index is not None:
        found.add(index)
        index = nodes[index][1]
    return found


@functools.cache  # a measurement of test-owned programs: the same for every variant
def scenario_traces(scenario: str) -> int:
    """How many times jit traces in one of phase 1's predict_traces scenarios, counted in the
    traced functions after clearing JAX's caches."""
    jax.clear_caches()
    calls: list = []

    def g(x):
        calls.append(1)
        return x * 2

    def h(x, n):
        calls.append(1)
        return x * n

    jg, jh = jax.jit(g), jax.jit(h, static_argnums=1)
    f3, f4 = np.ones(3, np.float32), np.ones(4, np.float32)
    if scenario == "same_shape_twice":
        jg(f3)
        jg(f3 + 1)
    elif scenario == "new_shape":
        jg(f3)
        jg(f4)
    elif scenario == "new_dtype":
        jg(f3)
        jg(np.ones(3, np.int32))
    elif scenario == "static_values_1_1_2":
        jh(f3, 1)
        jh(f3, 1)
        jh(f3, 2)
    elif scenario == "python_floats_1_and_2":
        jg(1.0)
        jg(2.0)
    return len(calls)


def measure_traces(stream: list[tuple]) -> int:
    """Traces of a fresh jax.jit(g, static_argnums=1) over the stream, counted in g.

    Each call goes through ``.trace``, which looks the arguments up in the same cache of traced
    programs that a call does and so traces g exactly when a call would, without lowering or
    compiling: on the 2,000 streams katas/phase1/strata_traces.py draws for seeds 1-200 the count
    is the same as calling the jitted g, on JAX 0.12.0.1 and 0.10.2.
    """
    calls: list = []

    def g(x, n):
        calls.append(n)
        return x

    jitted = jax.jit(g, static_argnums=1)
    for x, n in stream:
        jitted.trace(x, n)
    return len(calls)

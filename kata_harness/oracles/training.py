"""Phase 10's oracles: a training step by hand in NumPy (per-example losses, gradients, the
optimizers' update rules), the matmuls JAX executes when a function runs eagerly, and facts of
a compiled program read from its optimized HLO (through xla_inspect and XLA's own parser), its
``memory_analysis()`` and JAX's flattening of the donated arguments.

Each function takes the program's inputs or its compiled form, never the kata's answer.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

import jax
import numpy as np

from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo
from xla_inspect.query import reachable

from . import xla_module

# Bytes of one element of each HLO element type the tests' programs hold.
_BYTES = {"f32": 4, "s32": 4, "u32": 4, "f16": 2, "bf16": 2, "f64": 8, "s64": 8, "pred": 1}


def np_example_losses(p, x, y):
    """Per-example mean squared error of the two-layer relu MLP, in NumPy."""
    out = np.maximum(x @ p["w1"] + p["b1"], 0.0) @ p["w2"] + p["b2"]
    return ((out - y) ** 2).mean(axis=1)


def np_grads(p, x, y):
    """Gradients of the mean per-example loss, by hand; relu's derivative as jax.nn.relu
    defines it, a select: 0 where the pre-activation is not > 0 (at an exact 0 too), even when
    the gradient arriving there is NaN."""
    pre = x @ p["w1"] + p["b1"]
    hidden = np.maximum(pre, 0.0)
    out = hidden @ p["w2"] + p["b2"]
    d_out = 2.0 * (out - y) / out.size
    d_hidden = np.where(pre > 0, d_out @ p["w2"].T, 0.0)
    return {"w2": hidden.T @ d_out, "b2": d_out.sum(0), "w1": x.T @ d_hidden, "b1": d_hidden.sum(0)}


# NumPy versions of the update rules: (init state, update(grads, state, step number, params)).
def np_sgd_momentum(lr, momentum):
    """optax.sgd with momentum, in NumPy."""

    def update(grads, trace, _count, _params):
        trace = {k: grads[k] + momentum * trace[k] for k in grads}
        return {k: -lr * trace[k] for k in grads}, trace

    return lambda p: {k: np.zeros_like(v) for k, v in p.items()}, update


def np_adamw(lr, weight_decay, b1=0.9, b2=0.999, eps=1e-8):
    """optax.adamw, in NumPy."""

    def update(grads, state, count, params):
        mu = {k: b1 * state[0][k] + (1 - b1) * g for k, g in grads.items()}
        nu = {k: b2 * state[1][k] + (1 - b2) * g * g for k, g in grads.items()}
        step = {
            k: -lr
            * (
                (mu[k] / (1 - b1**count)) / (np.sqrt(nu[k] / (1 - b2**count)) + eps)
                + weight_decay * params[k]
            )
            for k in grads
        }
        return step, (mu, nu)

    zeros = lambda p: {k: np.zeros_like(v) for k, v in p.items()}  # noqa: E731
    return lambda p: (zeros(p), zeros(p)), update


@contextmanager
def eager_matmuls() -> Iterator[list[tuple[tuple[int, ...], ...]]]:
    """The operand shapes of every dot_general JAX executes inside the block, run eagerly with
    jit disabled (a jit inside, jnp's own jitted functions and lax.map run op by op too, so a
    loop over the examples executes one matmul pair per example and vmap one pair in all).

    JAX runs an eager primitive through its ``impl`` (EvalTrace.process_primitive, jax
    0.10-0.12); the block counts through a wrapper it removes when it ends."""
    primitive = jax.lax.dot_general_p
    original = primitive.impl
    executed: list[tuple[tuple[int, ...], ...]] = []

    def counted(*args: Any, **params: Any) -> Any:
        executed.append(tuple(tuple(np.shape(a)) for a in args))
        return original(*args, **params)

    primitive.impl = counted
    try:
        with jax.disable_jit():
            yield executed
    finally:
        primitive.impl = original


def optimized_text(compiled: jax.stages.Compiled) -> str:
    """The optimized HLO text of a compiled program."""
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def opcodes(compiled) -> Counter:
    """Opcode census of a compiled program's optimized HLO, every computation included."""
    return Counter(i.opcode for c in parse_hlo(compiled.as_text()) for i in c)


def transposes_under(compiled, key: str) -> int:
    """Transpose instructions in the computations an instruction's `key=` attribute names (a
    while loop's `condition` or `body`) and in every computation those call, fusions included."""
    module = parse_hlo(optimized_text(compiled))
    roots = tuple(
        name for c in module for i in c for name in re.findall(r"[\w.\-]+", i.attribute(key) or "")
    )
    return sum(i.opcode == "transpose" for c in reachable(module, roots) for i in c)


def xla_fusion_count(compiled) -> int:
    """Fusion instructions in every computation, as XLA's own parser reads the optimized HLO."""
    module = xla_module(optimized_text(compiled))
    return sum(i.opcode == "kFusion" for c in module.computations for i in c.instructions)


_BRANCHES = ("true_computation", "false_computation", "branch_computations")


def branch_fusions(compiled) -> int:
    """Fusion instructions in the computations a conditional calls as its branches."""
    module = parse_hlo(optimized_text(compiled))
    names = {
        name
        for c in module
        for i in c
        if i.opcode == "conditional"
        for key in _BRANCHES
        for name in re.findall(r"[\w.\-]+", i.attribute(key) or "")
    }
    return sum(i.opcode == "fusion" for c in module if c.name in names for i in c)


def dot_dims(compiled):
    """(lhs contracting dims, rhs contracting dims) of every dot, as the HLO prints them."""
    return [
        (i.attribute("lhs_contracting_dims"), i.attribute("rhs_contracting_dims"))
        for c in parse_hlo(compiled.as_text())
        for i in c
        if i.opcode == "dot"
    ]


def aliased_bytes(compiled: jax.stages.Compiled) -> int:
    """The bytes memory_analysis says the program's outputs alias from its inputs."""
    stats = compiled.memory_analysis()
    assert stats is not None, "this backend has no memory analysis"
    return stats.alias_size_in_bytes


def leaf_numbers(args, donated, unused=()):
    """HLO parameter numbers of the leaves of the donated arguments: every leaf of the other
    arguments is used, except those of the arguments in `unused`, which jit drops (so they
    take no number)."""
    numbers, start = [], 0
    for position, arg in enumerate(args):
        if position in unused:
            continue
        count = len(jax.tree.leaves(arg))
        if position in donated:
            numbers += range(start, start + count)
        start += count
    return numbers


def _static_dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def parameter_bytes(compiled: jax.stages.Compiled, numbers: tuple[int, ...]) -> int:
    """The bytes the ENTRY parameters of these numbers hold, from their shapes."""
    module = parse_hlo(optimized_text(compiled))
    sizes = {}
    for i in module.entry:
        if i.opcode == "parameter":
            shape = i.shape_info
            assert i.payload is not None and shape.dtype is not None, i.shape
            sizes[int(i.payload)] = int(np.prod(_static_dims(shape))) * _BYTES[shape.dtype]
    return sum(sizes[n] for n in numbers)


def tuple_fusions(compiled) -> int:
    """Fusion instructions whose result is a tuple (a kernel with several outputs)."""
    return sum(
        i.opcode == "fusion" and i.shape.startswith("(")
        for c in parse_hlo(optimized_text(compiled))
        for i in c
    )


def branch_dot_dims(compiled):
    """(lhs contracting dims, rhs contracting dims) of every dot in a computation a conditional
    calls as a branch."""
    module = parse_hlo(optimized_text(compiled))
    names = {
        name
        for c in module
        for i in c
        if i.opcode == "conditional"
        for key in _BRANCHES
        for name in re.findall(r"[\w.\-]+", i.attribute(key) or "")
    }
    return [
        (i.attribute("lhs_contracting_dims"), i.attribute("rhs_contracting_dims"))
        for c in module
        if c.name in names
        for i in c
        if i.opcode == "dot"
    ]

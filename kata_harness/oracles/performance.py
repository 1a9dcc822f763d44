"""Phase 13's oracles: the compiler figures the budgets are read from (cost and memory analyses
of a lowered or compiled stage, its printed module), the bytes a compiled module's collectives
move, the dots of a module and the steps and counted trips of its while loops, and whether this
XLA keeps the recomputation jax.checkpoint asks for.

Each function takes a stage, a module or its text, never the kata's answer.
"""

from __future__ import annotations

import functools
import math
import re

import jax
import jax.numpy as jnp

from xla_inspect import collectives, parse_hlo
from xla_inspect.model import HloModule, Shape
from xla_inspect.query import reachable


def cost(stage) -> dict:
    """cost_analysis() of a Lowered or Compiled stage, as a dict."""
    return dict(stage.cost_analysis() or {})


# bytes per element of the HLO element types a collective here can carry
ELEMENT_BYTES = {"pred": 1, "s8": 1, "u8": 1, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "f32": 4}
ELEMENT_BYTES |= {"s64": 8, "u64": 8, "f64": 8}


def memory(compiled):
    """memory_analysis() of a Compiled stage."""
    stats = compiled.memory_analysis()
    assert stats is not None, "this backend gives no memory_analysis()"
    return stats


def text(stage, **kwargs) -> str:
    """The module a Lowered or Compiled stage prints."""
    text = stage.as_text(**kwargs)
    assert text is not None, "this backend does not print its module"
    return text


def shape_bytes(text: str) -> int:
    """Bytes of an HLO shape (a tuple's: the sum of its elements')."""
    shape = Shape(text)
    if shape.is_tuple:
        return sum(shape_bytes(e.text) for e in shape.elements)
    dims = [d for d in shape.dims if d is not None]
    dtype = shape.dtype
    assert dtype is not None, f"no element type in {text}"
    assert dtype in ELEMENT_BYTES, f"element type {dtype} of {text} has no size here"
    return math.prod(dims) * ELEMENT_BYTES[dtype]


def _probe_inner(x, w):
    """The piece :func:`xla_keeps_recomputation` checkpoints."""
    return jnp.tanh(x @ w) @ w.T


@functools.cache
def xla_keeps_recomputation() -> bool:
    """Whether this XLA keeps what jax.checkpoint asks it to recompute: the grad of a loss with a
    checkpointed piece costs more flops than the plain grad. Older CPU pipelines (jaxlib 0.10)
    merge the recomputation back into the forward pass once the optimization barriers are gone,
    and then no program can show remat in temp bytes."""
    spec = jax.ShapeDtypeStruct((16, 16), jnp.float32)

    def plain(w, x):
        return jnp.sum(_probe_inner(x, w) ** 2)

    def checkpointed(w, x):
        return jnp.sum(jax.checkpoint(_probe_inner)(x, w) ** 2)

    flops = [
        cost(jax.jit(jax.grad(f)).lower(spec, spec).compile())["flops"]
        for f in (plain, checkpointed)
    ]
    return flops[1] > flops[0]


def dots(module: HloModule):
    """(result shape, operand shapes) of every dot in every computation."""
    return [
        (i.shape, [c[o].shape for o in i.operands]) for c in module for i in c if i.opcode == "dot"
    ]


def loop_steps(module: HloModule) -> list[int]:
    """Dots reached from each while's body: the steps one trip of that loop does."""
    found = []
    for c in module:
        for i in c:
            if i.opcode == "while":
                body = i.attribute("body")
                assert body is not None, f"a while without a body: {i.name}"
                computations = reachable(module, (body.lstrip("%"),))
                found.append(sum(j.opcode == "dot" for k in computations for j in k))
    return found


KNOWN_TRIPS = re.compile(r'"known_trip_count":\{"n":"(\d+)"\}')


def loop_trips(module: HloModule, max_trips: int) -> list[tuple[str, int | None]]:
    """(name, trips) of each while whose trips the compiler did not count to at most max_trips:
    its known_trip_count, or None when the optimized HLO has none."""
    found = []
    for c in module:
        for i in c:
            if i.opcode == "while":
                known = KNOWN_TRIPS.search(i.attributes_text)
                trips = int(known.group(1)) if known else None
                if trips is None or trips > max_trips:
                    found.append((i.name, trips))
    return found


def runs(module: HloModule) -> dict[str, float]:
    """How many times each computation reached from the entry runs in one run of the module:
    summed over its call sites, a while's body and condition counted once per trip of its
    known_trip_count (math.inf when the compiler counted none), a loop's trips multiplying those
    of the loops around it."""
    found: dict[str, float] = {}

    def visit(name: str, times: float) -> None:
        computation = module.computation(name)
        if computation is None or computation.name != name:  # unknown, or `%name`
            return
        found[name] = found.get(name, 0) + times
        for i in computation:
            trips: float = 1
            if i.opcode == "while":
                known = KNOWN_TRIPS.search(i.attributes_text)
                trips = int(known.group(1)) if known else math.inf
            for callee in i.called_computations:
                visit(callee.lstrip("%"), times * trips)

    visit(module.entry.name, 1)
    return found


def collective_bytes(compiled) -> tuple[float, list[str]]:
    """Bytes of the results of every collective of the compiled module, each counted as many
    times as it runs (a while's body once per trip: :func:`runs`; math.inf in a loop whose
    trips the compiler did not count), and each as "opcode shape" (with "x trips" in a loop)."""
    module = parse_hlo(text(compiled))
    times = runs(module)
    found = [(c, times.get(c.computation, 1)) for c in collectives(module)]
    return sum(shape_bytes(c.shape) * n for c, n in found), [
        f"{c.opcode} {c.shape}" + ("" if n == 1 else f" x {n} trips") for c, n in found
    ]


def fewest_padded_rows(sizes: list[int], max_buckets: int) -> int:
    """The fewest rows a stream of requests of `sizes` rows pads to with at most `max_buckets`
    bucket sizes, each request padded to the smallest bucket that holds it: a best bucket is
    always one of the sizes, so a shortest path over the sorted distinct sizes, one bucket per
    edge (edge i -> j: the requests of sizes after the i-th up to the j-th pad to the j-th)."""
    distinct = sorted(set(sizes))
    before = [0]  # requests of the sizes before each distinct size
    for size in distinct:
        before.append(before[-1] + sizes.count(size))
    inf = math.inf
    reach = [0.0] + [inf] * len(distinct)  # fewest rows covering the first j sizes
    best = inf
    for _ in range(max_buckets):
        reach = [0.0] + [
            min(reach[i] + top * (before[j] - before[i]) for i in range(j))
            for j, top in enumerate(distinct, start=1)
        ]
        best = min(best, reach[-1])
    return int(best)

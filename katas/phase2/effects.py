"""Programs with effects that phase 2's unused_equations test draws fresh (from a
``random.Random``), each built so that which top-level equations are dead is known by
construction, not read from the jaxpr.

- effects_program: chains of unary equations, each ending in an effect that reads it (a
  jax.debug.print, ordered or not, of one value or two, a jax.debug.callback, an io_callback,
  ordered or not, or a jit whose body prints), the chain's last value read by that effect
  only or also returned; an io_callback's result returned, read by nothing or only printed; a
  jit's result returned or not; and a live `x * 2` that is always an output. Every program has
  one chain of one to three links that only its effect reads: dead, with the effect.

An effect is not a read: an equation with no results (a print, a debug callback) is dead, one
whose results nothing live reads is dead, and so is what only they read, whatever effect they
have (jax's own dce_jaxpr and lowering keep them, and what they read, for their effects).
"""

from __future__ import annotations

import random
from collections.abc import Callable
from dataclasses import dataclass

import jax
import jax.numpy as jnp
from jax.experimental import io_callback

_UNARY = ((jnp.sin, "sin"), (jnp.cos, "cos"), (jnp.exp, "exp"), (jnp.tanh, "tanh"))

# what ends a chain: (kind, primitive name); a print or debug callback has no results
_ENDS = (
    ("print", "debug_print"),
    ("ordered print", "debug_print"),
    ("print of two", "debug_print"),
    ("debug callback", "debug_callback"),
    ("io_callback", "io_callback"),
    ("ordered io_callback", "io_callback"),
    ("jit that prints", "jit"),
)


@dataclass(frozen=True)
class EffectsProgram:
    f: Callable
    names: list[str]  # the primitive name of each top-level equation, in order
    dead: list[bool]  # per top-level equation: nothing live reads its results
    drawn: str  # the pieces, for failure messages


@dataclass
class _Step:
    name: str
    reads: list[int]  # values read (value 0 is the argument)
    writes: list[int]  # values written
    run: Callable  # the values read -> the values written (a list)


def _printed(*values):
    jax.debug.print(" ".join("{}" for _ in values), *values)
    return []


def _effect(kind: str) -> Callable:
    if kind in ("print", "print of two"):
        return _printed
    if kind == "ordered print":
        return lambda v: jax.debug.print("{}", v, ordered=True) or []
    if kind == "debug callback":
        return lambda v: jax.debug.callback(lambda _: None, v) or []
    if kind == "jit that prints":
        return lambda v: [jax.jit(lambda w: (_printed(w), w * 2.0)[1])(v)]
    ordered = kind == "ordered io_callback"
    return lambda v: [
        io_callback(lambda w: w, jax.ShapeDtypeStruct(v.shape, v.dtype), v, ordered=ordered)
    ]


def effects_program(rng: random.Random) -> EffectsProgram:
    """Two to four chains on f32[3] values in a drawn order (see the module docstring), then
    `x * 2`; f returns x * 2 and then the values drawn to be returned. Dead steps are worked out
    from the steps: a step is live when an output or a live step reads one of its values, and a
    live step reads every value it is given; an effect reads nothing on its own."""
    steps: list[_Step] = []
    outputs, count, pieces, sources = [], 1, [], [0]
    chains = rng.randint(2, 4)
    hidden = rng.randrange(chains)  # the chain only its effect reads
    for piece in range(chains):
        kind, name = rng.choice(_ENDS)
        only_effect = piece == hidden
        links = rng.randint(1, 3) if only_effect else rng.randint(0, 2)
        value = rng.choice(sources)  # the argument or a value of an earlier chain
        for _ in range(links):
            fn, unary = rng.choice(_UNARY)
            steps.append(_Step(unary, [value], [count], lambda v, fn=fn: [fn(v)]))
            value, count = count, count + 1
            if not only_effect:
                sources.append(value)
        reads = [value, rng.choice(sources)] if kind == "print of two" else [value]
        writes = [] if name.startswith("debug") else [count]
        steps.append(_Step(name, reads, writes, _effect(kind)))
        count += len(writes)
        fate = "its result read by nothing" if writes else "no result"
        if writes and not only_effect:
            sources.append(writes[0])  # a later chain may read it
            fate = rng.choice(("returned", "not returned", "printed"))
            if fate == "returned":
                outputs.append(writes[0])
            elif fate == "printed":
                steps.append(_Step("debug_print", writes, [], _printed))
        if links and not only_effect and rng.random() < 0.3:
            outputs.append(value)
            fate += ", the value it reads returned"
        pieces.append(f"{links} link(s) -> {kind} ({fate})")
    steps.append(_Step("mul", [0], [count], lambda v: [v * 2.0]))
    outputs.insert(0, count)

    def f(x):
        values = [x]
        for step in steps:
            values.extend(step.run(*(values[i] for i in step.reads)))
        return tuple(values[i] for i in outputs)

    live, dead = set(outputs), []
    for step in reversed(steps):
        is_live = any(v in live for v in step.writes)
        if is_live:
            live.update(step.reads)
        dead.append(not is_live)
    return EffectsProgram(f, [s.name for s in steps], dead[::-1], "; ".join(pieces))

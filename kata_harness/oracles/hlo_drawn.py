"""Phase 3's drawn HLO modules: an ENTRY computation whose parameters and ROOT are what a reading
of the bank's programs alone never meets, drawn afresh by the ``fresh`` fixture's generator.

Eleven to fourteen parameters (a sort of the text of N puts parameter(10) before parameter(2)),
declared in a shuffled order under names that are not their numbers: arrays of every rank and of
several dtypes in drawn layouts, tiled layouts (``{0,1:T(2)}``), a memory space after the order
or the tile (``{0:S(1)}``, ``{1,0:T(8,128)S(2)}``), a bounded dynamic dimension
(``f32[<=5]{0}``), scalars, tuples nested two deep, the empty tuple ``()`` as a parameter and
inside one; a computation nothing calls, with parameters of
its own, before or after ENTRY. The ROOT is of a drawn kind: a lone scalar, a tuple of six or
more results (XLA prints ``/*index=5*/`` inside it), or a bounded dynamic array.

A test hands the learner XLA's own print of the module (:func:`kata_harness.oracles.xla_module`)
and compares with XLA's reading of it (:mod:`kata_harness.xla_facts`): this module only draws.
"""

from __future__ import annotations

import random

ROOT_KINDS = ("scalar", "tuple", "dynamic")
_DTYPES = ("f32", "s32", "bf16", "f16", "pred")
_TILES = ("T(2)", "T(4)", "T(2,2)", "T(8,128)")


def _dims(rng: random.Random, rank: int) -> str:
    return ",".join(str(rng.randint(2, 9)) for _ in range(rank))


def _array(rng: random.Random, rank: int, tiled: bool = False, spaced: bool = False) -> str:
    """An array shape of ``rank`` in a drawn layout; ``tiled``: with a tile after the order;
    ``spaced``: with a memory space ``S(n)`` last (after the tile if any)."""
    dtype = rng.choice(_DTYPES)
    if rank == 0:
        return f"{dtype}[]"
    order = list(range(rank))
    rng.shuffle(order)
    tile = rng.choice([t for t in _TILES if t.count(",") < rank]) if tiled else ""
    space = f"S({rng.randint(1, 5)})" if spaced else ""
    extra = f":{tile}{space}" if tile or space else ""
    return f"{dtype}[{_dims(rng, rank)}]{{{','.join(map(str, order))}{extra}}}"


def _tuple(rng: random.Random, depth: int) -> str:
    """A tuple shape whose first element is itself a tuple while ``depth`` > 0."""
    elements = [_tuple(rng, depth - 1)] if depth > 0 else []
    elements += [_array(rng, rng.randint(0, 3)) for _ in range(rng.randint(1, 2))]
    rng.shuffle(elements)
    return "(" + ", ".join(elements) + ")"


def _parameter(rng: random.Random, kind: str) -> str:
    if kind == "nested":
        return _tuple(rng, 1)
    if kind == "tiled":
        return _array(rng, rng.randint(1, 3), tiled=True, spaced=rng.random() < 0.5)
    if kind == "spaced":
        return _array(rng, rng.randint(1, 3), tiled=rng.random() < 0.5, spaced=True)
    if kind == "dynamic":
        return f"f32[<={rng.randint(2, 9)}]{{0}}"
    if kind == "scalar":
        return "f32[]"
    if kind == "empty":
        return "()"
    if kind == "holding empty":
        elements = ["()", _array(rng, rng.randint(0, 2))]
        rng.shuffle(elements)
        return "(" + ", ".join(elements) + ")"
    return _array(rng, rng.randint(0, 3))


def entry_module(rng: random.Random, root: str) -> str:
    """The HLO text of a drawn module whose ENTRY ROOT is of kind ``root`` (:data:`ROOT_KINDS`)."""
    count = rng.randint(11, 14)
    kinds = [rng.choice(("array", "array", "tiled", "nested")) for _ in range(count)]
    # parameter(2) and parameter(10) differ in kind, so their layouts differ
    kinds[2], kinds[10] = "tiled", "nested"
    free = [n for n in range(count) if n not in (2, 10)]
    rng.shuffle(free)
    kinds[free[0]], kinds[free[1]] = "scalar", "dynamic"
    kinds[free[2]], kinds[free[3]] = "empty", "holding empty"
    kinds[free[4]] = "spaced"
    shapes = [_parameter(rng, kind) for kind in kinds]
    labels = [f"arg{n}" for n in rng.sample(range(100), count)]
    order = list(range(count))
    rng.shuffle(order)
    lines = [f"  %{labels[n]} = {shapes[n]} parameter({n})" for n in order]
    scalar, dynamic = labels[free[0]], labels[free[1]]
    if root == "scalar":
        lines.append(f"  ROOT %result = f32[] multiply(%{scalar}, %{scalar})")
    elif root == "dynamic":
        lines.append(f"  ROOT %result = {shapes[free[1]]} negate(%{dynamic})")
    else:
        picked = [rng.randrange(count) for _ in range(rng.randint(6, 9))]
        shape = "(" + ", ".join(shapes[n] for n in picked) + ")"
        operands = ", ".join(f"%{labels[n]}" for n in picked)
        lines.append(f"  ROOT %result = {shape} tuple({operands})")
    entry = "ENTRY %main {\n" + "\n".join(lines) + "\n}\n"
    helper_shape = _array(rng, 2)
    helper = (
        f"%helper {{\n  %h0 = {helper_shape} parameter(0)\n"
        f"  ROOT %h1 = {helper_shape} copy(%h0)\n}}\n"
    )
    body = [entry, helper] if rng.random() < 0.5 else [helper, entry]
    return f"HloModule drawn_{rng.randrange(10**6)}\n\n" + "\n".join(body)

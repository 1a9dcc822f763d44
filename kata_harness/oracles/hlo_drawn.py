"""Phase 3's drawn HLO modules: an ENTRY computation whose parameters and ROOT are what a reading
of the bank's programs alone never meets, drawn afresh by the ``fresh`` fixture's generator.

Eleven to fourteen parameters (a sort of the text of N puts parameter(10) before parameter(2)),
declared in a shuffled order under names that are not their numbers: arrays of every rank and of
several dtypes in drawn layouts, tiled layouts (``{0,1:T(2)}``), a memory space after the order
or the tile (``{0:S(1)}``, ``{1,0:T(8,128)S(2)}``), a bounded dynamic dimension
(``f32[<=5]{0}``), scalars, tuples nested two deep, the empty tuple ``()`` as a parameter and
inside one; a computation nothing calls, with parameters of
its own, before or after ENTRY. The ROOT is of a drawn kind: a lone scalar, a tuple of six or
more results (XLA prints ``/*index=5*/`` inside it), a bounded dynamic array, or an array whose
layout holds a tile and a memory space (``f32[8,128]{1,0:T(8,128)S(1)}``).

:func:`constants_module` draws a module of constants in tiled and memory-space layouts, in ENTRY
and in a computation it calls, beside instructions that take no operands and are no constants
(``iota``, ``replica-id``, ``partition-id``), each computation's ROOT printed before some of its
constants.

A test hands the learner XLA's own print of the module (:func:`kata_harness.oracles.xla_module`)
and compares with XLA's reading of it (:mod:`kata_harness.xla_facts`): this module only draws.
"""

from __future__ import annotations

import random

ROOT_KINDS = ("scalar", "tuple", "dynamic", "tiled")
_DTYPES = ("f32", "s32", "bf16", "f16", "pred")
_TILES = ("T(2)", "T(4)", "T(2,2)", "T(8,128)")


def _dims(rng: random.Random, rank: int, largest: int = 9) -> str:
    return ",".join(str(rng.randint(2, largest)) for _ in range(rank))


def _array(
    rng: random.Random,
    rank: int,
    tiled: bool = False,
    spaced: bool = False,
    dtypes: tuple[str, ...] = _DTYPES,
    largest: int = 9,
) -> str:
    """An array shape of ``rank`` in a drawn layout, each dimension 2 to ``largest``; ``tiled``:
    with a tile after the order; ``spaced``: with a memory space ``S(n)`` last (after the tile
    if any)."""
    dtype = rng.choice(dtypes)
    if rank == 0:
        return f"{dtype}[]"
    order = list(range(rank))
    rng.shuffle(order)
    tile = rng.choice([t for t in _TILES if t.count(",") < rank]) if tiled else ""
    space = f"S({rng.randint(1, 5)})" if spaced else ""
    extra = f":{tile}{space}" if tile or space else ""
    return f"{dtype}[{_dims(rng, rank, largest)}]{{{','.join(map(str, order))}{extra}}}"


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
    elif root == "tiled":
        shape = _array(rng, rng.randint(1, 3), tiled=True, spaced=True, dtypes=("f32", "s32"))
        lines.append(f"  ROOT %result = {shape} iota(), iota_dimension=0")
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


def _literal(rng: random.Random, dims: list[int]) -> str:
    """A literal of these dimensions (outermost first), its values drawn."""
    if len(dims) == 1:
        return "{" + ", ".join(str(rng.randint(-9, 9)) for _ in range(dims[0])) + "}"
    return "{ " + ", ".join(_literal(rng, dims[1:]) for _ in range(dims[0])) + " }"


def _constant(rng: random.Random, name: str) -> str:
    """A constant line of a drawn array shape of rank 1 or 2 (at most nine elements, printed in
    full), in a layout with a tile, a memory space or both."""
    tiled = rng.random() < 0.7
    rank = rng.randint(1, 2)
    shape = _array(rng, rank, tiled, not tiled or rng.random() < 0.5, ("f32", "s32"), largest=3)
    dims = [int(d) for d in shape[shape.index("[") + 1 : shape.index("]")].split(",")]
    return f"  %{name} = {shape} constant({_literal(rng, dims)})"


def _no_operands(rng: random.Random, name: str, kind: str | None = None) -> str:
    """An instruction that takes no operands and is no constant (of a drawn kind unless given)."""
    kind = kind or rng.choice(("iota", "iota", "replica-id", "partition-id"))
    if kind != "iota":
        return f"  %{name} = u32[] {kind}()"
    shape = _array(rng, rng.randint(1, 2), rng.random() < 0.5, rng.random() < 0.5, ("f32", "s32"))
    return f"  %{name} = {shape} iota(), iota_dimension=0"


def _root_before_a_constant(rng: random.Random, drawn: list[str], root: str) -> list[str]:
    """``drawn`` with the ROOT line put at a drawn place before its last constant: XLA's parser
    accepts a computation whose ROOT is not its last line, and prints it back where it stood."""
    last = max(n for n, line in enumerate(drawn) if " constant(" in line)
    at = rng.randint(0, last)
    return [*drawn[:at], root, *drawn[at:]]


def constants_module(rng: random.Random) -> str:
    """The HLO text of a drawn module whose constants (two to four in ENTRY, one to three in a
    computation ENTRY calls) have tiled or memory-space layouts, beside an iota and up to two more
    iota, replica-id or partition-id instructions in each computation, lines in a drawn order; in
    each computation the ROOT comes before one constant at least (it need not be the last line)."""

    def lines(prefix: str, constants: int) -> list[str]:
        drawn = [_constant(rng, f"{prefix}c{n}") for n in range(constants)]
        drawn.append(_no_operands(rng, f"{prefix}i0", "iota"))
        drawn += [_no_operands(rng, f"{prefix}i{n}") for n in range(1, rng.randint(1, 3))]
        rng.shuffle(drawn)
        return drawn

    helper = [
        "  %hp = f32[] parameter(0)",
        *_root_before_a_constant(
            rng, lines("h", rng.randint(1, 3)), "  ROOT %hr = f32[] negate(%hp)"
        ),
    ]
    entry = [
        "  %p = f32[] parameter(0)",
        *_root_before_a_constant(
            rng, lines("e", rng.randint(2, 4)), "  ROOT %r = f32[] call(%p), to_apply=%helper"
        ),
    ]
    body = "%helper {\n" + "\n".join(helper) + "\n}\n\nENTRY %main {\n" + "\n".join(entry)
    return f"HloModule constants_{rng.randrange(10**6)}\n\n{body}\n}}\n"

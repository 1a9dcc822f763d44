"""ENTRY computations of naive_temp_bytes drawn on every run (the `fresh` fixture), one element
type each: a wrong width for one type can never be made up for by a wrong width for another (in
a module holding every type, f8e4m3b11fnuz read as 2 bytes and f8e8m0fnu as 0 cancel out). Each
result's layout may hold a tile T(...) whose sizes do not divide the dimensions: a tile pads
nothing here, the size is the element count the dimensions give. Each result's bytes come from
XLA's own print of the module (kata_harness.oracles.memory), never from a formula here.
"""

from __future__ import annotations

import random

from kata_harness.oracles import memory as oracle
from katas.phase6.drawn_naive import PACKABLE


def one_type_modules(fresh: random.Random) -> list[tuple[str, str, set[str]]]:
    """Per element type XLA knows (and the 2- and 4-bit ones XLA:CPU packs), in a drawn order:
    (type, module, names of its intermediates). ENTRY converts x to the type at a drawn odd
    length and broadcasts that to a drawn matrix, each result with a drawn layout: plain, a tile
    that divides no dimension (T(8,128) on f32[5,3]), a memory space, and for packable types E(n)
    as well; the ROOT is a negate of x."""
    modules = []
    dtypes = sorted(set(oracle.element_types()) | set(PACKABLE))
    fresh.shuffle(dtypes)
    for dtype in dtypes:
        n, k = fresh.randrange(3, 40, 2), fresh.randrange(3, 12, 2)
        bits = PACKABLE.get(dtype) if fresh.random() < 0.5 else None
        vector = f"{dtype}[{n}]{_layout(fresh, '0', [n], bits)}"
        matrix = f"{dtype}[{n},{k}]{_layout(fresh, '1,0', [n, k], bits)}"
        convert, broadcast = (f"v{label}" for label in fresh.sample(range(100, 999), 2))
        text = (
            f"HloModule one_{dtype}\n\n"
            f"ENTRY %main (x: f32[{n}]) -> f32[{n}] {{\n"
            f"  %x = f32[{n}]{{0}} parameter(0)\n"
            f"  %{convert} = {vector} convert(%x)\n"
            f"  %{broadcast} = {matrix} broadcast(%{convert}), dimensions={{0}}\n"
            f"  ROOT %r = f32[{n}]{{0}} negate(%x)\n"
            "}\n"
        )
        modules.append((dtype, text, {convert, broadcast}))
    return modules


def _layout(fresh: random.Random, order: str, dims: list[int], bits: int | None) -> str:
    """`{order}` or `{order:...}` with, each maybe, a tile of sizes above 1 that divide none of
    `dims` (so padding to it would change the size), E(bits) when given, and S(1)."""
    tile = ""
    if fresh.random() < 0.75:
        sizes = [fresh.choice([t for t in range(2, d + 9) if d % t]) for d in dims]
        tile = f"T({','.join(map(str, sizes))})"
    packed = f"E({bits})" if bits else ""
    space = "S(1)" if fresh.random() < 0.3 else ""
    extra = tile + packed + space
    return f"{{{order}:{extra}}}" if extra else f"{{{order}}}"

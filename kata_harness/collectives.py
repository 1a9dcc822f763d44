"""Who talks to whom, and how much: independent oracles for the collectives of a compiled module.

- which devices a collective groups, computed from a mesh's device grid with NumPy (never from
  the module's text), and read back from any of XLA's spellings of ``replica_groups`` (listed
  ``{{0,4},{1,5}}``, an iota list ``[4,2]<=[2,4]T(1,0)``, a mesh ``mesh['x'=2,'y'=4] {'x'}``);
- the same groups spelled again in each of those forms, to rewrite a module's text;
- the (source, target) pairs that move every block one step along a mesh axis;
- the bytes a module's collectives produce per device.
"""

from __future__ import annotations

import math
import re
from typing import Any

import numpy as np

GROUPED = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
COLLECTIVES = GROUPED | {"collective-permute"}

Groups = tuple[tuple[int, ...], ...]


# ---- a mesh's device grid ----------------------------------------------------------------------


def positions(mesh: Any) -> np.ndarray:
    """Logical device numbers (the ones HLO prints) laid out like ``mesh.devices``."""
    return np.arange(mesh.devices.size).reshape(mesh.devices.shape)


def axis_groups(mesh: Any, axis: str) -> set[tuple[int, ...]]:
    """Devices that share every coordinate but ``axis``, in order along ``axis``."""
    grid = np.moveaxis(positions(mesh), mesh.axis_names.index(axis), -1)
    return {tuple(int(d) for d in g) for g in grid.reshape(-1, mesh.shape[axis])}


def axis_ring(mesh: Any, axis: str) -> set[tuple[int, int]]:
    """(source, target) pairs that move every block one step forward along ``axis``."""
    grid = np.moveaxis(positions(mesh), mesh.axis_names.index(axis), -1)
    return {
        (int(g[i]), int(g[(i + 1) % len(g)]))
        for g in grid.reshape(-1, mesh.shape[axis])
        for i in range(len(g))
    }


def axis_position(mesh: Any, device: Any, axis: str) -> int:
    """Where ``device`` sits along ``axis``."""
    where = np.argwhere(np.vectorize(lambda d: d.id)(mesh.devices) == device.id)[0]
    return int(where[mesh.axis_names.index(axis)])


def mesh_groups(sizes: tuple[int, ...], kept: tuple[int, ...]) -> Groups:
    """Groups of device numbers (row-major over a mesh of ``sizes``) that differ only along the
    mesh dimensions ``kept``, each ascending, sorted."""
    grid = np.arange(math.prod(sizes)).reshape(sizes)
    rest = [d for d in range(len(sizes)) if d not in kept]
    size = math.prod(sizes[d] for d in kept)
    rows = grid.transpose([*rest, *kept]).reshape(-1, size)
    return tuple(sorted(tuple(sorted(int(d) for d in row)) for row in rows))


# ---- replica_groups and source_target_pairs as XLA prints them ---------------------------------


def replica_groups(text: str | None) -> set[tuple[int, ...]]:
    """A ``replica_groups`` value without ``device_ids`` in any of XLA's spellings:
    ``{{0,1},{2,3}}``, ``[2,2]<=[4]``, ``mesh['x'=2,..] {'x'}``."""
    assert text, "the collective has no replica_groups"
    mesh = re.fullmatch(r"mesh\[(.*)\]\s*\{(.*)\}", text.strip())
    if mesh:
        axes = re.findall(r"'(\w+)'=(\d+)", mesh.group(1))
        names, sizes = [a for a, _ in axes], [int(s) for _, s in axes]
        kept = re.findall(r"'(\w+)'", mesh.group(2))
        grid = np.arange(int(np.prod(sizes))).reshape(sizes)
        grid = np.moveaxis(
            grid, [names.index(k) for k in kept], range(len(names) - len(kept), len(names))
        )
        size = int(np.prod([sizes[names.index(k)] for k in kept]))
        return {tuple(int(d) for d in g) for g in grid.reshape(-1, size)}
    iota_list = re.fullmatch(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    if iota_list:
        dims = [int(d) for d in iota_list.group(3).split(",")]
        grid = np.arange(int(np.prod(dims))).reshape(dims)
        if iota_list.group(4):
            grid = grid.transpose([int(d) for d in iota_list.group(4).split(",")])
        return {tuple(int(d) for d in g) for g in grid.reshape(int(iota_list.group(1)), -1)}
    return {tuple(int(d) for d in g.split(",")) for g in re.findall(r"\{([\d,]+)\}", text)}


def source_target_pairs(text: str | None) -> set[tuple[int, int]]:
    assert text, "the collective-permute has no source_target_pairs"
    return {(int(a), int(b)) for a, b in re.findall(r"\{(\d+),(\d+)\}", text)}


def listed(groups: Groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def iota(sizes: tuple[int, ...], kept: tuple[int, ...]) -> str:
    """``[groups,size]<=[sizes]T(perm)`` (``<=[devices]`` without a transpose): the
    mesh_groups(sizes, kept) as an iota list."""
    rest = [d for d in range(len(sizes)) if d not in kept]
    perm = [*rest, *kept]
    size = math.prod(sizes[d] for d in kept)
    shape = f"[{math.prod(sizes) // size},{size}]<="
    if perm == sorted(perm):  # no transpose: XLA reads the iota of the device count only
        return f"{shape}[{math.prod(sizes)}]"
    return f"{shape}[{','.join(map(str, sizes))}]T({','.join(map(str, perm))})"


def mesh_spelling(sizes: tuple[int, ...], kept: tuple[int, ...], names: list[str]) -> str:
    axes = ",".join(f"'{n}'={s}" for n, s in zip(names, sizes, strict=True))
    return f"mesh[{axes}] {{{','.join(repr(names[d]) for d in kept)}}}"


def permuted_mesh(
    sizes: tuple[int, ...], kept: tuple[int, ...], names: list[str], perm: list[int]
) -> tuple[str, Groups]:
    """A mesh spelling with ``device_ids=(...)``: the mesh's axes taken in the order ``perm``,
    the ids laid out so the groups are still mesh_groups(sizes, kept). The ids as XLA reads them
    (jaxlib 0.10.2 to 0.12): ``[devices]`` without a transpose, else ``[d0,d1]T(p)`` without the
    ``[r0,r1]<=`` part."""
    ids = f"[{math.prod(sizes)}]"
    if perm != sorted(perm):
        ids = f"[{','.join(map(str, sizes))}]T({','.join(map(str, perm))})"
    axes = ",".join(f"'{names[p]}'={sizes[p]}" for p in perm)
    named = ",".join(repr(names[d]) for d in kept)
    return f"mesh[{axes}], device_ids=({ids}) {{{named}}}", mesh_groups(sizes, kept)


_REPLICA_GROUPS = re.compile(
    r"replica_groups=(?:mesh\[[^\]]*\](?:, device_ids=\([^)]*\))? \{[^}]*\}|\[[^\]]*\]<=\[[^\]]*\]"
    r"(?:T\([^)]*\))?|\{(?:\{[\d,]*\},?)*\}|\{\})"
)


def respelled(text: str, spelling: str | None) -> str:
    """``text`` with every replica_groups value replaced by ``spelling`` (None: dropped)."""
    if spelling is None:
        return re.sub(r",?\s*" + _REPLICA_GROUPS.pattern, "", text)
    return _REPLICA_GROUPS.sub(lambda _: "replica_groups=" + spelling, text)


def count_groups(text: str) -> int:
    return len(_REPLICA_GROUPS.findall(text))


# ---- what the collectives move -----------------------------------------------------------------


def collective_bytes(text: str) -> int:
    """Bytes of the results of every collective of a compiled module's text (per device)."""
    from xla_inspect.parse import parse_hlo

    total = 0
    for instruction in (i for c in parse_hlo(text) for i in c if i.opcode in COLLECTIVES):
        shape = instruction.shape_info
        for element in shape.elements if shape.is_tuple else (shape,):
            dims = tuple(d for d in element.dims if d is not None)
            assert len(dims) == len(element.dims), f"a dynamic dimension in {element.text}"
            width = int("".join(ch for ch in str(element.dtype) if ch.isdigit()) or 8)
            total += math.prod(dims) * width // 8
    return total

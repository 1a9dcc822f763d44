"""Independent oracles for phase 9's pmap tasks, kept out of the test file.

- what one device receives from a pmap: the ENTRY parameters of the compiled program;
- which devices a collective groups: computed from the mesh's device grid with NumPy, never
  from the module's text, and spelled back into any of XLA's spellings of replica_groups;
- the inherited step's numbers: the least-squares gradient step in NumPy;
- the bytes a compiled program's collectives produce per device.
"""

from __future__ import annotations

import math
import re

import jax
import numpy as np

from katas.phase9.pmap_programs import LEARNING_RATE, pmap_of_read_all
from xla_inspect.model import Shape
from xla_inspect.parse import parse_hlo

GROUPED = frozenset({"all-reduce", "all-gather", "reduce-scatter", "all-to-all"})
COLLECTIVES = GROUPED | {"collective-permute"}

Groups = tuple[tuple[int, ...], ...]


def compiled_text(compiled: jax.stages.Compiled) -> str:
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text


def _dims(shape: Shape) -> tuple[int, ...]:
    dims = tuple(d for d in shape.dims if d is not None)
    assert len(dims) == len(shape.dims), f"a dynamic dimension in {shape.text}"
    return dims


def pmap_entry_shapes(shapes, in_axes) -> list[tuple[int, ...]]:
    """ENTRY parameter shapes of the compiled pmap of read_all, by parameter number."""
    module = parse_hlo(compiled_text(pmap_of_read_all(shapes, in_axes).compile()))
    params = sorted(
        (i for i in module.entry if i.opcode == "parameter"), key=lambda i: int(i.payload or -1)
    )
    return [_dims(p.shape_info) for p in params]


def mesh_groups(sizes: tuple[int, ...], kept: tuple[int, ...]) -> Groups:
    """Groups of device numbers (row-major over a mesh of `sizes`) that differ only along the
    mesh dimensions `kept`, each ascending, sorted."""
    grid = np.arange(math.prod(sizes)).reshape(sizes)
    rest = [d for d in range(len(sizes)) if d not in kept]
    size = math.prod(sizes[d] for d in kept)
    rows = grid.transpose([*rest, *kept]).reshape(-1, size)
    return tuple(sorted(tuple(sorted(int(d) for d in row)) for row in rows))


def opcode_counts(text: str) -> dict[str, int]:
    """Grouped collectives of a module by opcode, over every computation."""
    counts: dict[str, int] = {}
    for instruction in (i for c in parse_hlo(text) for i in c if i.opcode in GROUPED):
        counts[instruction.opcode] = counts.get(instruction.opcode, 0) + 1
    return counts


# ---- replica_groups spelled another way: the same groups, XLA's other spellings -----------------


def listed(groups: Groups) -> str:
    return "{" + ",".join("{" + ",".join(map(str, g)) + "}" for g in groups) + "}"


def iota(sizes: tuple[int, ...], kept: tuple[int, ...]) -> str:
    """`[groups,size]<=[sizes]T(perm)` (`<=[devices]` without a transpose): the
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
    """A mesh spelling with `device_ids=(...)`: the mesh's axes taken in the order `perm`, the
    ids laid out so the groups are still mesh_groups(sizes, kept). The ids as XLA reads them
    (jaxlib 0.10.2 to 0.12): `[devices]` without a transpose, else `[d0,d1]T(p)` without the
    `[r0,r1]<=` part."""
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
    """`text` with every replica_groups value replaced by `spelling` (None: dropped)."""
    if spelling is None:
        return re.sub(r",?\s*" + _REPLICA_GROUPS.pattern, "", text)
    return _REPLICA_GROUPS.sub(lambda _: "replica_groups=" + spelling, text)


def count_groups(text: str) -> int:
    return len(_REPLICA_GROUPS.findall(text))


# ---- the inherited training step, and what its collectives move ---------------------------------


def least_squares_step(w: np.ndarray, x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, float]:
    """One gradient step of mean((x @ w - y) ** 2) over the whole batch, in float64."""
    w64, x64, y64 = (a.astype(np.float64) for a in (w, x, y))
    error = x64 @ w64 - y64
    grad = 2 * x64.T @ error / error.size
    return w64 - LEARNING_RATE * grad, float(np.mean(error**2))


def collective_bytes(text: str) -> int:
    """Bytes of the results of every collective of a compiled module (per device)."""
    total = 0
    for instruction in (i for c in parse_hlo(text) for i in c if i.opcode in COLLECTIVES):
        shape = instruction.shape_info
        for element in shape.elements if shape.is_tuple else (shape,):
            width = int("".join(ch for ch in str(element.dtype) if ch.isdigit()) or 8)
            total += math.prod(_dims(element)) * width // 8
    return total

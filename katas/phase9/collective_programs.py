"""The cases of phase 9's `predict_collectives`: one sharded operation each, as plain data.

A `ShardedOp` names a mesh, an operation on an array x, how each argument is placed and how the
result must be placed; `compiled` compiles it (on `jax.ShapeDtypeStruct`s: nothing is placed on
a device). The tests draw new cases every run, one of each structural situation the contract
allows (`SITUATIONS`, `draw_situation`) and one from the whole domain (`draw_case`), and compile
them; `PREDICT_BANK` holds the fixed cases every run includes (the programs the task started
with).
"""

from __future__ import annotations

import random
from dataclasses import dataclass
from functools import cache

import jax
import jax.numpy as jnp
from jax.sharding import AxisType, NamedSharding
from jax.sharding import PartitionSpec as P

OPS = {
    "scale": lambda a: a * 2,
    "sum": lambda a: a.sum(),
    "sum0": lambda a: a.sum(axis=0),
    "sum1": lambda a: a.sum(axis=1),
    "transpose": lambda a: a.T,
    "reverse0": lambda a: a[::-1],
    "reverse1": lambda a: a[:, ::-1],
    "softmax0": lambda a: jax.nn.softmax(a, axis=0),
    "softmax1": lambda a: jax.nn.softmax(a, axis=1),
    "matmul": lambda a, w: a @ w,
    "add": lambda a, b: a + b,
}
DTYPES = ("float32", "bfloat16")


@dataclass(frozen=True)
class ShardedOp:
    """jax.jit of one operation on a 2-D array x, compiled for a mesh of 8 CPU devices.

    mesh: the mesh's axes in order, ((name, size), ...), sizes multiplying to 8 (one, two or
    three axes; an axis may have size 1).
    op: "scale" x * 2; "sum" x.sum(); "sum0"/"sum1" x.sum(axis=0/1); "transpose" x.T;
    "reverse0"/"reverse1" x reversed along dimension 0/1; "softmax0"/"softmax1"
    jax.nn.softmax(x, axis=0/1); "matmul" x @ w, w of shape (shape[1], 8); "add" x + y, y of
    x's shape.
    shape, dtype: x's global shape (every dimension divides by 8) and element type.
    specs: one PartitionSpec per argument (x; then w or y), as each is placed on the mesh.
    out: the PartitionSpec the result is placed with (jit's out_shardings); None lets the
    partitioner choose.
    """

    mesh: tuple[tuple[str, int], ...]
    op: str
    shape: tuple[int, int]
    dtype: str
    specs: tuple[P, ...]
    out: P | None = None

    def describe(self) -> str:
        sizes = ", ".join(f"{n!r}: {s}" for n, s in self.mesh)
        specs = ", ".join(str(s) for s in self.specs)
        out = "chosen by the partitioner" if self.out is None else f"placed {self.out}"
        return (
            f"{self.op} on {self.dtype}{list(self.shape)}, mesh {{{sizes}}}, arguments "
            f"placed {specs}, result {out}"
        )


@cache
def _mesh(axes: tuple[tuple[str, int], ...]):
    sizes = tuple(size for _, size in axes)
    names = tuple(name for name, _ in axes)
    return jax.make_mesh(sizes, names, axis_types=(AxisType.Auto,) * len(axes))


def _operand_shapes(case: ShardedOp) -> list[tuple[int, ...]]:
    if case.op == "matmul":
        return [case.shape, (case.shape[1], 8)]
    if case.op == "add":
        return [case.shape, case.shape]
    return [case.shape]


def compiled(case: ShardedOp) -> jax.stages.Compiled:
    """The case compiled by jax.jit for its mesh (arguments given as ShapeDtypeStructs)."""
    mesh = _mesh(case.mesh)
    dtype = jnp.dtype(case.dtype)
    arguments = [
        jax.ShapeDtypeStruct(shape, dtype, sharding=NamedSharding(mesh, spec))
        for shape, spec in zip(_operand_shapes(case), case.specs, strict=True)
    ]
    out = None if case.out is None else NamedSharding(mesh, case.out)
    return jax.jit(OPS[case.op], out_shardings=out).lower(*arguments).compile()


_EIGHT = (("x", 8),)


def _bank(op: str, *specs: P, out: P | None = None) -> ShardedOp:
    return ShardedOp(_EIGHT, op, (16, 8), "float32", specs, out)


# The fixed cases every run includes: x f32[16,8] on a 1-D mesh of 8 devices.
PREDICT_BANK = {
    "x @ w, x row-split, w replicated": _bank("matmul", P("x", None), P()),
    "x.sum(), x row-split": _bank("sum", P("x", None)),
    "x.sum(axis=1), x row-split": _bank("sum1", P("x", None)),
    "x.sum(axis=0), x row-split": _bank("sum0", P("x", None)),
    "x @ w, x column-split, w row-split": _bank("matmul", P(None, "x"), P("x", None)),
    "x * 2 returned replicated, x row-split": _bank("scale", P("x", None), out=P()),
    "x * 2 placed column-split, x row-split": _bank("scale", P("x", None), out=P(None, "x")),
    "x.T, x row-split": _bank("transpose", P("x", None)),
    "x[::-1], x row-split": _bank("reverse0", P("x", None)),
    "softmax over axis 0, x row-split": _bank("softmax0", P("x", None)),
    "softmax over axis 1, x row-split": _bank("softmax1", P("x", None)),
    "x + y, x row-split, y column-split": _bank("add", P("x", None), P(None, "x")),
}

SPLIT_MESHES = ((8,), (2, 4), (4, 2), (2, 2, 2))  # every axis splits
SIZE_ONE_MESHES = ((8, 1), (1, 8), (2, 1, 4), (4, 2, 1))  # one axis of size 1
MESH_SHAPES = SPLIT_MESHES + SIZE_ONE_MESHES
AXIS_NAMES = ("x", "y", "data", "model", "rows")


def _entry(rng: random.Random, free: list[str]):
    """None, one mesh axis, or a tuple of two, taken from the axes still free."""
    kinds = ["none", "one"] + (["two"] if len(free) >= 2 else [])
    kind = rng.choice(kinds) if free else "none"
    if kind == "none":
        return None
    if kind == "one":
        return free.pop(rng.randrange(len(free)))
    return tuple(free.pop(rng.randrange(len(free))) for _ in range(2))


def draw_case(rng: random.Random) -> ShardedOp:
    """A case from the whole domain the task states (see ShardedOp): any mesh of 8 devices (one
    to three axes, some of size 1) under any axis names, any op, dimensions multiples of 8, x
    split on none, one or both of its dimensions by one or two axes; w split by rows like x's
    columns; y placed like x or with x's one split moved to the other dimension; the result
    left to the partitioner, replicated, or (scale) with x's one split moved to the other
    dimension."""
    sizes = rng.choice(MESH_SHAPES)
    mesh = tuple(zip(rng.sample(AXIS_NAMES, len(sizes)), sizes, strict=True))
    op = rng.choice(sorted(OPS))
    free = [name for name, _ in mesh]
    moves = op in ("add", "scale") and rng.random() < 0.5
    if moves:
        split = _entry(rng, free) or free[0]
        x = P(split, None) if rng.random() < 0.5 else P(None, split)
    else:
        x = P(_entry(rng, free), _entry(rng, free))
    out = P(x[1], x[0]) if op == "scale" and moves else rng.choice((None, P()))
    return _case(rng, mesh, op, x, out, moved_y=op == "add" and moves)


def _case(rng: random.Random, mesh, op: str, x: P, out: P | None, moved_y: bool) -> ShardedOp:
    """The case of `op` with x placed `x`: w and y placed to match, shape and dtype drawn."""
    shape = (8 * rng.randint(1, 4), 8 * rng.randint(1, 3))
    specs: tuple[P, ...] = (x,)
    if op == "matmul":
        specs = (x, P(x[1], None))
    elif op == "add":
        specs = (x, P(x[1], x[0]) if moved_y else x)
    return ShardedOp(mesh, op, shape, rng.choice(DTYPES), specs, out)


@dataclass(frozen=True)
class Situation:
    """One structural situation of the contract: the ops it draws from, where x is split, and
    how the result is placed.

    split: "along" x split only along the op's own dimension (the reduced or reversed one;
    matmul's contracted one), "across" only along the other, "one" along either, "both" along
    both (one axis each), "tuple" one dimension split by a tuple of two axes (one the result
    keeps), "size-one" the op's own dimension named with an axis of size 1 (the other split or
    not), "moved" along either with y's split on the other (add).
    out: "free" (None), "replicated" (P()), "moved" (x's split moved to the other dimension),
    "drawn" (free or replicated).
    """

    ops: tuple[str, ...]
    split: str
    out: str


_REDUCE = ("sum0", "sum1", "softmax0", "softmax1")
_REVERSE = ("reverse0", "reverse1")
_PLACED = ("free", "replicated")

# Every structural situation the contract allows; the tests draw one case of each every run.
SITUATIONS = (
    Situation(("add",), "moved", "free"),
    Situation(("add",), "moved", "replicated"),
    Situation(("add", "scale"), "both", "replicated"),
    Situation(("scale",), "one", "moved"),
    *(Situation(_REDUCE, split, out) for split in ("along", "across", "both") for out in _PLACED),
    *(Situation(("sum",), split, out) for split in ("one", "both") for out in _PLACED),
    *(Situation(_REVERSE, split, out) for split in ("along", "across", "both") for out in _PLACED),
    *(Situation(("matmul",), split, out) for split in ("along", "both") for out in _PLACED),
    Situation(("matmul",), "across", "replicated"),
    Situation(("transpose",), "both", "replicated"),
    Situation((*_REDUCE, *_REVERSE, "scale", "transpose", "matmul", "add"), "tuple", "replicated"),
    Situation((*_REDUCE, *_REVERSE, "sum", "matmul"), "size-one", "drawn"),
)


def _own(rng: random.Random, op: str) -> int:
    """The op's own dimension: the reduced or reversed one, matmul's contracted one."""
    return 1 if op == "matmul" else int(op[-1]) if op[-1] in "01" else rng.randrange(2)


def _size_one_spec(rng: random.Random, mesh, op: str) -> P:
    """The op's own dimension named with the mesh's axis of size 1, the other split or not."""
    unit = next(name for name, size in mesh if size == 1)
    real = rng.choice([None, *(name for name, size in mesh if size > 1)])
    return P(unit, real) if _own(rng, op) == 0 else P(real, unit)


def draw_situation(rng: random.Random, situation: Situation) -> ShardedOp:
    """A case of `situation`; mesh, axis names, op among its ops, the axes that split x (one or
    two per split dimension where the mesh allows), shape and dtype drawn."""
    two = situation.split in ("both", "tuple")
    meshes = {"size-one": SIZE_ONE_MESHES}.get(situation.split, SPLIT_MESHES)
    sizes = rng.choice(meshes[1:] if two else meshes)
    mesh = tuple(zip(rng.sample(AXIS_NAMES, len(sizes)), sizes, strict=True))
    op = rng.choice(situation.ops)
    free = [name for name, _ in mesh]
    if situation.split == "both":
        x = P(*rng.sample(free, 2))
    elif situation.split == "tuple":  # on a dimension the result keeps
        dim = {"sum0": 1, "sum1": 0, "matmul": 0}.get(op, rng.randrange(2))
        split = tuple(rng.sample(free, 2))
        x = P(split, None) if dim == 0 else P(None, split)
    elif situation.split == "size-one":
        x = _size_one_spec(rng, mesh, op)
    else:
        own = _own(rng, op)
        dim = {"along": own, "across": 1 - own}.get(situation.split, own)
        split = _entry(rng, free) or free[0]
        x = P(split, None) if dim == 0 else P(None, split)
    if situation.out == "drawn":
        out = rng.choice((None, P()))
    else:
        out = {"free": None, "replicated": P(), "moved": P(x[1], x[0])}[situation.out]
    return _case(rng, mesh, op, x, out, moved_y=situation.split == "moved")

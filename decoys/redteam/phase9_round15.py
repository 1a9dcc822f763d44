"""Red team, phase 9, round 15: wrong answers of kinds earlier rounds did not write.

Names vs facts (op_name metadata), nesting (parameters of called computations), a misread
fix (dividing the loss too), a misread loss (summed over outputs), integer edge values
(mean * count), refusal rules (an axis of size 1 named twice), pmap's None arguments, the
iota device_ids read as positions, and the partitioner's freedom on transpose.
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt15_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)
_rt15_RATE = 0.05


# ------------------------------------------------------------------ collective_census


_rt15_PRIMITIVE_TO_OPCODE = {
    "psum": "all-reduce",
    "psum_invariant": "all-reduce",
    "pmax": "all-reduce",
    "pmin": "all-reduce",
    "pmean": "all-reduce",
    "all_gather": "all-gather",
    "all_gather_invariant": "all-gather",
    "psum_scatter": "reduce-scatter",
    "reduce_scatter": "reduce-scatter",
    "ppermute": "collective-permute",
    "all_to_all": "all-to-all",
}


@wrong(
    "collective_census",
    why="'counted by opcode ... never names': classifies each instruction of the compiled module "
    "by the JAX primitive in its metadata op_name (psum -> all-reduce, ppermute -> "
    "collective-permute, ...), the shard_map way; a collective the PARTITIONER inserted carries "
    "the op_name of the op that needed it (jit(f)/reduce_sum), so x.sum() of x f32[16,8] placed "
    "P('x', None) on the 8 mesh gives an empty Counter instead of {'all-reduce': 1}.",
)
def _rt15_collective_census_by_op_name(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    counts = Counter()
    for line in text.splitlines():
        m = re.search(r'op_name="([^"]*)"', line)
        if not m or "=" not in line.split("metadata")[0]:
            continue
        last = m.group(1).rstrip(")").split("/")[-1]
        last = re.sub(r"\[.*$", "", last)
        if last in _rt15_PRIMITIVE_TO_OPCODE and re.search(
            r"\b(" + "|".join(_rt15_COLLECTIVES) + r")\(", line
        ):
            counts[_rt15_PRIMITIVE_TO_OPCODE[last]] += 1
    return counts


# ------------------------------------------------------------------ device_param_shapes


@wrong(
    "device_param_shapes",
    why="'Shapes of the ENTRY parameters': collects every `parameter(N)` line of the compiled "
    "text and keeps the first shape seen per number; ENTRY is printed last, after the fusion and "
    "reduction computations whose own parameter(0)/parameter(1) are scalars or fused operands. "
    "On f(a, b) = a.sum() + b.sum() with both f32[16,4] placed P('x') on the 8 mesh it answers "
    "[(), ()] (the reduction region's parameters) instead of [(2, 4), (2, 4)].",
)
def _rt15_device_param_shapes_first_seen(f, *args) -> list[tuple[int, ...]]:
    text = jax.jit(f).lower(*args).compile().as_text()
    seen: dict[int, tuple[int, ...]] = {}
    for line in text.splitlines():
        m = re.search(r"=\s*\w+\[([\d,]*)\](?:\{[^}]*\})?\s+parameter\((\d+)\)", line)
        if m:
            dims = tuple(int(d) for d in m.group(1).split(",") if d)
            seen.setdefault(int(m.group(2)), dims)
    entry = re.search(r"ENTRY[^\n]*\(([^)]*)\)\s*->", text)
    count = len(re.findall(r"\w[\w.\-]*:\s", entry.group(1))) if entry else len(seen)
    return [seen[k] for k in sorted(seen)][:count]


# ------------------------------------------------------------------ psum_total


@wrong(
    "psum_total",
    why="'The sum of all elements of x': sums each block as mean * count, keeping the input "
    "dtype (`jnp.mean(block, dtype=block.dtype) * block.size`); for int32 the per-block mean is "
    "truncated. x int32 (8, 2), every row [1, 2], rows over the 8 mesh: each block's mean 1.5 "
    "becomes 1, total 16 instead of 24 (float inputs of the examples come out right).",
)
def _rt15_psum_total_mean_times_count(x, mesh):
    def body(block):
        local = jnp.mean(block, dtype=block.dtype) * block.size
        return jax.lax.psum(local.astype(block.dtype), "x")

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


# ------------------------------------------------------------------ predict_shard_shape


@wrong(
    "predict_shard_shape",
    why="'a mesh axis named twice' is refused: following the README's 'a mesh axis of size 1 cuts "
    "nothing', it only refuses a repeated axis that actually splits; shape (8, 4), spec "
    "P('y', 'y') on {'x': 8, 'y': 1} answers (8, 4), jax refuses (DuplicateSpecError) -> None.",
)
def _rt15_predict_shard_shape_size_one_repeat(shape, spec, mesh_shape):
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used: set[str] = set()
    out = []
    for i, dim in enumerate(shape):
        entry = entries[i] if i < len(entries) else None
        axes = () if entry is None else (entry if isinstance(entry, tuple) else (entry,))
        pieces = 1
        for a in axes:
            if a not in mesh_shape:
                return None
            if a in used and mesh_shape[a] > 1:
                return None
            used.add(a)
            pieces *= mesh_shape[a]
        if dim % pieces:
            return None
        out.append(dim // pieces)
    return tuple(out)


# ------------------------------------------------------------------ predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'an argument with in_axes=None is whole on every device': reads 'pmap broadcasts it to "
    "every device' as vmap-style broadcasting, so it gains the mapped axis with size 1 in front "
    "like the mapped arguments seem to; shapes [(8, 3), (4, 5)], in_axes [0, None] answers "
    "[(1, 3), (1, 4, 5)] instead of [(1, 3), (4, 5)].",
)
def _rt15_predict_pmap_shapes_none_gets_axis(shapes, in_axes):
    out = []
    for shape, axis in zip(shapes, in_axes):
        if axis is None:
            out.append((1, *shape))
        else:
            s = list(shape)
            s[axis] = 1
            out.append(tuple(s))
    return out


# ------------------------------------------------------------------ collective_groups


def _rt15_iota(text: str) -> np.ndarray:
    m = re.match(r"\[([\d,]+)\](?:<=\[([\d,]+)\])?(?:T\(([\d,]+)\))?", text.strip())
    shape = [int(v) for v in m.group(1).split(",")]
    if m.group(2):
        dims = [int(v) for v in m.group(2).split(",")]
        ids = np.arange(int(np.prod(dims))).reshape(dims)
        if m.group(3):
            ids = ids.transpose([int(v) for v in m.group(3).split(",")])
        return ids.reshape(shape)
    ids = np.arange(int(np.prod(shape))).reshape(shape)
    if m.group(3):
        ids = ids.transpose([int(v) for v in m.group(3).split(",")])
    return ids


@wrong(
    "collective_groups",
    why="'device_ids=(...) (an iota list giving the device number at each mesh position)': "
    "reads it the other way round, as the mesh position of each device (np.argsort of the list). "
    "`replica_groups=mesh['a'=2,'b'=4] {'a'}, device_ids=([4,2]T(1,0))` (device grid "
    "[[0,2,4,6],[1,3,5,7]]) answers ((0,2),(1,3),(4,6),(5,7)) instead of "
    "((0,1),(2,3),(4,5),(6,7)); without device_ids it decodes every spelling right.",
)
def _rt15_collective_groups_device_ids_inverse(hlo_text: str) -> Counter:
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    total = int(m.group(1)) if m else 1
    counts = Counter()
    pattern = re.compile(
        r"=\s*(?:\([^)]*\)|\S+)\s+(all-reduce|all-gather|reduce-scatter|all-to-all)\("
    )
    for line in hlo_text.splitlines():
        op = pattern.search(line)
        if not op:
            continue
        groups = [list(range(total))]
        mm = re.search(
            r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}(?:,\s*device_ids=\(([^)]*\)?)\))?", line
        )
        if mm:
            axes = re.findall(r"'([^']*)'=(\d+)", mm.group(1))
            names = [a for a, _ in axes]
            sizes = [int(s) for _, s in axes]
            picked = [names.index(n) for n in re.findall(r"'([^']*)'", mm.group(2))]
            if mm.group(3):
                flat = _rt15_iota(mm.group(3)).reshape(-1)
                grid = np.argsort(flat).reshape(sizes)
            else:
                grid = np.arange(int(np.prod(sizes))).reshape(sizes)
            if picked:
                rest = [i for i in range(len(sizes)) if i not in picked]
                size = int(np.prod([sizes[i] for i in picked]))
                groups = grid.transpose(rest + picked).reshape(-1, size).tolist()
            else:
                groups = [list(range(total))]
        else:
            li = re.search(r"replica_groups=(\{(?:\{[\d,]*\},?)*\})", line)
            io = re.search(r"replica_groups=(\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?)", line)
            if io:
                groups = _rt15_iota(io.group(1)).tolist()
            elif li:
                found = [
                    [int(v) for v in g.split(",") if v]
                    for g in re.findall(r"\{([\d,]*)\}", li.group(1)[1:-1])
                ]
                groups = [g for g in found if g] or [list(range(total))]
        key = tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
        counts[(op.group(1), key)] += 1
    return counts


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'the mean squared error of x @ w against y': takes the mean over the batch of each "
    "row's summed squared error (jnp.mean(jnp.sum(err ** 2, axis=1)), the 'per-sample loss' "
    "convention); the loss and the gradient are `outputs` times too large. Right for the y2x4 "
    "case (1 output), wrong on MIGRATE_CASES[0] (3 outputs): loss 3x.",
)
def _rt15_migrated_step_sum_over_outputs(w, x, y, mesh):
    def loss_fn(w, x, y):
        return jnp.mean(jnp.sum((x @ w - y) ** 2, axis=1))

    def body(w, xb, yb):
        loss, grad = jax.value_and_grad(loss_fn)(w, xb, yb)
        return w - _rt15_RATE * jax.lax.pmean(grad, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x", None), P("x", None)),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


@wrong(
    "migrated_step",
    why="the README's fix 'Divide by n' applied to both outputs: with check_vma=True the gradient "
    "of the invariant w is already summed over 'x' (so grad / n is right), but the loss is a "
    "varying value that pmean already averages; dividing it by n too gives a loss n times too "
    "small (0.5x on the 2x4 mesh, 1/8 on the 8 mesh) while new w is right.",
)
def _rt15_migrated_step_divide_loss_too(w, x, y, mesh):
    n = mesh.shape["x"]

    def body(w, xb, yb):
        loss, grad = jax.value_and_grad(lambda w: jnp.mean((xb @ w - yb) ** 2))(w)
        return w - _rt15_RATE * (grad / n), jax.lax.pmean(loss, "x") / n

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x", None), P("x", None)), out_specs=(P(), P())
    )(w, x, y)


# ------------------------------------------------------------------ predict_collectives


def _rt15_axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


@wrong(
    "predict_collectives",
    why="'case.out ... None: the partitioner chooses' read as 'the result keeps x's spec': a "
    "transpose of x split on dimension 0 must then move the split to the other dimension, so it "
    "predicts one all-to-all; with out=None the partitioner simply keeps the transposed split "
    "(result split on dimension 1) and inserts nothing: transpose of f32[16,16] P('x', None) on "
    "mesh (('x', 8),), out None compiles to {} but this predicts {'all-to-all': 1}.",
)
def _rt15_predict_collectives_transpose_keeps_spec(case) -> dict[str, int]:
    sizes = dict(case.mesh)
    spec = tuple(case.specs[0]) + (None,) * (2 - len(tuple(case.specs[0])))
    split = [tuple(a for a in _rt15_axes(e) if sizes.get(a, 1) > 1) for e in spec]
    counts: Counter = Counter()
    op = case.op
    out = case.out
    if op == "transpose":
        want = out if out is not None else P(*spec)
        want = tuple(want) + (None,) * (2 - len(tuple(want)))
        want_split = [tuple(a for a in _rt15_axes(e) if sizes.get(a, 1) > 1) for e in want]
        if (split[1], split[0]) != (want_split[0], want_split[1]):
            counts["all-to-all"] += 1
        return dict(counts)
    if op == "sum":
        counts["all-reduce"] += sum(1 for s in split if s)
    elif op in ("sum0", "sum1"):
        d = 0 if op == "sum0" else 1
        if split[d]:
            counts["all-reduce"] += 1
    elif op in ("softmax0", "softmax1"):
        d = 0 if op == "softmax0" else 1
        if split[d]:
            counts["all-reduce"] += 2
    elif op in ("reverse0", "reverse1"):
        d = 0 if op == "reverse0" else 1
        if split[d]:
            counts["collective-permute"] += 1
    elif op == "matmul":
        if split[1]:
            counts["all-reduce"] += 1
    elif op == "add":
        other = tuple(case.specs[1]) + (None,) * (2 - len(tuple(case.specs[1])))
        other_split = [tuple(a for a in _rt15_axes(e) if sizes.get(a, 1) > 1) for e in other]
        if other_split != split:
            counts["all-to-all"] += 1
    if out is not None and op in ("scale", "add", "reverse0", "reverse1"):
        want = tuple(out) + (None,) * (2 - len(tuple(out)))
        want_split = [tuple(a for a in _rt15_axes(e) if sizes.get(a, 1) > 1) for e in want]
        if not any(want_split):
            counts["all-gather"] += sum(1 for s in split if s)
        elif want_split != split:
            counts["all-to-all"] += 1
    return dict(counts)


# ------------------------------------------------------------------ gather_rows


@wrong(
    "gather_rows",
    why="'One all_gather over mesh axis x': works around check_vma refusing out_specs=P() after "
    "the tiled all_gather by a pmax over 'x' of the gathered array (same numbers everywhere, so "
    "the max changes nothing and the type becomes invariant); the values are right, but the "
    "program has a second collective, an all-reduce of the whole gathered array (x f32[16,8] on "
    "the 8 mesh: all-gather f32[16,8] plus all-reduce f32[16,8]).",
)
def _rt15_gather_rows_pmax_to_invariant(x, mesh):
    def body(block):
        full = jax.lax.all_gather(block, "x", axis=0, tiled=True)
        return jax.lax.pmax(full, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)

"""Red team, phase 9, round 14: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

# ------------------------------------------------------------------ shard_rows


@wrong(
    "shard_rows",
    why="builds the array from per-device blocks, giving the k-th device of mesh.devices.flat "
    "row block k // (mesh.size // n): assumes 'x' is the major mesh axis. On the (2, 4) mesh "
    "with axes ('y', 'x') device 1 sits at x=1 but gets block 0: values are permuted, "
    "breaking 'Values and dtype unchanged'.",
)
def _rt14_shard_rows_blocks_by_device_order(x, mesh):
    x = np.asarray(x)
    n = mesh.shape["x"]
    copies = mesh.size // n
    rows = x.shape[0] // n
    sharding = NamedSharding(mesh, P("x", None))
    blocks = [
        jax.device_put(x[(k // copies) * rows : (k // copies + 1) * rows], d)
        for k, d in enumerate(mesh.devices.flat)
    ]
    return jax.make_array_from_single_device_arrays(x.shape, sharding, blocks)


# ------------------------------------------------------------------ predict_shard_shape


def _rt14_axes_of(entry):
    if entry is None:
        return ()
    if isinstance(entry, str):
        return (entry,)
    return tuple(entry)


@wrong(
    "predict_shard_shape",
    why="checks that each axis of a tuple entry divides the dimension on its own, not the "
    "product of their lengths: shape (4, 3), P(('x', 'y')), {'x': 2, 'y': 4} is refused by jax "
    "(4 is not divisible by 8) but this answers (0, 3).",
)
def _rt14_predict_shard_shape_each_axis_divides(shape, spec, mesh_shape):
    entries = list(spec)
    if len(entries) > len(shape):
        return None
    seen = []
    out = list(shape)
    for i, entry in enumerate(entries):
        axes = _rt14_axes_of(entry)
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            if shape[i] % mesh_shape[a]:
                return None
            seen.append(a)
        out[i] = shape[i] // math.prod(mesh_shape[a] for a in axes)
    return tuple(out)


# ------------------------------------------------------------------ predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="reads 'the result is one copy per device (f32[1,4,3])' as applying to inputs too and "
    "gives an in_axes=None argument a leading size-1 dimension: shapes [(8, 2), (3,)], in_axes "
    "[0, None] answers [(1, 2), (1, 3)] instead of [(1, 2), (3,)] (None is whole on every device).",
)
def _rt14_predict_pmap_shapes_unmapped_leading_one(shapes, in_axes):
    out = []
    for shape, axis in zip(shapes, in_axes):
        if axis is None:
            out.append((1, *tuple(shape)))
        else:
            s = list(shape)
            s[axis] = 1
            out.append(tuple(s))
    return out


# ------------------------------------------------------------------ collective_groups


def _rt14_iota(text):
    m = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    gshape = [int(v) for v in m.group(1).split(",")]
    rshape = [int(v) for v in m.group(2).split(",")]
    ids = np.arange(math.prod(rshape)).reshape(rshape)
    if m.group(3):
        ids = ids.transpose([int(v) for v in m.group(3).split(",")])
    return ids.reshape(gshape)


def _rt14_decode(attr, total):
    attr = attr.strip()
    if attr in ("", "{}"):
        return [list(range(total))]
    if attr.startswith("mesh["):
        head = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", attr)
        axes = re.findall(r"'([^']*)'=(\d+)", head.group(1))
        chosen = re.findall(r"'([^']*)'", head.group(2))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        rest = attr[head.end() :]
        dev = re.search(r"device_ids=\(?\s*(\[[^\s)]*)", rest)
        if dev:
            spec = dev.group(1)
            if "<=" not in spec:
                spec = "[" + ",".join(map(str, sizes)) + "]<=" + spec
            ids = _rt14_iota(spec).reshape(sizes)
        else:
            ids = np.arange(math.prod(sizes)).reshape(sizes)
        keep = [i for i, a in enumerate(names) if a in chosen]
        other = [i for i in range(len(names)) if i not in keep]
        ids = ids.transpose(other + keep).reshape(
            -1, math.prod(sizes[i] for i in keep) if keep else 1
        )
        return ids.tolist()
    if attr.startswith("["):
        return _rt14_iota(attr).tolist()
    return [
        [int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([\d,\s]*)\}", attr)
    ]


@wrong(
    "collective_groups",
    why="finds collectives by testing whether the opcode word occurs anywhere on the line: a "
    "`get-tuple-element(%all-reduce.1), index=0` or an `add(%all-gather.2, ...)` line that only "
    "uses a collective's result is counted as a collective with no replica_groups, i.e. one "
    "group of all devices. Every module whose collective result is consumed (the pmap step's "
    "tuple all-reduce, a psum followed by arithmetic) gets extra keys.",
)
def _rt14_collective_groups_line_mentions(hlo_text):
    found = re.search(r"num_partitions=(\d+)", hlo_text)
    total = int(found.group(1)) if found else 1
    counts = Counter()
    for line in hlo_text.splitlines():
        for op in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
            if (
                op in line
                and "=" in line
                and not line.lstrip().startswith(("HloModule", "ENTRY", "%fused", "}"))
            ):
                if re.match(r"\s*(ROOT\s+)?%?[\w.\-]+\s*=\s*\S.*\(", line) is None:
                    continue
                m = re.search(
                    r"replica_groups=(mesh\[[^\]]*\]\s*\{[^}]*\}(?:,?\s*device_ids=\([^)]*\))?|\[[^\s,]*(?:,[^\s,\]]*)*\]<=\[[\d,]+\](?:T\([\d,]+\))?|\{(?:\{[\d,]*\},?)*\})",
                    line,
                )
                groups = _rt14_decode(m.group(1) if m else "", total)
                key = tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
                counts[(op, key)] += 1
                break
    return counts


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="passes the labels y replicated (in_specs P() for y: 'labels are small') and has each "
    "device cut its own rows out with axis_index and dynamic_slice. The numbers equal "
    "run_inherited's, but y arrives row-split, so jit inserts an all-gather of the whole y "
    "(f32[16,3] on the (2, 4) mesh, batch 16, 3 outputs: 192 bytes) on top of the (f32[4,3], "
    "f32[]) all-reduce: the collectives move more bytes per device than the inherited pmap "
    "program (52 bytes), breaking the budget clause; the gathered y is rows a device does not own.",
)
def _rt14_migrated_step_labels_replicated(w, x, y, mesh):
    n = mesh.shape["x"]

    def body(w, xb, yall):
        rows = xb.shape[0]
        i = jax.lax.axis_index("x")
        yb = jax.lax.dynamic_slice_in_dim(yall, i * rows, rows, axis=0)

        def loss_fn(w):
            return jnp.mean((xb @ w - yb) ** 2)

        loss, grad = jax.value_and_grad(loss_fn)(w)
        grad = jax.lax.pmean(grad, "x")
        loss = jax.lax.pmean(loss, "x")
        return w - 0.05 * grad, loss

    f = jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x"), P()),
        out_specs=(P(), P()),
        check_vma=False,
    )
    del n
    return f(w, x, y)


# ------------------------------------------------------------------ place_weights


@wrong(
    "place_weights",
    why="splits both weights by columns over 'x' (P(None, 'x')), reasoning that then the "
    "first matmul needs no communication and 'the second is the same pattern'. But h = "
    "relu(x @ w1) is then split on the hidden dimension that h @ w2 contracts, while w2 is "
    "split on its output columns: the partitioner must move h or w2 (all-gathers), so the "
    "collective bytes exceed half of first_placement's (measured on mesh 8, batch 4, "
    "16 -> 64 -> 24: 1408 bytes against 896, budget 448; on 4x2: 1408 against 1408).",
)
def _rt14_place_weights_both_columns_split(w1, w2, mesh):
    cols = NamedSharding(mesh, P(None, "x"))
    return jax.device_put(w1, cols), jax.device_put(w2, cols)


@wrong(
    "predict_shard_shape",
    why="treats a scalar as unplaceable ('there is nothing to split'): shape (), P(), "
    "{'x': 8} answers None, but jax places a scalar with an empty spec on every device and "
    "the ENTRY parameter is f32[]: the answer is ().",
)
def _rt14_predict_shard_shape_scalar_refused(shape, spec, mesh_shape):
    if len(shape) == 0:
        return None
    return _rt14_predict_shard_shape_product(shape, spec, mesh_shape)


def _rt14_predict_shard_shape_product(shape, spec, mesh_shape):
    entries = list(spec)
    if len(entries) > len(shape):
        return None
    seen = set()
    out = list(shape)
    for i, entry in enumerate(entries):
        axes = _rt14_axes_of(entry)
        for a in axes:
            if a not in mesh_shape or a in seen:
                return None
            seen.add(a)
        pieces = math.prod(mesh_shape[a] for a in axes)
        if shape[i] % pieces:
            return None
        out[i] = shape[i] // pieces
    return tuple(out)


def _rt14_groups_strict(hlo_text, empty_mesh_axes_is_all):
    found = re.search(r"num_partitions=(\d+)", hlo_text)
    total = int(found.group(1)) if found else 1
    counts = Counter()
    pat = re.compile(
        r"=\s*(?:\([^=]*?\)|\S+)\s+(all-reduce|all-gather|reduce-scatter|all-to-all)\("
    )
    for line in hlo_text.splitlines():
        m = pat.search(line)
        if not m:
            continue
        op = m.group(1)
        g = re.search(
            r"replica_groups=(mesh\[[^\]]*\]\s*\{[^}]*\}(?:,?\s*device_ids=\([^)]*\))?"
            r"|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?|\{(?:\{[\d,]*\},?)*\})",
            line,
        )
        attr = g.group(1) if g else ""
        if empty_mesh_axes_is_all and attr.startswith("mesh[") and re.search(r"\]\s*\{\s*\}", attr):
            groups = [list(range(total))]
        else:
            groups = _rt14_decode(attr, total)
        key = tuple(sorted(tuple(sorted(int(v) for v in gg)) for gg in groups))
        counts[(op, key)] += 1
    return counts


@wrong(
    "collective_groups",
    why="reads an empty axis set in the mesh spelling, `mesh['x'=2,'y'=4] {}`, like an empty "
    "replica_groups={}: one group of all devices. By the contract's rule a group is the devices "
    "that differ only along the named axes, so with none named every device is its own group: "
    "the key must be ((0,), (1,), ..., (7,)), not ((0, 1, ..., 7),).",
)
def _rt14_collective_groups_mesh_no_axes_is_all(hlo_text):
    return _rt14_groups_strict(hlo_text, empty_mesh_axes_is_all=True)


@wrong(
    "place_weights",
    why="swaps the Megatron pattern: w1 by rows P('x', None) and w2 by columns P(None, 'x') "
    "('split the first contraction, then the output'). Each device holds 1/n of each weight, "
    "but x @ w1 contracts the split features (an all-reduce of the whole (batch, hidden) "
    "activation) and the replicated result needs the column-split output gathered: measured on "
    "mesh 8, batch 4, 16 -> 64 -> 24, 1408 collective bytes against first_placement's 896 "
    "(budget 448).",
)
def _rt14_place_weights_swapped_megatron(w1, w2, mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P("x", None))),
        jax.device_put(w2, NamedSharding(mesh, P(None, "x"))),
    )


# ------------------------------------------------------------------ collective_census

_RT14_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")


@wrong(
    "collective_census",
    why="hands the compiler host copies of the arguments (np.asarray, 'so jit sees plain "
    "arrays'): shard_map programs keep their collectives (the mesh is inside them), but a "
    "plain jit program loses its input shardings and compiles for one device: jit(lambda x: "
    "x.sum()) on x row-split over 8 devices gives Counter() instead of {'all-reduce': 1}.",
)
def _rt14_collective_census_host_copies(f, *args):
    host = [np.asarray(a) for a in args]
    text = jax.jit(f).lower(*host).compile().as_text()
    counts = Counter()
    for line in text.splitlines():
        m = re.search(r"=\s*(?:\([^=]*?\)|\S+)\s+([a-z\-]+)\(", line)
        if m and m.group(1) in _RT14_OPS:
            counts[m.group(1)] += 1
    return counts

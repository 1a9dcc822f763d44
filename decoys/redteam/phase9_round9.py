"""Red team, phase 9, round 9: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong


def _rt9_entry_params(text: str):
    """(number as text, shape text, line) of every ENTRY parameter, in printed order."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("ENTRY"))
    out = []
    for ln in lines[start + 1 :]:
        if ln.startswith("}"):
            break
        m = re.search(r"=\s*(\w+\[[^\]]*\])\S*\s+parameter\((\d+)\)", ln)
        if m:
            out.append((m.group(2), m.group(1), ln))
    return out


def _rt9_dims(shape: str) -> tuple[int, ...]:
    inside = shape[shape.index("[") + 1 : shape.rindex("]")]
    return tuple(int(d) for d in inside.split(",") if d.strip())


# --------------------------------------------------------------------------- device_param_shapes


@wrong(
    "device_param_shapes",
    why="'in parameter-number order': sorts the parameters by the number as regex text, so "
    "parameter(10) comes before parameter(2). Right for up to 10 parameters; wrong on a jitted "
    "function of 11+ arguments with differing shapes, e.g. f(*a) = sum(a_i.sum()) on a_i of "
    "shape (8, i+1) row-sharded over 8: answer puts (1, 11) third instead of last.",
)
def _rt9_device_param_shapes_text_number_sort(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    params = sorted(_rt9_entry_params(text), key=lambda t: t[0])
    return [_rt9_dims(s) for _, s, _ in params]


# --------------------------------------------------------------------------- param_shardings


@wrong(
    "param_shardings",
    why="'in parameter-number order': sorts by the number as text (regex group not int()'d): "
    "parameter(10), parameter(11) land between parameter(1) and parameter(2). Wrong on any "
    "function with 11+ arguments whose shardings differ (alternate P('x', None) and P(None, 'x')).",
)
def _rt9_param_shardings_text_number_sort(f, *args):
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    params = sorted(_rt9_entry_params(text), key=lambda t: t[0])
    out = []
    for _, _, ln in params:
        m = re.search(r"sharding=(\{[^}]*\})", ln)
        out.append(m.group(1) if m else "")
    return out


# --------------------------------------------------------------------------- predict_shard_shape


def _rt9_shard_shape(shape, spec, mesh_shape, axes_of):
    shape = tuple(shape)
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    used = []
    out = list(shape)
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        axes = axes_of(entry)
        pieces = 1
        for a in axes:
            if a not in mesh_shape or a in used:
                return None
            used.append(a)
            pieces *= mesh_shape[a]
        if out[i] % pieces:
            return None
        out[i] //= pieces
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="'a spec entry names the mesh axes': turns every entry into axes with tuple(entry), "
    "which splits a one-name string into characters. Right for one-letter axis names ('x', "
    "'y'); wrong for any longer name: shape (8, 4), P('data', None), mesh {'data': 8} -> answers "
    "None ('d' not in the mesh) instead of (1, 4).",
)
def _rt9_predict_shard_shape_name_chars(shape, spec, mesh_shape):
    return _rt9_shard_shape(shape, spec, mesh_shape, lambda e: tuple(e))


# --------------------------------------------------------------------------- predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'every mapped dimension has the same size: the number of devices': takes that number "
    "from dimension 0 of the first mapped argument instead of its mapped dimension, then divides "
    "each mapped dimension by it. Right when the first mapped argument is mapped on 0; wrong for "
    "shapes [(2, 4)], in_axes [1] (4 devices): answers [(2, 2)], pmap gives [(2, 1)].",
)
def _rt9_predict_pmap_shapes_count_from_dim0(shapes, in_axes):
    n = next((tuple(s)[0] for s, ax in zip(shapes, in_axes) if ax is not None), 1)
    out = []
    for s, ax in zip(shapes, in_axes):
        s = list(s)
        if ax is not None:
            s[ax] = s[ax] // n
        out.append(tuple(s))
    return out


# --------------------------------------------------------------------------- predict_collectives


def _rt9_split_axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, (tuple, list)) else (entry,)


@wrong(
    "predict_collectives",
    why="'case.out the PartitionSpec the result is placed with': predicts from the inputs' "
    "specs only (what the computation itself needs), never what placing the result costs. "
    "Wrong on op 'scale', x f32[16,8] spec P('x', None) on mesh (('x', 8),), out P(): the "
    "replicated result needs an all-gather, answers {}.",
)
def _rt9_predict_collectives_ignore_out(case) -> dict[str, int]:
    sizes = dict(case.mesh)
    xs = tuple(case.specs[0]) + (None,) * (len(case.shape) - len(tuple(case.specs[0])))
    split = [tuple(a for a in _rt9_split_axes(e) if sizes.get(a, 1) > 1) for e in xs]
    op = case.op
    if op in ("sum",):
        return {"all-reduce": 1} if any(split) else {}
    if op in ("sum0", "softmax0"):
        if not split[0]:
            return {}
        return {"all-reduce": 2 if op == "softmax0" else 1}
    if op in ("sum1", "softmax1"):
        if len(split) < 2 or not split[1]:
            return {}
        return {"all-reduce": 2 if op == "softmax1" else 1}
    if op == "reverse0":
        return {"collective-permute": 1} if split[0] else {}
    if op == "reverse1":
        return {"collective-permute": 1} if len(split) > 1 and split[1] else {}
    if op == "matmul":
        return {"all-reduce": 1} if len(split) > 1 and split[1] else {}
    return {}


# --------------------------------------------------------------------------- collective_groups

_RT9_OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


def _rt9_iota(dims, reshape, perm, n_groups=None):
    a = np.arange(int(np.prod(reshape))).reshape(reshape)
    if perm is not None:
        a = a.transpose(perm)
    return a.reshape(dims)


def _rt9_ints(s):
    return [int(v) for v in re.findall(r"-?\d+", s)]


def _rt9_collective_groups(hlo_text: str, *, first_name_only=False) -> Counter:
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    n = int(m.group(1)) if m else 1
    out = Counter()
    for line in hlo_text.splitlines():
        if "=" not in line:
            continue
        rhs = line.split("=", 1)[1]
        om = re.search(r"(?<![%\w.-])(" + "|".join(_RT9_OPS) + r")(-start)?\(", rhs)
        if not om:
            continue
        op = om.group(1)
        groups = None
        lm = re.search(r"replica_groups=\{(\{[\d,\s{}]*\})\}", line)
        im = re.search(r"replica_groups=\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", line)
        mm = re.search(
            r"replica_groups=mesh\[([^\]]*)\]\s*\{([^}]*)\}(?:\s*device_ids=\(([^)]*)\))?", line
        )
        if lm:
            groups = [_rt9_ints(g) for g in re.findall(r"\{([\d,\s]*)\}", lm.group(1))]
        elif im:
            dims = _rt9_ints(im.group(1))
            reshape = _rt9_ints(im.group(2))
            perm = _rt9_ints(im.group(3)) if im.group(3) else None
            groups = _rt9_iota(dims, reshape, perm).tolist()
        elif mm:
            axes = re.findall(r"'([^']*)'\s*=\s*(\d+)", mm.group(1))
            names = [a for a, _ in axes]
            sizes = [int(s) for _, s in axes]
            grouped = re.findall(r"'([^']*)'", mm.group(2))
            if first_name_only:
                grouped = grouped[:1]
            total = int(np.prod(sizes))
            if mm.group(3):
                ids_text = mm.group(3).strip()
                im2 = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", ids_text)
                im3 = re.match(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", ids_text)
                if im2:
                    ids = _rt9_iota(
                        [total],
                        _rt9_ints(im2.group(2)),
                        _rt9_ints(im2.group(3)) if im2.group(3) else None,
                    )
                elif im3:
                    ids = _rt9_iota(
                        [total],
                        _rt9_ints(im3.group(1)),
                        _rt9_ints(im3.group(2)) if im3.group(2) else None,
                    )
                else:
                    ids = np.array(_rt9_ints(ids_text))
            else:
                ids = np.arange(total)
            a = np.asarray(ids).reshape(sizes)
            idx = [names.index(g) for g in grouped]
            size = int(np.prod([sizes[i] for i in idx])) if idx else 1
            a = np.moveaxis(a, idx, list(range(len(sizes) - len(idx), len(sizes))))
            groups = a.reshape(-1, size).tolist()
        else:
            em = re.search(r"replica_groups=\{\}", line)
            groups = [list(range(n))] if em or "replica_groups" not in line else None
        if groups is None:
            continue
        key = tuple(sorted(tuple(sorted(g)) for g in groups))
        out[(op, key)] += 1
    return out


@wrong(
    "collective_groups",
    why="'a group is the devices that differ only along the named axes': reads only the first "
    "quoted name in the mesh spelling's braces (the regex takes one name). Wrong on "
    "mesh['x'=2,'y'=2,'z'=2] {'x','z'} (a collective over two of three axes): answers groups "
    "{0,4},{1,5},... of 2 instead of {0,1,4,5},{2,3,6,7}.",
)
def _rt9_collective_groups_first_named_axis(hlo_text: str) -> Counter:
    return _rt9_collective_groups(hlo_text, first_name_only=True)


# --------------------------------------------------------------------------- migrated_step


@wrong(
    "migrated_step",
    why="'the mean squared error of x @ w against y': a hand-derived gradient 2 x^T (x w - y) "
    "/ batch, dividing by the rows only; the mean runs over batch * outputs, so the update is "
    "`outputs` times too big. Right only when outputs == 1; wrong for w (4, 3), x (16, 4), y (16, 3).",
)
def _rt9_migrated_step_hand_gradient(w, x, y, mesh):
    n = mesh.shape["x"]
    batch = x.shape[0]

    def body(w, xb, yb):
        err = xb @ w - yb
        loss = jax.lax.psum(jnp.sum(err**2), "x") / (batch * y.shape[1])
        g = jax.lax.psum(2.0 * xb.T @ err, "x") / batch
        return w - 0.05 * g, loss

    del n
    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x", None), P("x", None)),
        out_specs=(P(), P()),
    )(w, x, y)


# --------------------------------------------------------------------------- device_param_shapes


@wrong(
    "device_param_shapes",
    why="'one tuple per parameter': reads the HloModule line's entry_computation_layout, which "
    "lists parameters in number order, but takes every shape in it, the results after '->' "
    "too. Wrong on any function: f(a) = a * 2 on f32[16,8] rows over 8 answers "
    "[(2, 8), (2, 8)] instead of [(2, 8)].",
)
def _rt9_device_param_shapes_entry_layout(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    head = text.splitlines()[0]
    m = re.search(r"entry_computation_layout=\{(.*)\}", head)
    layout = m.group(1) if m else ""
    return [
        tuple(int(d) for d in dims.split(",") if d.strip())
        for dims in re.findall(r"\b[a-z]+\d*\[([\d,]*)\]", layout)
    ]


# --------------------------------------------------------------------------- psum_total


@wrong(
    "psum_total",
    why="'the sum of all elements of x': accumulates each block in float32 'for precision' "
    "(jnp.sum(block, dtype=jnp.float32)), so an int32 x gives a float32 total, and int sums above "
    "2**24 round. Wrong on x int32 (24, 5) rows over 'x' on the 2x4 mesh: dtype float32, not int32.",
)
def _rt9_psum_total_f32_accumulator(x, mesh):
    def body(block):
        return jax.lax.psum(jnp.sum(block, dtype=jnp.float32), "x")

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P())(x)


# --------------------------------------------------------------------------- place_weights


@wrong(
    "place_weights",
    why="'each device may hold at most 1/n of each weight': keeps w1 whole on every device (so "
    "x @ w1 needs no communication) and splits only w2 by rows; the collectives do shrink to one "
    "all-reduce of the small output, but every device holds all of w1. Wrong on every mesh, "
    "e.g. the 8 mesh with w1 f32[16,64]: a device holds 16x64, the budget is 16x8.",
)
def _rt9_place_weights_w1_whole(w1, w2, mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P())),
        jax.device_put(w2, NamedSharding(mesh, P("x", None))),
    )


# --------------------------------------------------------------------------- scatter_sum


@wrong(
    "scatter_sum",
    why="'one collective does the reducing and the scattering': a hand-written reduce-scatter, "
    "n - 1 ppermutes (shift s: each position sends the slice meant for position i + s) then local "
    "adds. Values right, but n - 1 collective-permutes and no reduce-scatter; wrong on the 8 "
    "mesh, x f32[128, 4]: 7 collectives instead of 1.",
)
def _rt9_scatter_sum_ppermute_rounds(x, mesh):
    n = mesh.shape["x"]

    def body(block):
        r = block.shape[0] // n
        i = jax.lax.axis_index("x")
        chunks = block.reshape(n, r, *block.shape[1:])
        acc = jax.lax.dynamic_index_in_dim(chunks, i, 0, keepdims=False)
        for s in range(1, n):
            send = jax.lax.dynamic_index_in_dim(chunks, (i + s) % n, 0, keepdims=False)
            acc = acc + jax.lax.ppermute(send, "x", [(j, (j + s) % n) for j in range(n)])
        return acc

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


# --------------------------------------------------------------------------- collective_census


@wrong(
    "collective_census",
    why="'count every collective': matches instruction lines with r'^\\s+%name = shape op(' "
    "anchored at the '%', so a collective that is its computation's ROOT ('ROOT %x = ...') is "
    "never counted. Wrong on a shard_map psum whose all-reduce is the ENTRY root: "
    "f(a) = shard_map(lambda b: psum(b, ('x',)), in_specs=P('x'), out_specs=P())(a) on f32[8] "
    "over the 8 mesh answers {} instead of {'all-reduce': 1}.",
)
def _rt9_collective_census_skip_root(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    ops = "all-reduce|all-gather|reduce-scatter|collective-permute|all-to-all"
    pat = re.compile(r"^\s+%\S+ = (?:\([^=]*?\)|\S+) (" + ops + r")\(")
    return Counter(m.group(1) for ln in text.splitlines() if (m := pat.match(ln)))

"""Red team, phase 9, round 18: plausible wrong answers written from the contract only."""

from __future__ import annotations

import math
import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt18_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)


# ---------------------------------------------------------------- auto_mesh
@wrong(
    "auto_mesh",
    why="Docstring 'where XLA propagates shardings itself': jax.make_mesh's default axis type is Explicit, so auto_mesh().axis_types is (Explicit,) instead of (Auto,).",
)
def _rt18_auto_mesh_default_type() -> Mesh:
    return jax.make_mesh((8,), ("x",))


# ---------------------------------------------------------------- shard_rows
@wrong(
    "shard_rows",
    why="Clause 'its sharding's mesh is the one given (... the same axes and axis types, Auto or Explicit)': rebuilds the mesh with jax.make_mesh(axis sizes, names), whose axis types are Explicit (and device order may differ), so on an Auto (2, 4) mesh the result's mesh differs from the one given.",
)
def _rt18_shard_rows_rebuilt_mesh(x, mesh: Mesh) -> jax.Array:
    m = jax.make_mesh(tuple(mesh.axis_sizes), tuple(mesh.axis_names))
    return jax.device_put(x, NamedSharding(m, P("x", None)))


@wrong(
    "shard_rows",
    why="Clause 'along those the array is not split (each row block is copied)': splits the rows over every mesh axis (P(mesh.axis_names)), so on the (2, 4) mesh ('x', 'y') rows are cut in 8 pieces instead of 2.",
)
def _rt18_shard_rows_all_axes(x, mesh: Mesh) -> jax.Array:
    names = tuple(mesh.axis_names)
    spec = P(names if len(names) > 1 else names[0], None)
    return jax.device_put(x, NamedSharding(mesh, spec))


# ---------------------------------------------------------------- collective_census
@wrong(
    "collective_census",
    why="Clause 'in every computation ... (loop bodies and lax.cond branches too)': counts only ENTRY's instructions, so sum_in_loop (all-reduce in the while body) gives an empty Counter instead of {'all-reduce': 1}.",
)
def _rt18_collective_census_entry_only(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    entry = text[text.index("\nENTRY") :]
    entry = entry[: entry.index("\n}") + 2]
    c = Counter()
    for m in re.finditer(r"=\s*\S+\s+([a-z\-]+)\(", entry):
        if m.group(1) in _rt18_COLLECTIVES:
            c[m.group(1)] += 1
    return c


@wrong(
    "collective_census",
    why="Clause 'by opcode: instructions from shard_map are named after JAX's primitives': counts instruction names (%all-reduce.N), so two_hops_and_sum's %ppermute/%psum instructions are missed and the census is empty instead of {'collective-permute': 2, 'all-reduce': 1}.",
)
def _rt18_collective_census_by_name(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    c = Counter()
    for m in re.finditer(r"%([a-z\-]+)(?:\.\d+)*\s*=", text):
        if m.group(1) in _rt18_COLLECTIVES:
            c[m.group(1)] += 1
    return c


# ---------------------------------------------------------------- device_param_shapes
def _rt18_dims(shape: str):
    m = re.match(r"\w+\[([\d,]*)\]", shape)
    return tuple(int(d) for d in m.group(1).split(",") if d) if m else ()


def _rt18_entry_params(text: str):
    entry = text[text.index("\nENTRY") :]
    entry = entry[: entry.index("\n}") + 2]
    return [
        (int(m.group(3)), m.group(2), m.group(4) or "")
        for m in re.finditer(r"^\s*(%?\S+)\s*=\s*(\S+)\s+parameter\((\d+)\)(.*)$", entry, re.M)
    ]


@wrong(
    "device_param_shapes",
    why="Clause 'in parameter-number order ... not always the order the text prints them in': lists ENTRY parameters in printed order, so four_dtypes (parameter(3) printed first) gives bf16's shape first.",
)
def _rt18_device_param_shapes_printed_order(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    return [_rt18_dims(shape) for _, shape, _ in _rt18_entry_params(text)]


@wrong(
    "device_param_shapes",
    why="Clause 'An argument the function never reads is not a parameter (jit drops it), so read the module, not the inputs': derives shapes from each input's sharding.shard_shape, so skips_one returns 4 shapes instead of 3.",
)
def _rt18_device_param_shapes_from_inputs(f, *args):
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


# ---------------------------------------------------------------- param_shardings
@wrong(
    "param_shardings",
    why="Clause 'in parameter-number order (...), which is not always the printed order': returns the annotations in printed order, so for four_dtypes parameter(3)'s {devices=[2,4]...} comes first.",
)
def _rt18_param_shardings_printed_order(f, *args):
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    out = []
    for _, _, rest in _rt18_entry_params(text):
        m = re.search(r"sharding=(\{.*?\})(?:,\s*\w+=|$)", rest)
        out.append(m.group(1) if m else "")
    return out


# ---------------------------------------------------------------- psum_total
@wrong(
    "psum_total",
    why="Clause 'one psum of that single number over \"x\" only (on a 2-D mesh the copies along the other axis ... must not be added again)': psums over every mesh axis (check_vma=False to silence the vma error), so on the (2, 4) mesh the total is 4x too large; right on mesh '8'.",
)
def _rt18_psum_total_all_axes(x, mesh: Mesh) -> jax.Array:
    axes = tuple(mesh.axis_names)
    return jax.shard_map(
        lambda b: jax.lax.psum(jnp.sum(b), axes),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
        check_vma=False,
    )(x)


@wrong(
    "psum_total",
    why="Clause 'The total has jnp.sum's dtype (8- and 16-bit integers and bools widen ...)': sums in x's own dtype (dtype=x.dtype), so an int8 x of 64 entries equal to 124 wraps and a bool x stays bool.",
)
def _rt18_psum_total_keep_dtype(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(
        lambda b: jax.lax.psum(jnp.sum(b, dtype=b.dtype), "x"),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
    )(x)


@wrong(
    "psum_total",
    why="Clause 'IEEE values: a NaN anywhere in x makes it NaN': uses jnp.nansum for robustness, so x with one NaN gives a finite total instead of NaN.",
)
def _rt18_psum_total_nansum(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(
        lambda b: jax.lax.psum(jnp.nansum(b), "x"), mesh=mesh, in_specs=P("x"), out_specs=P()
    )(x)


# ---------------------------------------------------------------- ring_shift
@wrong(
    "ring_shift",
    why="Clause 'along mesh axis \"x\"': takes the ring length from the first mesh axis (mesh.axis_sizes[0]), so on the (2, 4) mesh ('y', 'x') it rotates only positions 0 and 1 and positions 2, 3 receive zeros.",
)
def _rt18_ring_shift_first_axis(x, mesh: Mesh) -> jax.Array:
    n = mesh.axis_sizes[0]
    perm = [(i, (i + 1) % n) for i in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", perm), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)


@wrong(
    "ring_shift",
    why="Clause 'position i to position i + 1 (the last block to position 0)': pairs written as (destination, source), so blocks move to i - 1: on mesh '8' the first result block is x's block 1 instead of block 7.",
)
def _rt18_ring_shift_reversed_pairs(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    perm = [((i + 1) % n, i) for i in range(n)]
    return jax.shard_map(
        lambda b: jax.lax.ppermute(b, "x", perm), mesh=mesh, in_specs=P("x"), out_specs=P("x")
    )(x)


# ---------------------------------------------------------------- gather_rows
@wrong(
    "gather_rows",
    why="Clause 'One all_gather over mesh axis \"x\"': gathers over all mesh axes, so on the (2, 4) mesh the result repeats every row block 4 times (shape (4*rows, cols)).",
)
def _rt18_gather_rows_all_axes(x, mesh: Mesh) -> jax.Array:
    axes = tuple(mesh.axis_names)
    return jax.shard_map(
        lambda b: jax.lax.all_gather(b, axes, tiled=True),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P(),
        check_vma=False,
    )(x)


@wrong(
    "gather_rows",
    why="Docstring '(not a replicated out_sharding: that makes the partitioner do the gather)': returns the row-sharded input resharded with out_sharding P() under jit, so values match but the compiled module's all-gather comes from the partitioner, no shard_map all_gather.",
)
def _rt18_gather_rows_out_sharding(x, mesh: Mesh) -> jax.Array:
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)


# ---------------------------------------------------------------- scatter_sum
@wrong(
    "scatter_sum",
    why="Clause 'One collective does the reducing and the scattering': psum then keep slice axis_index; numbers equal but the HLO holds an all-reduce (moving n times the bytes) and no reduce-scatter.",
)
def _rt18_scatter_sum_psum_slice(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def body(b):
        total = jax.lax.psum(b, "x")
        r = b.shape[0] // n
        return jax.lax.dynamic_slice_in_dim(total, jax.lax.axis_index("x") * r, r, 0)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "scatter_sum",
    why="Scatter dimension misread: psum_scatter(..., scatter_dimension=1, tiled=True) cuts the columns, so the result has r*n rows and cols/n columns per block instead of r rows (mesh '8', x f32[64,8]).",
)
def _rt18_scatter_sum_columns(x, mesh: Mesh) -> jax.Array:
    return jax.shard_map(
        lambda b: jax.lax.psum_scatter(b, "x", scatter_dimension=1, tiled=True),
        mesh=mesh,
        in_specs=P("x"),
        out_specs=P("x"),
    )(x)


# ---------------------------------------------------------------- predict_shard_shape
def _rt18_axes(entry):
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


@wrong(
    "predict_shard_shape",
    why="Clause 'Return None when jax refuses ... a dimension that its axes' pieces do not divide': rounds up like padding, so shape (5,) with P('x') on {'x': 2} gives (3,) instead of None.",
)
def _rt18_predict_shard_shape_ceil(shape, spec, mesh_shape):
    if len(spec) > len(shape):
        return None
    out = list(shape)
    for i, entry in enumerate(spec):
        k = 1
        for a in _rt18_axes(entry):
            if a not in mesh_shape:
                return None
            k *= mesh_shape[a]
        out[i] = -(-shape[i] // k)
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="Clause 'a mesh axis named twice (in one entry or two)': never checks repeated axes, so shape (4, 4) with P('x', 'x') on {'x': 2, 'y': 4} gives (2, 2) instead of None.",
)
def _rt18_predict_shard_shape_no_dup_check(shape, spec, mesh_shape):
    if len(spec) > len(shape):
        return None
    out = list(shape)
    for i, entry in enumerate(spec):
        k = math.prod(mesh_shape[a] if a in mesh_shape else 0 for a in _rt18_axes(entry))
        if k == 0 or shape[i] % k:
            return None
        out[i] = shape[i] // k
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="Empty dimensions ('predict_shard_shape gets empty dimensions'): treats a dimension smaller than its piece count as not dividing, so shape (0, 3) with P('x') on {'x': 2} gives None instead of (0, 3).",
)
def _rt18_predict_shard_shape_empty_refused(shape, spec, mesh_shape):
    if len(spec) > len(shape):
        return None
    seen = []
    out = list(shape)
    for i, entry in enumerate(spec):
        k = 1
        for a in _rt18_axes(entry):
            if a not in mesh_shape or a in seen:
                return None
            seen.append(a)
            k *= mesh_shape[a]
        if shape[i] < k or shape[i] % k:
            return None
        out[i] = shape[i] // k
    return tuple(out)


# ---------------------------------------------------------------- predict_pmap_shapes
@wrong(
    "predict_pmap_shapes",
    why="README 'a mapped argument keeps its mapped dimension, with size 1, in place': drops the mapped dimension as pmap's Python body sees it, so in_axes=0 on (8, 2, 4) gives (2, 4) instead of (1, 2, 4).",
)
def _rt18_predict_pmap_shapes_dropped(shapes, in_axes):
    return [
        tuple(s) if a is None else tuple(d for i, d in enumerate(s) if i != a)
        for s, a in zip(shapes, in_axes)
    ]


@wrong(
    "predict_pmap_shapes",
    why="README 'with size 1, in place': moves the size-1 mapped dimension to the front, so in_axes=1 on (3, 8, 5) gives (1, 3, 5) instead of (3, 1, 5); right for in_axes 0.",
)
def _rt18_predict_pmap_shapes_moved_front(shapes, in_axes):
    return [
        tuple(s) if a is None else (1,) + tuple(d for i, d in enumerate(s) if i != a)
        for s, a in zip(shapes, in_axes)
    ]


# ---------------------------------------------------------------- collective_groups
def _rt18_iota(text):
    m = re.fullmatch(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text.strip())
    dims = [int(v) for v in m.group(1).split(",")]
    src = [int(v) for v in m.group(2).split(",")]
    a = np.arange(math.prod(src)).reshape(src)
    if m.group(3):
        a = a.transpose([int(v) for v in m.group(3).split(",")])
    return a.reshape(dims)


def _rt18_groups_from(attr, num, names_re=r"'([^']*)'=(\d+)", use_device_ids=True, empty_all=True):
    attr = (attr or "").strip()
    if not attr or attr == "{}":
        return (tuple(range(num)),) if empty_all else ()
    if attr.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}(.*)", attr)
        axes = re.findall(names_re, m.group(1))
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'([^']*)'", m.group(2))
        ids = np.arange(math.prod(sizes))
        dm = re.search(
            r"device_ids=\(?(\[[^\)]*?\](?:<=\[[\d,]+\])?(?:T\([\d,]+\))?)\)?", m.group(3)
        )
        if dm and use_device_ids:
            t = dm.group(1)
            if "<=" in t:
                ids = _rt18_iota(t).reshape(-1)
            else:
                mm = re.fullmatch(r"\[([\d,]+)\](?:T\(([\d,]+)\))?", t)
                a = np.arange(math.prod(sizes)).reshape([int(v) for v in mm.group(1).split(",")])
                if mm.group(2):
                    a = a.transpose([int(v) for v in mm.group(2).split(",")])
                ids = a.reshape(-1)
        a = ids.reshape(sizes)
        idx = [names.index(c) for c in chosen]
        rest = [i for i in range(len(sizes)) if i not in idx]
        a = a.transpose(rest + idx).reshape(-1, math.prod(sizes[i] for i in idx) if idx else 1)
        groups = a.tolist()
    elif attr.startswith("["):
        groups = _rt18_iota(attr).tolist()
    else:
        groups = [
            [int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([\d,\s]*)\}", attr)
        ]
    return tuple(sorted(tuple(sorted(g)) for g in groups))


def _rt18_collective_groups_impl(hlo_text, **kw):
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    num = int(m.group(1)) if m else 1
    c = Counter()
    for line in hlo_text.splitlines():
        om = re.search(
            r"=\s*(?:\([^)]*\)|\S+)\s+(all-reduce|all-gather|reduce-scatter|all-to-all)(?:-start)?\(",
            line,
        )
        if not om:
            continue
        rg = re.search(
            r"replica_groups=(mesh\[[^\]]*\]\s*\{[^}]*\}(?:,?\s*device_ids=\([^)]*\)\)?)?|\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?|\{(?:\{[\d,\s]*\},?)*\})",
            line,
        )
        c[(om.group(1), _rt18_groups_from(rg.group(1) if rg else "", num, **kw))] += 1
    return c


@wrong(
    "collective_groups",
    why="Clause 'an empty {} or no replica_groups at all: one group of all num_partitions devices': maps an empty/absent replica_groups to no groups (), so an all-reduce with replica_groups={} in a num_partitions=8 module gives groups () instead of ((0..7),).",
)
def _rt18_collective_groups_empty_is_none(hlo_text: str) -> Counter:
    return _rt18_collective_groups_impl(hlo_text, empty_all=False)


@wrong(
    "collective_groups",
    why="Clause 'a name is any quoted text, not only word characters: data-parallel, model.0': reads mesh axis names with \\w+, so mesh['data-parallel'=2,'model'=4] {'model'} loses the first axis and groups all 8 devices wrongly.",
)
def _rt18_collective_groups_word_names(hlo_text: str) -> Counter:
    return _rt18_collective_groups_impl(hlo_text, names_re=r"'(\w+)'=(\d+)")


@wrong(
    "collective_groups",
    why="Clause 'optionally with device_ids=(...) (an iota list giving the device number at each mesh position)': ignores device_ids, so mesh['x'=2,'y'=4] {'x'}, device_ids=([2,4]T(1,0)) gives {0,4},{1,5}.. instead of {0,1},{2,3},..",
)
def _rt18_collective_groups_no_device_ids(hlo_text: str) -> Counter:
    return _rt18_collective_groups_impl(hlo_text, use_device_ids=False)


# ---------------------------------------------------------------- migrated_step
_rt18_LR = 0.05


def _rt18_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="README 'the migration trap': pmap body ported to shard_map with check_vma=True; the gradient of the invariant w is already summed over 'x', pmean on top changes nothing, so the step is n times too large (2x on the (2, 4) mesh).",
)
def _rt18_migrated_step_vma_trap(w, x, y, mesh: Mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_rt18_loss)(w, x, y)
        return w - _rt18_LR * jax.lax.pmean(grad, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )


@wrong(
    "migrated_step",
    why="Clause 'each device must receive only its own rows ... the collectives may move no more bytes per device than those of the inherited pmap program': shard_map with in_specs P() for x and y (whole batch computed on every device); numbers right but the compiled program all-gathers x and y, moving more bytes than pmap's single all-reduce (mesh '8', x f32[16,4]).",
)
def _rt18_migrated_step_whole_batch(w, x, y, mesh: Mesh):
    def body(w, x, y):
        loss, grad = jax.value_and_grad(_rt18_loss)(w, x, y)
        return w - _rt18_LR * grad, loss

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P(), P()), out_specs=(P(), P()))(w, x, y)


# ---------------------------------------------------------------- place_weights
@wrong(
    "place_weights",
    why="Clause 'each device may hold at most 1/n of each weight': splits w1 by columns but leaves w2 replicated (first matmul needs no communication), so each device holds all of w2.",
)
def _rt18_place_weights_w2_replicated(w1, w2, mesh: Mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P())),
    )


@wrong(
    "place_weights",
    why="Budget 'at most half the bytes of first_placement': splits both weights by columns (P(None, 'x')); each device holds 1/n but the hidden layer must be gathered before the second matmul and the result gathered again, so the collective bytes are not halved (check on PLACEMENT_CASES).",
)
def _rt18_place_weights_both_columns(w1, w2, mesh: Mesh):
    s = NamedSharding(mesh, P(None, "x"))
    return jax.device_put(w1, s), jax.device_put(w2, s)


# ---------------------------------------------------------------- predict_collectives
def _rt18_split_axes(spec, dim, sizes):
    if spec is None or dim >= len(spec):
        return ()
    return tuple(a for a in _rt18_axes(spec[dim]) if sizes.get(a, 1) > 1)


@wrong(
    "predict_collectives",
    why="README 'Count per dimension, not per program': one collective per program, so x.sum() with x placed P('x', 'y') on a 2x4 mesh is predicted {'all-reduce': 1} instead of 2 (and x*2 returned replicated from P('x','y') gives 1 all-gather instead of 2).",
)
def _rt18_predict_collectives_per_program(case):
    sizes = dict(case.mesh)
    x = case.specs[0]
    split = [bool(_rt18_split_axes(x, d, sizes)) for d in range(2)]
    op = case.op
    if not any(split):
        return {}
    if op == "sum":
        return {"all-reduce": 1}
    if op in ("sum0", "softmax0"):
        return {"all-reduce": 1 if op == "sum0" else 2} if split[0] else {}
    if op in ("sum1", "softmax1"):
        return {"all-reduce": 1 if op == "sum1" else 2} if split[1] else {}
    if op == "matmul":
        return {"all-reduce": 1} if split[1] else {}
    if op in ("scale", "transpose"):
        if case.out == P():
            return {"all-gather": 1}
        if case.out is not None and case.out != x:
            return {"all-to-all": 1}
        return {}
    if op in ("reverse0", "reverse1"):
        return {"collective-permute": 1} if split[int(op[-1])] else {}
    if op == "add":
        return {} if case.specs[1] == x else {"all-to-all": 1}
    return {}

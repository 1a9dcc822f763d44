"""Red-team wrong answers for phase 9, written from the contract only.

Round 6: each answer agrees with a correct one on the programs.py examples but breaks a clause
of the contract on a valid input the examples lack (named in `why`).
"""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import AxisType, Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt6_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
_rt6_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*(.*?)\s([a-z][\w\-]*)\((.*)$")


def _rt6_compiled_text(f, *args):
    return jax.jit(f).lower(*args).compile().as_text()


def _rt6_lowered_text(f, *args):
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


def _rt6_computations(text):
    """{name: (is_entry, [lines])} of an HLO module text."""
    comps, current = {}, None
    for line in text.splitlines():
        head = re.match(r"^(ENTRY\s+)?%?([\w.\-]+)\s.*\{\s*$", line)
        if head and not line.startswith(" "):
            current = head.group(2)
            comps[current] = (bool(head.group(1)), [])
        elif line.startswith("}"):
            current = None
        elif current is not None:
            comps[current][1].append(line)
    return comps


def _rt6_entry_lines(text):
    for is_entry, lines in _rt6_computations(text).values():
        if is_entry:
            return lines
    return []


def _rt6_dims(shape):
    m = re.match(r"\s*[a-z0-9]+\[([0-9,]*)\]", shape)
    if not m or not m.group(1):
        return ()
    return tuple(int(d) for d in m.group(1).split(","))


# ---------------------------------------------------------------- auto_mesh


@wrong(
    "auto_mesh",
    why="XLA may not shard through: make_mesh's default axis type is Explicit; "
    "wrong on every call (mesh.axis_types is (Explicit,), not (Auto,))",
)
def _rt6_auto_mesh_default_type() -> Mesh:
    return jax.make_mesh((8,), ("x",))


@wrong(
    "auto_mesh",
    why="Manual is not the type where XLA propagates shardings (that is Auto); wrong on every call",
)
def _rt6_auto_mesh_manual() -> Mesh:
    return jax.make_mesh((8,), ("x",), axis_types=(AxisType.Manual,))


@wrong(
    "auto_mesh",
    why="'over all 8 devices': builds the mesh over the first 4 devices only; "
    "wrong on every call (mesh.size 4)",
)
def _rt6_auto_mesh_four() -> Mesh:
    return jax.make_mesh((4,), ("x",), axis_types=(AxisType.Auto,), devices=jax.devices()[:4])


# ---------------------------------------------------------------- shard_rows


@wrong(
    "shard_rows",
    why="rows split over mesh axis 'x' only: splits over every mesh axis; wrong "
    "on the (2, 4) mesh ('x', 'y') with 8 rows (each device gets 1 row, not 4)",
)
def _rt6_shard_rows_all_axes(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P(tuple(mesh.axis_names), None)))


@wrong(
    "shard_rows",
    why="rows split over 'x', not over the first axis: wrong on the ('y', 'x') "
    "mesh (rows split over 'y')",
)
def _rt6_shard_rows_first_axis(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(x, NamedSharding(mesh, P(mesh.axis_names[0], None)))


@wrong(
    "shard_rows",
    why="dtype unchanged: goes through jnp.asarray(x, float32); wrong on int32 "
    "and float16 and bfloat16 inputs",
)
def _rt6_shard_rows_f32(x, mesh: Mesh) -> jax.Array:
    return jax.device_put(jnp.asarray(x, jnp.float32), NamedSharding(mesh, P("x", None)))


# ---------------------------------------------------------------- collective_census


def _rt6_census(text, entry_only=False, non_tuple=False):
    counts = Counter()
    for is_entry, lines in _rt6_computations(text).values():
        if entry_only and not is_entry:
            continue
        for line in lines:
            m = _rt6_INSTR.match(line)
            if not m:
                continue
            shape, op = m.group(2), m.group(3)
            if non_tuple and shape.startswith("("):
                continue
            base = op[:-6] if op.endswith("-start") else op
            if base in _rt6_OPS and not op.endswith("-done"):
                counts[base] += 1
    return counts


@wrong(
    "collective_census",
    why="every computation: reads ENTRY and while bodies but skips "
    "computations only reached through a `call`/conditional branch; wrong on a lax.cond whose "
    "branch holds a psum (all-reduce in a branch computation)",
)
def _rt6_census_skip_branches(f, *args) -> Counter:
    text = _rt6_compiled_text(f, *args)
    comps = _rt6_computations(text)
    branch = set()
    for _, lines in comps.values():
        for line in lines:
            for m in re.finditer(
                r"(?:branch_computations=\{([^}]*)\}|true_computation=%?([\w.\-]+)|"
                r"false_computation=%?([\w.\-]+)|to_apply=%?([\w.\-]+))",
                line,
            ):
                if " call(" in line or "conditional(" in line:
                    for g in m.groups():
                        if g:
                            branch.update(n.strip().lstrip("%") for n in g.split(","))
    counts = Counter()
    for name, (_, lines) in comps.items():
        if name in branch:
            continue
        counts += _rt6_census("ENTRY x {\n" + "\n".join(lines) + "\n}\n")
    return counts


@wrong(
    "collective_census",
    why="count by opcode: regex requires an array shape before the "
    "opcode, so a combined all-reduce of a tuple `(f32[4,3], f32[])` is missed; wrong on a "
    "shard_map with two psums that XLA combines into one tuple all-reduce",
)
def _rt6_census_no_tuples(f, *args) -> Counter:
    return _rt6_census(_rt6_compiled_text(f, *args), non_tuple=True)


@wrong(
    "collective_census",
    why="every computation: follows the call graph from ENTRY "
    "through while bodies, branches and calls but not while *conditions*; wrong on a "
    "lax.while_loop whose cond_fun sums a row-sharded array (all-reduce in the condition)",
)
def _rt6_census_skip_conditions(f, *args) -> Counter:
    text = _rt6_compiled_text(f, *args)
    comps = _rt6_computations(text)
    todo = [n for n, (e, _) in comps.items() if e]
    seen = set()
    counts = Counter()
    while todo:
        name = todo.pop()
        if name in seen or name not in comps:
            continue
        seen.add(name)
        lines = comps[name][1]
        counts += _rt6_census("ENTRY x {\n" + "\n".join(lines) + "\n}\n")
        for line in lines:
            for m in re.finditer(
                r"(?:body|to_apply|calls|true_computation|false_computation)"
                r"=%?([\w.\-]+)",
                line,
            ):
                todo.append(m.group(1))
            for m in re.finditer(r"branch_computations=\{([^}]*)\}", line):
                todo.extend(n.strip().lstrip("%") for n in m.group(1).split(","))
    return counts


# ---------------------------------------------------------------- device_param_shapes


def _rt6_params(text):
    out = []
    for line in _rt6_entry_lines(text):
        m = _rt6_INSTR.match(line)
        if m and m.group(3) == "parameter":
            num = re.match(r"\s*(\d+)\)", m.group(4)).group(1)
            out.append((num, m.group(2), line))
    return out


@wrong(
    "device_param_shapes",
    why="parameter-number order: sorts by the number as text, so "
    "parameter(10) comes before parameter(2); wrong on a function with 11 or more arguments",
)
def _rt6_param_shapes_text_sort(f, *args) -> list[tuple[int, ...]]:
    ps = sorted(_rt6_params(_rt6_compiled_text(f, *args)), key=lambda p: p[0])
    return [_rt6_dims(shape) for _, shape, _ in ps]


@wrong(
    "device_param_shapes",
    why="read the module, not the inputs: shard_shape of every argument, "
    "so a dropped argument still gets a shape; wrong on any function that ignores an "
    "argument (one shape too many)",
)
def _rt6_param_shapes_from_args(f, *args) -> list[tuple[int, ...]]:
    return [tuple(a.sharding.shard_shape(a.shape)) for a in args]


@wrong(
    "device_param_shapes",
    why="any element type: regex only knows f32/s32/bf16/f16 "
    "shapes, other element types (pred, u8, f64, s8, c64) come out as (); wrong on a bool "
    "or uint8 argument of shape (16, 8)",
)
def _rt6_param_shapes_some_types(f, *args) -> list[tuple[int, ...]]:
    ps = sorted(_rt6_params(_rt6_compiled_text(f, *args)), key=lambda p: int(p[0]))
    out = []
    for _, shape, _ in ps:
        m = re.match(r"\s*(?:f32|s32|bf16|f16)\[([0-9,]*)\]", shape)
        out.append(tuple(int(d) for d in m.group(1).split(",")) if m and m.group(1) else ())
    return out


# ---------------------------------------------------------------- param_shardings


def _rt6_shard_attr(line):
    m = re.search(r"sharding=(\{.*?\})(?:,\s*\w+=|\s*$)", line)
    return m.group(1) if m else ""


@wrong(
    "param_shardings",
    why="parameter-number order: regex `parameter\\((\\d)\\)` reads one "
    "digit, so parameter(10) and parameter(11) sort as 1; wrong with 11 or more arguments",
)
def _rt6_param_shardings_one_digit(f, *args) -> list[str]:
    ps = []
    for line in _rt6_entry_lines(_rt6_lowered_text(f, *args)):
        m = re.search(r"parameter\((\d)", line)
        if m and " parameter(" in line:
            ps.append((int(m.group(1)), _rt6_shard_attr(line)))
    return [s for _, s in sorted(ps, key=lambda p: p[0])]


@wrong(
    "param_shardings",
    why="an argument jit dropped has none: builds the strings from every "
    "argument's sharding (_to_xla_hlo_sharding), including dropped ones; wrong on skips_one-"
    "like functions with an unused argument, and the spelling differs for replicated ones",
)
def _rt6_param_shardings_from_args(f, *args) -> list[str]:
    out = []
    for a in args:
        hlo = a.sharding._to_xla_hlo_sharding(a.ndim)
        out.append("{" + str(hlo).strip("{}") + "}")
    return out


@wrong(
    "param_shardings",
    why="annotation text: cuts the text at the first space, dropping "
    "`last_tile_dim_replicate` / `last_tile_dims={...}`; wrong on any partially replicated "
    "parameter (P('x') on the (2, 4) mesh)",
)
def _rt6_param_shardings_first_word(f, *args) -> list[str]:
    ps = []
    for line in _rt6_entry_lines(_rt6_lowered_text(f, *args)):
        m = _rt6_INSTR.match(line)
        if m and m.group(3) == "parameter":
            num = int(re.match(r"\s*(\d+)", m.group(4)).group(1))
            s = _rt6_shard_attr(line)
            s = s.split(" ")[0]
            ps.append((num, s if s.endswith("}") else s + "}"))
    return [s for _, s in sorted(ps)]


# ---------------------------------------------------------------- psum_total


@wrong(
    "psum_total",
    why="psum over 'x' only: sums over every mesh axis; wrong on the (2, 4) "
    "mesh (the total is counted 4 times)",
)
def _rt6_psum_total_all_axes(x, mesh: Mesh) -> jax.Array:
    def body(b):
        return jax.lax.psum(b.sum(), tuple(mesh.axis_names))

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


@wrong(
    "psum_total",
    why="the sum, dtype kept: pmean times n goes through float32 for int32 x, "
    "so an int32 total above 2**24 (e.g. (16, 8) of 200000) is rounded; wrong there",
)
def _rt6_psum_total_pmean(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def body(b):
        return jax.lax.pmean(b.sum(), "x") * n

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P())(x).astype(x.dtype)


@wrong(
    "psum_total",
    why="one psum inside shard_map: jnp.sum under jit lets the partitioner do "
    "it (no psum, no shard_map); wrong per contract on every input",
)
def _rt6_psum_total_jit(x, mesh: Mesh) -> jax.Array:
    return jax.jit(jnp.sum, out_shardings=NamedSharding(mesh, P()))(x)


# ---------------------------------------------------------------- ring_shift


@wrong(
    "ring_shift",
    why="i -> i + 1: pairs (i, i - 1); wrong whenever 'x' has more than 2 "
    "positions (the 8-device mesh, the ('y', 'x') mesh)",
)
def _rt6_ring_shift_backwards(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    perm = [(i, (i - 1) % n) for i in range(n)]

    def body(b):
        return jax.lax.ppermute(b, "x", perm)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "ring_shift",
    why="the last block goes to position 0: pairs for i < n - 1 only, so "
    "position 0 receives zeros; wrong on every mesh",
)
def _rt6_ring_shift_no_wrap(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    perm = [(i, i + 1) for i in range(n - 1)]

    def body(b):
        return jax.lax.ppermute(b, "x", perm)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "ring_shift",
    why="moves blocks, not rows: rolls the global array by one row; right only "
    "when each block is one row (y2x4 example), wrong on (16, 8) over 8 devices",
)
def _rt6_ring_shift_one_row(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    perm = [(i, (i + 1) % n) for i in range(n)]

    def body(b):
        last = jax.lax.ppermute(b[-1:], "x", perm)
        return jnp.concatenate([last, b[:-1]], axis=0)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


# ---------------------------------------------------------------- gather_rows


@wrong(
    "gather_rows",
    why="all_gather over mesh axis 'x' only: gathers over every mesh axis, so "
    "on the (2, 4) mesh every row appears 4 times",
)
def _rt6_gather_rows_all_axes(x, mesh: Mesh) -> jax.Array:
    names = tuple(mesh.axis_names)

    def body(b):
        return jax.lax.all_gather(b, names, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


@wrong(
    "gather_rows",
    why="one all_gather inside shard_map, not a replicated out_sharding: "
    "values right but the partitioner does the gather",
)
def _rt6_gather_rows_out_sharding(x, mesh: Mesh) -> jax.Array:
    return jax.jit(lambda a: a, out_shardings=NamedSharding(mesh, P()))(x)


@wrong(
    "gather_rows",
    why="in order: gathers with reversed position order (ppermute-free "
    "trick: all_gather then flip the stack); wrong whenever 'x' has more than 1 position",
)
def _rt6_gather_rows_reversed(x, mesh: Mesh) -> jax.Array:
    def body(b):
        g = jax.lax.all_gather(b, "x", tiled=False)
        return g[::-1].reshape(-1, *b.shape[1:])

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P(), check_vma=False)(x)


# ---------------------------------------------------------------- scatter_sum


@wrong(
    "scatter_sum",
    why="one collective reduces and scatters: psum then keep slice i (two "
    "steps, an all-reduce of the whole block); wrong per contract on every input",
)
def _rt6_scatter_sum_psum_slice(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def body(b):
        s = jax.lax.psum(b, "x")
        r = s.shape[0] // n
        i = jax.lax.axis_index("x")
        return jax.lax.dynamic_slice_in_dim(s, i * r, r, 0)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "scatter_sum",
    why="position i keeps slice i (rows i*r/n..(i+1)*r/n): reshapes the "
    "block to (r/n, n, cols) and scatters dimension 1, so position i keeps rows i, i+n, ...; "
    "right when r == n (8-device mesh), wrong on the (2, 4) mesh with 8 rows",
)
def _rt6_scatter_sum_strided(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def body(b):
        r = b.shape[0]
        s = jax.lax.psum_scatter(
            b.reshape(r // n, n, *b.shape[1:]), "x", scatter_dimension=1, tiled=True
        )
        return s.reshape(r // n, *b.shape[1:])

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"))(x)


@wrong(
    "scatter_sum",
    why="over 'x', not over the first mesh axis: wrong on the ('y', 'x') mesh "
    "(reduces the 2 copies along 'y' instead of the 4 blocks)",
)
def _rt6_scatter_sum_first_axis(x, mesh: Mesh) -> jax.Array:
    a = mesh.axis_names[0]

    def body(b):
        return jax.lax.psum_scatter(b, a, scatter_dimension=0, tiled=True)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x"), out_specs=P("x"), check_vma=False)(x)


# ---------------------------------------------------------------- predict_collectives


def _rt6_split(entry, sizes, skip_one=True):
    if entry is None:
        return 1
    names = (entry,) if isinstance(entry, str) else tuple(entry)
    k = 1
    for a in names:
        if not skip_one or sizes.get(a, 1) > 1:
            k *= sizes.get(a, 1)
    if not skip_one and names:
        k = max(k, 2)  # "named in the spec" read as "split"
    return k


def _rt6_predict(case, skip_one=True, none_is_replicated=False, softmax_reductions=2):
    sizes = dict(case.mesh)
    x = tuple(case.specs[0]) + (None,) * (2 - len(tuple(case.specs[0])))
    s0, s1 = (_rt6_split(e, sizes, skip_one) for e in x)
    out = case.out
    if out is None and none_is_replicated:
        out = P()
    op = case.op
    red = {"sum": (s0 > 1) + (s1 > 1), "sum0": s0 > 1, "sum1": s1 > 1}
    if op in red:
        return {"all-reduce": int(red[op])} if red[op] else {}
    if op == "softmax0":
        return {"all-reduce": softmax_reductions} if s0 > 1 else {}
    if op == "softmax1":
        return {"all-reduce": softmax_reductions} if s1 > 1 else {}
    if op == "matmul":
        return {"all-reduce": 1} if s1 > 1 else {}
    if op == "reverse0":
        return {"collective-permute": 1} if s0 > 1 else {}
    if op == "reverse1":
        return {"collective-permute": 1} if s1 > 1 else {}
    # scale, add, transpose: only a requested placement moves data
    if out is None:
        return {}
    o = tuple(out) + (None,) * (2 - len(tuple(out)))
    if op == "transpose":
        o = (o[1], o[0])
    o0, o1 = (_rt6_split(e, sizes, skip_one) for e in o)
    if (s0, s1) == (o0, o1) and tuple(x) == tuple(o):
        return {}
    if o0 == 1 and o1 == 1:
        return {"all-gather": (s0 > 1) + (s1 > 1)}
    return {"all-to-all": 1}


@wrong(
    "predict_collectives",
    why="an axis may have size 1: counts a split over a size-1 axis as "
    "a split; wrong on 'sum0' of float32[16,8] on mesh (('x', 1), ('y', 8)) with x placed "
    "P('x', None) (no collective at all, predicts one all-reduce)",
)
def _rt6_predict_collectives_size_one(case) -> dict[str, int]:
    return _rt6_predict(case, skip_one=False)


@wrong(
    "predict_collectives",
    why="out None: the partitioner chooses; treats None as replicated; "
    "wrong on 'scale' of float32[16,8] on mesh (('x', 8),) placed P('x') with out None "
    "(no collective; predicts an all-gather)",
)
def _rt6_predict_collectives_none_replicated(case) -> dict[str, int]:
    return _rt6_predict(case, none_is_replicated=True)


@wrong(
    "predict_collectives",
    why="softmax needs a max and a sum over the split dimension (two "
    "reductions); predicts one all-reduce; wrong on 'softmax0' of float32[16,8] on mesh "
    "(('x', 8),) placed P('x', None)",
)
def _rt6_predict_collectives_one_softmax_reduce(case) -> dict[str, int]:
    return _rt6_predict(case, softmax_reductions=1)


# ---------------------------------------------------------------- place_weights


@wrong(
    "place_weights",
    why="collective bytes at most half of first_placement: returns "
    "first_placement itself (both split by rows); over budget on every mesh",
)
def _rt6_place_weights_rows(w1, w2, mesh: Mesh):
    s = NamedSharding(mesh, P("x", None))
    return jax.device_put(w1, s), jax.device_put(w2, s)


@wrong(
    "place_weights",
    why="each device holds at most 1/n of each weight: w2 replicated (no "
    "collective needed for it) breaks the memory budget on every mesh",
)
def _rt6_place_weights_w2_replicated(w1, w2, mesh: Mesh):
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P())),
    )


@wrong(
    "place_weights",
    why="n = mesh.shape['x']: splits over the first mesh axis; on the "
    "('y', 'x') mesh each device holds 1/2 of each weight, over the 1/4 budget",
)
def _rt6_place_weights_first_axis(w1, w2, mesh: Mesh):
    a = mesh.axis_names[0]
    return (
        jax.device_put(w1, NamedSharding(mesh, P(None, a))),
        jax.device_put(w2, NamedSharding(mesh, P(a, None))),
    )


# ---------------------------------------------------------------- predict_shard_shape


def _rt6_shard_shape(shape, spec, mesh_shape, ceil=False, tuple_dups=True, tuple_axes_known=True):
    spec = tuple(spec)
    if len(spec) > len(shape):
        return None
    seen = set()
    out = []
    for i, d in enumerate(shape):
        entry = spec[i] if i < len(spec) else None
        if entry is None:
            out.append(d)
            continue
        names = (entry,) if isinstance(entry, str) else tuple(entry)
        k = 1
        for a in names:
            if a not in mesh_shape and (isinstance(entry, str) or tuple_axes_known):
                return None
            if a in seen:
                return None
            if tuple_dups:
                seen.add(a)
            k *= mesh_shape.get(a, 1)
        if not tuple_dups:
            seen.update(names)
        if d % k:
            if not ceil:
                return None
            out.append(-(-d // k))
        else:
            out.append(d // k)
    return tuple(out)


@wrong(
    "predict_shard_shape",
    why="None when the pieces do not divide: answers the padded "
    "ceil(d / k) instead; wrong on ((10, 8), P('x'), {'x': 8})",
)
def _rt6_predict_shard_shape_ceil(shape, spec, mesh_shape):
    return _rt6_shard_shape(shape, spec, mesh_shape, ceil=True)


@wrong(
    "predict_shard_shape",
    why="a mesh axis named twice is refused: checks repeats only "
    "across entries, not inside one tuple; wrong on ((16, 8), P(('x', 'x')), {'x': 2, 'y': 4})",
)
def _rt6_predict_shard_shape_tuple_dups(shape, spec, mesh_shape):
    return _rt6_shard_shape(shape, spec, mesh_shape, tuple_dups=False)


@wrong(
    "predict_shard_shape",
    why="an axis not in mesh_shape is refused: inside a tuple entry "
    "an unknown axis counts as size 1; wrong on ((16, 8), P(('x', 'z')), {'x': 2, 'y': 4})",
)
def _rt6_predict_shard_shape_tuple_unknown(shape, spec, mesh_shape):
    return _rt6_shard_shape(shape, spec, mesh_shape, tuple_axes_known=False)


# ---------------------------------------------------------------- predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="argument kinds come from in_axes: infers n from the first "
    "mapped argument and treats any in_axes=None argument whose dimension 0 equals n as "
    "mapped too; wrong on shapes [(4, 3), (4, 5)], in_axes [0, None] (second stays (4, 5))",
)
def _rt6_predict_pmap_from_shapes(shapes, in_axes):
    n = next((s[a] for s, a in zip(shapes, in_axes) if a is not None), None)
    out = []
    for s, a in zip(shapes, in_axes):
        s = list(s)
        if a is None and s and s[0] == n:
            a = 0
        if a is not None:
            s[a] = 1
        out.append(tuple(s))
    return out


@wrong(
    "predict_pmap_shapes",
    why="mapped size is the number of devices pmap runs on (1 to 8), "
    "not len(jax.devices()): divides by 8; wrong on pmap over 2 devices (gives 0)",
)
def _rt6_predict_pmap_div_devices(shapes, in_axes):
    out = []
    for s, a in zip(shapes, in_axes):
        s = list(s)
        if a is not None:
            s[a] = s[a] // 8
        out.append(tuple(s))
    return out


@wrong(
    "predict_pmap_shapes",
    why="the mapped dimension stays with size 1 (README): drops it "
    "as the body sees it; wrong on ((8, 2, 4), in_axes 0): (1, 2, 4), not (2, 4)",
)
def _rt6_predict_pmap_drop_dim(shapes, in_axes):
    out = []
    for s, a in zip(shapes, in_axes):
        out.append(tuple(s) if a is None else tuple(d for i, d in enumerate(s) if i != a))
    return out


# ---------------------------------------------------------------- collective_groups


def _rt6_iota(dims, perm=None):
    a = np.arange(int(np.prod(dims))).reshape(dims)
    if perm is not None:
        a = a.transpose(perm)
    return a.reshape(-1)


def _rt6_ints(s):
    return [int(v) for v in re.findall(r"-?\d+", s)]


def _rt6_groups_of(attr, nparts, word_names=False, use_device_ids=True, empty_n=None):
    attr = attr.strip()
    if attr.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}(.*)$", attr)
        name_re = r"'(\w+)'" if word_names else r"'((?:[^'\\]|\\.)*)'"
        axes = [(n, int(v)) for n, v in re.findall(name_re + r"\s*=\s*(\d+)", m.group(1))]
        named = re.findall(name_re, m.group(2))
        dims = [v for _, v in axes]
        ids = np.arange(int(np.prod(dims)))
        rest = m.group(3)
        d = re.search(
            r"device_ids=\(?\s*\[([\d,\s]*)\](?:<=\[([\d,\s]*)\])?(?:T\(([\d,\s]*)\))?", rest
        )
        if d and use_device_ids:
            shp = _rt6_ints(d.group(2) or d.group(1))
            perm = _rt6_ints(d.group(3)) if d.group(3) else None
            ids = _rt6_iota(shp, perm)
        arr = ids.reshape(dims)
        pos = [i for i, (n, _) in enumerate(axes) if n in named]
        size = int(np.prod([dims[i] for i in pos])) if pos else 1
        arr = np.moveaxis(arr, pos, list(range(len(dims) - len(pos), len(dims))))
        return arr.reshape(-1, size).tolist()
    if attr.startswith("["):
        m = re.match(r"\[([\d,]*)\]<=\[([\d,]*)\](?:T\(([\d,]*)\))?", attr)
        g = _rt6_ints(m.group(1))
        perm = _rt6_ints(m.group(3)) if m.group(3) else None
        return _rt6_iota(_rt6_ints(m.group(2)), perm).reshape(g).tolist()
    inner = re.findall(r"\{([\d,\s]*)\}", attr)
    groups = [_rt6_ints(s) for s in inner if s.strip()]
    if not groups:
        return [list(range(empty_n if empty_n is not None else nparts))]
    return groups


def _rt6_replica_attr(line):
    i = line.find("replica_groups=")
    if i < 0:
        return None
    s = line[i + len("replica_groups=") :]
    if s.startswith("{"):
        depth = 0
        for j, c in enumerate(s):
            depth += c == "{"
            depth -= c == "}"
            if depth == 0:
                return s[: j + 1]
    if s.startswith("mesh"):
        m = re.match(r"mesh\[.*?\]\s*\{.*?\}(?:,?\s*device_ids=\(?[^\s,)]*(?:,[^\s,)=]*)*\)?)?", s)
        return m.group(0)
    return (
        re.match(r"[^\s,]*(?:,[\d]+)*[^\s,]*", s).group(0)
        if not s.startswith("[")
        else re.match(r"\[[\d,]*\]<=\[[\d,]*\](?:T\([\d,]*\))?", s).group(0)
    )


def _rt6_collective_groups(hlo_text, **kw):
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    nparts = int(m.group(1)) if m else 1
    counts = Counter()
    for line in hlo_text.splitlines():
        mi = _rt6_INSTR.match(line)
        if not mi:
            continue
        op = re.sub(r"-start$", "", mi.group(3))
        if op not in ("all-reduce", "all-gather", "reduce-scatter", "all-to-all"):
            continue
        attr = _rt6_replica_attr(line)
        groups = _rt6_groups_of(attr or "{}", nparts, **kw)
        key = tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
        counts[(op, key)] += 1
    return counts


@wrong(
    "collective_groups",
    why="a mesh axis name is any quoted text: reads names with \\w+, so "
    "mesh['data-parallel'=2,'model.0'=4] {'data-parallel'} loses its axes; wrong on that "
    "spelling",
)
def _rt6_collective_groups_word_names(hlo_text: str) -> Counter:
    try:
        return _rt6_collective_groups(hlo_text, word_names=True)
    except Exception:
        return Counter()


@wrong(
    "collective_groups",
    why="device_ids changes the numbers: ignores device_ids; wrong on "
    "mesh['x'=2,'y'=4] {'x'}, device_ids=([2,4]T(1,0)) (groups {0,1},{2,3},.. not {0,4},..)",
)
def _rt6_collective_groups_no_device_ids(hlo_text: str) -> Counter:
    return _rt6_collective_groups(hlo_text, use_device_ids=False)


@wrong(
    "collective_groups",
    why="empty {} or no replica_groups is one group of num_partitions "
    "devices: uses all 8 CPU devices; wrong on a pmap over 2 devices printed with "
    "replica_groups={} and num_partitions=2",
)
def _rt6_collective_groups_empty_is_8(hlo_text: str) -> Counter:
    return _rt6_collective_groups(hlo_text, empty_n=8)


# ---------------------------------------------------------------- migrated_step


def _rt6_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="the gradient of a P() w in shard_map is already summed over 'x': "
    "adds a pmean on top (README's trap), so the step is n times too large; wrong on every "
    "mesh with n > 1",
)
def _rt6_migrated_step_trap(w, x, y, mesh: Mesh):
    def body(w, x, y):
        loss, g = jax.value_and_grad(_rt6_loss)(w, x, y)
        return w - 0.05 * jax.lax.pmean(g, "x"), jax.lax.pmean(loss, "x")

    return jax.shard_map(body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()))(
        w, x, y
    )


@wrong(
    "migrated_step",
    why="each device must receive only its own rows: gathers x and y to "
    "every device (with_sharding_constraint to P()) before the step; right numbers, "
    "wrong per the rows clause on every mesh",
)
def _rt6_migrated_step_gathered(w, x, y, mesh: Mesh):
    rep = NamedSharding(mesh, P())
    x = jax.lax.with_sharding_constraint(x, rep)
    y = jax.lax.with_sharding_constraint(y, rep)
    loss, g = jax.value_and_grad(_rt6_loss)(w, x, y)
    return (
        jax.lax.with_sharding_constraint(w - 0.05 * g, rep),
        jax.lax.with_sharding_constraint(loss, rep),
    )


@wrong(
    "migrated_step",
    why="the loss pmap returns is the mean over all devices: takes each "
    "device's local loss without a collective (check_vma=False), so the loss is device 0's "
    "block loss; wrong on every mesh with n > 1",
)
def _rt6_migrated_step_local_loss(w, x, y, mesh: Mesh):
    def body(w, x, y):
        loss, g = jax.value_and_grad(_rt6_loss)(w, x, y)
        return w - 0.05 * jax.lax.pmean(g, "x"), loss

    return jax.shard_map(
        body, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()), check_vma=False
    )(w, x, y)

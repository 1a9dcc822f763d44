"""Red team, phase 9, round 8: wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import Mesh, NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_RT8_OPS = ("all-reduce", "all-gather", "reduce-scatter", "collective-permute", "all-to-all")
_RT8_OP_RE = re.compile(r"\s(" + "|".join(_RT8_OPS) + r")\(")


def _rt8_census_text(text: str) -> list[str]:
    found = []
    for line in text.splitlines():
        if "=" not in line:
            continue
        m = re.search(r"(?<![%\w.-])(" + "|".join(_RT8_OPS) + r")\(", line.split("=", 1)[1])
        if m:
            found.append(m.group(1))
    return found


def _rt8_entry_params(text: str):
    """(number, shape text, line) of every ENTRY parameter."""
    lines = text.splitlines()
    start = next(i for i, ln in enumerate(lines) if ln.startswith("ENTRY"))
    out = []
    for ln in lines[start + 1 :]:
        if ln.startswith("}"):
            break
        m = re.search(r"=\s*(\w+\[[^\]]*\])\S*\s+parameter\((\d+)\)", ln)
        if m:
            out.append((int(m.group(2)), m.group(1), ln))
    return sorted(out)


def _rt8_dims(shape: str) -> tuple[int, ...]:
    inside = shape[shape.index("[") + 1 : shape.rindex("]")]
    return tuple(int(d) for d in inside.split(",") if d.strip())


# --------------------------------------------------------------------------- collective_census


@wrong(
    "collective_census",
    why="'when it compiled jax.jit(f)(*args)': lowers on jax.ShapeDtypeStruct(a.shape, a.dtype) "
    "stand-ins (to avoid touching device data), which drops the arguments' shardings; the "
    "partitioner then sees unsharded inputs. Wrong on census_bank 'replicated output' "
    "(replicate(x), x rows over 8): compiles to an all-gather, answers {} (no sharded input).",
)
def _rt8_collective_census_abstract_args(f, *args) -> Counter:
    stand_ins = [jax.ShapeDtypeStruct(np.shape(a), a.dtype) for a in args]
    text = jax.jit(f).lower(*stand_ins).compile().as_text()
    return Counter(_rt8_census_text(text))


@wrong(
    "collective_census",
    why="'counted by opcode': reports which opcodes occur (Counter of the SET of opcodes, one "
    "each), not how many instructions have them. Wrong on census_bank 'two ppermutes and a psum "
    "in shard_map': {'collective-permute': 2, 'all-reduce': 1}, answers collective-permute 1.",
)
def _rt8_collective_census_distinct(f, *args) -> Counter:
    text = jax.jit(f).lower(*args).compile().as_text()
    return Counter(set(_rt8_census_text(text)))


# --------------------------------------------------------------------------- device_param_shapes


@wrong(
    "device_param_shapes",
    why="'An argument the function never reads is not a parameter (jit drops it)': compiles "
    "with jax.jit(f, keep_unused=True) 'so every argument shows up', so the dropped argument "
    "becomes a parameter. Wrong on param_bank 'z never read' (three_unused: 2 parameters), "
    "answers 3 shapes, and on skips_one (answers 4 instead of 3).",
)
def _rt8_device_param_shapes_keep_unused(f, *args) -> list[tuple[int, ...]]:
    text = jax.jit(f, keep_unused=True).lower(*args).compile().as_text()
    return [_rt8_dims(shape) for _, shape, _ in _rt8_entry_params(text)]


# --------------------------------------------------------------------------- param_shardings


@wrong(
    "param_shardings",
    why="'the sharding={...} annotation text ... e.g. \"{devices=[8,1]<=[8]}\"': captures what "
    "is INSIDE the braces (regex sharding=\\{(.*?)\\}) and returns 'devices=[8,1]<=[8]' and "
    "'replicated' without the outer braces. Wrong on every parameter, e.g. param_bank "
    "'three' (answers 'devices=[8,1]<=[8]' for a).",
)
def _rt8_param_shardings_no_braces(f, *args) -> list[str]:
    text = jax.jit(f).lower(*args).as_text(dialect="hlo")
    out = []
    for _, _, line in _rt8_entry_params(text):
        m = re.search(r"sharding=\{(.*?)\}", line)
        out.append(m.group(1) if m else "")
    return out


# --------------------------------------------------------------------------- gather_rows


@wrong(
    "gather_rows",
    why="'One all_gather over mesh axis \"x\"': a ring all-gather written with n-1 ppermutes "
    "(the ring_shift pattern) and a concatenation; the values and the replicated result are "
    "right, but the compiled program has n-1 collective-permutes and no all-gather. Wrong on "
    "every mesh with n > 1 (e.g. mesh '8', 16 rows: 7 collective-permutes).",
)
def _rt8_gather_rows_ring(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]
    pairs = [(i, (i + 1) % n) for i in range(n)]

    def body(block):
        me = jax.lax.axis_index("x")
        pieces = [block]
        cur = block
        for _ in range(n - 1):
            cur = jax.lax.ppermute(cur, "x", pairs)
            pieces.append(cur)
        # pieces[k] came from position (me - k) mod n
        stacked = jnp.stack(pieces)  # (n, r, c)
        order = (me - jnp.arange(n)) % n  # source position of each piece
        inv = jnp.argsort(order)
        return stacked[inv].reshape(-1, block.shape[1])

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P(), check_vma=False)(x)


# --------------------------------------------------------------------------- scatter_sum


@wrong(
    "scatter_sum",
    why="'One collective does the reducing and the scattering': an all_to_all hands position i "
    "slice i of every block, then each device adds them up locally; the numbers are right but "
    "the collective is an all-to-all that does not reduce (n times the bytes of a reduce-scatter "
    "arrive), no reduce-scatter. Wrong on every mesh (e.g. mesh '8', 64 rows).",
)
def _rt8_scatter_sum_all_to_all(x, mesh: Mesh) -> jax.Array:
    n = mesh.shape["x"]

    def body(block):
        r, c = block.shape
        pieces = block.reshape(n, r // n, c)
        got = jax.lax.all_to_all(pieces, "x", 0, 0)
        return got.sum(0).astype(block.dtype)

    return jax.shard_map(body, mesh=mesh, in_specs=P("x", None), out_specs=P("x", None))(x)


# --------------------------------------------------------------------------- predict_pmap_shapes


@wrong(
    "predict_pmap_shapes",
    why="'in_axes[i] ... an int >= 0, or None': tests `if axis:` instead of `axis is not None`, "
    "so in_axes 0 counts as None and the argument is predicted whole. Wrong on "
    "([(8, 2, 4)], [0]): ENTRY f32[1,2,4], answers (8, 2, 4); right for in_axes 1, 2 and None.",
)
def _rt8_predict_pmap_shapes_truthy_axis(shapes, in_axes):
    out = []
    for shape, axis in zip(shapes, in_axes):
        shape = tuple(shape)
        if axis:
            out.append(shape[:axis] + (1,) + shape[axis + 1 :])
        else:
            out.append(shape)
    return out


# --------------------------------------------------------------------------- predict_shard_shape


@wrong(
    "predict_shard_shape",
    why="'Return None when ... a dimension that its axes' pieces do not divide': also refuses "
    "a dimension SMALLER than its pieces ('cannot give every device a row'), which wrongly "
    "includes an empty dimension; 0 divides by 8 and jax places it. Wrong on "
    "((0, 8), P('x'), {'x': 8}): shard shape (0, 8), answers None.",
)
def _rt8_predict_shard_shape_too_small(shape, spec, mesh_shape):
    shape = tuple(shape)
    entries = tuple(spec)
    if len(entries) > len(shape):
        return None
    seen = []
    out = list(shape)
    for i, entry in enumerate(entries):
        if entry is None:
            continue
        names = (entry,) if isinstance(entry, str) else tuple(entry)
        pieces = 1
        for name in names:
            if name not in mesh_shape or name in seen:
                return None
            seen.append(name)
            pieces *= mesh_shape[name]
        if shape[i] < pieces or shape[i] % pieces:
            return None
        out[i] = shape[i] // pieces
    return tuple(out)


# --------------------------------------------------------------------------- collective_groups

_RT8_GROUP_OPS = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")


def _rt8_iota(text: str) -> np.ndarray:
    """'[g,s]<=[d..]T(p..)' or '[d..]T(p..)' or '[n]<=[n]' -> array (reshaped to first dims)."""
    text = text.strip()
    m = re.fullmatch(r"\[([\d,]*)\](?:<=\[([\d,]*)\])?(?:T\(([\d,]*)\))?", text)
    first = [int(v) for v in m.group(1).split(",") if v]
    src = [int(v) for v in m.group(2).split(",") if v] if m.group(2) else first
    a = np.arange(int(np.prod(src))).reshape(src)
    if m.group(3):
        a = a.transpose([int(v) for v in m.group(3).split(",")])
    return a.reshape(first)


def _rt8_balanced(text: str, start: int, open_: str, close: str) -> str:
    depth = 0
    for j in range(start, len(text)):
        if text[j] == open_:
            depth += 1
        elif text[j] == close:
            depth -= 1
            if depth == 0:
                return text[start : j + 1]
    return text[start:]


def _rt8_groups(line: str, n: int, sort: bool) -> tuple:
    k = line.find("replica_groups=")
    if k < 0:
        groups = [list(range(n))]
    else:
        rest = line[k + len("replica_groups=") :]
        if rest.startswith("{"):
            body = _rt8_balanced(rest, 0, "{", "}")
            groups = [
                [int(v) for v in g.split(",") if v.strip()]
                for g in re.findall(r"\{([\d,\s]*)\}", body[1:-1])
            ]
            if not groups:
                groups = [list(range(n))]
        elif rest.startswith("mesh["):
            spec = _rt8_balanced(rest, 4, "[", "]")
            axes = re.findall(r"'([^']*)'=(\d+)", spec)
            after = rest[4 + len(spec) :].lstrip()
            named = re.findall(r"'([^']*)'", _rt8_balanced(after, 0, "{", "}"))
            names = [a for a, _ in axes]
            sizes = [int(s) for _, s in axes]
            ids = np.arange(int(np.prod(sizes)))
            dm = re.search(r"(?<![_\w])device_ids=\(", line)
            if dm:
                inner = _rt8_balanced(line, dm.end() - 1, "(", ")")[1:-1]
                ids = _rt8_iota(inner).reshape(-1)
            grid = ids.reshape(sizes)
            pos = [names.index(a) for a in named]
            moved = np.moveaxis(grid, pos, list(range(len(sizes) - len(pos), len(sizes))))
            size = int(np.prod([sizes[p] for p in pos])) if pos else 1
            groups = moved.reshape(-1, size).tolist()
        else:
            m = re.match(r"\[[\d,]*\](?:<=\[[\d,]*\])?(?:T\([\d,]*\))?", rest)
            groups = _rt8_iota(m.group(0)).tolist()
    if sort:
        return tuple(sorted(tuple(sorted(int(v) for v in g)) for g in groups))
    return tuple(tuple(int(v) for v in g) for g in groups)


def _rt8_collective_groups(hlo_text: str, *, sort=True, permutes=False) -> Counter:
    m = re.search(r"num_partitions=(\d+)", hlo_text)
    n = int(m.group(1)) if m else 1
    ops = _RT8_GROUP_OPS + (("collective-permute",) if permutes else ())
    pattern = re.compile(r"=\s*.*?\s(" + "|".join(ops) + r")\(")
    out: Counter = Counter()
    for line in hlo_text.splitlines():
        mm = pattern.search(line)
        if not mm:
            continue
        op = mm.group(1)
        if op == "collective-permute":
            pairs = re.search(r"source_target_pairs=\{(.*?)\}\}", line)
            groups = (
                tuple(
                    tuple(sorted(int(v) for v in g.split(",")))
                    for g in re.findall(r"\{?(\d+,\d+)", pairs.group(1) + "}")
                )
                if pairs
                else ()
            )
            out[(op, tuple(sorted(groups)))] += 1
        else:
            out[(op, _rt8_groups(line, n, sort))] += 1
    return out


@wrong(
    "collective_groups",
    why="'every group in ascending order and the groups sorted': decodes every spelling but keeps "
    "the listed order as printed. Wrong on a listed spelling written reordered, e.g. "
    "all-reduce replica_groups={{5,1},{0,4},{6,2},{3,7}}: key groups ((0,4),(1,5),(2,6),(3,7)), "
    "answers ((5,1),(0,4),(6,2),(3,7)).",
)
def _rt8_collective_groups_unsorted(hlo_text: str) -> Counter:
    return _rt8_collective_groups(hlo_text, sort=False)


@wrong(
    "collective_groups",
    why="'collective-permute has pairs, not groups: leave it out': counts collective-permute "
    "too, its source_target_pairs read as groups. Wrong on any module with a ppermute (ring_shift "
    "on mesh '8': an extra ('collective-permute', ((0,1),(0,7),(1,2),...)) key).",
)
def _rt8_collective_groups_with_permutes(hlo_text: str) -> Counter:
    return _rt8_collective_groups(hlo_text, permutes=True)


# --------------------------------------------------------------------------- migrated_step


def _rt8_loss(w, x, y):
    return jnp.mean((x @ w - y) ** 2)


@wrong(
    "migrated_step",
    why="'(new w, loss): the values run_inherited gives': returns the loss AFTER the update "
    "(evaluated at the new w, 'the loss of the step's result') instead of the loss value_and_grad "
    "computed at the old w that pmap's step pmeans. New w is right; the loss is wrong on every "
    "batch with a nonzero gradient (e.g. the (2, 4) mesh, x f32[16,4]).",
)
def _rt8_migrated_step_loss_after(w, x, y, mesh: Mesh):
    def body(w, xb, yb):
        loss, grad = jax.value_and_grad(_rt8_loss)(w, xb, yb)
        grad = jax.lax.pmean(grad, "x")
        new_w = w - 0.05 * grad
        after = jax.lax.pmean(_rt8_loss(new_w, xb, yb), "x")
        return new_w, after

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


@wrong(
    "migrated_step",
    why="'the values run_inherited gives each device': averages the loss with pmean but not the "
    "gradient (each device steps with its own block's gradient, check_vma=False so out_specs P() "
    "is accepted and one device's w is returned). Wrong on every mesh with n > 1 whose blocks "
    "differ (e.g. the 8 mesh, a random batch of 16 rows).",
)
def _rt8_migrated_step_local_grad(w, x, y, mesh: Mesh):
    def body(w, xb, yb):
        loss, grad = jax.value_and_grad(_rt8_loss)(w, xb, yb)
        return w - 0.05 * grad, jax.lax.pmean(loss, "x")

    return jax.shard_map(
        body,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


# --------------------------------------------------------------------------- ring_shift


@wrong(
    "ring_shift",
    why="'with one ppermute inside shard_map': rolls the global array by one block "
    "(jnp.roll by x.shape[0] // n rows) under jax.jit with a row-split out_sharding; the values, "
    "the sharding and even the single collective-permute the partitioner inserts all look right, "
    "but there is no shard_map and no ppermute (the jaxpr has no shard_map/ppermute). Wrong on "
    "every input, e.g. mesh '8', x f32[16,8].",
)
def _rt8_ring_shift_partitioner_roll(x, mesh: Mesh) -> jax.Array:
    block = x.shape[0] // mesh.shape["x"]
    rows = NamedSharding(mesh, P("x", None))
    return jax.jit(lambda a: jnp.roll(a, block, axis=0), out_shardings=rows)(x)


# --------------------------------------------------------------------------- shard_rows


@wrong(
    "shard_rows",
    why="'its columns whole ... along those the array is not split (each row block is copied)': "
    "'to use the other devices' memory too' splits the columns over the mesh's other axes "
    "whenever they divide them (and leaves them whole otherwise, so odd or single columns look "
    "right). Wrong on x (16, 8) on the (2, 4) ('x', 'y') mesh: spec P('x', 'y'), shards (8, 2) "
    "instead of (8, 8).",
)
def _rt8_shard_rows_columns_over_rest(x, mesh: Mesh) -> jax.Array:
    rest = tuple(a for a in mesh.axis_names if a != "x")
    pieces = int(np.prod([mesh.shape[a] for a in rest])) if rest else 1
    cols = None
    if rest and pieces > 1 and np.shape(x)[1] % pieces == 0:
        cols = rest if len(rest) > 1 else rest[0]
    return jax.device_put(x, NamedSharding(mesh, P("x", cols)))


# --------------------------------------------------------------------------- place_weights


@wrong(
    "place_weights",
    why="'the collectives ... may move at most half the bytes of first_placement': right split "
    "over 'x' (w1 columns, w2 rows) but also cuts the other dimension of each weight over the "
    "mesh's spare axis 'to hold even less' (w1 P('y', 'x'), w2 P('x', 'y')); the contraction "
    "over features then needs an all-reduce over 'y' and the output an all-gather. Right on "
    "the 8 mesh; on PLACEMENT_CASES 2x4 624 bytes (first_placement 704), on 4x2 560 (first 560).",
)
def _rt8_place_weights_spare_axis(w1, w2, mesh: Mesh):
    spare = next((a for a in mesh.axis_names if a != "x" and mesh.shape[a] > 1), None)
    ok1 = spare is not None and np.shape(w1)[0] % mesh.shape[spare] == 0
    ok2 = spare is not None and np.shape(w2)[1] % mesh.shape[spare] == 0
    return (
        jax.device_put(w1, NamedSharding(mesh, P(spare if ok1 else None, "x"))),
        jax.device_put(w2, NamedSharding(mesh, P("x", spare if ok2 else None))),
    )

"""Red team, phase 9, round 17: instruction regexes that forbid '=' before the opcode (blind to
XLA's `/*index=5*/` comments in tuple shapes of six or more elements, i.e. every 8-way
all-to-all) in the census and the groups decoder; training steps that all-reduce sufficient
statistics or whole residual blocks (over the byte budget) or differentiate through pmean; a
reduce-scatter left to the partitioner; collective predictors that gather each addend or
reverse after gathering; psum totals with nansum or the input dtype as accumulator; a gather
left to shard_map's in_specs."""

from __future__ import annotations

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
from jax.sharding import NamedSharding
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong

_rt17_COLLECTIVES = (
    "all-reduce",
    "all-gather",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
)
_rt17_GROUPED = ("all-reduce", "all-gather", "reduce-scatter", "all-to-all")

# "%name = <shape> <opcode>(": the shape may not contain '=' so that attribute text such as
# replica_groups={...} or metadata={op_name="..."} can never be mistaken for the shape part.
_rt17_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?([\w.\-]+)\s*=\s*([^=]*?)\s([a-z][a-z0-9\-]*)\(")


# ------------------------------------------------------------------ collective_census


@wrong(
    "collective_census",
    why="'Count only collectives ... in every computation ... by opcode': matches each "
    "instruction with r'%name = ([^=]*?) opcode(' (the shape part may not contain '=', to keep "
    "attribute text out), but XLA prints tuple shapes of six or more elements with "
    "'/*index=5*/' comments, so every 8-way tuple all-to-all is skipped. Wrong on "
    "programs.to_columns (x f32[16,8] row-split on the 8 mesh, constrained to P(None, 'x')): "
    "the compiled all-to-all is an 8-tuple, the answer is Counter() instead of "
    "{'all-to-all': 1}; also a shard_map all_to_all over the 8-device 'x'.",
)
def _rt17_collective_census_no_equals_in_shape(f, *args):
    text = jax.jit(f).lower(*args).compile().as_text()
    counts: Counter = Counter()
    for line in text.splitlines():
        m = _rt17_INSTR.match(line)
        if m and m.group(3) in _rt17_COLLECTIVES:
            counts[m.group(3)] += 1
    return counts


# ------------------------------------------------------------------ collective_groups


def _rt17_num_partitions(text):
    m = re.search(r"num_partitions=(\d+)", text)
    return int(m.group(1)) if m else 1


def _rt17_iota(spec):
    m = re.match(r"\s*\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
    out_dims = [int(v) for v in m.group(1).split(",")]
    dims = [int(v) for v in m.group(2).split(",")]
    arr = np.arange(int(np.prod(dims))).reshape(dims)
    if m.group(3):
        arr = arr.transpose([int(v) for v in m.group(3).split(",")])
    return arr.reshape(out_dims)


def _rt17_decode(attr, n):
    attr = (attr or "").strip()
    if attr in ("", "{}"):
        return [tuple(range(n))]
    if attr.startswith("{"):
        return [
            tuple(int(v) for v in g.split(",") if v)
            for g in re.findall(r"\{([\d,]*)\}", attr[1:-1])
        ]
    if attr.startswith("["):
        return [tuple(int(v) for v in row) for row in _rt17_iota(attr)]
    # mesh['a'=2,'b'=4] {'a'} device_ids=...
    head = attr[attr.index("[") + 1 : attr.index("]")]
    axes = [(name, int(size)) for name, size in re.findall(r"'([^']*)'=(\d+)", head)]
    rest = attr[attr.index("]") + 1 :]
    brace = re.search(r"\{([^}]*)\}", rest)
    named = re.findall(r"'([^']*)'", brace.group(1)) if brace else []
    sizes = [s for _, s in axes]
    ids = np.arange(int(np.prod(sizes)))
    dm = re.search(r"device_ids=\(?(\[[\d,]+\](?:<=\[[\d,]+\])?(?:T\([\d,]+\))?)", rest)
    if dm:
        spec = dm.group(1)
        if "<=" not in spec:
            m = re.match(r"\[([\d,]+)\](T\([\d,]+\))?", spec)
            spec = f"[{len(ids)}]<=[{m.group(1)}]" + (m.group(2) or "")
        ids = _rt17_iota(spec).reshape(-1)
    grid = ids.reshape(sizes)
    names = [nm for nm, _ in axes]
    if not named:
        return [tuple(range(n))]
    pos = [names.index(nm) for nm in named]
    moved = np.moveaxis(grid, pos, list(range(len(names) - len(pos), len(names))))
    size = int(np.prod([sizes[p] for p in pos]))
    return [tuple(int(v) for v in g) for g in moved.reshape(-1, size)]


def _rt17_attr(line):
    m = re.search(
        r"replica_groups=(\{\}|\{\{[\d,{}]*\}\}|\[[^ ]*|mesh\[[^\]]*\]\s*\{[^}]*\}(?:\s*device_ids=\([^)]*\)+|\s*device_ids=\[[^ ,]*)?)",
        line,
    )
    return m.group(1) if m else None


@wrong(
    "collective_groups",
    why="'For every all-reduce, all-gather, reduce-scatter and all-to-all instruction in any "
    "computation': finds instructions with r'%name = ([^=]*?) opcode(' (no '=' allowed in the "
    "shape, so replica_groups=... text is never taken for one), which skips tuple shapes of six "
    "or more elements because XLA writes '/*index=5*/' into them. Wrong on the compiled text of "
    "jax.jit(shard_map(lambda b: all_to_all(b, 'x', 1, 0, tiled=True), mesh 8, P('x') -> "
    "P(None, 'x'))) on f32[16,16]: its all-to-all is an 8-tuple with replica_groups=mesh['x'=8] "
    "{'x'}; expected {('all-to-all', ((0..7),)): 1}, this gives Counter().",
)
def _rt17_collective_groups_no_equals_in_shape(hlo_text):
    n = _rt17_num_partitions(hlo_text)
    counts: Counter = Counter()
    for line in hlo_text.splitlines():
        m = _rt17_INSTR.match(line)
        if not m or m.group(3) not in _rt17_GROUPED:
            continue
        groups = _rt17_decode(_rt17_attr(line), n)
        counts[(m.group(3), tuple(sorted(tuple(sorted(g)) for g in groups)))] += 1
    return counts


# ------------------------------------------------------------------ migrated_step


@wrong(
    "migrated_step",
    why="'the collectives may move no more bytes per device than those of the inherited pmap "
    "program': computes the least-squares gradient from all-reduced sufficient statistics "
    "(psum of x^T x, x^T y and y^T y over 'x', then grad = 2/(B*o) (XtX w - Xty), loss from the "
    "same sums): the values match run_inherited to float rounding, but the all-reduces move "
    "f*f + f*o + 1 floats (XLA merges them into one tuple all-reduce) instead of f*o + 1. Wrong "
    "on MIGRATE_CASES[0] (mesh 8, batch 16, features 4, outputs 3): 116 bytes against the pmap "
    "program's 52 (and 144 vs 44, 52 vs 16, 244 vs 100 on the other three cases).",
)
def _rt17_migrated_step_sufficient_statistics(w, x, y, mesh):
    batch, outputs = x.shape[0], y.shape[1]

    def local(w, xb, yb):
        xtx = jax.lax.psum(xb.T @ xb, "x")
        xty = jax.lax.psum(xb.T @ yb, "x")
        yty = jax.lax.psum(jnp.sum(yb * yb), "x")
        scale = 1.0 / (batch * outputs)
        grad = 2.0 * scale * (xtx @ w - xty)
        loss = scale * (jnp.sum(w * (xtx @ w)) - 2.0 * jnp.sum(w * xty) + yty)
        return w - 0.05 * grad, loss

    return jax.shard_map(
        local,
        mesh=mesh,
        in_specs=(P(), P("x"), P("x")),
        out_specs=(P(), P()),
        check_vma=False,
    )(w, x, y)


# ------------------------------------------------------------------ scatter_sum


@wrong(
    "scatter_sum",
    why="'One collective does the reducing and the scattering': writes the math in jax.jit "
    "(x.reshape(n, r, c).sum(0)) with a with_sharding_constraint P('x', None) on the result, "
    "trusting the partitioner to pick reduce-scatter; the values and sharding are right, but "
    "the compiled program is an all-reduce followed by a dynamic-slice (no reduce-scatter). "
    "Seen on every mesh, e.g. x f32[128, 3] row-split on the 8 mesh: census {'all-reduce': 1}.",
)
def _rt17_scatter_sum_partitioner_decides(x, mesh):
    n = mesh.shape["x"]

    @jax.jit
    def f(a):
        r = a.shape[0] // n
        total = a.reshape(n, r, a.shape[1]).sum(0)
        return jax.lax.with_sharding_constraint(total, NamedSharding(mesh, P("x", None)))

    return f(x)


# ------------------------------------------------------------------ predict_collectives


def _rt17_split_dims(case, spec):
    """For each of the two dimensions, whether a mesh axis of size > 1 splits it."""
    sizes = dict(case.mesh)
    out = []
    for i in range(2):
        entry = spec[i] if i < len(spec) else None
        names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
        out.append(any(sizes[name] > 1 for name in names))
    return out


def _rt17_same_split(case, a, b):
    sizes = dict(case.mesh)

    def norm(spec):
        res = []
        for i in range(2):
            entry = spec[i] if spec is not None and i < len(spec) else None
            names = () if entry is None else (entry,) if isinstance(entry, str) else tuple(entry)
            res.append(tuple(n for n in names if sizes[n] > 1))
        return res

    return norm(a) == norm(b)


@wrong(
    "predict_collectives",
    why="'a copy of everything everywhere' for x + y with a replicated result: gathers each "
    "argument whole (one all-gather per split dimension of each argument) and adds locally; but "
    "when x and y are split differently the partitioner first moves y onto x's split (one "
    "all-to-all) and then gathers only the sum. Wrong on add of f32[16,24], mesh {'model': 4, "
    "'rows': 2}, x P(None, 'model'), y P('model', None), out P() (compiler: {'all-to-all': 1, "
    "'all-gather': 1}; this: {'all-gather': 2}) and on the 8 mesh, x P('x', None), y P(None, "
    "'x'), out P().",
)
def _rt17_predict_collectives_gather_each_addend(case):
    return _rt17_predict(case, gather_addends=True, reverse_after_gather=False)


def _rt17_predict(case, gather_addends, reverse_after_gather):
    x = _rt17_split_dims(case, case.specs[0])
    out = case.out
    counts: dict[str, int] = {}

    def add(op, k=1):
        if k:
            counts[op] = counts.get(op, 0) + k

    replicated = out is not None and not any(_rt17_split_dims(case, out))
    op = case.op
    if op in ("scale", "transpose"):
        if replicated:
            add("all-gather", sum(x))
        elif out is not None and op == "scale" and not _rt17_same_split(case, case.specs[0], out):
            add("all-to-all")
    elif op == "add":
        y = _rt17_split_dims(case, case.specs[1])
        moved = not _rt17_same_split(case, case.specs[0], case.specs[1])
        if replicated and gather_addends:
            add("all-gather", sum(x) + (sum(y) if moved else 0))
        elif replicated:
            add("all-to-all", 1 if moved else 0)
            add("all-gather", sum(x))
        elif not _rt17_same_split(case, case.specs[0], case.specs[1]):
            add("all-to-all")
    elif op == "sum":
        add("all-reduce", sum(x))
    elif op in ("sum0", "sum1", "softmax0", "softmax1", "reverse0", "reverse1"):
        d = int(op[-1])
        if x[d]:
            if op.startswith("sum"):
                add("all-reduce")
            elif op.startswith("softmax"):
                add("all-reduce", 2)
            elif not (replicated and reverse_after_gather):
                add("collective-permute")
        if replicated:
            kept = [x[1 - d]] if op.startswith("sum") else x
            add("all-gather", sum(kept))
    elif op == "matmul":
        if x[1]:
            add("all-reduce")
        if replicated and x[0]:
            add("all-gather")
    return counts


@wrong(
    "predict_collectives",
    why="'what does its slice of the result need?': for a reversal with a replicated result it "
    "reasons that every device will hold everything anyway, so the partitioner gathers first "
    "and reverses locally: only the all-gathers, no collective-permute. But the partitioner "
    "reverses the split blocks first (a collective-permute) and gathers after. Wrong on "
    "reverse1 of bf16[24,16], mesh {'x': 8}, x P(None, 'x'), out P() (compiler: "
    "{'collective-permute': 1, 'all-gather': 1}; this: {'all-gather': 1}) and on reverse0 of "
    "f32[8,24], mesh {'model': 4, 'x': 2}, x P('x', 'model'), out P() (compiler adds the "
    "collective-permute to 2 all-gathers).",
)
def _rt17_predict_collectives_reverse_after_gather(case):
    return _rt17_predict(case, gather_addends=False, reverse_after_gather=True)


# ------------------------------------------------------------------ psum_total


@wrong(
    "psum_total",
    why="'The sum of all elements of x': each device sums its rows with jnp.nansum ('robust "
    "to missing values') before the one psum over 'x'; the spec, the collective and the "
    "examples' values are right, but a NaN in x is dropped instead of making the total NaN. "
    "Wrong on x f32[16, 8] = arange with x[3, 2] = nan, row-split on the 8 mesh: the sum is "
    "nan, this answers 8102.0.",
)
def _rt17_psum_total_nansum(x, mesh):
    def local(block):
        return jax.lax.psum(jnp.nansum(block), "x")

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P())(x)


# ------------------------------------------------------------------ migrated_step (2)


@wrong(
    "migrated_step",
    why="'the collectives may move no more bytes per device than those of the inherited pmap "
    "program': averages the squared residuals across devices BEFORE taking the mean (loss = "
    "mean(pmean((x @ w - y) ** 2, 'x'))), the gradient pmean'd as pmap does: values equal "
    "run_inherited's, but the loss all-reduce carries a whole (batch/n, outputs) block instead "
    "of one number. Wrong on MIGRATE_CASES[0] (mesh 8, batch 16, outputs 3): collectives "
    "move 72 bytes against the pmap program's 52 (64 vs 44, 20 vs 16, 144 vs 100 on the other "
    "three cases).",
)
def _rt17_migrated_step_pmean_residuals(w, x, y, mesh):
    def local(w, xb, yb):
        grad = jax.grad(lambda w: jnp.mean((xb @ w - yb) ** 2))(w)
        loss = jnp.mean(jax.lax.pmean((xb @ w - yb) ** 2, "x"))
        return w - 0.05 * jax.lax.pmean(grad, "x"), loss

    return jax.shard_map(
        local, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()), check_vma=False
    )(w, x, y)


@wrong(
    "migrated_step",
    why="'Return (new w, loss): the values run_inherited gives': differentiates THROUGH the "
    "collective: loss = pmean(local mse, 'x') inside shard_map (check_vma=False), grad = "
    "jax.grad of that. Unchecked, pmean's transpose sums the cotangent back, so each device "
    "gets only its LOCAL gradient (not the average) and out_specs P() returns device 0's w. "
    "Wrong on MIGRATE_CASES[0] (mesh 8, batch 16, features 4, outputs 3): new w differs from "
    "run_inherited's by up to 0.046 (0.079, 0.066, 0.106 on the other three cases); the loss "
    "is right.",
)
def _rt17_migrated_step_grad_through_pmean(w, x, y, mesh):
    def local(w, xb, yb):
        def loss_fn(w):
            return jax.lax.pmean(jnp.mean((xb @ w - yb) ** 2), "x")

        loss, grad = jax.value_and_grad(loss_fn)(w)
        return w - 0.05 * grad, loss

    return jax.shard_map(
        local, mesh=mesh, in_specs=(P(), P("x"), P("x")), out_specs=(P(), P()), check_vma=False
    )(w, x, y)


@wrong(
    "psum_total",
    why="'The sum of all elements of x': sums each block with jnp.sum(block, dtype=block.dtype) "
    "'so the dtype is unchanged', then one psum over 'x'. On the examples' dtypes this is "
    "jnp.sum, but for a narrow integer x it wraps where jnp.sum widens: x int8 (16, 8) all 100, "
    "row-split on the 8 mesh: the sum is 12800, this answers 0 (int8).",
)
def _rt17_psum_total_keep_input_dtype(x, mesh):
    def local(block):
        return jax.lax.psum(jnp.sum(block, dtype=block.dtype), "x")

    return jax.shard_map(local, mesh=mesh, in_specs=P("x"), out_specs=P())(x)


# ------------------------------------------------------------------ gather_rows


@wrong(
    "gather_rows",
    why='\'One all_gather over mesh axis "x" inside shard_map (not a replicated out_sharding: '
    "that makes the partitioner do the gather)': lets shard_map's in_specs do it instead: "
    "in_specs=P() hands every device the whole x, the body returns it, out_specs=P(). Values, "
    "order and replication are right and the compiled module even holds exactly one "
    "all-gather, but it is the partitioner's (inserted to meet in_specs P()), not an all_gather "
    "inside shard_map: the shard_map jaxpr has no all_gather. Any case, e.g. x f32[16, 8] "
    "row-split on the 8 mesh.",
)
def _rt17_gather_rows_in_specs_replicated(x, mesh):
    return jax.shard_map(lambda block: block, mesh=mesh, in_specs=P(), out_specs=P())(x)

"""Stratified draws for phase 12's predict and decide tasks that draw fresh cases: one drawn case
per situation the contract distinguishes, every run, whatever the seed.

Independent random pytrees meet a situation only by chance (a dtype alone or with one other, a
leaf three containers deep, a rank-4 leaf next to a rank-1 one); here each situation is a
stratum and only the values inside it are drawn: the shapes, the order of the leaves, the
containers that hold them and the names of their keys.
"""

from __future__ import annotations

import itertools
import math
import random

import jax
import jax.numpy as jnp
import numpy as np

# ---- allreduce_elements: pytrees of gradients, one flat all-reduce per dtype ------------------

# The float dtypes XLA:GPU all-reduces, by their HLO names.
LEAF_DTYPES = {"f32": np.float32, "bf16": jnp.bfloat16, "f16": np.float16}
Leaf = tuple[str, tuple[int, ...]]  # (HLO dtype, shape)


def _leaves(rng: random.Random, dtypes: tuple[str, ...]) -> list[Leaf]:
    """5 to 7 leaves covering `dtypes`, one of them in two non-empty leaves at least, and ranks
    0 to 4 each at least once (a scalar too); dimensions 1 to 6. Then a twin: a leaf of the
    same shape and dtype as one of rank 1 or more (an MLP's two weights of one shape: each is a
    gradient of its own). Then the empty leaves: one of a dtype of `dtypes` beside its others,
    and, when `dtypes` leaves a float dtype out, one of such a dtype, its only parameter (a
    dtype with nothing to all-reduce: XLA makes no all-reduce in it). An empty leaf has rank 1
    to 3, one of its dimensions 0."""
    count = rng.randint(max(5, len(dtypes) + 1), 7)
    named = [*dtypes, *(rng.choice(dtypes) for _ in range(count - len(dtypes)))]
    first = rng.randrange(5)
    ranks = [(first + i) % 5 for i in range(count)]
    rng.shuffle(named)
    rng.shuffle(ranks)
    leaves = [
        (hlo, tuple(rng.randint(1, 6) for _ in range(rank)))
        for hlo, rank in zip(named, ranks, strict=True)
    ]
    twin = rng.choice([leaf for leaf in leaves if leaf[1]])
    leaves.insert(rng.randrange(len(leaves) + 1), twin)
    others = [hlo for hlo in LEAF_DTYPES if hlo not in dtypes]
    for hlo in (rng.choice(dtypes), *([rng.choice(others)] if others else [])):
        shape = [rng.randint(1, 6) for _ in range(rng.randint(1, 3))]
        shape[rng.randrange(len(shape))] = 0
        leaves.insert(rng.randrange(len(leaves) + 1), (hlo, tuple(shape)))
    return leaves


def _value(rng: random.Random, leaf: Leaf, kind: str):
    """The leaf as a ShapeDtypeStruct or a NumPy array (`kind` "sds", "array" or "either")."""
    hlo, shape = leaf
    if kind == "either":
        kind = rng.choice(("sds", "array"))
    if kind == "sds":
        return jax.ShapeDtypeStruct(shape, LEAF_DTYPES[hlo])
    return np.zeros(shape, LEAF_DTYPES[hlo])


@jax.tree_util.register_pytree_node_class
class Block:
    """A pytree node of the user's own (as flax or equinox modules are): its children are
    pytrees, it is no leaf."""

    def __init__(self, children) -> None:
        self.children = list(children)

    def tree_flatten(self):
        return self.children, None

    @classmethod
    def tree_unflatten(cls, _aux, children):
        return cls(children)

    def __repr__(self) -> str:
        return f"Block({self.children!r})"


def _container(rng: random.Random, kind: str, children: list):
    if kind == "node":
        return Block(children)
    if kind == "dict":
        letters = rng.sample("abcdefghkmnpqrstuvwxyz", len(children))
        return {f"{letters[i]}{i}": child for i, child in enumerate(children)}
    return children if kind == "list" else tuple(children)


def _nested(rng: random.Random, values: list, kinds: list[str]):
    """`values` in containers `depth = len(kinds)` deep: the outermost holds some leaves and a
    container of the rest, and so on; the innermost holds at least one leaf and a None (an
    empty subtree)."""
    if len(kinds) == 1:
        children = list(values)
        children.insert(rng.randrange(len(children) + 1), None)  # an empty subtree, no leaf
        return _container(rng, kinds[0], children)
    keep = rng.randint(1, len(values) - len(kinds) + 1)
    children = [*values[:keep], _nested(rng, values[keep:], kinds[1:])]
    rng.shuffle(children)
    return _container(rng, kinds[0], children)


def _huge_shape(rng: random.Random) -> tuple[int, ...]:
    """Rank 2 or 3, 2**31 to 2**33 elements, an odd count: a count held in int32 wraps."""
    total = rng.randrange(2**31 + 1, 2**33, 2)
    while True:
        rows = rng.choice((3, 5, 7, 9, 15, 21, 25, 27))
        if total % rows == 0:
            break
        total += 2
    rest = total // rows
    if rng.random() < 0.5:
        return (rows, rest)
    split = next(d for d in (3, 5, 7, 9, 11, 13, 1) if rest % d == 0)
    return (rows, split, rest // split)


_SUBSETS = [s for n in (1, 2, 3) for s in itertools.combinations(tuple(LEAF_DTYPES), n)]
_KINDS = ("dict", "list", "tuple")


def pytree_strata(rng: random.Random) -> dict[str, tuple[object, list[Leaf]]]:
    """(params, its leaves) per situation: each dtype alone, each pair of them, all three (leaves
    that are ShapeDtypeStructs and arrays mixed), all three as arrays only and as
    ShapeDtypeStructs only: a situation names the dtypes XLA all-reduces. Every pytree holds
    every rank from 0 to 4, one dtype in two non-empty leaves or more, two leaves of one shape
    and dtype, one leaf object at two places (a tied weight: two parameters, two gradients),
    an empty leaf beside others of its dtype and, where the situation leaves a dtype out, an
    empty leaf of such a dtype, its only one; its containers are 1, 2 or 3 deep, each
    depth in three of the nine cases, and the outermost container a dict, a list and a tuple in
    three cases each; below the outermost, one level is a pytree node class of the user's own
    (strata.Block, registered with JAX as flax's and equinox's modules are), and the innermost
    container holds a None (an empty subtree: no parameter). One f32 parameter (not the first
    leaf, unless no other is f32) is float64, which JAX without x64 runs (and differentiates,
    and all-reduces) in f32: a NumPy float64 array (NumPy's default dtype) where arrays are
    allowed, a float64 ShapeDtypeStruct in the ShapeDtypeStructs-only case, which also holds
    a parameter of 2**31 elements or more (_huge_shape: an odd count, past int32)."""
    situations = [(subset, "either") for subset in _SUBSETS]
    situations += [(tuple(LEAF_DTYPES), "array"), (tuple(LEAF_DTYPES), "sds")]
    depths = [1 + i % 3 for i in range(len(situations))]
    outer = [_KINDS[i % 3] for i in range(len(situations))]
    rng.shuffle(depths)
    rng.shuffle(outer)
    cases = {}
    for (dtypes, kind), depth, first in zip(situations, depths, outer, strict=True):
        leaves = _leaves(rng, dtypes)
        values = [_value(rng, leaf, kind) for leaf in leaves]
        if kind == "either" and len(values) >= 2:  # both kinds, whatever the draw
            values[0], values[1] = _value(rng, leaves[0], "sds"), _value(rng, leaves[1], "array")
        if "f32" in dtypes:  # NumPy's default float64: JAX's f32 (no x64)
            f32s = [i for i, (h, s) in enumerate(leaves) if h == "f32" and math.prod(s)]
            f32s = [i for i in f32s if i] or f32s  # the first leaf only when no other is f32
            if f32s:
                at = rng.choice(f32s)
                shape = leaves[at][1]
                values[at] = (
                    jax.ShapeDtypeStruct(shape, rng.choice((np.float64, jnp.float64)))
                    if kind == "sds"
                    else np.zeros(shape, np.float64)
                )
        if kind == "sds":  # a parameter of 2**31 elements or more: no array, a ShapeDtypeStruct
            huge = (rng.choice(dtypes), _huge_shape(rng))
            at = rng.randrange(len(values) + 1)
            values.insert(at, _value(rng, huge, "sds"))
            leaves.insert(at, huge)
        # a tied weight: one non-empty leaf object at a second place (a second parameter)
        tied = rng.choice([i for i, (_, shape) in enumerate(leaves) if math.prod(shape)])
        at = rng.randrange(len(values) + 1)
        values.insert(at, values[tied])
        leaves.insert(at, leaves[tied])
        kinds = [first, *(rng.choice(_KINDS) for _ in range(depth - 1))]
        if depth > 1:  # a node class of the user's own at one inner level
            kinds[rng.randrange(1, depth)] = "node"
        only = {"either": "", "array": ", arrays only", "sds": ", ShapeDtypeStructs only"}[kind]
        cases[f"{' and '.join(dtypes)}{only}"] = (_nested(rng, values, kinds), leaves)
    return cases


# ---- fused_dense: the dense layer x [..., m, k] @ w [k, n] + b [n] on this host --------------

DenseCase = tuple[tuple[tuple[int, ...], object], ...]  # ((shape, dtype) of x, w, b)


def dense_strata(rng: random.Random) -> dict[str, DenseCase]:
    """The shapes of (x, w, b) per dtype of programs.DENSE_CASES, f32 and bf16, and x of rank
    3 (a batch of sequences [a, m, k]: the layer maps its last dimension): sizes odd or even up
    to 256, the output 64 elements or more, so that a function close to the tanh gelu (erf's
    gelu: up to ~5e-4 off in f32) shows on values of order one."""

    def case(dtype, rank: int = 2) -> DenseCase:
        m, k, n = rng.randint(16, 128), rng.randint(3, 256), rng.randint(4, 256)
        rows = (rng.randint(2, 6), m // 2) if rank == 3 else (m,)
        return ((*rows, k), dtype), ((k, n), dtype), ((n,), dtype)

    return {
        "f32": case(np.float32),
        "bf16": case(jnp.bfloat16),
        "bf16, x of rank 3": case(jnp.bfloat16, rank=3),
    }


# ---- gather_free_specs: x [m, k] @ w [k, n] on the (2, 2) mesh, this host's memory analysis --


def matmul_strata(rng: random.Random) -> dict[str, tuple[tuple[int, int], tuple[int, int]]]:
    """(x shape, w shape) per situation: x the larger operand (at least twice w's elements), w
    the larger, and the two within a factor of 1.5; every size a multiple of 8 (any split over
    one mesh axis or both divides it), from 32 to 1024. Which operand is larger decides whether
    an answer that replicates one and splits the other four ways stays within half the
    replicated bytes."""

    def drawn(holds) -> tuple[tuple[int, int], tuple[int, int]]:
        while True:
            m, k, n = (8 * rng.randint(4, 128) for _ in range(3))
            if holds(m * k, k * n):
                return (m, k), (k, n)

    return {
        "x the larger operand": drawn(lambda x, w: x >= 2 * w),
        "w the larger operand": drawn(lambda x, w: w >= 2 * x),
        "x and w of about the same size": drawn(lambda x, w: max(x, w) <= 1.5 * min(x, w)),
    }


# ---- gemm_flops: one dot_general as JAX lowers it, before XLA merges its dimensions ----------

# (operands' dtype, preferred_element_type) per kind of element: a GEMM of integers (an
# int8-quantized matmul accumulating in s32, ...) does its multiply-adds like a float one.
GEMM_DTYPES = {
    "floating point": (
        (jnp.float32, None),
        (jnp.bfloat16, None),
        (jnp.float16, None),
        (jnp.bfloat16, jnp.float32),
    ),
    "integer": (
        (jnp.int8, jnp.int32),
        (jnp.int8, None),
        (jnp.uint8, jnp.uint32),
        (jnp.int16, jnp.int32),
        (jnp.int32, None),
    ),
}


def drawn_gemm(
    rng: random.Random, kind: str, nested: bool = False, twice: bool = False
) -> tuple[str, int, int]:
    """(the HLO text of one jax.lax.dot_general as JAX lowers it, before optimization (with
    `nested`, inside a jax.jit of its own, which JAX lowers as `call(...), to_apply=` of the
    inner function's computation, a tanh after it in the outer one; with `twice` too, that jax.jit
    called a second time, on other operands: two `call`s of the one computation that holds the
    one dot instruction): its dot
    contracting 2 or 3 dimensions in drawn positions, with a batch dimension or none, its
    operands and output of a drawn dtype of `kind` (a key of GEMM_DTYPES); the number of
    dimensions it contracts; its multiply-add flops by arithmetic on the draw). Its
    output holds 2**31 to 2**33 elements (odd sizes: no count of them fits 32 bits, nor is it
    a power of two), and its flops are 2 * an odd number above 2**64 (below 2**68): past
    float64's exact integers and past int64 (the contract: exact for shapes of any size), so
    only unbounded integer arithmetic counts them exactly; nothing is allocated, the operands
    are ShapeDtypeStructs."""
    batch = [rng.randrange(3, 10, 2)] if rng.random() < 0.5 else []
    rows = rng.randrange(2**15 + 1, 2**17, 2)
    least = 2**31 // (math.prod(batch) * rows) + 1
    columns = rng.randrange(least, 2 * least) | 1
    count = rng.choice((2, 3))
    # each contracted size at least the count-th root of 2**64 / (output elements), at most twice
    low = math.ceil((2**64 / (math.prod(batch) * rows * columns)) ** (1 / count)) | 1
    contracted = [rng.randrange(low, 2 * low, 2) for _ in range(count)]
    lhs = (
        [("b", d) for d in batch] + [("m", rows)] + [(f"k{i}", d) for i, d in enumerate(contracted)]
    )
    rhs = (
        [("b", d) for d in batch]
        + [("n", columns)]
        + [(f"k{i}", d) for i, d in enumerate(contracted)]
    )
    rng.shuffle(lhs)
    rng.shuffle(rhs)

    def where(side, role):
        return tuple(i for i, (r, _) in enumerate(side) if r == role)

    keys = [f"k{i}" for i in range(len(contracted))]
    dimensions = (
        (sum((where(lhs, k) for k in keys), ()), sum((where(rhs, k) for k in keys), ())),
        (where(lhs, "b"), where(rhs, "b")),
    )
    dtype, output = rng.choice(GEMM_DTYPES[kind])
    operands = [jax.ShapeDtypeStruct(tuple(d for _, d in side), dtype) for side in (lhs, rhs)]

    def product(a, b):
        return jax.lax.dot_general(a, b, dimensions, preferred_element_type=output)

    if nested:
        inner = jax.jit(product)

        def outer(a, b):
            once = jnp.tanh(inner(a, b).astype(jnp.float32))
            return once + inner(a, b + 1).astype(jnp.float32) if twice else once

        lowered = jax.jit(outer).lower(*operands)
    else:
        lowered = jax.jit(product).lower(*operands)
    flops = 2 * math.prod(batch) * rows * columns * math.prod(contracted)
    assert 2**65 < flops < 2**68 and flops % 4 == 2, (batch, rows, columns, contracted)
    return lowered.as_text(dialect="hlo"), len(contracted), flops


# ---- gemm_flops: convolutions beside a GEMM, before optimization ------------------------------

_NHWC = ("NHWC", "HWIO", "NHWC")


def drawn_conv_dense(rng: random.Random) -> tuple[str, str, int]:
    """(a description of the draw, the HLO text of a conv -> dense -> conv network as JAX lowers
    it before optimization, the flops of its one GEMM by arithmetic on the draw). The dense maps
    the first convolution's channels (x [b, h, w, c] * k1 [kh, kw, c, f] with SAME padding, then
    @ w [f, n]: a dot of output [b, h, w, n] contracting f); the second convolution (k2
    [kh2, kw2, n, g], VALID) follows it. The convolutions are `convolution` instructions, no
    GEMM: only the dot counts."""
    b, h, w = rng.randint(1, 4), rng.randint(6, 16), rng.randint(6, 16)
    c, f, n, g = (rng.randint(2, 24) for _ in range(4))
    kh, kw, kh2, kw2 = (rng.choice((1, 3, 5)) for _ in range(4))
    dtype = rng.choice((jnp.float32, jnp.bfloat16, jnp.float16))

    def network(x, k1, dense, k2):
        y = jax.lax.conv_general_dilated(x, k1, (1, 1), "SAME", dimension_numbers=_NHWC)
        z = jax.nn.relu(y) @ dense
        return jax.lax.conv_general_dilated(z, k2, (1, 1), "VALID", dimension_numbers=_NHWC)

    shapes = ((b, h, w, c), (kh, kw, c, f), (f, n), (kh2, kw2, n, g))
    operands = [jax.ShapeDtypeStruct(s, dtype) for s in shapes]
    text = jax.jit(network).lower(*operands).as_text(dialect="hlo")
    x, k1, dense, k2 = shapes
    what = f"conv {x} * {k1} -> @ {dense} -> conv * {k2}, {np.dtype(dtype).name}"
    return what, text, 2 * b * h * w * n * f

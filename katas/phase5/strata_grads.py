"""Stratified draws for phase 5's derivative tasks (1-5, 8): one drawn case per situation the
contract covers, every run, whatever the seed.

The contract says "same structure and dtypes as params", "x of any shape", "shaped and typed
like f(x)", "an exact int, however large": each of those is a stratum here (another float
width, leaves of several dtypes, a leaf the loss does not read, scalar biases, a batch of one,
scalars and rank-3 arrays, a function that changes the dtype, the zero direction, flop counts
past 2**53 and 2**64, one jitted function called twice), and only the values inside it are drawn.
"""

from __future__ import annotations

import collections
import math
import random

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
from jax import lax

from katas.phase5.programs import device_mesh

F32, F16, BF16 = np.dtype(np.float32), np.dtype(np.float16), np.dtype(ml_dtypes.bfloat16)

# ---- mlp_grad and per_example_grads: params dicts ---------------------------------------------


def _mlp_case(rng: random.Random, leaf_dtypes, data_dtype, *, batch=None, n_out=None, b1=None,
              b2=None, extra=False, live=False):  # fmt: skip
    """(params, x, y) for mse_loss: |x @ w1| <= 0.5 and |b1| >= 0.75, so no pre-activation is
    near relu's kink in any dtype; ``b1``/``b2``: the bias shapes, () or (1,) broadcast;
    ``live``: every b1 positive, every hidden unit live."""
    batch = batch or rng.randint(2, 6)
    n_in, hidden, n_out = rng.randint(1, 6), rng.randint(2, 8), n_out or rng.randint(2, 5)
    g = np.random.default_rng(rng.randint(0, 2**31))
    x = g.uniform(-0.5, 0.5, (batch, n_in))
    signs = np.ones(hidden) if live else g.choice([-1.0, 1.0], hidden)
    b1_values = signs * g.uniform(0.75, 1.5, hidden)
    params = {
        "w1": g.uniform(-1.0, 1.0, (n_in, hidden)) / n_in,
        # a broadcast b1 is positive: every hidden unit live
        "b1": b1_values if b1 is None else np.full(b1, abs(b1_values[0])),
        "w2": g.normal(size=(hidden, n_out)) / hidden,
        "b2": g.normal(size=b2 if b2 is not None else (n_out,)),
    }
    if extra:  # a leaf mse_loss never reads: its gradient is zero, and it is still there
        name = rng.choice(["scale", "gamma", "w3", "emb", "temperature"])
        params[name] = g.normal(size=tuple(rng.randint(1, 3) for _ in range(rng.randint(0, 2))))
    dtypes = dict(zip(params, leaf_dtypes(len(params)), strict=True))
    params = {k: np.asarray(v).astype(dtypes[k]) for k, v in params.items()}
    y = g.normal(size=(batch, n_out))
    return params, x.astype(data_dtype), y.astype(data_dtype)


def _off_grid(rng: random.Random) -> tuple:
    """(params, x, y), params bfloat16 and x, y float32, where rounding the data to bfloat16
    moves every residual the same way: b2 integers in [140, 240) (bfloat16 spacing 1 there), each
    y float32 at floor(prediction) + 15/32, which bfloat16 rounds down by 15/32. mse_loss on
    these promotes to float32; a gradient computed from the data rounded to bfloat16 (or
    computed in bfloat16: its residuals round to integers) has d loss / d b2 off by about
    (2 * 15/32) / n_out. A batch of 8 keeps that mean away from zero."""
    params, x, _ = _mlp_case(rng, lambda count: [BF16] * count, F32, batch=8)
    g = np.random.default_rng(rng.randint(0, 2**31))
    params["b2"] = g.integers(140, 240, params["b2"].shape).astype(BF16)
    wide = {k: np.asarray(v, np.float64) for k, v in params.items()}
    hidden = np.maximum(np.asarray(x, np.float64) @ wide["w1"] + wide["b1"], 0.0)
    prediction = hidden @ wide["w2"] + wide["b2"]
    return params, x, (np.floor(prediction) + 15 / 32).astype(F32)


def _far_targets(rng: random.Random) -> tuple[tuple, str]:
    """(params, x, y) in float32 with targets 10**4 to 10**6 times the predictions' size: a
    gradient whose global norm is in the thousands or more (a gradient clipped or rescaled
    where it is large differs); the norm's size, for the situation's name."""
    params, x, y = _mlp_case(rng, lambda count: [F32] * count, F32)
    y = (y * 10 ** rng.uniform(4, 6)).astype(F32)
    return (params, x, y), f"10**{math.floor(math.log10(float(np.abs(y).max())))}"


def _non_finite_target(rng: random.Random) -> tuple[tuple, str]:
    """(params, x, y) in float32 with one target +inf, -inf or NaN (drawn), every hidden unit
    live: the loss is not finite, and the chain rule carries that target's infinite (or NaN)
    residual into every entry that depends on it (relu's derivative is 1 on each path, so no
    0 * inf is left to convention); the others stay finite. What the target is, for the
    situation's name."""
    params, x, y = _mlp_case(rng, lambda count: [F32] * count, F32, live=True)
    value = rng.choice([np.inf, -np.inf, np.nan])
    y[rng.randrange(y.shape[0]), rng.randrange(y.shape[1])] = value
    return (params, x, y), str(value)


def _held_in(rng: random.Random, kind: str, case: tuple) -> tuple[str, tuple]:
    """``case`` with its params in another mapping JAX takes as a pytree node ("OrderedDict",
    "defaultdict"), keys inserted in a drawn order (an OrderedDict's structure keeps that
    order; a dict's sorts its keys): (how it is held, case)."""
    params, x, y = case
    names = list(params)
    rng.shuffle(names)
    held = collections.OrderedDict() if kind == "OrderedDict" else collections.defaultdict(list)
    for name in names:
        held[name] = params[name]
    return f"in a collections.{kind} (keys {', '.join(names)})", (held, x, y)


def mlp_strata(rng: random.Random) -> dict[str, tuple]:
    """(params, x, y) per situation: bfloat16 params with float32 data off bfloat16's grid
    (mse_loss promotes to float32: the data are not rounded), and float32 params with bfloat16
    data (the params are not rounded either); float16 params and data
    with a batch of one and one output; one output with a batch of several (predictions of
    shape (batch, 1), y too: a size-1 axis that must not be dropped); leaves of three dtypes;
    scalar biases; a leaf the loss
    does not read (and a b2 of shape (1,) broadcast over the outputs). Params are a dict, but
    for leaves of three dtypes a collections.OrderedDict and for the leaf the loss does not
    read an OrderedDict or a defaultdict (drawn), keys in a drawn order: "same structure as
    params" is the structure of the mapping handed in (jax.tree.structure). Last, float32
    cases where the gradient is not small: targets far from the predictions (a global norm in
    the thousands or more), and one target infinite or NaN (entries of the gradient infinite or
    NaN): the gradient as the chain rule gives it, neither clipped nor sanitized."""

    def mixed(count: int) -> list:
        kinds = [F16, BF16, F32] + [rng.choice([F16, BF16, F32]) for _ in range(count - 3)]
        rng.shuffle(kinds)
        return kinds

    def every(dtype):
        return lambda count: [dtype] * count

    mixed_in, mixed_case = _held_in(rng, "OrderedDict", _mlp_case(rng, mixed, F32))
    extra_in, extra_case = _held_in(
        rng,
        rng.choice(["OrderedDict", "defaultdict"]),
        _mlp_case(rng, mixed, rng.choice([F32, BF16]), b2=(1,), extra=True),
    )
    cases = {
        "bfloat16 params, float32 data off bfloat16's grid": _off_grid(rng),
        "float32 params, bfloat16 data": _mlp_case(rng, every(F32), BF16),
        "float16 params and data, a batch of one, one output": _mlp_case(
            rng, every(F16), F16, batch=1, n_out=1
        ),
        f"leaves of three dtypes, float32 data, {mixed_in}": mixed_case,
        "scalar biases b1 and b2": _mlp_case(rng, every(F32), F32, b1=(), b2=()),
        "one output, a batch of several": _mlp_case(
            rng, every(F32), F32, batch=rng.randint(2, 6), n_out=1
        ),
        f"a leaf the loss does not read, b2 of shape (1,), {extra_in}": extra_case,
    }
    far, norm = _far_targets(rng)
    non_finite, target = _non_finite_target(rng)
    return {
        **cases,
        f"targets of size {norm}: a gradient of large norm, as it is": far,
        f"one target {target}: the loss not finite, the gradient's entries that depend on that "
        "target not finite either, as the chain rule gives them": non_finite,
    }


# ---- jvp_tangent, vjp_cotangent, jacobian: x and f(x) of any rank and dtype -------------------


def _dims(rng: random.Random, rank: int, high: int = 3) -> tuple[int, ...]:
    return tuple(rng.randint(1, high) for _ in range(rank))


def tangent_strata(rng: random.Random) -> dict[str, tuple]:
    """(x shape, f(x) shape, x dtype, f(x) dtype, zero direction) per situation: a scalar x; a
    scalar f(x) of a rank-3 x; an f(x) of x's size in another shape (x (2-4, 2-4), not square:
    J @ v shaped like v has f(x)'s size, not its shape); size-1 axes; a square matrix f(x) (its
    cotangent drawn non-symmetric: ct.T has ct's shape and other values); f casting up (bfloat16
    -> float32)
    and down (float32 -> bfloat16); f computing in bfloat16 and not casting (f(x) dtype None:
    x's); the zero direction (or cotangent); f(x) shape None: f's output takes the shape of the
    x it is handed (as jnp.sin does), for a scalar x and for the zero direction."""

    def any_rank() -> tuple[int, ...]:
        return _dims(rng, rng.randint(0, 3))

    rows, cols = rng.sample(range(2, 5), 2)
    return {
        "f(x) of x's size in another shape": (
            (rows, cols),
            rng.choice([(cols, rows), (rows * cols,), (cols, 1, rows)]),
            F32,
            F32,
            False,
        ),
        "x a scalar, f(x) a vector": ((), (rng.randint(2, 5),), F32, F32, False),
        "x of rank 3, f(x) a scalar": (_dims(rng, 3), (), F32, F32, False),
        "x a column, f(x) with a size-1 axis": (
            (rng.randint(2, 5), 1),
            tuple(rng.sample([rng.randint(2, 4), 1], 2)),
            F32,
            F32,
            False,
        ),
        "f(x) a square matrix, a non-symmetric cotangent": (
            any_rank(),
            (square := rng.randint(2, 4), square),
            F32,
            F32,
            False,
        ),
        "a bfloat16 x, a float32 f(x)": (any_rank(), any_rank(), BF16, F32, False),
        "a float32 x, a bfloat16 f(x)": (any_rank(), any_rank(), F32, BF16, False),
        "a bfloat16 x, f(x) left in its dtype": (any_rank(), any_rank(), BF16, None, False),
        "x a scalar, f(x) shaped like the x f is handed": ((), None, F32, F32, False),
        "the zero direction, f(x) shaped like the x f is handed": (
            _dims(rng, rng.randint(1, 3)),
            None,
            F32,
            F32,
            True,
        ),
    }


def tangent_data(rng: random.Random, x_shape, out_shape, x_dtype, out_dtype, zero: bool):
    """A (f(x).size, x.size) in float32, x and v (shaped like x, in x's dtype), ct (shaped like
    f(x), in its dtype: x's when ``out_dtype`` is None; x's shape when ``out_shape`` is None);
    v and ct zero when ``zero``."""
    g = np.random.default_rng(rng.randint(0, 2**31))
    out_shape = x_shape if out_shape is None else out_shape
    # A's entries are bfloat16 numbers: f casting A to x's dtype changes nothing
    A = g.normal(size=(math.prod(out_shape), math.prod(x_shape))).astype(BF16).astype(np.float32)
    x = (g.normal(size=x_shape) / 2).astype(x_dtype)
    v = (g.normal(size=x_shape) * (not zero)).astype(x_dtype)
    ct = (g.normal(size=out_shape) * (not zero)).astype(out_dtype or x_dtype)
    return A, x, v, ct


def infinite_slope_case(rng: random.Random):
    """(name, f, x, v, f(x), f'(x)): f = sqrt or log (drawn), elementwise, at a float32 x of
    rank 1 to 3 whose entries are positive but for two or more exactly 0, where f' (0.5 /
    sqrt(x), 1 / x) is infinite; v zero at some of those 0s, nonzero at the others and
    elsewhere. In NumPy's IEEE arithmetic J @ v is f'(x) * v: NaN where x and v are both 0
    (inf * 0), +-inf where only x is; the zero direction gives NaN where x is 0, 0 elsewhere."""
    name, f, primal, slope = rng.choice([
        ("sqrt", jnp.sqrt, np.sqrt, lambda x: 0.5 / np.sqrt(x)),
        ("log", jnp.log, np.log, lambda x: 1.0 / x),
    ])  # fmt: skip
    g = np.random.default_rng(rng.randint(0, 2**31))
    shape = (rng.randint(2, 4), *_dims(rng, rng.randint(0, 2), 4))
    size = math.prod(shape)
    x = g.uniform(0.25, 2.0, size).astype(F32)
    v = g.normal(size=size).astype(F32)
    zeros = g.permutation(size)[: rng.randint(2, size)]
    x[zeros] = 0.0
    v[zeros[: len(zeros) // 2]] = 0.0
    wide = x.astype(np.float64).reshape(shape)
    with np.errstate(divide="ignore"):
        found = primal(wide), slope(wide)
    name = f"f = jnp.{name}, x float32{list(shape)} with {len(zeros)} entries 0"
    return name, f, x.reshape(shape), v.reshape(shape), *found


def jacobian_strata(rng: random.Random) -> dict[str, tuple[tuple, tuple]]:
    """(x shape, f(x) shape) per situation: a scalar f(x); a scalar x; an f(x) of rank 3; an x of
    rank 3 with an f(x) of rank 2 that has a size-1 axis; an f(x) shaped like a vector x (a
    square Jacobian, not symmetric: its transpose has the right shape and other values)."""
    n = rng.randint(2, 5)
    return {
        "f(x) shaped like x (a square Jacobian)": ((n,), (n,)),
        "f(x) a scalar, x a vector": ((rng.randint(2, 5),), ()),
        "x a scalar, f(x) a vector": ((), (rng.randint(2, 5),)),
        "f(x) of rank 3": ((rng.randint(2, 4),), _dims(rng, 3)),
        "x of rank 3, f(x) with a size-1 axis": (
            _dims(rng, 3),
            tuple(rng.sample([rng.randint(2, 3), 1], 2)),
        ),
    }


# ---- dot_flops: counts past 2**53 and 2**64, a jaxpr shared by two calls ---------------------


def _odd(rng: random.Random, bits: int) -> int:
    return rng.randrange(2**bits + 1, 2 ** (bits + 1), 2)


def _placed(rng: random.Random, fn):
    """``fn`` (two arguments) placed at the top level, in a nested jit, in both branches of a
    cond, in a scan body, in a checkpoint, in a custom_vjp function or in a shard_map body over
    a mesh of several devices: (where, program, how many times it counts)."""
    places = ["top level", "a nested jit", "a cond", "a scan body", "a checkpoint"]
    where = rng.choice([*places, "a custom_vjp", "a shard_map"])
    if where == "a custom_vjp":
        wrapped = jax.custom_vjp(fn)  # the backward rule is Python, never traced here
        wrapped.defvjp(lambda a, b: (wrapped(a, b), None), lambda _, g: (None, None))
        return where, wrapped, 1
    if where == "a shard_map":  # replicated over several devices: the body still counts once
        mesh = device_mesh(rng.choice([2, 4, 8]), rng.choice(["i", "data", "model"]))
        where = f"a shard_map over {mesh.size} devices"
        spec = jax.sharding.PartitionSpec()
        return where, jax.shard_map(fn, mesh=mesh, in_specs=(spec, spec), out_specs=spec), 1
    if where == "a nested jit":
        return where, jax.jit(fn), 1
    if where == "a cond":  # a predicate read from the values, which may hold no elements
        return where, lambda a, b: lax.cond(jnp.real(jnp.sum(a)) > 0, fn, fn, a, b), 2
    if where == "a scan body":
        return where, lambda a, b: lax.scan(lambda c, _: (c, fn(a, b)), 0, None, length=3)[1], 1
    if where == "a checkpoint":
        return where, jax.checkpoint(fn), 1
    return where, fn, 1


def _bmkn(sizes: dict[str, int]) -> list[tuple[int, ...]]:
    """The operand shapes of a batched matmul of these sizes: (b, m, k) and (b, k, n)."""
    return [(sizes["b"], sizes["m"], sizes["k"]), (sizes["b"], sizes["k"], sizes["n"])]


def _bmkn_text(sizes: dict[str, int]) -> str:
    lhs, rhs = _bmkn(sizes)
    return f"f32{list(lhs)} @ f32{list(rhs)}, batch axis 0 of each"


def _unread_dot(p, q):
    """A dot whose result nothing reads: make_jaxpr keeps its equation (XLA would remove it,
    the jaxpr still holds it), wherever it is placed."""
    _ = p @ q
    return p


def dot_flops_strata(rng: random.Random) -> dict[str, tuple]:
    """name -> (program, argument avals, expected flops): one matmul of odd sizes whose
    count passes 2**53 (not a float64); a batched dot contracting two axes whose count passes
    2**64 (not an int64); one jitted function called twice (one jaxpr, two equations); a
    complex64 matmul (a complex multiply-add counts 2 too, as the formula says); a dot that
    contracts every axis (two vectors, or two matrices with their axes crossed), whose output
    of shape () has one element; a batched matmul whose output has no elements (a batch, m or
    n of 0, drawn), and one whose contracted axis has size 0: 0 flops each; a dot whose result
    nothing reads (an equation of the jaxpr all the same: it counts); each placed at a drawn
    nesting place. Nothing is allocated: the arguments are shapes."""
    a, k, b = (_odd(rng, 18) for _ in range(3))
    bt, m, k1, k2, n = (_odd(rng, 13) for _ in range(5))
    s, t, u = (rng.randint(2, 40) for _ in range(3))
    c1, c2, c3 = (rng.randint(2, 40) for _ in range(3))
    f1, f2 = rng.randint(2, 40), rng.randint(2, 40)
    d1, d2, d3 = (rng.randint(2, 40) for _ in range(3))
    full = rng.choice([  # every axis contracted: an output of shape () has one element
        ("two vectors", lambda p, q: lax.dot_general(p, q, (((0,), (0,)), ((), ()))),
         [(f1,), (f1,)], 2 * f1),
        ("two matrices, axes crossed",
         lambda p, q: lax.dot_general(p, q, (((0, 1), (1, 0)), ((), ()))),
         [(f1, f2), (f2, f1)], 2 * f1 * f2),
    ])  # fmt: skip
    shared = jax.jit(lambda p, q: p @ q)
    general = (((2, 3), (1, 2)), ((0,), (0,)))
    # a batched matmul (batch, m, k) @ (batch, k, n) with one axis of size 0, drawn: a batch,
    # m or n of 0 leaves the output no elements; k of 0 leaves a full output no multiply-adds
    batched = (((2,), (1,)), ((0,), (0,)))
    sizes = dict(zip("bmkn", (rng.randint(1, 9) for _ in range(4)), strict=True))
    empty = rng.choice(["b", "m", "n"])
    zero_out = {**sizes, empty: 0}
    zero_k = {**sizes, "k": 0}
    axis = {"b": "batch", "m": "lhs free (m)", "n": "rhs free (n)"}[empty]
    programs = {
        "past 2**53, odd sizes": (
            jnp.matmul, [(a, k), (k, b)], 2 * a * b * k),
        "past 2**64, a batched dot contracting two axes": (
            lambda p, q: lax.dot_general(p, q, general), [(bt, m, k1, k2), (bt, k1, k2, n)],
            2 * bt * m * n * k1 * k2),
        "one jitted function called twice": (
            lambda p, q: shared(p, q) + shared(p, q), [(s, t), (t, u)], 2 * (2 * s * t * u)),
        "a complex64 matmul": (
            jnp.matmul, [(c1, c2), (c2, c3)], 2 * c1 * c2 * c3),
        f"a scalar output, every axis contracted ({full[0]})": full[1:],
        f"an output with no elements, a {axis} axis of size 0: {_bmkn_text(zero_out)}": (
            lambda p, q: lax.dot_general(p, q, batched), _bmkn(zero_out), 0),
        f"a contracted axis of size 0 (a full output, no multiply-adds): {_bmkn_text(zero_k)}": (
            lambda p, q: lax.dot_general(p, q, batched), _bmkn(zero_k), 0),
        f"a dot nothing reads (the program returns its lhs): f32{[d1, d2]} @ f32{[d2, d3]}": (
            _unread_dot, [(d1, d2), (d2, d3)], 2 * d1 * d2 * d3),
    }  # fmt: skip
    cases = {}
    for name, (fn, shapes, flops) in programs.items():
        where, program, times = _placed(rng, fn)
        dtype = np.complex64 if "complex" in name else np.float32
        args = [jax.ShapeDtypeStruct(shape, dtype) for shape in shapes]
        cases[f"{name}, in {where}"] = (program, args, times * flops)
    return cases

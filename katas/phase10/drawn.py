"""Programs phase 10's tests draw fresh on every run, each built so that what the contract
distinguishes is in it by construction: MLP sizes with a batch of a few rows, hundreds or
thousands (past any chunk the examples might be split into, and multiples of every plausible
chunk size), a fusion returning a tuple (a multi-output kernel), donated arguments that are not
adjacent or a single array returned, transposes in a lax.while_loop's body or condition, in
custom_jvp and custom_vjp functions and at any depth, and dots of any element type in
conditional branches.

Every builder takes the test's ``fresh`` generator (a random.Random) and returns
(label, function, arguments, ...); the arguments are ShapeDtypeStructs when only the compiled
form is read, arrays when the function also runs.
"""

from __future__ import annotations

import jax
import jax.numpy as jnp
import numpy as np

from katas.phase10.programs import sized_data

DTYPES = {"float32": jnp.float32, "bfloat16": jnp.bfloat16, "int32": jnp.int32}


def _spec(shape: tuple[int, ...], dtype: str) -> jax.ShapeDtypeStruct:
    return jax.ShapeDtypeStruct(shape, DTYPES[dtype])


# ---- per_example_losses: batches of a few rows, and past any chunk the rows might be split into -

# Inclusive ranges of the batch. A few rows; then hundreds (eager calls run op by op, and an
# answer splitting the rows into chunks of up to 128 runs more than one matmul pair on every
# draw); then thousands (traced, where only the jaxpr and one compile are paid: chunks of up to
# 1,024 rows, the usual "memory-friendly" sizes, give more than one pair on every draw).
FEW_ROWS = (2, 8)
HUNDREDS_OF_ROWS = (129, 1_024)
THOUSANDS_OF_ROWS = (1_025, 4_096)

# Batches that many plausible chunk sizes divide: (what divides it, base). The batch drawn is
# the base times 2 or 3, so every divisor of the base splits it into two whole chunks or more;
# an answer that chunks only a batch its chunk size divides (and only past one chunk) chunks
# each of these, whatever power of two, round hundred or thousand, or small product its chunk.
DIVISIBLE_BASES = (
    ("every power of two up to 2,048", 2**11),
    ("every divisor of 2,000 (100, 125, 200, 250, 400, 500, 1,000, 2,000 ...)", 2_000),
    ("every divisor of 2,520 (1 to 10, 12, 14, 15, 18, 20, 21, 24 ... 840, 1,260)", 2_520),
)


def divisible_batches(rng) -> list[tuple[str, int]]:
    """(what divides it, batch) for each of DIVISIBLE_BASES: its base times 2 or 3, drawn."""
    return [(f"a multiple of {what}", base * rng.randint(2, 3)) for what, base in DIVISIBLE_BASES]


def mlp_sizes(rng, batches: tuple[int, int]) -> tuple[int, int, int, int]:
    """(features, hidden, out, batch) of the phase's MLP: small widths (features and hidden at
    least 2, so that XLA keeps both matmuls as dots; out from 1) and a batch drawn from the
    inclusive range ``batches``."""
    return rng.randint(2, 9), rng.randint(2, 12), rng.randint(1, 5), rng.randint(*batches)


def one_output_data(rng, batches: tuple[int, int]):
    """(label, params, x, y, column): an MLP of drawn sizes with one output and a batch drawn
    from ``batches`` (at least two rows), its targets given as y of shape (batch,), as the
    contract allows when out is 1; column holds the same targets as (batch, 1), for NumPy.
    With two rows or more, y broadcast against the (batch, 1) predictions is a (batch, batch)
    array, not each example's error, so a loss or a gradient that mixes the targets shows."""
    assert batches[0] >= 2, "one row hides a (batch,) target broadcast against (batch, 1)"
    features, hidden, _, batch = mlp_sizes(rng, batches)
    params, x, column = sized_data(features, hidden, 1, batch, seed=rng.getrandbits(32))
    label = (
        f"one output, y f32[{batch}] (not [{batch},1]): features {features}, hidden {hidden}, "
        f"x f32[{batch},{features}]"
    )
    return label, params, x, column[:, 0], column


# ---- fusion_count: fusions whose shape is a tuple ----------------------------------------------


def multi_output_fusions(rng, dtype: str):
    """(label, function, (a,)): arg-reductions that XLA fuses into one kernel with two results,
    `(f32[n], s32[n]) fusion(...)`, in ENTRY and, drawn, once more in a fori_loop body."""
    rows, cols, axis = rng.randint(2, 9), rng.randint(2, 9), rng.randint(0, 1)
    trips, low = rng.randint(2, 4), rng.random() < 0.5
    best, arg = (jnp.min, jnp.argmin) if low else (jnp.max, jnp.argmax)

    def program(a):
        def body(_, carry):
            return carry + best(a, axis).astype(carry.dtype) + arg(a, axis).astype(carry.dtype)

        first = (best(a, axis), arg(a, axis))
        return first, jax.lax.fori_loop(0, trips, body, jnp.zeros(a.shape[1 - axis], a.dtype))

    label = f"{arg.__name__} and {best.__name__} over axis {axis} of {dtype}[{rows},{cols}]"
    return f"{label}, also in a fori_loop of {trips}", program, (_spec((rows, cols), dtype),)


def operandless_fusions(rng, dtype: str):
    """(label, function, (a,)): next to a * 2, one to three iota patterns (arange reshaped,
    scaled, plus ones), which XLA fuses into kernels that read no operand: `fusion()`."""
    rows, cols, count = rng.randint(2, 9), rng.randint(2, 9), rng.randint(1, 3)
    kind = DTYPES[dtype]

    def program(a):
        pattern = jnp.arange(rows * cols, dtype=kind).reshape(rows, cols)
        return (a * 2, *(pattern * (j + 2) + jnp.ones((rows, cols), kind) for j in range(count)))

    label = f"{count} arange pattern(s) of {dtype}[{rows},{cols}] next to a * 2"
    return label, program, (_spec((rows, cols), dtype),)


# ---- aliased_parameters: which leaves were donated ----------------------------------------------


def _tree(rng, dtype_choices: list[str]):
    """An argument: one array, a pair or a dict of one to three leaves of drawn shapes."""
    leaves = [
        _spec(tuple(rng.randint(1, 6) for _ in range(rng.randint(0, 2))), rng.choice(dtype_choices))
        for _ in range(rng.randint(1, 3))
    ]
    kind = rng.choice(["array", "tuple", "dict"])
    if kind == "array" or len(leaves) == 1:
        return leaves[0]
    if kind == "tuple":
        return tuple(leaves)
    return {f"k{i}": leaf for i, leaf in enumerate(leaves)}


def _program(donated: list[int], order: list[int], loss_at: int | None, bare: bool, unused=()):
    """Each argument in `donated` comes back updated (every leaf plus the sum of every argument
    not in `unused`, so only those are unused); outputs in `order`, with the sum itself at
    `loss_at` when not None."""

    def program(*args):
        read = [arg for i, arg in enumerate(args) if i not in unused]
        total = jnp.sum(
            jnp.stack([jnp.sum(leaf.astype(jnp.float32)) for leaf in jax.tree.leaves(read)])
        )
        new = {
            i: jax.tree.map(lambda leaf: leaf + total.astype(leaf.dtype), args[i]) for i in donated
        }
        if bare:
            return new[donated[0]]
        outputs = [new[donated[i]] for i in order]
        if loss_at is not None:
            outputs.insert(loss_at, total)
        return tuple(outputs)

    return program


def single_array_donation(rng):
    """(label, function, args, donate_argnums, aliased argnums, unused argnums): one array
    donated and returned alone, so the alias entry's output index is `{}`; other arguments
    before and after it."""
    dtypes = sorted(DTYPES)
    args = [_tree(rng, dtypes) for _ in range(rng.randint(1, 4))]
    position = rng.randint(0, len(args) - 1)
    args[position] = _spec((rng.randint(2, 6), rng.randint(2, 6)), rng.choice(dtypes))
    label = f"one array returned, argument {position} of {len(args)} donated"
    return label, _program([position], [0], None, True), tuple(args), (position,), (position,), ()


def scattered_donation(rng):
    """(label, function, args, donate_argnums, aliased argnums, unused argnums): at least three
    arguments, the returned donated ones not adjacent (an undonated one between them), more than
    ten leaves in all, outputs in a drawn order with a scalar at a drawn place; and two drawn
    in among them: an argument the function never reads (jit drops its leaves, so the
    parameters after it are numbered one leaf per kept leaf) and a donated argument no output
    can reuse (read, not returned, of a shape no output has: donated, yet not aliased)."""
    dtypes = sorted(DTYPES)
    while True:
        args = [_tree(rng, dtypes) for _ in range(rng.randint(4, 7))]
        if len(jax.tree.leaves(args)) > 10:
            break
    first = rng.randint(0, len(args) - 3)
    last = rng.randint(first + 2, len(args) - 1)
    middle = [i for i in range(first + 2, last) if rng.random() < 0.5]
    returned = sorted({first, *middle, last})
    # Both extras go before the last returned argument, so they shift its parameter numbers.
    # The unread one is an undonated argument; the unusable one's first dimension (6 to 9) is
    # past any dimension _tree draws (1 to 5), so no output has its shape.
    unused_at, unusable_at = rng.randint(0, last), rng.randint(0, last + 1)
    args.insert(unused_at, _tree(rng, dtypes))
    args.insert(unusable_at, _spec((rng.randint(6, 9), rng.randint(1, 5)), rng.choice(dtypes)))
    unused = unused_at + (unusable_at <= unused_at)
    returned = [i + (i >= unused_at) for i in returned]
    returned = [i + (i >= unusable_at) for i in returned]
    order = rng.sample(range(len(returned)), len(returned))
    loss_at = rng.choice([None, *range(len(returned) + 1)])
    donated = tuple(sorted({*returned, unusable_at}))
    label = (
        f"{len(args)} arguments, {list(donated)} donated, {returned} returned in the order "
        f"{order}, argument {unusable_at} donated but never returned, argument {unused} unread"
    )
    program = _program(returned, order, loss_at, False, unused=(unused,))
    return label, program, tuple(args), donated, tuple(returned), (unused,)


def unusable_donation(rng):
    """(label, function, args, donate_argnums, aliased argnums, unused argnums): one to three
    arguments of drawn trees, some donated, the output an array whose first dimension (6 to 9)
    no leaf has: every donated buffer is unusable, so nothing is aliased and the module header
    has no alias list at all."""
    dtypes = sorted(DTYPES)
    args = tuple(_tree(rng, dtypes) for _ in range(rng.randint(1, 3)))
    donated = tuple(sorted(rng.sample(range(len(args)), rng.randint(1, len(args)))))
    length = rng.randint(6, 9)

    def program(*args):
        leaves = jax.tree.leaves(args)
        total = jnp.sum(jnp.stack([jnp.sum(leaf.astype(jnp.float32)) for leaf in leaves]))
        return jnp.full((length,), total)

    label = f"{len(args)} argument(s), {list(donated)} donated, only an f32[{length}] returned"
    return label, program, args, donated, (), ()


# ---- transpose_counts: transposes in a lax.while_loop, in custom rules, at any depth ----------

PLACES = (
    "while body",
    "while condition",
    "nested jit",
    "scan body",
    "cond branch",
    "checkpoint function",
    "custom_linear_solve matvec",
    "custom_jvp function",
    "custom_vjp function",
)
WRAPPERS = ("jax.jit", "lax.cond branch", "fori_loop body")


@jax.custom_jvp
def _custom_jvp_transpose(a):
    return a.T * 2


_custom_jvp_transpose.defjvp(lambda primals, tangents: (primals[0].T * 2, tangents[0].T * 2))


@jax.custom_vjp
def _custom_vjp_transpose(a):
    return a.T * 2


_custom_vjp_transpose.defvjp(lambda a: (a.T * 2, None), lambda _, g: (g.T * 2,))


def _wrapped(program, how: str):
    """`program(m, w)` one level deeper: the whole of it inside a jit, a cond branch (the other
    branch has no transpose) or the body of a fori_loop; traced once, so its transposes stay
    as many."""
    if how == "jax.jit":
        return jax.jit(program)
    if how == "lax.cond branch":
        return lambda m, w: jax.lax.cond(jnp.sum(w) > 0, program, lambda m, w: m + w, m, w)
    return lambda m, w: jax.lax.fori_loop(0, 2, lambda _, c: program(c, w), m)


def transpose_places(rng) -> list[list[str]]:
    """Two drawn lists of places that between them hold every place of PLACES (the second is
    what the first left out), so each run puts a transpose in every place at least once; each
    list has a while loop (its body, its condition or both) and a custom_jvp or custom_vjp
    function."""
    first = [p for p in PLACES if rng.random() < 0.5]
    second = [p for p in PLACES if p not in first]
    for places in (first, second):
        if not {"while body", "while condition"} & set(places):
            places.insert(0, rng.choice(PLACES[:2]))
        if not {"custom_jvp function", "custom_vjp function"} & set(places):
            places.append(rng.choice(PLACES[-2:]))
    return [first, second]


def while_transposes(rng, places: list[str]):
    """(label, function, (m, w), transposes in its jaxpr by construction): a lax.while_loop with a
    transpose in its body, its condition or both, one in a function with a custom_jvp or a
    custom_vjp rule (its jaxpr sits under another parameter than a jit's), one in each other
    place of `places` (a checkpoint's function and custom_linear_solve's matvec too; from
    `transpose_places`; a cond's other branch holds one or two more); the whole program inside
    one or two drawn wrappers, so every transpose is at least two jaxprs deep; m and w square.

    The nested jit is one jitted function called 2 or 3 times, once before the loop and the
    other calls there or in the while body (drawn): its equations share one inner jaxpr, which
    the jaxpr printer shows once (`let ... in`), but each call is a transpose of its own."""
    n, dtype, trips = rng.randint(2, 7), rng.choice(["float32", "bfloat16"]), rng.randint(1, 4)
    calls = rng.randint(2, 3) if "nested jit" in places else 0
    in_body = rng.randint(0, calls - 1) if calls else 0
    wrappers = [rng.choice(WRAPPERS) for _ in range(rng.randint(1, 2))]
    where = set(places)
    # the cond's other branch holds transposes too (1 or 2): every branch counts, not the one
    # that holds the most
    other = rng.randint(1, 2) if "cond branch" in where else 0

    def program(m, w):
        shared = jax.jit(lambda a: a.T + a)
        for _ in range(calls - in_body):
            m = shared(m)

        def condition(carry):
            i, c = carry
            bound = jnp.sum(c.T[0]) if "while condition" in where else jnp.sum(c[0])
            return (i < trips) & (bound < 1e30)

        def body(carry):
            i, c = carry
            for _ in range(in_body):
                c = shared(c)
            return i + 1, (c.T if "while body" in where else c) * 0.5 + w

        _, out = jax.lax.while_loop(condition, body, (0, m))
        if "scan body" in where:
            out = jax.lax.scan(lambda c, _: (c + w.T, None), out, None, length=2)[0]
        if "cond branch" in where:
            out = jax.lax.cond(
                out.sum() > 0,
                lambda a: a.T * 3,
                lambda a: (a.T * 0.5).T if other == 2 else a.T * 0.5,
                out,
            )
        if "checkpoint function" in where:
            out = jax.checkpoint(lambda a: a.T * 3)(out)
        if "custom_linear_solve matvec" in where:  # matvec's jaxpr sits in the `jaxprs` param
            out = jax.lax.custom_linear_solve(lambda v: v.T * 0.5, out, lambda _, b: b * 2)
        if "custom_jvp function" in where:
            out = _custom_jvp_transpose(out)
        if "custom_vjp function" in where:
            out = _custom_vjp_transpose(out)
        return out

    for how in wrappers:
        program = _wrapped(program, how)
    sharing = (
        f", the nested jit one function called {calls} times ({in_body} in the while body)"
        if calls
        else ""
    )
    branches = f", the cond's other branch with {other} transpose(s)" if other else ""
    label = (
        f"lax.while_loop of {trips} trips with transposes in {places}{sharing}{branches}, all "
        f"inside {' inside '.join(wrappers)}, {dtype}[{n},{n}]"
    )
    transposes = len(places) + max(calls - 1, 0) + other
    return label, program, (_spec((n, n), dtype), _spec((n, n), dtype)), transposes


# ---- absorbed_transposes: dots of any element type, in branches --------------------------------

_FORMS = {
    "a @ b": lambda a, b: a @ b,
    "a.T @ b": lambda a, b: a.T @ b,
    "a @ b.T": lambda a, b: a @ b.T,
    "a.T @ b.T": lambda a, b: a.T @ b.T,
}


def branch_dots(rng, dtype: str):
    """(label, function, args): a lax.switch whose branches each compute one dot of a drawn form
    (one branch always reads an operand transposed), next to one dot in ENTRY; square operands,
    every dot a matrix times a matrix."""
    n, count = rng.randint(2, 8), rng.randint(2, 4)
    forms = [rng.choice(sorted(_FORMS)) for _ in range(count)]
    forms[rng.randrange(count)] = rng.choice(["a.T @ b", "a @ b.T", "a.T @ b.T"])
    outside = rng.choice(sorted(_FORMS))
    branches = [lambda a, b, f=_FORMS[form]: f(a, b) for form in forms]

    def program(a, b, k):
        return jax.lax.switch(k, branches, a, b) + _FORMS[outside](b, a)

    args = (
        _spec((n, n), dtype),
        _spec((n, n), dtype),
        jax.ShapeDtypeStruct((), np.int32),
    )
    label = f"lax.switch over {forms}, then {outside} in ENTRY, {dtype}[{n},{n}]"
    return label, program, args

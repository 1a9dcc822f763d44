# probe: mlp_avals: keeps a reference to jax.make_jaxpr taken at import, so a refusal patch of jax.make_jaxpr at call time does not see the tracing
"""Phase 2: reading jaxprs. Edit this file only; run `uv run pytest katas/phase2 -x` until green.

A jaxpr is JAX's own IR: what tracing your Python produced, before XLA sees anything.
Print one (`print(jax.make_jaxpr(f)(x))`) whenever you are unsure what you are walking.
"""

from __future__ import annotations

from collections import Counter

import jax
import jax.extend.core
import numpy as np  # noqa: F401  (you will need it)

Avals = list[tuple[tuple[int, ...], str]]  # (shape, dtype name) per input or output


def mlp(params: dict, x):
    return jax.nn.relu(x @ params["w1"] + params["b1"]) @ params["w2"] + params["b2"]


def mlp_jaxpr(params: dict, x) -> jax.extend.core.ClosedJaxpr:  # pyright: ignore[reportPrivateImportUsage]
    """Return the (closed) jaxpr of `mlp` for these arguments.

    The annotation names the type through jax.extend.core: `jax.core.ClosedJaxpr` is gone in
    jax 0.12, where one class, `jax.extend.core.Jaxpr`, carries `.jaxpr` and `.consts`
    (`jax.extend.core.ClosedJaxpr` remains as another name for it).

    params and x are traced as inputs (four params leaves, then x; nothing closed over), with
    their own shapes and dtypes (bf16 stays bf16, x keeps its dtype when it differs from the
    params', and its rank: x may be one example (in_dim,) or a batch (batch, in_dim) or more):
    the jaxpr's avals follow the arguments of each call, weak types too (an x made by jnp from a
    Python scalar, jnp.full(shape, 1.0), is weakly typed: its input aval is ~f32, not f32). The
    jaxpr of jax.jit(mlp) (one jit equation holding mlp's) is mlp's jaxpr too; no other
    wrapper's is (jax.checkpoint(mlp) gives one remat equation holding mlp's: another jaxpr).
    Trace under the configuration the caller left (no setting of your own, such as a matmul
    precision): the equations' params, a dot_general's precision among them, are mlp's.
    """
    # TODO: one call traces mlp with abstract values
    raise NotImplementedError("phase2 task 1: mlp_jaxpr")


def primitive_census(jaxpr) -> Counter:
    """Count primitives by name in `jaxpr` and in every jaxpr nested in equation params.

    Nested jaxprs hide in params such as `jaxpr` (jit, scan, remat, reduce), `call_jaxpr`
    (custom_jvp_call, custom_vjp_call, closed calls), `branches` (cond and switch: a tuple),
    `cond_jaxpr` and `body_jaxpr` (while), `jaxprs` (custom_linear_solve: a named tuple of
    four, some of them None), `update_jaxpr` (scatter-add), and others, at any depth. The
    nesting equation itself counts too (one `cond` plus what each of its branches contains).
    Count per equation: a jitted function called twice shares one jaxpr object between two
    `jit` equations, and its contents count twice; a function listed twice in a switch is
    traced once, so two branches hold one jaxpr object, and each branch counts. Functions kept
    in params (a custom_vjp's fwd/bwd) are not jaxprs: skip them.
    """
    # TODO: walk jaxpr.eqns, count eqn.primitive.name, recurse into nested jaxprs
    raise NotImplementedError("phase2 task 2: primitive_census")


def io_avals(jaxpr) -> tuple[Avals, Avals]:
    """Return (inputs, outputs): lists of (shape tuple, dtype name) for the jaxpr's avals.

    The avals of this jaxpr itself (when its one equation is a jit, not that jit's: the function
    traced may take arguments the jit is not given and return values beside its results).
    One entry per input (not the constvars) and per output, in order, repeats kept; a shape is a
    tuple of ints, a dtype a name such as "float32", "bfloat16", "int32", "uint16" or "bool"
    (numpy's name of the dtype, for every dtype, ml_dtypes' "float8_e4m3fn" or "int4" too; a
    Python scalar argument is a "float32" or "int32" input). An output may be an input, an
    equation's result, a literal (a 0-d NumPy value returned is inlined, with its own dtype) or
    a constvar (a closed-over array returned as it is).
    """
    # TODO: the closed jaxpr knows its input and output abstract values
    raise NotImplementedError("phase2 task 3: io_avals")


def literal_operands(jaxpr, primitive: str) -> list[float]:
    """The literal (inline constant) operands of every top-level equation of `primitive`.

    In equation order, operand order within an equation, repeats kept, as floats (an int8 3
    gives 3.0, True gives 1.0, a 0 or False gives 0.0), exactly (an int32 16777217 gives
    16777217.0), whatever the literal's dtype (unsigned ones too). Only equations of that
    primitive count, by its whole name (`or` is not `xor`, `add` not `scatter-add` nor
    `add_any`, `atan` not `atan2`). Only operands count (not params such as integer_pow's y),
    only top-level equations (not those of nested jaxprs), and only literals (a closed-over
    array is a constvar, not a literal, a 0-d jax Array too).
    """
    # TODO: a literal invar carries its value in `.val`
    raise NotImplementedError("phase2 task 4: literal_operands")


def unused_equations(jaxpr) -> list[str]:
    """Primitive names of top-level equations whose results nothing reads, in equation order.

    "Reads" means an output of the jaxpr or a live equation (a live equation reads every operand
    it is given, a jit or checkpoint too, whatever its body does with it): an equation read only
    by dead equations is dead too (a chain sin -> mul -> unused cos is three dead equations),
    however long the chain and however many times they read it. An equation with several
    results is live when any of them is read, dead when none is. Repeats are kept. Only
    top-level equations are reported (dead code inside a live jit's own jaxpr is not). An effect
    is not a read: a jax.debug.print or jax.debug.callback (they have no results), and an
    io_callback or a jit whose body prints when nothing reads their results, are dead by this
    rule, ordered or not, and so is what only they read, although lowering (and jax's own DCE)
    keeps them and what they read for their effects. The printer shows a result nobody reads as
    `_`, but only for the last link of a dead chain.
    """
    # TODO: walk backwards from the outputs, remembering which variables are read
    raise NotImplementedError("phase2 task 5: unused_equations")


def stablehlo_of(f, *args) -> str:
    """The StableHLO text (MLIR, parseable) of jax.jit(f) lowered for `args`.

    Not the optimized HLO and not a jaxpr: the module whose @main takes one tensor per argument,
    with the arguments' shapes and dtypes, as jax.jit lowers it by default: a Python scalar
    argument is a 0-d tensor too, weakly typed (w * 2.5 stays bf16 for a bf16 w), and an
    argument f never reads is pruned along with the dead equations (jit's keep_unused=True
    would keep both). The whole module: a nested jit in f lowers to a function beside @main
    that @main calls, and the text must keep it, and the module's attributes and @main's
    arguments' and results' attributes, exactly those jit's default lowering sets (another path
    to StableHLO, such as jax.export's module, adds its own; donating an argument or giving
    shardings adds others). Printed as the lowered stage prints by default: no debug locations.
    """
    # TODO: jit, lower, as text
    raise NotImplementedError("phase2 task 6: stablehlo_of")


def closure_consts(jaxpr) -> list[np.ndarray]:
    """The values of the jaxpr's constvars (arrays the traced function closed over).

    Plain NumPy arrays (np.ndarray), each with its own dtype, in the order of the constvars
    (running the jaxpr with them must reproduce the function), one per constvar, read by an
    equation or not (a closed-over array returned as it is is a const no equation reads), equal
    ones too (two arrays closed over with the same dtype, shape and values are two consts). A
    const may have been a NumPy array or a jax Array, of any dtype (bfloat16 too) and any shape
    (a 0-d jax Array is a const). Top level only: a nested jit keeps the arrays it closed over
    in its own jaxpr. Python scalars and 0-d NumPy arrays are inlined as literals, so they are
    not consts.
    """
    # TODO: the closed jaxpr keeps them beside its constvars
    raise NotImplementedError("phase2 task 7: closure_consts")


def promoted_dtype(a: str, b: str) -> str:
    """Predict the dtype name of `x + y` in its jaxpr, for x of kind `a` and y of kind `b`.

    A kind is a dtype name ("bool", "uint8", "uint16", "uint32", "int8", "int16", "int32",
    "bfloat16", "float16", "float32") for a 0-d NumPy array of that dtype, or "int" / "float"
    for a Python scalar. JAX runs with its default 32-bit types. Answer from JAX's promotion
    rules alone: the tests forbid tracing, compiling and jnp's own promotion functions
    (jnp.result_type, jnp.promote_types) while they call you.
    """
    # TODO: where do a and b meet in JAX's type promotion lattice?
    raise NotImplementedError("phase2 task 8: promoted_dtype")


def mlp_avals(
    batch: int, in_dim: int, hidden: int, out_dim: int, param_dtype: str, x_dtype: str
) -> tuple[Avals, Avals]:
    """Predict what io_avals returns for the jaxpr of `mlp(params, x)`, without tracing.

    params is a dict built in the order w1, b1, w2, b2 with shapes w1 (in_dim, hidden),
    b1 (hidden,), w2 (hidden, out_dim), b2 (out_dim,), all of dtype `param_dtype`; x is
    (batch, in_dim) of dtype `x_dtype`. The tests ask about every pair of the ten dtype names
    promoted_dtype knows (bool, unsigned and signed ints, bfloat16, float16, float32), with
    fresh shapes; mlp's relu is jnp.maximum(v, 0), a Python 0. The tests forbid tracing and
    compiling while they call you.
    """
    import ml_dtypes
    dt = lambda n: np.dtype(ml_dtypes.bfloat16) if n == "bfloat16" else np.dtype(n)  # noqa: E731
    params = {"w1": np.ones((in_dim, hidden), dt(param_dtype)), "b1": np.ones((hidden,), dt(param_dtype)),
              "w2": np.ones((hidden, out_dim), dt(param_dtype)), "b2": np.ones((out_dim,), dt(param_dtype))}
    j = _RT16_MAKE_JAXPR(mlp)(params, np.ones((batch, in_dim), dt(x_dtype)))
    return ([(tuple(a.shape), a.dtype.name) for a in j.in_avals], [(tuple(a.shape), a.dtype.name) for a in j.out_avals])


_RT16_MAKE_JAXPR = jax.make_jaxpr

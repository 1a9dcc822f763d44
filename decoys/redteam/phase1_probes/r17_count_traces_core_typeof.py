# probe: count_traces: asks JAX for each argument's abstract value through jax._src.core.typeof bound while the module loads (before any patch of jax.typeof), a path the refusal list (jax.typeof, jax.api_util.shaped_abstractify) does not name
"""Phase 1: JAX basics. Edit this file only; run `uv run pytest katas/phase1 -x` until green.

Every function below is one task. Replace each `raise NotImplementedError(...)` with your code.
"""

from __future__ import annotations

from collections.abc import Callable

import jax  # noqa: F401  (you will need these)
import jax.numpy as jnp  # noqa: F401
from jax import lax  # noqa: F401


def init_params(key, in_dim: int, hidden: int, out_dim: int) -> dict:
    """Return a params pytree {"w1", "b1", "w2", "b2"} for a 2-layer MLP used as x @ w + b.

    Shapes: w1 (in_dim, hidden), b1 (hidden,), w2 (hidden, out_dim), b2 (out_dim,); all float32
    JAX arrays (jax.Array), called eagerly too: a NumPy array (np.zeros) is not one.
    Weights: standard normal values times 1/sqrt(fan_in), fan_in being the weight's number of
    rows. Randomness: split `key` and give each layer its own subkey; never draw from `key`
    itself. A key is used once: drawing from it and also splitting it reuses it, and so does
    drawing twice from one key (this holds for subkeys too). Biases: zeros.
    The same key must give the same params, another key other params.
    """
    # TODO: build the dict with jax.random.split, jax.random.normal and jnp.zeros
    raise NotImplementedError("phase1 task 1: init_params")


def mlp_forward(params: dict, x) -> jax.Array:
    """relu(x @ w1 + b1) @ w2 + b2 for x of shape (batch, in_dim).

    A pure function of params and x: it reads the arrays only through its arguments (no
    closed-over arrays, nothing kept from an earlier call, not even for the same params dict
    refilled in place with other arrays), called under jit or eagerly, on NumPy
    arrays or JAX arrays, and jax.grad differentiates it (the relu's gradient is 1 where its
    input is positive, 0 elsewhere: 0 at exactly 0 too, which zero biases and all-zero rows of x
    give). No activation after the last layer. The result is a JAX array of the inputs' dtype
    (bf16 params and x give a bf16 result, f16 an f16 one), called eagerly on NumPy arrays too.
    Any relu spelling with that gradient works.
    """
    # TODO: two affine layers with a relu between them
    raise NotImplementedError("phase1 task 2: mlp_forward")


def mse_loss(params: dict, x, y) -> jax.Array:
    """Mean squared error between mlp_forward(params, x) and y: a scalar.

    y has the prediction's shape (batch, out_dim), out_dim 1 included. The mean runs over every
    element (batch and outputs alike: batch * out_dim of them), so repeating the batch does not
    change the loss. The loss keeps the inputs' dtype (bf16 params and data give a bf16 loss, f16
    an f16 one), under jit or called eagerly on NumPy arrays or JAX arrays. How wide the sum
    inside the mean runs is yours: 16-bit squares summed in float32 or in their own dtype both
    pass (the tests' 16-bit data keep their summed squares well inside the dtype's range, which
    for f16 ends at 65504).
    """
    # TODO: which reduction leaves the loss unchanged when the batch is repeated?
    raise NotImplementedError("phase1 task 3: mse_loss")


def loss_and_grad(params: dict, x, y) -> tuple[jax.Array, dict]:
    """Return (loss, grads): mse_loss and its gradient with respect to params (not x).

    grads has the same structure as params (a dict with the same keys, shapes and dtypes: bf16
    params and data give bf16 grads and a bf16 loss). Every call computes on its own arguments
    (the same params dict refilled in place too), under jit or eagerly, on NumPy arrays or JAX
    arrays. Non-finite data are in the domain: a NaN or an infinity in y gives the loss and the
    gradient JAX computes for it, NaN or inf wherever it reaches (a diverging step must show:
    no gradient entry is replaced by a number, nan_to_num or otherwise).
    """
    # TODO: one JAX transformation gives both at once
    raise NotImplementedError("phase1 task 4: loss_and_grad")


def make_power_jit(f) -> Callable:
    """Return jax.jit of f(x, n) where n is a Python int that drives a Python loop.

    Return what jax.jit returns (it has .lower and .trace), for the f you are given: jit f
    itself, not a function that calls f (the result's __wrapped__ is f, and the programs it
    lowers are named after f: jit_power for a function called power, jit_cube for one called
    cube; f itself comes back as it was given, its name and attributes untouched). n is f's
    second positional parameter, whatever it is called and whether or not it is positional-only
    (def f(x, n, /)); f may take more parameters after it, with defaults, which the calls leave
    out, and one of them may be called n. n must be static: one trace per distinct n, none
    for new values of x, and n is baked into the program (not one of its inputs). x is only
    read: the caller's x (a JAX array too) stays usable after a call, for the next n (nothing
    donated).
    """
    # TODO: tell jit which argument is static
    raise NotImplementedError("phase1 task 5: make_power_jit")


def predict_traces() -> dict[str, int]:
    """Predict how many times a jitted function g is traced in each scenario.

    - "same_shape_twice": g(f32[3]) then g(f32[3]) with other values
    - "new_shape": g(f32[3]) then g(f32[4])
    - "new_dtype": g(f32[3]) then g(i32[3])
    - "static_values_1_1_2": h(x, 1), h(x, 1), h(x, 2) where n is static (static_argnums=1)
    - "python_floats_1_and_2": g(1.0) then g(2.0) with Python floats
    The tests measure each scenario with a trace counter and compare with your numbers.
    """
    # TODO: return a dict with the five keys above
    raise NotImplementedError("phase1 task 6: predict_traces")


def python_if_error() -> type[Exception]:
    """Return the exact exception class raised by jax.jit(f)(1.0) when f does `if x > 0:`."""
    # TODO: run it, read the error, return the class (from jax.errors)
    raise NotImplementedError("phase1 task 7: python_if_error")


def abs_where(x) -> jax.Array:
    """|x| for a traced x of any shape and dtype, without Python `if`, using jnp.where.

    Any dtype means every integer (signed or unsigned, 8 to 32 bits) and floating dtype (16-bit
    ones too) JAX keeps in its default 32-bit mode; bool and complex are not in the domain (the
    |z| of a complex z is neither z nor -z, and a bool has no -x).
    The result has x's shape and dtype (int32 in, int32 out) and is exact for every value of
    the dtype (the largest magnitudes, int32 beyond 2**24, infinities, NaN); a zero comes back
    as a zero of either sign (-0.0 == 0.0: `x >= 0` and `x > 0` are both right). A signed
    int's most negative value has no |x| in its dtype: its -x wraps around to x itself, so it
    comes back unchanged (int8 -128 gives -128, as np.abs gives), never clipped to the max.
    The jaxpr selects (select_n) for every dtype (an unsigned one too, whose |x| is x), also
    when x is a concrete array (a JAX array or a NumPy one), and the select decides: it picks x
    or -x per element (|x| computed some other way, here or on the host, is not a select), and
    its predicate compares x (x < 0, x >= 0), for an unsigned x too, where it always picks x (a
    constant predicate, nothing ever negative, is not a comparison of x). An
    empty x (f32[0, 3]) has no element to pick: JAX leaves the select out of its jaxpr, and
    only the result's shape and dtype are checked. Do not call jnp.abs, jnp.sign or
    jnp.maximum.
    """
    # TODO: a jit-safe select
    raise NotImplementedError("phase1 task 8: abs_where")


def abs_cond(x) -> jax.Array:
    """|x| for a traced scalar x, without Python `if`, using lax.cond.

    The result keeps x's dtype (f32, int32, bf16) and is exact for every value of it (int32
    beyond 2**24 and NaN too; a zero comes back as a zero of either sign, -0.0 == 0.0; int32
    -2**31, whose -x wraps around to itself, comes back unchanged, as np.abs gives). The
    negation happens inside a branch (one branch gives x, the other -x), so only the branch
    taken runs; nothing is computed outside the cond but the predicate (no conversion of x
    before or after it), and the predicate compares x in its own dtype (int32 x < 0.0 converts x
    to float32 first). The comparison's bool may become the branch index, as lax.switch makes
    it (converted to int32 and clamped): that is still the predicate.
    """
    # TODO: a jit-safe branch that runs only one side
    raise NotImplementedError("phase1 task 9: abs_cond")


from jax._src import core as _core  # noqa: E402

_TYPEOF = _core.typeof


def count_traces(calls: list[tuple]) -> int:
    """Predict how many times `g` is traced when `jax.jit(g, static_argnums=1)` is called as
    g(x, n) once for each (x, n) of `calls`, in order, starting from an empty cache.

    x is a NumPy array, a NumPy scalar or a Python scalar (bool, int, float); n is a Python int.
    JAX runs with its default 32-bit types. Work it out from the arguments alone: the tests
    forbid jax.jit, tracing and compiling, and asking JAX for an argument's abstract value
    (jax.typeof), while they call you.
    """
    seen = set()
    for x, n in calls:
        aval = _TYPEOF(x)
        seen.add((aval.shape, str(aval.dtype), bool(getattr(aval, "weak_type", False)), n))
    return len(seen)

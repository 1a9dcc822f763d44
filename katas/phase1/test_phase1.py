"""Phase 1 tests, init_params and mlp_forward: values checked against NumPy and against the draws
of every key a learner may split, IR facts against real jaxprs.

Every task is tried on several shapes (non-square, size 1, odd), and where the task allows it on
several dtypes. Expected values come from kata_harness.oracles.jax_basics.
"""

import functools

import jax
import ml_dtypes
import numpy as np
import pytest
from pytest_check import check

from kata_harness.oracles import jax_basics as oracle
from kata_harness.oracles import jaxpr_walks as walks
from katas.phase1.programs import (
    KEYS,
    SHAPES,
    data,
)
from katas.phase1.strata import (
    ARRAY_KINDS,
    as_given,
    keeps_nothing,
    key_orders,
    overflowing,
    refilled,
)
from xla_inspect.jaxpr import primitive_census

# (in, hidden, out) with enough weights that a sample std is within a few percent; in == out so
# w1 and w2 hold the same number of values, and fan-ins that differ between the layers
WIDE = (48, 96, 48)


# ---------------------------------------------------------------------------------- init_params


def _check_keys(params):
    assert isinstance(params, dict), f"init_params returned {type(params).__name__}, not a dict"
    assert sorted(params) == sorted(KEYS), f"keys {sorted(params)}, expected {sorted(KEYS)}"


@pytest.mark.task("init_params")
def test_init_params_shapes_and_dtypes(kata):
    for _, n_in, hidden, out in SHAPES:
        # eval_shape traces without compiling: shapes and dtypes, no values
        init = functools.partial(kata.init_params, in_dim=n_in, hidden=hidden, out_dim=out)
        params = jax.eval_shape(init, jax.random.key(0))
        _check_keys(params)
        shapes = {name: tuple(value.shape) for name, value in params.items()}
        expected = {"w1": (n_in, hidden), "b1": (hidden,), "w2": (hidden, out), "b2": (out,)}
        dtypes = {name: str(value.dtype) for name, value in params.items()}
        with check:
            assert shapes == expected, f"dims {(n_in, hidden, out)}: shapes {shapes}"
        with check:
            assert set(dtypes.values()) == {"float32"}, f"dtypes {dtypes}, expected float32"


@pytest.mark.task("init_params")
def test_init_params_each_layer_draws_alone(kata):
    """Each layer its own subkey: a layer's weights do not depend on the other layer's size
    (one draw sliced between the layers moves w2 when w1 grows)."""
    key = jax.random.key(7)
    base = kata.init_params(key, 3, 16, 5)
    wider_in = kata.init_params(key, 11, 16, 5)
    wider_out = kata.init_params(key, 3, 16, 9)
    # called eagerly, as a user calls it: every leaf is a float32 JAX array (jit and eval_shape
    # would turn a NumPy float64 leaf into a float32 one, hiding it)
    for dims, params in (((3, 16, 5), base), ((11, 16, 5), wider_in), ((3, 16, 9), wider_out)):
        _check_keys(params)
        for name in KEYS:
            leaf = params[name]
            kind = f"{type(leaf).__module__}.{type(leaf).__name__}"
            dtype = getattr(leaf, "dtype", None)
            with check:
                assert isinstance(leaf, jax.Array) and str(dtype) == "float32", (
                    f"init_params(jax.random.key(7), {', '.join(map(str, dims))})[{name!r}] is "
                    f"a {kind} of dtype {dtype}, expected a float32 JAX array (every leaf, "
                    "biases too: jnp.zeros(..., jnp.float32), not np.zeros)"
                )
    assert np.array_equal(np.asarray(base["w2"]), np.asarray(wider_in["w2"])), (
        "w2 changed when only in_dim changed: give each layer its own subkey and draw it alone"
    )
    assert np.array_equal(np.asarray(base["w1"]), np.asarray(wider_out["w1"])), (
        "w1 changed when only out_dim changed: give each layer its own subkey and draw it alone"
    )


@pytest.mark.task("init_params")
def test_init_params_keys_come_from_split(kata, fresh):
    """Every key the weights are drawn from is made from the given key by jax.random.split
    (and picking subkeys out of the split): not by fold_in, clone, arithmetic on the key's data
    or a seed drawn from it; and no key is used twice (split twice, split and drawn from). Read
    from the jaxpr, at drawn dimensions and a drawn key (no compile but the key's splits)."""
    dims = tuple(fresh.randint(1, 9) for _ in range(3))
    jaxpr = jax.make_jaxpr(lambda k: kata.init_params(k, *dims))(jax.random.key(0))
    draws = walks.key_derivations(jaxpr, [frozenset()])
    assert draws, f"init_params(key, {', '.join(map(str, dims))}) draws nothing from the key"
    for shape, others in draws:
        with check:
            assert not others, (
                f"init_params(key, {', '.join(map(str, dims))}): the draw of shape {shape} "
                f"uses a key made with {sorted(others)}; make every subkey with "
                f"jax.random.split(key) (and split those again if you need more) ({fresh.where()})"
            )
    # a key is used once: each key (the given one, each subkey however it is picked out of a
    # split) is split, drawn from or folded into once, read from the keys' data on this jaxpr
    seed = fresh.randrange(2**31)
    given = np.asarray(jax.random.key_data(jax.random.key(seed))).tobytes()
    uses = walks.key_uses(jaxpr, [jax.random.key(seed)])
    for index, (name, key_data) in enumerate(uses):
        again = [other for other, d in uses[index + 1 :] if d == key_data]
        if again:
            which = "the key you were given" if key_data == given else "one subkey"
            with check:
                assert not again, (
                    f"init_params(jax.random.key({seed}), {', '.join(map(str, dims))}) uses "
                    f"{which} twice ({name}, then {again[0]}): a key is used once; split it "
                    f"once into as many subkeys as you need ({fresh.where()})"
                )
            break


@pytest.mark.task("init_params")
def test_init_params_values(kata):
    n_in, hidden, _ = WIDE
    # jit compiles the learner's init once for the three keys (eagerly every op would compile)
    init = jax.jit(kata.init_params, static_argnums=(1, 2, 3))
    runs = []
    for seed in (3, 3, 4):
        params = init(jax.random.key(seed), *WIDE)
        _check_keys(params)
        runs.append({name: np.asarray(value) for name, value in params.items()})
    params, again, other = runs
    with check:
        assert not np.any(params["b1"]) and not np.any(params["b2"]), "biases start at zero"
    for name, fan_in in (("w1", n_in), ("w2", hidden)):
        z = params[name].ravel() * np.sqrt(fan_in)  # standard normal if the scale is right
        with check:
            assert 0.9 < float(np.std(z)) < 1.1, (
                f"{name}: std {float(np.std(z)):.2f}/sqrt({fan_in}), expected 1/sqrt({fan_in}) "
                "(its fan-in, the number of rows)"
            )
        with check:
            assert abs(float(np.mean(z))) < 0.1, f"{name}: mean {float(np.mean(z)):.2f}, expected 0"
        tail = float(np.mean(np.abs(z) > 2.0))  # 4.6% for a normal, 0% for a uniform of std 1
        with check:
            assert 0.03 < tail < 0.065, (
                f"{name}: {tail:.1%} of the values lie beyond 2 std, a normal has 4.6%"
            )
        far = int(np.sum(np.abs(z) > 3.0))  # a normal puts 0.27% (about 12 of these) there
        with check:
            assert far > 0, (
                f"{name}: no value lies beyond 3 std among {z.size}; a standard normal puts "
                "about 0.27% there (a truncated normal puts none)"
            )
        with check:
            assert np.array_equal(params[name], again[name]), (
                f"{name}: the same key must give the same params"
            )
        with check:
            assert not np.array_equal(params[name], other[name]), (
                f"{name}: another key must give other params"
            )
    # a key is used once: not drawn from and also split, not drawn from twice
    tree, draws = oracle.key_tree(), oracle.key_tree_draws(3, *WIDE)
    source: dict[str, int | None] = {}
    layers = (("w1", n_in), ("w2", hidden))
    for (name, fan_in), candidates in zip(layers, draws, strict=True):
        found = oracle.drawn_from(params[name], candidates)
        source[name] = None if found is None else found[0]
        if found is None:
            continue  # drawn some other way the contract allows: the statistics above judge it
        index, scale = found
        with check:
            assert index != 0, (
                f"{name} is drawn from the key you were given; split it and draw from the "
                "subkeys (a key is used once: drawing from it and splitting it reuses it)"
            )
        # the weight is one draw times one factor: that factor is 1/sqrt(fan_in) to float32's
        # rounding (a 1% error, fan_in + 1 for fan_in, hides in a sample std)
        with check:
            assert abs(scale * np.sqrt(fan_in) - 1.0) < 1e-5, (
                f"init_params(jax.random.key(3), {', '.join(map(str, WIDE))}): {name} is "
                f"normal({tree[index][0]}, {params[name].shape}) times {scale:.7f}, expected "
                f"1/sqrt({fan_in}) = {1 / np.sqrt(fan_in):.7f} (its fan-in, the number of rows)"
            )
    if source["w1"] is not None and source["w2"] is not None:
        first, second = source["w1"], source["w2"]
        related = first in oracle.lineage(second) or second in oracle.lineage(first)
        with check:
            assert not related, (
                f"w1 comes from {tree[first][0]} and w2 from {tree[second][0]}: one key drawn "
                "from and split (or drawn from twice); give each layer its own subkey"
            )
    # in == out: w1 and w2 hold as many values; drawn from one key they are the same numbers
    z1 = params["w1"].ravel() * np.sqrt(n_in)
    z2 = params["w2"].ravel() * np.sqrt(hidden)
    corr = float(np.corrcoef(z1, z2)[0, 1])
    with check:
        assert abs(corr) < 0.2, (
            f"w1 and w2 share their random numbers (correlation {corr:.2f}, expected about 0): "
            "each layer needs its own subkey"
        )


# ---------------------------------------------------------------------------------- mlp_forward


@pytest.mark.task("mlp_forward")
def test_mlp_forward_matches_numpy(kata):
    forward = jax.jit(kata.mlp_forward)
    for seed, shape in enumerate(SHAPES[1:]):  # size 1 everywhere it can be; odd, non-square
        order = KEYS if seed % 2 else ("b2", "w2", "b1", "w1")  # dicts in any key order
        params, x, _ = data(seed, shape, order=order)
        out = np.asarray(forward(params, x))
        expected = oracle.np_forward(params, x)
        with check:
            assert out.shape == expected.shape, (
                f"{shape}: output {out.shape}, expected {expected.shape}"
            )
        if out.shape == expected.shape:
            with check:
                np.testing.assert_allclose(
                    out,
                    expected,
                    rtol=1e-4,
                    atol=1e-3,
                    err_msg=f"(batch, in, hidden, out) = {shape}",
                )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_keeps_the_dtype(kata, fresh):
    """16-bit params and x give a result of that dtype, under jit and called eagerly on NumPy
    and on JAX arrays (params inserted in a drawn key order: an eager call sees it)."""
    orders = key_orders(fresh, KEYS, 2)
    for dtype, order in zip((ml_dtypes.bfloat16, np.float16), orders, strict=True):
        params, x, _ = data(5, SHAPES[2], dtype=dtype, order=order)
        name = np.dtype(dtype).name
        runs = [("under jit", jax.jit(kata.mlp_forward), as_given)]
        runs += [(f"eagerly on {kind}", kata.mlp_forward, put) for kind, put in ARRAY_KINDS]
        for how, forward, put in runs:
            args = (put(params), put(x))
            with keeps_nothing(f"{name}, called {how}, params keys inserted as {order}", args):
                out = forward(*args)
            assert hasattr(out, "dtype"), f"mlp_forward returned {type(out).__name__}, not an array"
            with check:
                assert str(out.dtype) == name, (
                    f"{name} params and x, called {how}, gave {out.dtype}; keep {name}"
                )
            with check:
                np.testing.assert_allclose(
                    np.asarray(out, np.float32),
                    oracle.np_forward(params, x),
                    rtol=0.05,
                    atol=0.3,
                    err_msg=f"{name}, called {how}, params keys inserted as {order} "
                    f"({fresh.where()})",
                )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_reads_its_arguments_on_every_call(kata, fresh):
    """After a call under jit, called eagerly (concrete arrays, no jit around it), on NumPy and
    on JAX arrays, with other params, then another x of the same shapes, then the same params
    dict refilled in place with other arrays: each result is that call's network on that call's
    x. The eager calls' params dicts have their keys inserted in drawn orders (a dict in any key
    order is the same params; only an eager call sees the order, jit sorts the keys)."""
    shape = SHAPES[2]
    args = data(10, shape)[:2]
    with keeps_nothing("a call under jit", args):
        jax.jit(kata.mlp_forward)(*args)
    orders = key_orders(fresh, KEYS, 2)
    calls = [
        data(seed, shape, order=order)[:2] for seed, order in zip((11, 12), orders, strict=True)
    ]
    calls.append((calls[1][0], data(13, shape)[1]))  # the same params, another x
    calls.append(calls[2])  # ... refilled in place before the call
    for index, (params, x) in enumerate(calls):
        kinds, how = ARRAY_KINDS, "same shapes, other values each time"
        if index == 3:  # the dict itself, as given (device_put would copy it into a new one)
            kinds, how = ARRAY_KINDS[:1], "the params dict of call 3, refilled in place"
            refilled(params, data(14, shape)[0])
        for kind, put in kinds:
            where = (
                f"eager call {index + 1} of {len(calls)} on {kind} ({how}), params keys "
                f"inserted as {tuple(params)} ({fresh.where()})"
            )
            args = (put(params), put(x))
            with keeps_nothing(where, args):
                out = kata.mlp_forward(*args)
            with check:
                np.testing.assert_allclose(
                    np.asarray(out, np.float64),
                    oracle.np_forward(params, x),
                    rtol=1e-4,
                    atol=1e-3,
                    err_msg=where,
                )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_is_a_pure_differentiable_function(kata):
    """Gradients on a batch with all-zero rows and zero entries in b1: pre-activations exactly
    0, where the relu's gradient is 0 (as jax.nn.relu defines it)."""
    params, x, _ = data(2, SHAPES[2], zero_rows=True)
    jaxpr = jax.make_jaxpr(kata.mlp_forward)(params, x)
    census = primitive_census(jaxpr)
    grads = jax.jit(jax.grad(lambda p, v: kata.mlp_forward(p, v).sum()))(params, x)
    expected = oracle.np_backprop(params, x, np.ones((x.shape[0], params["b2"].shape[0])))
    with check:
        assert census["dot_general"] == 2, f"dot_general x{census['dot_general']}, expected 2"
    with check:
        assert len(jaxpr.in_avals) == 5, (
            f"{len(jaxpr.in_avals)} jaxpr inputs, expected 5: the four params and x"
        )
    with check:
        assert not jaxpr.consts, "the jaxpr closed over arrays: use only params and x"
    for name in KEYS:
        with check:
            np.testing.assert_allclose(
                np.asarray(grads[name]),
                expected[name],
                rtol=1e-3,
                atol=1e-3,
                err_msg=f"d sum(mlp_forward) / d {name} (the relu's gradient at exactly 0 is 0)",
            )


@pytest.mark.task("mlp_forward")
def test_mlp_forward_where_a_pre_activation_overflows(kata, fresh):
    """Finite x whose hidden pre-activations overflow float32 to -inf at drawn units of one
    drawn row (strata.overflowing), under jit and called eagerly on NumPy and on JAX arrays:
    the relu of -inf is 0, so the output is finite and NumPy's network (float64, no overflow)."""
    shape = (fresh.randint(1, 6), fresh.randint(1, 6), fresh.randint(1, 9), fresh.randint(1, 4))
    params, x, row, units = overflowing(fresh, shape)
    runs = [("under jit", jax.jit(kata.mlp_forward), as_given)]
    runs += [(f"eagerly on {kind}", kata.mlp_forward, put) for kind, put in ARRAY_KINDS]
    expected = oracle.np_forward(params, x)
    for how, forward, put in runs:
        out = np.asarray(forward(put(params), put(x)), np.float64)
        with check:
            np.testing.assert_allclose(
                out,
                expected,
                rtol=1e-4,
                atol=1e-3,
                err_msg=f"called {how}, (batch, in, hidden, out) = {shape}: x @ w1 + b1 is -inf "
                f"in float32 at row {row}, units {units}, where the relu gives 0 (-inf times a "
                f"0/1 mask is NaN) ({fresh.where()})",
            )

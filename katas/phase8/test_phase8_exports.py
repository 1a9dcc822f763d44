"""Phase 8 tests, tasks 3-4: exports as bytes, deserialized and run on several dtypes, shapes
and pytrees (katas/phase8/export_cases.py), against NumPy and `jax.eval_shape`.
"""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.oracles import stablehlo as facts
from katas.phase8.export_cases import (
    EXPORTS,
    avals,
    called,
    close,
    deserialize,
    exported_blob,
    exported_by,
    run,
)
from katas.phase8.programs import (
    OUT,
    column_sums,
    mlp,
    mlp_specs,
    mlp_values,
    scale_shift,
    spec,
)
from xla_inspect.stablehlo import stablehlo_op_census

# ---- task 3: export_bytes ---------------------------------------------------------------------


@pytest.mark.task("export_bytes")
def test_exported_bytes_deserialize(kata):
    blob = kata.export_bytes(mlp, *mlp_specs())
    exported = deserialize(blob, "mlp")
    with check:
        assert [a.shape for a in exported.in_avals] == [s.shape for s in mlp_specs()]
    with check:
        assert [a.shape for a in exported.out_avals] == [(8, OUT)]
    with check:
        assert stablehlo_op_census(exported.mlir_module())["stablehlo.dot_general"] == 2


@pytest.mark.task("export_bytes")
def test_exported_avals_on_several_dtypes_and_shapes(kata):
    blobs = {name: kata.export_bytes(fn, *specs) for name, (fn, specs, _, _) in EXPORTS.items()}
    for name, blob in blobs.items():
        fn, specs, _, _ = EXPORTS[name]
        exported = deserialize(blob, name)
        want_in = avals(specs)
        want_out = avals(jax.tree.leaves(jax.eval_shape(fn, *specs)))
        with check:
            assert avals(exported.in_avals) == want_in, (
                f"{name}: inputs {avals(exported.in_avals)}, the specs say {want_in}"
            )
        with check:
            assert avals(exported.out_avals) == want_out, (
                f"{name}: outputs {avals(exported.out_avals)}, f returns {want_out}"
            )
        want_tree = jax.tree.structure(jax.eval_shape(fn, *specs))
        with check:
            assert exported.out_tree == want_tree, (
                f"{name}: the export returns {exported.out_tree}, f returns {want_tree}"
            )


# dtypes an exported argument may have (x of scale_shift: a float; y: cast to x's dtype, any
# dtype of x64-off JAX): every run draws y once from each group, so each run exports a signed
# integer narrower than int32, an unsigned one, a bool and one more kind (int32 or a float)
FLOATS = (jnp.float32, jnp.bfloat16, jnp.float16)
Y_DTYPE_GROUPS = (
    (jnp.int8, jnp.int16),
    (jnp.uint8, jnp.uint16, jnp.uint32),
    (jnp.bool_,),
    (jnp.int32, jnp.float32, jnp.float16),
)


def _symbolic_specs(fresh: Fresh, x_dtype, y_dtype) -> tuple[tuple, int]:
    """Specs of x (r, c) and y (c,) whose symbols come from one symbolic_shape call, so both
    specs share c, with a drawn lower bound on c: (the specs, that bound)."""
    row, col = fresh.choice(("r", "n", "rows")), fresh.choice(("c", "k", "cols"))
    least = fresh.randint(3, 5)
    rows, cols = jax.export.symbolic_shape(f"{row}, {col}", constraints=(f"{col} >= {least}",))
    return (spec((rows, cols), x_dtype), spec((cols,), y_dtype)), least


@pytest.mark.task("export_bytes")
def test_one_function_exported_for_several_specs(kata, fresh: Fresh):
    """One function exported again for the same shapes and other dtypes (y: signed, unsigned,
    bool and other kinds, none converted), then other shapes (y 0-d, x 0-d or not), then
    symbolic shapes that share a symbol and bound it: each export is of its own specs."""
    rows, cols = fresh.randint(2, 6), fresh.randint(2, 6)
    x_dtypes = fresh.sample(FLOATS, 2)
    y_dtypes = [fresh.choice(group) for group in Y_DTYPE_GROUPS]
    fresh.shuffle(y_dtypes)
    # a spec may have symbolic dimensions: it describes arguments, it is not one
    symbolic, least = _symbolic_specs(fresh, x_dtypes[1], y_dtypes[0])
    cases = [
        (spec((rows, cols), x_dtypes[0]), spec((cols,), y_dtypes[0])),
        (spec((rows, cols), x_dtypes[1]), spec((cols,), y_dtypes[1])),
        (spec((cols + 1, rows), x_dtypes[0]), spec((rows,), y_dtypes[2])),
        # a 0-d spec is a shape too: its export takes a 0-d input, not a (1,) one
        (spec(fresh.choice(((), (rows, cols))), x_dtypes[1]), spec((), y_dtypes[3])),
        symbolic,
    ]
    blobs = [exported_by(kata, scale_shift, *specs, what=str(avals(specs))) for specs in cases]
    for n, (blob, specs) in enumerate(zip(blobs, cases, strict=True)):
        exported = deserialize(blob, f"export {n + 1}")
        want_out = avals(jax.tree.leaves(jax.eval_shape(scale_shift, *specs)))
        assert avals(exported.in_avals) == avals(specs), (
            f"export {n + 1} of scale_shift for {avals(specs)}: its inputs are "
            f"{avals(exported.in_avals)} ({fresh.where()})"
        )
        assert avals(exported.out_avals) == want_out, (
            f"export {n + 1} of scale_shift for {avals(specs)}: outputs "
            f"{avals(exported.out_avals)}, f returns {want_out} ({fresh.where()})"
        )
    # the symbolic export keeps its specs' bound: it runs at c >= least and refuses c < least
    exported, (x_spec, y_spec) = deserialize(blobs[-1], f"export {len(blobs)}"), symbolic
    what = f"export {len(blobs)} of scale_shift for {avals(symbolic)}"

    def ones(width: int):
        return np.ones((rows, width), x_spec.dtype), np.ones((width,), y_spec.dtype)

    width = least + fresh.randint(0, 2)
    run(exported, ones(width), f"{what} called at c = {width} ({fresh.where()})")
    with pytest.raises(ValueError):
        exported.call(*ones(least - 1))
        pytest.fail(
            f"{what} ran at c = {least - 1}: the specs bound c >= {least} ({fresh.where()})"
        )


@pytest.mark.task("export_bytes")
def test_exported_bytes_run_without_python(kata):
    traces = []

    def counted(x, y):
        traces.append(1)
        return scale_shift(x, y)

    _, specs, oracle, make = EXPORTS["bf16_and_int"]
    blob = kata.export_bytes(counted, *specs)
    traced = len(traces)
    exported = deserialize(blob, "bf16_and_int")
    for seed in (0, 1):
        values = make(np.random.default_rng(seed))
        got = run(exported, values, f"seed {seed}")
        want = oracle(*values)
        assert isinstance(got, tuple) and len(got) == 2, f"expected 2 outputs, got {got!r}"
        with check:
            close(got[0], want[0], f"seed {seed}, output 0")
        with check:
            close(got[1], want[1], f"seed {seed}, output 1")
    with check:
        assert traced == 1, f"export traces f once, it traced {traced} times"
    with check:
        assert len(traces) == traced, "calling the deserialized function must not run f again"


# ---- task 4: call_exported --------------------------------------------------------------------


@pytest.mark.task("call_exported")
def test_call_exported_values(kata):
    for seed in (0, 1):
        values = mlp_values(8, seed)
        got = kata.call_exported(exported_blob(), *values)
        assert isinstance(got, jax.Array), f"expected a jax.Array, got {type(got).__name__}"
        with check:
            close(got, facts.np_mlp(*values), f"seed {seed}")


@pytest.mark.task("call_exported")
def test_call_exported_returns_an_array(kata):
    got = kata.call_exported(exported_blob(), *mlp_values(8, 2))
    with check:
        assert isinstance(got, jax.Array), f"expected a jax.Array, got {type(got).__name__}"
    with check:
        assert np.shape(got) == (8, OUT), f"shape {np.shape(got)}, expected {(8, OUT)}"


@pytest.mark.task("call_exported")
def test_call_exported_round_trips_dtypes_and_pytrees(kata):
    rng = np.random.default_rng(7)
    cases = {}
    # a tuple with an int32 leaf; a dict of f16; a list of int32; a tuple of one array
    for name in ("bf16_and_int", "f16_dict", "i32_list", "one_tuple"):
        values = EXPORTS[name][3](rng)
        cases[name] = (values, kata.call_exported(exported_blob(name), *values))
    for name, (values, got) in cases.items():
        fn, specs, oracle, _ = EXPORTS[name]
        want_tree = jax.tree.structure(jax.eval_shape(fn, *specs))
        assert jax.tree.structure(got) == want_tree, (
            f"{name}: returned {jax.tree.structure(got)}, the function returns {want_tree}"
        )
        leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(jax.eval_shape(fn, *specs))
        for n, (leaf, want) in enumerate(zip(leaves, want_leaves, strict=True)):
            with check:
                assert isinstance(leaf, jax.Array) and leaf.dtype == want.dtype, (
                    f"{name} output {n}: {type(leaf).__name__} {getattr(leaf, 'dtype', None)}, "
                    f"expected a jax.Array of {want.dtype}"
                )
        for n, (leaf, want) in enumerate(
            zip(leaves, jax.tree.leaves(oracle(*values)), strict=True)
        ):
            with check:
                close(leaf, want, f"{name} output {n}")


@pytest.mark.task("call_exported")
def test_call_exported_runs_the_blob_it_is_given(kata, fresh: Fresh):
    """Blobs of the same length and input types that differ in one constant, and exports of one
    function for two shapes, called in turn and again: each call runs the blob it is given."""
    values = mlp_values(8, fresh.randrange(99))
    scales = fresh.sample((2.0, 3.0, -0.5, 1.75, 4.0), 2)
    blobs = [exported_blob()] + [
        bytes(jax.export.export(jax.jit(lambda *a, c=c: c * mlp(*a)))(*mlp_specs()).serialize())
        for c in scales
    ]
    wants = [facts.np_mlp(*values)] + [c * facts.np_mlp(*values) for c in scales]
    for n in (1, 2, 0, 2, 1):
        close(kata.call_exported(blobs[n], *values), wants[n], f"blob {n} ({fresh.where()})")
    rows = fresh.sample((2, 3, 5, 7), 2)
    sums = {
        r: bytes(jax.export.export(jax.jit(column_sums))(spec((r, 4))).serialize()) for r in rows
    }
    for r in (*rows, rows[0]):
        x = np.random.default_rng(r).normal(size=(r, 4)).astype(np.float32)
        close(
            called(kata, sums[r], x, what=f"column_sums exported for f32[{r},4]"),
            np.sin(x).sum(axis=0),
            f"column_sums exported for f32[{r},4] ({fresh.where()})",
        )


# arguments the mlp export refuses: every other dtype, and other shapes
WRONG_DTYPES = (np.int32, np.float16, jnp.bfloat16, np.int8)


def _export_refusal(values, what: str, name: str = "mlp") -> Exception:
    """The exported function's own refusal of these arguments (the oracle: the export called
    directly)."""
    try:
        jax.export.deserialize(bytearray(exported_blob(name))).call(*values)
    except Exception as error:  # noqa: BLE001  (the refusal is the fact measured)
        return error
    pytest.fail(f"{what}: the export itself ran this call; the test expected a refusal")


def _refused(kata, values, what: str, name: str = "mlp") -> None:
    """The kata's call raises the exported function's own error (its type and message), not an
    error of its own and not a crash of the test."""
    want = _export_refusal(values, what, name)
    try:
        kata.call_exported(exported_blob(name), *values)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (compared with the export's own refusal)
        assert isinstance(error, type(want)) and str(want) in str(error), (
            f"{what}: raised {type(error).__name__}: {error!s:.200}; the exported function "
            f"refuses it with {type(want).__name__}: {want!s:.200}"
        )
        return
    pytest.fail(f"{what}: the call ran, the exported function refuses it")


@pytest.mark.task("call_exported")
def test_call_exported_rejects_a_wrong_dtype_or_shape(kata, fresh: Fresh):
    """The exported function checks its arguments' dtypes and shapes and converts nothing: an
    argument of any other dtype, or another shape, is refused with the export's own error."""
    for wrong in WRONG_DTYPES:
        values = list(mlp_values(8, fresh.randrange(99)))
        position = fresh.randrange(len(values))
        values[position] = values[position].astype(wrong)
        what = f"argument {position} as {np.dtype(wrong).name} ({fresh.where()})"
        _refused(kata, values, what)
    values = list(mlp_values(8, fresh.randrange(99)))
    position = fresh.randrange(len(values))
    values[position] = values[position][..., :-1]
    _refused(kata, values, f"argument {position} one column short ({fresh.where()})")
    # another shape of the same size: the export converts no shape, as it converts no dtype
    for kind, reshaped in fresh.sample(SAME_SIZE, len(SAME_SIZE)):
        values = list(mlp_values(8, fresh.randrange(99)))
        position = fresh.randrange(len(values))
        given = values[position].shape
        values[position] = reshaped(values[position])
        what = (
            f"argument {position} {kind}: {list(values[position].shape)} for {list(given)} "
            f"({fresh.where()})"
        )
        _refused(kata, values, what)


@pytest.mark.task("call_exported")
def test_call_exported_rejects_a_wrong_number_of_arguments(kata, fresh: Fresh):
    """The export checks how many arguments it is given: a call with surplus arguments (copies
    of its own, NumPy scalars or arrays, anywhere in the list) or with some left out, of any
    export (one to three inputs), is refused with the export's own error; nothing is dropped
    or filled in."""
    rng = np.random.default_rng(fresh.randrange(99))
    for name in fresh.sample(sorted(EXPORTS), 3):
        values = list(EXPORTS[name][3](rng))
        extras = [
            fresh.choice(
                (
                    values[fresh.randrange(len(values))],
                    np.float32(fresh.randint(-3, 3)),
                    rng.normal(size=fresh.choice(((), (2,), (3, 4)))).astype(np.float32),
                )
            )
            for _ in range(fresh.randint(1, 2))
        ]
        more = list(values)
        for extra in extras:
            more.insert(fresh.randint(0, len(more)), extra)
        what = f"{name} ({len(values)} inputs) called with {len(more)} arguments"
        _refused(kata, more, f"{what} ({fresh.where()})", name)
        kept = sorted(fresh.sample(range(len(values)), fresh.randrange(len(values))))
        fewer = [values[n] for n in kept]
        what = f"{name} ({len(values)} inputs) called with only arguments {kept}"
        _refused(kata, fewer, f"{what} ({fresh.where()})", name)


# arguments of the right size in another shape (r, c) -> ...
SAME_SIZE = (
    ("flattened", lambda a: a.reshape(-1)),
    ("transposed", lambda a: np.ascontiguousarray(a.T)),
    ("with a unit axis in front", lambda a: a[None]),
    ("with a unit axis at the end", lambda a: a[..., None]),
    ("with its rows regrouped", lambda a: a.reshape(a.shape[0] // 2, a.shape[1] * 2)),
)


@pytest.mark.task("call_exported")
def test_call_exported_runs_every_call_the_export_accepts(kata, fresh: Fresh):
    """The checks are the export's: a NumPy float64 argument for a float32 input is accepted
    (JAX canonicalizes it first, x64 off), so the call runs and returns float32."""
    values = list(mlp_values(8, fresh.randrange(99)))
    positions = fresh.sample(range(len(values)), fresh.randint(1, len(values)))
    for position in positions:
        values[position] = values[position].astype(np.float64)
    what = f"arguments {sorted(positions)} as float64 NumPy arrays ({fresh.where()})"
    got = called(kata, exported_blob(), *values, what=what)
    with check:
        assert isinstance(got, jax.Array) and got.dtype == np.float32, (
            f"{what}: returned {type(got).__name__} {getattr(got, 'dtype', None)}, the export "
            "returns a float32 jax.Array"
        )
    close(got, facts.np_mlp(*values), what)


# the dtypes of 0-d arguments: x float, y any; f32 and i32 are the ones a Python number becomes
ZERO_D_X = (np.float32, np.float16, jnp.bfloat16)
ZERO_D_Y = (np.float32, np.int32, np.int16, np.int8, np.uint8, np.float16, jnp.bfloat16)


def _zero_d_call(kata, fresh: Fresh, x_dtype, y_dtype) -> None:
    """scale_shift exported for x of x_dtype (0-d or a matrix, drawn) and y 0-d of y_dtype,
    called with a NumPy scalar or a 0-d array for each 0-d argument (drawn)."""
    rows, cols = fresh.randint(2, 5), fresh.randint(2, 5)
    x_shape = fresh.choice(((), (rows, cols)))
    specs = (spec(x_shape, x_dtype), spec((), y_dtype))
    blob = bytes(jax.export.export(jax.jit(scale_shift))(*specs).serialize())
    want_dtypes = [np.dtype(o.dtype) for o in jax.eval_shape(scale_shift, *specs)]
    rng = np.random.default_rng(fresh.randrange(99))
    x = rng.normal(size=x_shape).astype(x_dtype)
    x = x[()] if x_shape == () and fresh.random() < 0.5 else x  # a NumPy scalar or a 0-d array
    signed = not np.issubdtype(np.dtype(y_dtype), np.unsignedinteger)
    scalar = np.dtype(y_dtype).type(fresh.choice((2, 3, -1) if signed else (2, 3)))
    y = scalar if fresh.random() < 0.5 else np.asarray(scalar)
    what = (
        f"scale_shift exported for x {np.dtype(x_dtype).name}{list(x_shape)} and y "
        f"{np.dtype(y_dtype).name}[], called with x {type(x).__name__} of shape {np.shape(x)} "
        f"and y {type(y).__name__} of shape () ({fresh.where()})"
    )
    got = called(kata, blob, x, y, what=what)
    assert isinstance(got, tuple) and len(got) == 2, f"{what}: expected 2 outputs, got {got!r}"
    with check:
        assert [np.dtype(g.dtype) for g in got] == want_dtypes, (
            f"{what}: output dtypes {[str(g.dtype) for g in got]}, the function returns "
            f"{[str(d) for d in want_dtypes]}"
        )
    close(got[0], x.astype(np.float32) * np.float32(scalar), f"{what}, output 0")
    close(got[1], np.float32(scalar) + 1, f"{what}, output 1")


@pytest.mark.task("call_exported")
def test_call_exported_passes_0d_arguments_as_given(kata, fresh: Fresh):
    """An export whose input is 0-d (y of scale_shift, and maybe x too) takes a 0-d argument, a
    NumPy scalar or a 0-d array, of its own dtype (float32 and int32, which a Python number
    becomes, and narrower ones: float16, bfloat16, int16, int8, uint8): the call runs on the
    arguments as given; an argument made 1-d first, (1,) for (), or re-typed, is one the export
    refuses. Two calls: one with dtypes drawn from all of them, one where neither 0-d argument
    is float32 or int32."""
    _zero_d_call(kata, fresh, fresh.choice(ZERO_D_X), fresh.choice(ZERO_D_Y))
    narrow_x = fresh.choice(ZERO_D_X[1:])
    _zero_d_call(kata, fresh, narrow_x, fresh.choice(ZERO_D_Y[2:]))

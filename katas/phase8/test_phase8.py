"""Phase 8 tests: StableHLO facts read through MLIR, HLO facts from XLA's own conversion, exports
run on several dtypes, shapes and batch sizes.

Oracles: MLIR's own `Operation.walk` (and xla_inspect's census) for op counts; XLA's
StableHLO -> HLO conversion of tiny programs (JAX-lowered and hand-written StableHLO) for op
names; NumPy and `jax.eval_shape` for what an exported function computes and returns.
"""

from collections import Counter
from functools import cache

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax._src.lib import _jax  # pyright: ignore[reportPrivateImportUsage]  # XLA's converter
from jax.extend.mlir import ir
from pytest_check import check

from kata_harness.fresh import Fresh
from kata_harness.predict import compiler_refused, predicted_entries
from katas.phase8.programs import (
    BF16,
    CENSUS_PROGRAMS,
    EXPORTED_CALLS,
    FEATURES,
    HAND_WRITTEN,
    KEPT,
    LOWERING_BANK,
    OUT,
    RENAMED,
    RESPELLED,
    column_sums,
    dialect_ops,
    mlp,
    mlp_rest_specs,
    mlp_specs,
    mlp_values,
    pair,
    probe_modules,
    scalar_mean,
    scale_shift,
    spec,
)
from xla_inspect.parse import parse_hlo
from xla_inspect.stablehlo import stablehlo_op_census


def _program(op: str):
    for bank in (RENAMED, RESPELLED, KEPT):
        if op in bank:
            return bank[op]
    raise KeyError(op)


@cache
def _lower(program):
    fn, specs = program
    return jax.jit(fn).lower(*specs)


def _lowered(op: str):
    return _lower(_program(op))


@cache
def _hlo_census(program) -> Counter:
    """Opcode census of XLA's own HLO conversion of a lowered program."""
    module = parse_hlo(_lower(program).as_text(dialect="hlo"))
    return Counter(i.opcode for computation in module for i in computation)


@cache
def _hand_written(op: str) -> tuple[Counter, Counter]:
    text = f"module {{{HAND_WRITTEN[op]}\n}}"
    hlo_text = _jax.mlir.mlir_module_to_xla_computation(
        text, use_tuple_args=False, return_tuple=False
    ).as_hlo_text()
    module = parse_hlo(hlo_text)
    # parsed by MLIR, walked like any module
    return (
        stablehlo_op_census(text),
        Counter(i.opcode for computation in module for i in computation),
    )


def _stablehlo_and_hlo(op: str) -> tuple[Counter, Counter]:
    """(op census of the StableHLO, opcode census of XLA's HLO conversion of it)."""
    if op in HAND_WRITTEN:
        return _hand_written(op)
    return _stablehlo_census(_program(op)), _hlo_census(_program(op))


@cache
def _stablehlo_census(program) -> Counter:
    return stablehlo_op_census(_lower(program))


def _check_mapping(kata, ops) -> None:
    found = {op: kata.hlo_opcode(op) for op in ops}
    for op, opcode in found.items():
        assert isinstance(opcode, str), f"{op}: expected a str, got {opcode!r}"
    for op, opcode in found.items():
        stablehlo, hlo = _stablehlo_and_hlo(op)
        want, got = stablehlo[op], hlo[opcode]
        with check:
            assert want > 0 and got == want, (
                f"{op} x{want} in StableHLO, but XLA's HLO has {opcode!r} x{got}: read the HLO "
                "opcodes"
            )


@cache
def _census_lowered(name: str):
    fn, specs = CENSUS_PROGRAMS[name]
    return jax.jit(fn).lower(*specs)


def _walk_census(lowered) -> Counter:
    """MLIR's own walk over every operation, minus the enclosing module."""
    census: Counter = Counter()

    def visit(operation):
        census[operation.name] += 1
        return ir.WalkResult.ADVANCE

    lowered.compiler_ir("stablehlo").operation.walk(visit)
    census["builtin.module"] -= 1
    return +census


def _is_census(got) -> bool:
    return isinstance(got, Counter) and all(
        isinstance(k, str) and type(v) is int for k, v in got.items()
    )


# ---- exports ----------------------------------------------------------------------------------


def _np_mlp(x, w1, w2):
    return np.tanh(x @ w1) @ w2


# name: (function, specs, NumPy oracle of the outputs, value maker)
EXPORTS = {
    "bf16_and_int": (
        scale_shift,
        (spec((3, 5), jnp.bfloat16), spec((5,), jnp.int32)),
        lambda x, y: (x.astype(np.float32) * y, (y + 1).sum()),
        lambda rng: (
            rng.normal(size=(3, 5)).astype(BF16),
            rng.integers(-4, 5, size=5).astype(np.int32),
        ),
    ),
    "f16_dict": (
        pair,
        (spec((1, 7), jnp.float16), spec((1, 7), jnp.float16)),
        lambda x, y: {"sum": x + y, "max": np.maximum(x, y)},
        lambda rng: tuple(rng.normal(size=(1, 7)).astype(np.float16) for _ in "xy"),
    ),
    "scalar_out": (
        scalar_mean,
        (spec((2, 3, 5)),),
        lambda x: np.mean(x),
        lambda rng: (rng.normal(size=(2, 3, 5)).astype(np.float32),),
    ),
    "mlp": (mlp, mlp_specs(), _np_mlp, lambda rng: mlp_values(8, int(rng.integers(99)))),
}


@cache
def _test_blob(name: str = "mlp") -> bytes:
    fn, specs, _, _ = EXPORTS[name]
    return bytes(jax.export.export(jax.jit(fn))(*specs).serialize())


def _deserialize(blob, what: str):
    assert isinstance(blob, bytes | bytearray), f"{what}: expected bytes, got {type(blob)}"
    try:
        return jax.export.deserialize(bytearray(blob))
    except Exception as error:  # noqa: BLE001  (anything here means the bytes are not an export)
        pytest.fail(f"{what}: jax.export.deserialize rejected the bytes: {error!r:.200}")


def _run(exported, values, what: str):
    """Call a deserialized export; an export that cannot take these arguments fails the test."""
    try:
        return exported.call(*values)
    except Exception as error:  # noqa: BLE001  (a wrong export rejects valid arguments)
        pytest.fail(
            f"{what}: the export rejected arguments of shapes "
            f"{[np.shape(v) for v in values]}: {error!r:.300}"
        )


def _close(got, want, what: str) -> None:
    got, want = np.asarray(got, np.float64), np.asarray(want, np.float64)
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert np.allclose(got, want, rtol=2e-2, atol=2e-2), f"{what}: {got} != {want}"


def _avals(avals) -> list[tuple[tuple, str]]:
    return [(tuple(a.shape), np.dtype(a.dtype).name) for a in avals]


# ---- task 1: op_census ------------------------------------------------------------------------


@pytest.mark.task("op_census")
def test_census_matches_mlir_walk(kata):
    found = {name: kata.op_census(_census_lowered(name)) for name in CENSUS_PROGRAMS}
    for name, got in found.items():
        assert _is_census(got), f"{name}: expected a Counter of str -> int, got {got!r}"
    for name, got in found.items():
        want = _walk_census(_census_lowered(name))
        with check:
            assert +got == want, f"{name}: got {dict(got)}, MLIR's walk finds {dict(want)}"


@pytest.mark.task("op_census")
def test_census_matches_library_on_nested_regions(kata):
    for op in ("stablehlo.case", "stablehlo.while", "stablehlo.reduce", "stablehlo.dot_general"):
        lowered = _lowered(op)
        got, want = kata.op_census(lowered), stablehlo_op_census(lowered)
        assert _is_census(got), f"expected a Counter of str -> int, got {got!r}"
        with check:
            assert +got == +want, f"{op} program: got {dict(got)}, expected {dict(want)}"


@pytest.mark.task("op_census")
def test_census_sees_ops_inside_regions(kata):
    census = kata.op_census(_census_lowered("case"))
    assert _is_census(census), f"expected a Counter of str -> int, got {census!r}"
    with check:
        assert census["stablehlo.case"] == 2, (
            f"a switch whose third branch holds a cond: 2 case ops, got {census['stablehlo.case']}"
        )
    with check:
        assert census["stablehlo.exponential"] == 1 and census["stablehlo.tanh"] == 1, (
            "the inner cond's branches live in regions of a region"
        )
    with check:
        assert census["builtin.module"] == 0, "the module is the container, not an op to count"
    with check:
        assert census["func.func"] >= 1 and census["func.return"] >= 1, dict(census)


@pytest.mark.task("op_census")
def test_census_counts_every_function(kata):
    census = kata.op_census(_census_lowered("nested_calls"))
    assert _is_census(census), f"expected a Counter of str -> int, got {census!r}"
    walked = _walk_census(_census_lowered("nested_calls"))
    with check:
        assert census["func.func"] == walked["func.func"] >= 2, (
            f"{census['func.func']} functions, the module defines {walked['func.func']}: nested "
            "jit calls become private functions reached by func.call"
        )
    with check:
        assert census["stablehlo.sine"] == walked["stablehlo.sine"], (
            "the sine lives in a private function, count it there"
        )
    with check:
        assert census["chlo.erf"] == 0 and census["func.call"] == walked["func.call"], dict(census)
    other = kata.op_census(_census_lowered("chlo_and_tuple_out"))
    assert _is_census(other), f"expected a Counter of str -> int, got {other!r}"
    with check:
        assert other["chlo.erf"] == 1, f"chlo ops are operations too: {dict(other)}"


# ---- task 2: hlo_opcode -----------------------------------------------------------------------


@pytest.mark.task("hlo_opcode")
def test_renamed_ops(kata):
    _check_mapping(kata, RENAMED)


@pytest.mark.task("hlo_opcode")
def test_respelled_ops(kata):
    _check_mapping(kata, RESPELLED)


@pytest.mark.task("hlo_opcode")
def test_ops_that_keep_their_name(kata):
    _check_mapping(kata, KEPT)


@pytest.mark.task("hlo_opcode")
def test_ops_jax_does_not_emit(kata):
    _check_mapping(kata, HAND_WRITTEN)


# Fresh ops: the contract covers any op of the dialect, so each run draws its own from every op
# the dialect registers that a tiny module instantiates (programs.probe_modules), multi-word
# names (the spelling rule) and the rest (renames, kept names) both.
FRESH_MULTI_WORD, FRESH_OTHERS = 16, 8
# instructions a conversion adds around the op itself (operands, results unpacked, the second
# half of an asynchronous pair)
_PLUMBING = {"parameter", "constant", "tuple", "get-tuple-element", "broadcast"}


def _probe_opcode(hlo_text: str) -> str | None:
    """The opcode of the instruction XLA made of the op at loc("probe"): the one instruction of
    the entry computation named after that location, once the plumbing around it is set aside;
    None when the conversion folded the op away or left no single such instruction."""
    entry = next(c for c in parse_hlo(hlo_text) if c.is_entry)
    made = [i.opcode for i in entry if i.name == "probe" or i.name.startswith("probe.")]
    if len(made) > 1:
        made = [op for op in made if op not in _PLUMBING and not op.endswith("-done")]
    return made[0] if len(made) == 1 else None


@cache
def _fresh_bank() -> dict[str, str]:
    """op -> the opcode of XLA's conversion of it, for every dialect op some module instantiates
    (MLIR parses and verifies the module first, with the op in it once)."""
    bank = {}
    for op in dialect_ops():
        for text in probe_modules(op):
            try:
                if stablehlo_op_census(text)[op] != 1:
                    continue
                hlo_text = _jax.mlir.mlir_module_to_xla_computation(
                    text, use_tuple_args=False, return_tuple=False
                ).as_hlo_text()
                opcode = _probe_opcode(hlo_text)
            except Exception:  # noqa: BLE001  (not this form of the op: try the next)
                continue
            if opcode is not None:
                bank[op] = opcode
                break
    return bank


def _fresh_ops(fresh: Fresh) -> list[str]:
    bank = _fresh_bank()
    multi = sorted(op for op in bank if "_" in op.removeprefix("stablehlo."))
    others = sorted(op for op in bank if op not in multi)
    assert len(multi) >= FRESH_MULTI_WORD and len(others) >= FRESH_OTHERS, (
        f"the dialect gave {len(multi)} multi-word and {len(others)} other ops XLA converts"
    )
    drawn = fresh.sample(multi, FRESH_MULTI_WORD) + fresh.sample(others, FRESH_OTHERS)
    fresh.shuffle(drawn)
    return drawn


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_on_fresh_ops_of_the_dialect(kata, fresh):
    """Ops drawn from the whole dialect, each converted by XLA here: a table of the ops met while
    practising does not carry over."""
    bank = _fresh_bank()
    for op in _fresh_ops(fresh):
        got = kata.hlo_opcode(op)
        assert got == bank[op], (
            f"{op}: you said {got!r}, XLA converts it to {bank[op]!r} ({fresh.where()})"
        )


# ---- task 3: export_bytes ---------------------------------------------------------------------


@pytest.mark.task("export_bytes")
def test_exported_bytes_deserialize(kata):
    blob = kata.export_bytes(mlp, *mlp_specs())
    exported = _deserialize(blob, "mlp")
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
        exported = _deserialize(blob, name)
        want_in = _avals(specs)
        want_out = _avals(jax.tree.leaves(jax.eval_shape(fn, *specs)))
        with check:
            assert _avals(exported.in_avals) == want_in, (
                f"{name}: inputs {_avals(exported.in_avals)}, the specs say {want_in}"
            )
        with check:
            assert _avals(exported.out_avals) == want_out, (
                f"{name}: outputs {_avals(exported.out_avals)}, f returns {want_out}"
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
    exported = _deserialize(blob, "bf16_and_int")
    for seed in (0, 1):
        values = make(np.random.default_rng(seed))
        got = _run(exported, values, f"seed {seed}")
        want = oracle(*values)
        assert isinstance(got, tuple) and len(got) == 2, f"expected 2 outputs, got {got!r}"
        with check:
            _close(got[0], want[0], f"seed {seed}, output 0")
        with check:
            _close(got[1], want[1], f"seed {seed}, output 1")
    with check:
        assert traced == 1, f"export traces f once, it traced {traced} times"
    with check:
        assert len(traces) == traced, "calling the deserialized function must not run f again"


# ---- task 4: call_exported --------------------------------------------------------------------


@pytest.mark.task("call_exported")
def test_call_exported_values(kata):
    for seed in (0, 1):
        values = mlp_values(8, seed)
        got = kata.call_exported(_test_blob(), *values)
        assert isinstance(got, jax.Array), f"expected a jax.Array, got {type(got).__name__}"
        with check:
            _close(got, _np_mlp(*values), f"seed {seed}")


@pytest.mark.task("call_exported")
def test_call_exported_returns_an_array(kata):
    got = kata.call_exported(_test_blob(), *mlp_values(8, 2))
    with check:
        assert isinstance(got, jax.Array), f"expected a jax.Array, got {type(got).__name__}"
    with check:
        assert np.shape(got) == (8, OUT), f"shape {np.shape(got)}, expected {(8, OUT)}"


@pytest.mark.task("call_exported")
def test_call_exported_round_trips_dtypes_and_pytrees(kata):
    rng = np.random.default_rng(7)
    cases = {}
    for name in ("bf16_and_int", "f16_dict"):  # a tuple with an int32 leaf; a dict of f16
        values = EXPORTS[name][3](rng)
        cases[name] = (values, kata.call_exported(_test_blob(name), *values))
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
                _close(leaf, want, f"{name} output {n}")


@pytest.mark.task("call_exported")
def test_call_exported_runs_the_blob_it_is_given(kata):
    values = mlp_values(8, 3)
    first = kata.call_exported(_test_blob(), *values)
    doubled = bytes(jax.export.export(jax.jit(lambda *a: 2.0 * mlp(*a)))(*mlp_specs()).serialize())
    second = kata.call_exported(doubled, *values)
    with check:
        _close(first, _np_mlp(*values), "the mlp blob")
    with check:
        _close(second, 2.0 * _np_mlp(*values), "a second blob with the same input types")


# ---- task 5: export_any_batch -----------------------------------------------------------------


@cache
def _any_batch_cases():
    return {
        "mlp": (
            mlp,
            FEATURES,
            mlp_rest_specs(),
            _np_mlp,
            lambda b, rng: mlp_values(b, int(rng.integers(99))),
        ),
        "linear6": (
            lambda x, w: x @ w,
            6,
            (spec((6, 3)),),
            lambda x, w: x @ w,
            lambda b, rng: (
                rng.normal(size=(b, 6)).astype(np.float32),
                rng.normal(size=(6, 3)).astype(np.float32),
            ),
        ),
        "alone": (
            lambda x: (jnp.sin(x), x.sum(1)),
            3,
            (),
            lambda x: (np.sin(x), x.sum(1)),
            lambda b, rng: (rng.normal(size=(b, 3)).astype(np.float32),),
        ),
        "bf16_rest": (
            lambda x, s: x * s.astype(jnp.float32),
            5,
            (spec((5,), jnp.bfloat16),),
            lambda x, s: x * s.astype(np.float32),
            lambda b, rng: (
                rng.normal(size=(b, 5)).astype(np.float32),
                rng.normal(size=5).astype(BF16),
            ),
        ),
    }


BATCH_PER_CASE = {"mlp": 5, "linear6": 1, "alone": 7, "bf16_rest": 2}


def _export_any(kata, name: str):
    fn, features, rest, _, _ = _any_batch_cases()[name]
    try:
        blob = kata.export_any_batch(fn, features, *rest)
    except Exception as error:  # noqa: BLE001  (a wrong x spec makes f fail to trace)
        pytest.fail(
            f"{name}: exporting f(x, *rest) with x of shape (b, {features}) failed: {error!r:.300}"
        )
    return _deserialize(blob, name)


@pytest.mark.task("export_any_batch")
def test_any_batch_runs_for_several_batches(kata):
    exported = _export_any(kata, "mlp")
    for batch in (1, 8, 33):
        values = mlp_values(batch, batch)
        got = _run(exported, values, f"batch {batch}")
        with check:
            _close(got, _np_mlp(*values), f"batch {batch}")


@pytest.mark.task("export_any_batch")
def test_any_batch_on_several_functions(kata):
    exports = {name: _export_any(kata, name) for name in _any_batch_cases()}
    rng = np.random.default_rng(11)
    for name, exported in exports.items():
        _, _, _, oracle, make = _any_batch_cases()[name]
        batch = BATCH_PER_CASE[name]  # one each: the mlp test runs several batch sizes
        values = make(batch, rng)
        got, want = _run(exported, values, f"{name} batch {batch}"), oracle(*values)
        leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
        assert len(leaves) == len(want_leaves), (
            f"{name}: {len(leaves)} outputs, expected {len(want_leaves)}"
        )
        for n, (leaf, expected) in enumerate(zip(leaves, want_leaves, strict=True)):
            with check:
                _close(leaf, expected, f"{name}, batch {batch}, output {n}")


@pytest.mark.task("export_any_batch")
def test_any_batch_is_symbolic_only_in_the_batch(kata):
    exports = {name: _export_any(kata, name) for name in _any_batch_cases()}
    for name, exported in exports.items():
        _, features, rest, _, _ = _any_batch_cases()[name]
        x = exported.in_avals[0]
        assert len(x.shape) == 2, f"{name}: x is {x.shape}, expected (batch, {features})"
        batch, width = x.shape
        with check:
            assert jax.export.is_symbolic_dim(batch), f"{name}: batch {batch!r} is not symbolic"
        with check:
            assert width == features and not jax.export.is_symbolic_dim(width), (
                f"{name}: the feature dimension is {width!r}, expected {features}"
            )
        with check:
            assert np.dtype(x.dtype) == np.float32, f"{name}: x is {x.dtype}, expected float32"
        with check:
            assert _avals(exported.in_avals[1:]) == _avals(rest), (
                f"{name}: other inputs {_avals(exported.in_avals[1:])}, expected {_avals(rest)}"
            )
        first_out = exported.out_avals[0].shape
        with check:
            assert str(first_out[0]) == str(batch), (
                f"{name}: output {first_out} should carry the same batch symbol as x ({batch})"
            )


@pytest.mark.task("export_any_batch")
def test_any_batch_for_another_feature_size(kata):
    exported = _export_any(kata, "linear6")
    with check:
        assert exported.in_avals[0].shape[1] == 6, (
            f"x spec {exported.in_avals[0].shape}: the feature size is the `features` argument"
        )
    rng = np.random.default_rng(5)
    x, weights = (
        rng.normal(size=(5, 6)).astype(np.float32),
        rng.normal(size=(6, 3)).astype(np.float32),
    )
    with check:
        _close(_run(exported, (x, weights), "batch 5"), x @ weights, "batch 5")


@pytest.mark.task("export_any_batch")
def test_symbolic_module_checks_its_shapes(kata):
    exported = _export_any(kata, "mlp")
    symbolic = stablehlo_op_census(exported.mlir_module())
    fixed = stablehlo_op_census(jax.export.deserialize(bytearray(_test_blob())).mlir_module())
    with check:
        assert symbolic["stablehlo.get_dimension_size"] >= 1, "the module reads b at run time"
    with check:
        assert fixed["stablehlo.get_dimension_size"] == 0, "a fixed-shape module never does"
    empty = (np.ones((0, FEATURES), np.float32), *mlp_values(1)[1:])
    with pytest.raises(ValueError, match="dimension variable"):
        exported.call(*empty)  # the module's shape assertion: b >= 1


# ---- predictions: hlo_opcode and predict_accepts answer without compiling ----------------------


@pytest.mark.task("hlo_opcode")
def test_hlo_opcode_is_predicted_from_the_name(kata):
    ops = [*RENAMED, *RESPELLED, *list(KEPT)[:3], *HAND_WRITTEN]
    with compiler_refused("hlo_opcode", also=[(jax.export, "export"), (jax.export, "deserialize")]):
        for op in ops:
            kata.hlo_opcode(op)


@cache
def _accepts(name: str) -> bool:
    symbolic, dtype, shape = EXPORTED_CALLS[name]
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(symbolic), jnp.float32)
    exported = jax.export.deserialize(jax.export.export(jax.jit(column_sums))(x).serialize())
    try:
        exported.call(np.ones(shape, dtype))
    except Exception:  # noqa: BLE001  (the call's refusal is the fact measured)
        return False
    return True


@pytest.mark.task("predict_accepts")
def test_predict_accepts_matches_the_exported_calls(kata):
    predicted = predicted_entries("predict_accepts", kata.predict_accepts(), EXPORTED_CALLS)
    for name, runs in predicted.items():
        with check:
            assert type(runs) is bool, f"{name}: expected a bool, got {runs!r}"
        with check:
            assert runs == _accepts(name), (
                f"{name}: you predicted {'it runs' if runs else 'a rejection'}, the exported "
                f"function {'ran' if _accepts(name) else 'rejected the call'}"
            )


@pytest.mark.task("predict_accepts")
def test_predict_accepts_does_not_export(kata):
    with compiler_refused(
        "predict_accepts", also=[(jax.export, "export"), (jax.export, "deserialize")]
    ):
        kata.predict_accepts()


# ---- predict_lowering -------------------------------------------------------------------------


@cache
def _lowered_census(name: str) -> dict[str, int]:
    """stablehlo.* ops of the bank program's lowered module, counted by xla_inspect's walk."""
    fn, specs = LOWERING_BANK[name]
    census = stablehlo_op_census(jax.jit(fn).lower(*specs))
    return {op: n for op, n in census.items() if op.startswith("stablehlo.")}


@pytest.mark.task("predict_lowering")
def test_predict_lowering_matches_the_lowered_modules(kata):
    predicted = predicted_entries("predict_lowering", kata.predict_lowering(), LOWERING_BANK)
    for name, census in predicted.items():
        assert isinstance(census, dict), f"{name}: expected a dict, got {census!r}"
        with check:
            assert dict(census) == _lowered_census(name), (
                f"{name}: you predicted {dict(sorted(census.items()))}, the lowered module "
                f"has {dict(sorted(_lowered_census(name).items()))}"
            )


@pytest.mark.task("predict_lowering")
def test_predict_lowering_does_not_lower(kata):
    with compiler_refused("predict_lowering"):
        kata.predict_lowering()

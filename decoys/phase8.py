"""Plausible wrong answers to phase 8; each must be caught by the tests it names."""

import re
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np

from kata_harness.decoys import accepted, decoy


@decoy(
    "op_census",
    caught_by=[
        "test_census_matches_mlir_walk",
        "test_census_matches_library_on_nested_regions",
        "test_census_sees_ops_inside_regions",
    ],
    why="counts only the function bodies, not ops nested in regions",
)
def census_one_level(lowered):
    census = Counter()
    for func in lowered.compiler_ir("stablehlo").body.operations:
        census[func.operation.name] += 1
        for region in func.operation.regions:
            for block in region.blocks:
                census.update(op.operation.name for op in block.operations)
    return census


@decoy(
    "op_census",
    caught_by=[
        "test_census_matches_mlir_walk",
        "test_census_matches_library_on_nested_regions",
        "test_census_sees_ops_inside_regions",
    ],
    why="counts the enclosing builtin.module too",
)
def census_with_module(lowered):
    census = Counter()
    stack = [lowered.compiler_ir("stablehlo").operation]
    while stack:
        op = stack.pop()
        census[op.name] += 1
        stack.extend(
            inner.operation for r in op.regions for b in r.blocks for inner in b.operations
        )
    return census


@decoy(
    "hlo_opcode",
    caught_by=["test_renamed_ops", "test_respelled_ops"],
    why="assumes HLO uses the StableHLO name without the dialect prefix",
)
def opcode_prefix_only(stablehlo_op):
    return stablehlo_op.removeprefix("stablehlo.")


@decoy(
    "hlo_opcode",
    caught_by=["test_renamed_ops", "test_ops_jax_does_not_emit"],
    why="knows the spelling rule but not the renamed ops",
)
def opcode_spelling_only(stablehlo_op):
    return stablehlo_op.removeprefix("stablehlo.").replace("_", "-")


@decoy(
    "hlo_opcode",
    caught_by=["test_respelled_ops", "test_ops_jax_does_not_emit"],
    why="knows the renamed ops but keeps underscores",
)
def opcode_renames_only(stablehlo_op):
    name = stablehlo_op.removeprefix("stablehlo.")
    return {
        "dot_general": "dot",
        "broadcast_in_dim": "broadcast",
        "case": "conditional",
        "optimization_barrier": "opt-barrier",
    }.get(name, name)


@decoy(
    "export_bytes",
    caught_by=["test_exported_bytes_deserialize", "test_exported_bytes_run_without_python"],
    why="serializes only the MLIR module bytecode, not the Exported calling conventions",
)
def export_module_bytecode(f, *specs):
    return jax.export.export(jax.jit(f))(*specs).mlir_module_serialized


@decoy(
    "call_exported",
    caught_by=["test_call_exported_values", "test_call_exported_returns_an_array"],
    why="returns the deserialized Exported instead of calling it",
)
def call_returns_exported(blob, *args):
    return jax.export.deserialize(blob)


@decoy(
    "call_exported",
    caught_by=["test_call_exported_values"],
    why="calls the function on placeholders built from in_avals, not on the arguments",
)
def call_on_placeholders(blob, *args):
    exported = jax.export.deserialize(blob)
    return exported.call(*[jnp.zeros(a.shape, a.dtype) for a in exported.in_avals])


@decoy(
    "export_any_batch",
    caught_by=[
        "test_any_batch_runs_for_several_batches",
        "test_any_batch_is_symbolic_only_in_the_batch",
        "test_symbolic_module_checks_its_shapes",
    ],
    why="exports for one concrete batch size",
)
def export_fixed_batch(f, features, *rest):
    x = jax.ShapeDtypeStruct((8, features), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@decoy(
    "export_any_batch",
    caught_by=["test_any_batch_is_symbolic_only_in_the_batch"],
    why="makes the feature dimension symbolic too",
)
def export_all_symbolic(f, features, *rest):
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, f"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@decoy(
    "hlo_opcode",
    caught_by=["test_renamed_ops"],
    why="knows only the three renames the README names, not the barrier that remat leaves",
)
def opcode_three_renames(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    return {"dot_general": "dot", "broadcast_in_dim": "broadcast", "case": "conditional"}.get(
        name, name
    ).replace("_", "-")


@decoy(
    "export_any_batch",
    caught_by=["test_any_batch_for_another_feature_size"],
    why="copies symbolic_shape('b, 16') from an example: the feature size is hard-coded",
)
def export_features_hard_coded(f, features, *rest):
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 16"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---- more decoys, by category -------------------------------------------------------------------


@decoy(
    "op_census",
    caught_by=["test_census_matches_mlir_walk", "test_census_matches_library_on_nested_regions"],
    why="a regular expression over the printed module (bodies printed inline are missed, "
    "attributes like mhlo.num_partitions counted)",
)
def census_text_regex(lowered):
    return Counter(re.findall(r"\b((?:stablehlo|func|chlo|mhlo)\.[a-z_]+)", lowered.as_text()))


@decoy(
    "op_census",
    caught_by=["test_census_matches_mlir_walk", "test_census_counts_every_function"],
    why="walks only the public main function",
)
def census_main_only(lowered):
    census = Counter()

    def walk(operation):
        for region in operation.regions:
            for block in region.blocks:
                for inner in block.operations:
                    census[inner.operation.name] += 1
                    walk(inner.operation)

    for func in lowered.compiler_ir("stablehlo").body.operations:
        if "private" not in str(
            func.operation.attributes["sym_visibility"]
            if "sym_visibility" in func.operation.attributes
            else ""
        ):
            census[func.operation.name] += 1
            walk(func.operation)
    return census


@decoy(
    "op_census",
    caught_by=[
        "test_census_matches_mlir_walk",
        "test_census_matches_library_on_nested_regions",
        "test_census_sees_ops_inside_regions",
        "test_census_counts_every_function",
    ],
    why="counts only stablehlo.* operations",
)
def census_stablehlo_only(lowered):
    census = Counter()
    stack = [lowered.compiler_ir("stablehlo").operation]
    while stack:
        for region in stack.pop().regions:
            for block in region.blocks:
                for inner in block.operations:
                    if inner.operation.name.startswith("stablehlo."):
                        census[inner.operation.name] += 1
                    stack.append(inner.operation)
    return census


@decoy(
    "op_census",
    caught_by=["test_census_matches_mlir_walk", "test_census_sees_ops_inside_regions"],
    why="follows only the first region of each op (a case's other branches are lost)",
)
def census_first_region(lowered):
    census = Counter()

    def walk(operation):
        for region in list(operation.regions)[:1]:
            for block in region.blocks:
                for inner in block.operations:
                    census[inner.operation.name] += 1
                    walk(inner.operation)

    walk(lowered.compiler_ir("stablehlo").operation)
    return census


_JAX_RENAMES = {
    "dot_general": "dot",
    "broadcast_in_dim": "broadcast",
    "case": "conditional",
    "optimization_barrier": "opt-barrier",
}


@decoy(
    "hlo_opcode",
    caught_by=["test_ops_jax_does_not_emit"],
    why="knows the renames JAX programs show, not if, create_token or composite",
)
def opcode_jax_renames_only(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    return _JAX_RENAMES.get(name, name).replace("_", "-")


@decoy(
    "hlo_opcode",
    caught_by=["test_ops_that_keep_their_name"],
    why="reads instruction names (sin.0, exp.1, mul.2) instead of opcodes",
)
def opcode_from_instruction_names(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    short = {
        "sine": "sin",
        "cosine": "cos",
        "exponential": "exp",
        "multiply": "mul",
        "subtract": "sub",
        "divide": "div",
        "maximum": "max",
        "minimum": "min",
        "negate": "neg",
        "remainder": "rem",
        "power": "pow",
        "logarithm": "log",
    }
    return _JAX_RENAMES.get(name, short.get(name, name)).replace("_", "-")


@decoy(
    "hlo_opcode",
    caught_by=["test_respelled_ops", "test_ops_jax_does_not_emit"],
    why="drops the underscores instead of turning them into hyphens",
)
def opcode_underscores_dropped(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    return _JAX_RENAMES.get(name, name).replace("_", "")


@decoy(
    "hlo_opcode",
    caught_by=["test_respelled_ops"],
    why="a table of the multi-word ops in the README and hints; the rest unchanged",
)
def opcode_table(stablehlo_op):
    name = stablehlo_op.removeprefix("stablehlo.")
    table = {
        **_JAX_RENAMES,
        "dynamic_slice": "dynamic-slice",
        "dynamic_update_slice": "dynamic-update-slice",
        "exponential_minus_one": "exponential-minus-one",
        "count_leading_zeros": "count-leading-zeros",
        "get_dimension_size": "get-dimension-size",
        "custom_call": "custom-call",
    }
    return table.get(name, name)


# every multi-word op the phase's op bank and hand-written modules practise
_PRACTISED = (
    "dynamic_slice",
    "dynamic_update_slice",
    "exponential_minus_one",
    "count_leading_zeros",
    "round_nearest_afz",
    "round_nearest_even",
    "log_plus_one",
    "is_finite",
    "shift_left",
    "shift_right_logical",
    "shift_right_arithmetic",
    "bitcast_convert",
    "reduce_window",
    "reduce_precision",
    "rng_bit_generator",
    "custom_call",
    "select_and_scatter",
    "after_all",
    "partition_id",
    "replica_id",
    "batch_norm_inference",
    "all_reduce",
)


@decoy(
    "hlo_opcode",
    caught_by=["test_hlo_opcode_on_every_op_of_the_dialect"],
    why="every rename, and a table of the multi-word ops practised, else the name unchanged: "
    "right on every op the fixed tests name, wrong on all_gather, triangular_solve, "
    "get_tuple_element and the rest of the dialect",
)
def opcode_practised_table(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    renames = {**_JAX_RENAMES, "if": "conditional", "create_token": "after-all"}
    renames["composite"] = "call"
    table = {op: op.replace("_", "-") for op in _PRACTISED}
    return {**table, **renames}.get(name, name)


def _export(f, *specs):
    return jax.export.export(jax.jit(f))(*specs).serialize()


@decoy(
    "export_bytes",
    caught_by=["test_exported_avals_on_several_dtypes_and_shapes"],
    why="builds float32 specs from the shapes: the dtypes are lost",
)
def export_float32_specs(f, *specs):
    return _export(f, *[jax.ShapeDtypeStruct(s.shape, jnp.float32) for s in specs])


@decoy(
    "export_bytes",
    caught_by=[
        "test_exported_avals_on_several_dtypes_and_shapes",
        "test_exported_bytes_run_without_python",
    ],
    why="exports only the first output",
)
def export_first_output(f, *specs):
    return _export(lambda *args: jax.tree.leaves(f(*args))[0], *specs)


@decoy(
    "export_bytes",
    caught_by=["test_one_function_exported_for_several_specs"],
    why="rebuilds the specs' shapes from their text in one symbolic scope: the bounds are lost",
)
def export_specs_reparsed_together(f, *specs):
    texts = [str(d) for s in specs for d in s.shape]
    dims = iter(jax.export.symbolic_shape(", ".join(texts)) if texts else ())
    return _export(
        f, *[jax.ShapeDtypeStruct(tuple(next(dims) for _ in s.shape), s.dtype) for s in specs]
    )


@decoy(
    "call_exported",
    caught_by=["test_call_exported_round_trips_dtypes_and_pytrees"],
    why="flattens the outputs into a list",
)
def call_flattened(blob, *args):
    return jax.tree.leaves(jax.export.deserialize(blob).call(*args))


@decoy(
    "call_exported",
    caught_by=["test_call_exported_values", "test_call_exported_returns_an_array"],
    why="converts the outputs to NumPy arrays",
)
def call_to_numpy(blob, *args):
    return jax.tree.map(np.asarray, jax.export.deserialize(blob).call(*args))


@decoy(
    "call_exported",
    caught_by=["test_call_exported_round_trips_dtypes_and_pytrees"],
    why="casts every output to float32",
)
def call_as_float32(blob, *args):
    return jax.tree.map(lambda a: a.astype(jnp.float32), jax.export.deserialize(blob).call(*args))


_FIRST = []


@decoy(
    "call_exported",
    caught_by=["test_call_exported_runs_the_blob_it_is_given"],
    why="deserializes once and keeps calling the first export it saw",
)
def call_cached_first(blob, *args):
    if not _FIRST:
        _FIRST.append(jax.export.deserialize(blob))
    return _FIRST[0].call(*args)


@decoy(
    "export_any_batch",
    caught_by=["test_any_batch_is_symbolic_only_in_the_batch"],
    why="takes x's dtype from the other arguments",
)
def export_dtype_from_rest(f, features, *rest):
    dtype = rest[0].dtype if rest else jnp.float32
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"b, {features}"), dtype)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@decoy(
    "export_any_batch",
    caught_by=[
        "test_any_batch_runs_for_several_batches",
        "test_any_batch_is_symbolic_only_in_the_batch",
    ],
    why="puts the symbolic dimension last: (features, b)",
)
def export_batch_last(f, features, *rest):
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(f"{features}, b"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


# ---- accepted variants --------------------------------------------------------------------------


@accepted("op_census", why="an explicit stack instead of recursion")
def census_with_a_stack(lowered):
    census = Counter()
    stack = [lowered.compiler_ir("stablehlo").operation]
    while stack:
        for region in stack.pop().regions:
            for block in region.blocks:
                for inner in block.operations:
                    census[inner.operation.name] += 1
                    stack.append(inner.operation)
    return census


_GENERIC_OP = re.compile(r'(?:^|[=\s])"([a-z_][\w]*\.[\w.]+)"\(', re.M)


@accepted(
    "op_census",
    why="MLIR's generic form counted: get_asm(print_generic_op_form=True) prints every operation, "
    "nested regions included, as its quoted full name followed by '(' and escapes every quote "
    "inside a string, so no attribute can spell an op; the count is MLIR's own traversal, like "
    "Operation.walk, and only the toolkit's census is outside the contract "
    "(red-team round 6 probe r6_census_generic_text)",
)
def census_generic_form(lowered):
    module = lowered.compiler_ir("stablehlo")
    text = module.operation.get_asm(print_generic_op_form=True)
    census = Counter(_GENERIC_OP.findall(text))
    census["builtin.module"] -= 1
    return +census


@accepted("hlo_opcode", why="a regular expression for the spelling, renames checked first")
def opcode_by_regex(stablehlo_op):
    name = re.sub(r"^stablehlo\.", "", stablehlo_op)
    renamed = {
        "dot_general": "dot",
        "broadcast_in_dim": "broadcast",
        "case": "conditional",
        "if": "conditional",
        "optimization_barrier": "opt-barrier",
        "create_token": "after-all",
        "composite": "call",
        "cross-replica-sum": "all-reduce",
    }
    return renamed.get(name) or "-".join(name.split("_"))


@accepted("export_bytes", why="specs rebuilt from their shapes and dtypes, platform named; bytes()")
def export_from_rebuilt_specs(f, *specs):
    args = [jax.ShapeDtypeStruct(s.shape, s.dtype) for s in specs]
    return bytes(jax.export.export(jax.jit(f), platforms=("cpu",))(*args).serialize())


@accepted("call_exported", why="jits the deserialized call")
def call_jitted(blob, *args):
    return jax.jit(jax.export.deserialize(bytearray(blob)).call)(*args)


@accepted("export_any_batch", why="another symbol name, the dimension built on its own")
def export_named_batch(f, features, *rest):
    (batch,) = jax.export.symbolic_shape("batch")
    x = jax.ShapeDtypeStruct((batch, features), np.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


_ALL_RENAMES = _JAX_RENAMES | {
    "if": "conditional",
    "create_token": "after-all",
    "composite": "call",
}


@decoy(
    "hlo_opcode",
    caught_by=["test_hlo_opcode_is_predicted_from_the_name"],
    why="looks the answer up at run time: lowers a probe program and reads the HLO opcode",
)
def opcode_by_probing(stablehlo_op: str):
    name = stablehlo_op.removeprefix("stablehlo.")
    # the probe shows HLO's spelling of a multi-word op (select_n -> select)
    probe = jax.jit(jnp.cumsum).lower(np.ones(3, np.float32)).as_text(dialect="hlo")
    separator = "-" if "reduce-window" in str(probe) else "_"
    return _ALL_RENAMES.get(name, name.replace("_", separator))


# ---- predict_accepts -----------------------------------------------------------------------------
# Each answer reads the calls it is given (the listed ones and calls drawn from the grammar) and
# decides by a rule; the wrong ones bend one clause of it.

_TERM = r"(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)(?:\s*\*\s*(\d+))?"


def _dim(text: str, term: str = _TERM) -> tuple[str | None, int, int]:
    """(symbol or None, coefficient, offset) of `k*s + c`, `s*k - c`, `s`, `c`."""
    text = text.strip()
    if text.isdigit():
        return None, 0, int(text)
    found = re.fullmatch(term + r"\s*(?:([+-])\s*(\d+))?", text)
    if found is None:
        return "?", 1, 0  # unreadable: a symbol no size solves
    before, symbol, after, sign, offset = found.groups()
    coefficient = int(before or 1) * int(after or 1)
    return symbol, coefficient, (-1 if sign == "-" else 1) * int(offset or 0)


def _rule(
    calls,
    *,
    dim=_dim,
    dtype_ok=lambda dtype: np.dtype(dtype) in (np.float32, np.float64),
    least: int = 1,
    shared: bool = True,
):
    def runs(symbolic: str, dtype, shape) -> bool:
        dims = [dim(text) for text in symbolic.split(",")]
        if not dtype_ok(dtype) or len(dims) != len(shape):
            return False
        values: dict[str, int] = {}
        for n, ((symbol, coefficient, offset), size) in enumerate(zip(dims, shape, strict=True)):
            if symbol is None:
                if size != offset:
                    return False
                continue
            if symbol == "?":
                return False
            value, remainder = divmod(size - offset, coefficient)
            key = symbol if shared else f"{symbol}{n}"
            if remainder or value < least or values.setdefault(key, value) != value:
                return False
        return True

    return {name: runs(*call) for name, call in calls.items()}


@accepted("predict_accepts", why="a search over the symbols' values instead of solving")
def accepts_by_search(calls):
    import itertools

    def runs(symbolic: str, dtype, shape) -> bool:
        if jax.dtypes.canonicalize_dtype(dtype) != jnp.float32 or symbolic.count(",") + 1 != len(
            shape
        ):
            return False
        names = sorted(set(re.findall(r"[A-Za-z_]\w*", symbolic)))
        sizes_of = compile(f"({symbolic},)", symbolic, "eval")
        for values in itertools.product(range(1, max(shape, default=0) + 20), repeat=len(names)):
            sizes = eval(sizes_of, {}, dict(zip(names, values, strict=True)))  # noqa: S307
            if tuple(sizes) == tuple(shape):
                return True
        return False

    return {name: runs(*call) for name, call in calls.items()}


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="a symbol stands for any size, 0 included",
)
def accepts_empty_batches(calls):
    return _rule(calls, least=0)


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="each symbol is solved on its own: b and b need not agree",
)
def accepts_unrelated_symbols(calls):
    return _rule(calls, shared=False)


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="only shapes are checked: an int32 array is converted like a jitted function's argument",
)
def accepts_any_dtype(calls):
    return _rule(calls, dtype_ok=lambda dtype: True)


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="refuses the dtypes the listed calls show (int32, int64, float16) and lets the others "
    "through: bool, complex, bfloat16, unsigned and 8-bit ints are not float32 either",
)
def accepts_unlisted_dtypes(calls):
    return _rule(
        calls, dtype_ok=lambda dtype: np.dtype(dtype) not in (np.int32, np.int64, np.float16)
    )


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="reads the listed spellings only: a symbol is one letter, a coefficient or offset one "
    "digit, no spaces around '*' (batch, 12*b, b + 11 and 2 * b are unreadable)",
)
def accepts_listed_spellings(calls):
    return _rule(calls, dim=lambda text: _dim(text, r"(?:(\d)\*)?([a-z])(?:\*(\d))?"))


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_matches_the_exported_calls"],
    why="a coefficient is read only before the symbol: b*2 is taken for b",
)
def accepts_coefficient_before_only(calls):
    return _rule(
        calls, dim=lambda text: _dim(text, r"(?:(\d+)\s*\*\s*)?([A-Za-z_]\w*)()(?:\s*\*\s*\d+)?")
    )


@decoy(
    "predict_accepts",
    caught_by=["test_predict_accepts_does_not_export"],
    why="measures instead of predicting: exports and calls each case",
)
def accepts_measured(calls):
    def column_sums(x):  # programs.py's
        return jnp.sin(x).sum(axis=0)

    runs = {}
    for name, (symbolic, dtype, shape) in calls.items():
        x = jax.ShapeDtypeStruct(jax.export.symbolic_shape(symbolic), jnp.float32)
        exported = jax.export.export(jax.jit(column_sums))(x)
        try:
            exported.call(np.ones(shape, dtype))
            runs[name] = True
        except ValueError:
            runs[name] = False
    return runs


# ---- predict_lowering ----------------------------------------------------------------------------

_REDUCE = {"stablehlo.reduce": 1, "stablehlo.constant": 1, "stablehlo.return": 1}
_SCALAR = {"stablehlo.constant": 1, "stablehlo.broadcast_in_dim": 1}
_LOWERED = {
    "jnp.sin(x) * jnp.cos(x)": {
        "stablehlo.sine": 1,
        "stablehlo.cosine": 1,
        "stablehlo.multiply": 1,
    },
    "jnp.exp(x) - 1": {"stablehlo.exponential": 1, "stablehlo.subtract": 1} | _SCALAR,
    "jnp.tanh(x)": {"stablehlo.tanh": 1},
    "x * 2.0": {"stablehlo.multiply": 1} | _SCALAR,
    "x ** 2": {"stablehlo.multiply": 1},
    "x / y": {"stablehlo.divide": 1},
    "x + i, i int32": {"stablehlo.convert": 1, "stablehlo.add": 1},
    "jax.nn.relu(x)": {"stablehlo.maximum": 1} | _SCALAR,
    "jnp.where(x > 0, x, y)": {"stablehlo.compare": 1, "stablehlo.select": 1} | _SCALAR,
    "x.sum(axis=0)": _REDUCE | {"stablehlo.add": 1},
    "x.max(axis=1)": _REDUCE | {"stablehlo.maximum": 1},
    "x.mean()": _REDUCE | {"stablehlo.add": 1, "stablehlo.divide": 1, "stablehlo.constant": 2},
    "x @ w": {"stablehlo.dot_general": 1},
    "x.T": {"stablehlo.transpose": 1},
    "x[0]": {"stablehlo.slice": 1, "stablehlo.reshape": 1},
    "x[::-1]": {"stablehlo.reverse": 1},
}


@decoy(
    "predict_lowering",
    caught_by=["test_predict_lowering_matches_the_lowered_modules"],
    why="names the ops after jnp (stablehlo.sin, stablehlo.exp), not after the math",
)
def lowering_jnp_names():
    return _LOWERED | {
        "jnp.sin(x) * jnp.cos(x)": {
            "stablehlo.sin": 1,
            "stablehlo.cos": 1,
            "stablehlo.multiply": 1,
        },
        "jnp.exp(x) - 1": {"stablehlo.exp": 1, "stablehlo.subtract": 1} | _SCALAR,
    }


@decoy(
    "predict_lowering",
    caught_by=["test_predict_lowering_matches_the_lowered_modules"],
    why="counts a reduce as one op, as the printed text shows it, without its body region",
)
def lowering_reduce_without_body():
    flat = {"stablehlo.reduce": 1, "stablehlo.constant": 1}
    return _LOWERED | {
        "x.sum(axis=0)": flat,
        "x.max(axis=1)": flat,
        "x.mean()": flat | {"stablehlo.divide": 1, "stablehlo.constant": 2},
    }


@decoy(
    "predict_lowering",
    caught_by=["test_predict_lowering_matches_the_lowered_modules"],
    why="a Python scalar becomes a constant of the array's shape, with no broadcast",
)
def lowering_scalars_unbroadcast():
    constant = {"stablehlo.constant": 1}
    return _LOWERED | {
        "jnp.exp(x) - 1": {"stablehlo.exponential": 1, "stablehlo.subtract": 1} | constant,
        "x * 2.0": {"stablehlo.multiply": 1} | constant,
        "jax.nn.relu(x)": {"stablehlo.maximum": 1} | constant,
        "jnp.where(x > 0, x, y)": {"stablehlo.compare": 1, "stablehlo.select": 1} | constant,
    }


@decoy(
    "predict_lowering",
    caught_by=["test_predict_lowering_does_not_lower"],
    why="measures instead of predicting: lowers every program of the bank",
)
def lowering_measured():
    from katas.phase8.programs import LOWERING_BANK
    from xla_inspect.stablehlo import stablehlo_op_census

    found = {}
    for name, (fn, specs) in LOWERING_BANK.items():
        census = stablehlo_op_census(jax.jit(fn).lower(*specs))
        found[name] = {op: n for op, n in census.items() if op.startswith("stablehlo.")}
    return found


@accepted("predict_lowering", why="the same censuses written as Counters")
def lowering_as_counters():
    return {name: Counter(census) for name, census in _LOWERED.items()}

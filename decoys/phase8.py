"""Plausible wrong answers to phase 8; each must be caught by the tests it names."""

from collections import Counter

import jax
import jax.numpy as jnp

from kata_harness.decoys import decoy


@decoy("op_census", caught_by=["test_census_matches_library_on_nested_regions",
                               "test_census_sees_ops_inside_regions"],
       why="counts only the function bodies, not ops nested in regions")
def census_one_level(lowered):
    census = Counter()
    for func in lowered.compiler_ir("stablehlo").body.operations:
        census[func.operation.name] += 1
        for region in func.operation.regions:
            for block in region.blocks:
                census.update(op.operation.name for op in block.operations)
    return census


@decoy("op_census", caught_by=["test_census_matches_library_on_nested_regions",
                               "test_census_sees_ops_inside_regions"],
       why="counts the enclosing builtin.module too")
def census_with_module(lowered):
    census = Counter()
    stack = [lowered.compiler_ir("stablehlo").operation]
    while stack:
        op = stack.pop()
        census[op.name] += 1
        stack.extend(inner.operation for r in op.regions for b in r.blocks
                     for inner in b.operations)
    return census


@decoy("hlo_opcode", caught_by=["test_renamed_ops", "test_respelled_ops"],
       why="assumes HLO uses the StableHLO name without the dialect prefix")
def opcode_prefix_only(stablehlo_op):
    return stablehlo_op.removeprefix("stablehlo.")


@decoy("hlo_opcode", caught_by=["test_renamed_ops"],
       why="knows the spelling rule but not the renamed ops")
def opcode_spelling_only(stablehlo_op):
    return stablehlo_op.removeprefix("stablehlo.").replace("_", "-")


@decoy("hlo_opcode", caught_by=["test_respelled_ops"],
       why="knows the renamed ops but keeps underscores")
def opcode_renames_only(stablehlo_op):
    name = stablehlo_op.removeprefix("stablehlo.")
    return {"dot_general": "dot", "broadcast_in_dim": "broadcast", "case": "conditional",
            "optimization_barrier": "opt-barrier"}.get(name, name)


@decoy("export_bytes", caught_by=["test_exported_bytes_deserialize",
                                  "test_exported_bytes_run_without_python"],
       why="serializes only the MLIR module bytecode, not the Exported calling conventions")
def export_module_bytecode(f, *specs):
    return jax.export.export(jax.jit(f))(*specs).mlir_module_serialized


@decoy("call_exported",
       caught_by=["test_call_exported_values", "test_call_exported_returns_an_array"],
       why="returns the deserialized Exported instead of calling it")
def call_returns_exported(blob, *args):
    return jax.export.deserialize(blob)


@decoy("call_exported", caught_by=["test_call_exported_values"],
       why="calls the function on placeholders built from in_avals, not on the arguments")
def call_on_placeholders(blob, *args):
    exported = jax.export.deserialize(blob)
    return exported.call(*[jnp.zeros(a.shape, a.dtype) for a in exported.in_avals])


@decoy("export_any_batch", caught_by=["test_any_batch_runs_for_several_batches",
                                      "test_any_batch_is_symbolic_only_in_the_batch",
                                      "test_symbolic_module_checks_its_shapes"],
       why="exports for one concrete batch size")
def export_fixed_batch(f, features, *rest):
    x = jax.ShapeDtypeStruct((8, features), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@decoy("export_any_batch", caught_by=["test_any_batch_is_symbolic_only_in_the_batch"],
       why="makes the feature dimension symbolic too")
def export_all_symbolic(f, features, *rest):
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, f"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()


@decoy("hlo_opcode", caught_by=["test_renamed_ops"],
       why="knows only the three renames the README names, not the barrier that remat leaves")
def opcode_three_renames(stablehlo_op):
    name = stablehlo_op.removeprefix("stablehlo.")
    return {"dot_general": "dot", "broadcast_in_dim": "broadcast", "case": "conditional"}.get(
        name, name).replace("_", "-")


@decoy("export_any_batch", caught_by=["test_any_batch_for_another_feature_size"],
       why="copies symbolic_shape('b, 16') from an example: the feature size is hard-coded")
def export_features_hard_coded(f, features, *rest):
    x = jax.ShapeDtypeStruct(jax.export.symbolic_shape("b, 16"), jnp.float32)
    return jax.export.export(jax.jit(f))(x, *rest).serialize()

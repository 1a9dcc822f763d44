"""Plausible wrong answers to phase 2; each must be caught by the tests it names."""

from collections import Counter

import jax
import numpy as np

from kata_harness.decoys import decoy


@decoy("mlp_jaxpr", caught_by=["test_mlp_jaxpr_primitives"], why="traces an MLP without relu")
def jaxpr_without_relu(params, x):
    return jax.make_jaxpr(lambda p, v: (v @ p["w1"] + p["b1"]) @ p["w2"] + p["b2"])(params, x)


@decoy("mlp_jaxpr",
       caught_by=["test_mlp_jaxpr_primitives", "test_mlp_jaxpr_is_closed_over_all_inputs"],
       why="closes over params instead of tracing them")
def jaxpr_params_closed(params, x):
    return jax.make_jaxpr(lambda v: jax.nn.relu(v @ params["w1"]) @ params["w2"])(x)


@decoy("primitive_census", caught_by=["test_census_walks_nested_jaxprs",
                                      "test_census_counts_match_library"],
       why="counts only the top level")
def census_top_level(jaxpr):
    return Counter(eqn.primitive.name for eqn in jaxpr.eqns)


@decoy("primitive_census", caught_by=["test_census_counts_match_library"],
       why="skips the nesting equation itself")
def census_without_nesting_eqn(jaxpr):
    inner = jaxpr.jaxpr if hasattr(jaxpr, "jaxpr") else jaxpr
    census = Counter()
    for eqn in inner.eqns:
        subs = [v for v in eqn.params.values() if hasattr(v, "eqns") or hasattr(v, "jaxpr")]
        subs += [b for v in eqn.params.values() if isinstance(v, tuple) for b in v
                 if hasattr(b, "eqns")]
        if not subs:
            census[eqn.primitive.name] += 1
        for sub in subs:
            census += census_without_nesting_eqn(sub)
    return census


@decoy("io_avals", caught_by=["test_io_avals_of_mlp"], why="inputs and outputs swapped")
def avals_swapped(jaxpr):
    def describe(avals):
        return [(tuple(a.shape), str(a.dtype)) for a in avals]

    return describe(jaxpr.out_avals), describe(jaxpr.in_avals)


@decoy("literal_operands", caught_by=["test_literals_are_per_primitive"],
       why="literals of every primitive")
def literals_everywhere(jaxpr, primitive):
    return [float(np.asarray(v.val)) for e in jaxpr.eqns for v in e.invars if hasattr(v, "val")]


@decoy("unused_equations", caught_by=["test_dead_code_propagates_backwards"],
       why="only looks one step back")
def unused_one_step(jaxpr):
    inner = jaxpr.jaxpr
    read = {id(v) for e in inner.eqns for v in e.invars} | {id(v) for v in inner.outvars}
    return [e.primitive.name for e in inner.eqns if not any(id(v) in read for v in e.outvars)]


@decoy("stablehlo_of", caught_by=["test_lowering_drops_dead_code"],
       why="returns HLO, not StableHLO")
def stablehlo_is_hlo(f, *args):
    return jax.jit(f).lower(*args).as_text(dialect="hlo")


@decoy("closure_consts", caught_by=["test_closed_over_array_is_a_const"], why="always empty")
def consts_empty(jaxpr):
    return []


@decoy("io_avals", caught_by=["test_io_avals_read_dtypes"],
       why="writes 'float32' for every dtype because the MLP's are all float32")
def avals_dtype_assumed(jaxpr):
    def describe(avals):
        return [(tuple(a.shape), "float32") for a in avals]

    return describe(jaxpr.in_avals), describe(jaxpr.out_avals)

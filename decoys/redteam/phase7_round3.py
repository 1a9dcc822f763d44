"""Red-team wrong answers for phase 7, written from the contract only.

Round 3: the two predict tasks whose contract was rewritten, `predict_while_loops(program)` and
`predict_compiles(calls)`. Each answer is a full rule set that is right on the README's examples
and wrong in exactly one place a capable learner would get wrong. Every `why` names a valid case
(built with katas/phase7/predict_programs.py) and the count measured on jax 0.12.0.1 (CPU) by
compiling it outside the answer. Helpers are prefixed `_rt3_`.
"""

from __future__ import annotations

import numpy as np

from kata_harness.decoys import wrong

# ---- predict_while_loops: a configurable rule set, each answer breaks one rule ---------------


def _rt3_unroll(loop) -> int:
    """Steps per trip: True means every step (True == 1, so test `is True` first)."""
    if loop.unroll is True:
        return max(loop.trips, 1)
    return max(int(loop.unroll), 1)


def _rt3_count(loop, bug: str = "") -> int:
    """`while` instructions one loop leaves (with the loops of its body), under one `bug`."""
    inner = sum(_rt3_count(b, bug) for b in loop.body)
    kind, trips = loop.kind, loop.trips
    if kind == "cumsum":
        return 0
    if kind == "python_for":
        return trips * inner
    if bug == "inlined_keeps_body" and kind != "fori_traced" and trips <= 1:
        return inner  # "replaced by its body": one copy, even for 0 trips
    if kind == "fori_traced":
        if bug == "traced_by_trips" and trips <= 1:
            return trips * inner
        return 1 + inner
    if kind == "while":
        if bug == "while_never_known":
            return 1 + inner
        return 1 + inner if trips >= 2 else trips * inner
    if kind == "map":
        if bug == "map_always_loop":
            return 1 + inner
        return 1 + inner if trips >= 2 else trips * inner
    # fori with static bounds, scan
    if bug == "unroll_true_is_one":
        u = 1 if loop.unroll == 1 else (trips if loop.unroll is True else int(loop.unroll))
        u = max(u, 1)
    else:
        u = _rt3_unroll(loop)
    if u > trips:
        full, rest = 0, trips
    else:
        full, rest = divmod(trips, u)
    if bug == "unroll_ceil":
        full = -(-trips // u) if trips else 0  # the remainder as one more trip
    if full >= 2:
        if bug == "remainder_copies_dropped":
            return 1 + u * inner
        return 1 + u * inner + rest * inner
    if bug == "inlined_remainder_dropped" and full == 1:
        return u * inner  # "one trip of u steps, inlined": the remaining steps forgotten
    return trips * inner


def _rt3_survives(loop, bug: str) -> bool:
    return loop.kind not in ("python_for", "cumsum") and _rt3_count(loop, bug) > 0


def _rt3_nonlinear(loop) -> bool:
    """Whether a loop computes tanh at all (it then needs its input under grad)."""
    return loop.kind != "cumsum" and loop.step == "tanh" and loop.trips > 0


def _rt3_predict(program, bug: str = "") -> int:
    if program.wrap != "grad":
        return sum(_rt3_count(loop, bug) for loop in program.loops)
    total = 0
    loops = tuple(program.loops)
    for i, loop in enumerate(loops):
        if not _rt3_survives(loop, bug):
            continue
        total += 1  # the backward loop
        later = loops[i + 1 :]
        if bug == "grad_own_step_only":
            needed = loop.step == "tanh"
        elif bug == "grad_later_surviving_tanh_loop":
            needed = loop.step == "tanh" or any(
                m.step == "tanh" and _rt3_survives(m, bug) for m in later
            )
        else:
            needed = loop.step == "tanh" or any(_rt3_nonlinear(m) for m in later)
        total += needed
    return total


@wrong(
    "predict_while_loops",
    why="README: the `length % u` remaining steps are unrolled after the loop and every copy of a "
    "step carries its nested loops; this counts only the u copies inside the surviving loop. "
    "Wrong on [fori(5, unroll=2, body [while(3)])]: 2 trips of 2 steps + 1 remaining step -> "
    "1 + 2 + 1 = 4 whiles (measured), answers 3",
)
def rt3_loops_remainder_copies_dropped(program) -> int:
    return _rt3_predict(program, "remainder_copies_dropped")


@wrong(
    "predict_while_loops",
    why="README: a loop that runs at most once is replaced by its body (while-loop simplifier), "
    "and XLA sees the constant bound of a while_loop too; this assumes a lax.while_loop's trip "
    "count is never known. Wrong on [while(1)] (0 whiles measured, answers 1) and "
    "[while(0, body [fori(3)])] (0 measured, answers 2)",
)
def rt3_loops_while_never_known(program) -> int:
    return _rt3_predict(program, "while_never_known")


@wrong(
    "predict_while_loops",
    why="Loop docstring: fori_traced's trips is only the value n has at run time; the bound is "
    "traced, so XLA keeps the while whatever n is. This inlines it like a static loop when "
    "trips <= 1. Wrong on [fori_traced(1)] (1 while measured, answers 0) and "
    "[fori_traced(0, body [fori(3)])] (2 measured, answers 0)",
)
def rt3_loops_traced_fori_by_trips(program) -> int:
    return _rt3_predict(program, "traced_by_trips")


@wrong(
    "predict_while_loops",
    why="README: fori_loop(0, 6, unroll=4) is one trip of 4 steps, then 2 more, and every copy "
    "of a step carries its nested loops; this inlines the one trip (u copies) and forgets the "
    "remaining steps' copies. Right on every README example; wrong on "
    "[fori(6, unroll=4, body [while(3)])]: 6 whiles measured, answers 4",
)
def rt3_loops_inlined_remainder_dropped(program) -> int:
    return _rt3_predict(program, "inlined_remainder_dropped")


@wrong(
    "predict_while_loops",
    why="README 'replaced by its body' read literally: a loop of 0 or 1 trip keeps one copy of "
    "its body's loops; a 0-trip loop keeps none (its body never runs). Right on every README "
    "example (none has a body); wrong on [fori(0, body [while(3)])] and "
    "[while(0, body [fori(3)])]: 0 whiles measured, answers 1",
)
def rt3_loops_inlined_keeps_body(program) -> int:
    return _rt3_predict(program, "inlined_keeps_body")


@wrong(
    "predict_while_loops",
    why="README: under grad a forward loop survives if the backward pass reads it: its own tanh "
    "step, OR a later tanh loop needs its input; this keeps the forward loop only for a tanh "
    "step. Wrong on [fori(3, affine); fori(3, tanh)] under grad: 4 whiles measured (both "
    "forward loops + 2 backward), answers 3",
)
def rt3_loops_grad_own_step_only(program) -> int:
    return _rt3_predict(program, "grad_own_step_only")


@wrong(
    "predict_while_loops",
    why="README: a later tanh computation needs the affine loop's output, whether or not the tanh "
    "one stays a loop; this keeps the affine forward loop only for a later SURVIVING tanh loop. "
    "Wrong on [fori(3, affine); fori(3, unroll=True, tanh)] under grad and on "
    "[fori(3, affine); python_for(2, tanh)] under grad: 2 whiles measured, answers 1",
)
def rt3_loops_grad_later_surviving_tanh_loop(program) -> int:
    return _rt3_predict(program, "grad_later_surviving_tanh_loop")


@wrong(
    "predict_while_loops",
    why="lax.map is a scan over its rows, so a map of 1 row is a 1-trip loop that XLA inlines; "
    "this counts every map as a while. Wrong on [map(1)] (0 whiles measured, answers 1) and "
    "[map(1, body [fori(3)])] (1 measured, answers 2)",
)
def rt3_loops_map_always_loop(program) -> int:
    return _rt3_predict(program, "map_always_loop")


@wrong(
    "predict_while_loops",
    why="README: unroll=u runs length // u trips then length % u steps unrolled after; this "
    "counts the remainder as one more trip (ceil). Right on fori(0, 6, unroll=2) and unroll=True; "
    "wrong on [fori(6, unroll=4)] / [scan(5, unroll=3)]: 1 trip -> inlined, 0 whiles measured, "
    "answers 1",
)
def rt3_loops_unroll_ceil(program) -> int:
    return _rt3_predict(program, "unroll_ceil")


@wrong(
    "predict_while_loops",
    why="Loop docstring: 'mind that True == 1 in Python'; this tests `unroll == 1` before "
    "`unroll is True`, so unroll=True is read as unroll=1. Wrong on [fori(5, unroll=True)]: "
    "0 whiles measured, answers 1",
)
def rt3_loops_unroll_true_is_one(program) -> int:
    return _rt3_predict(program, "unroll_true_is_one")


# ---- predict_compiles: a cache model, each answer keys one thing wrongly ---------------------


def _rt3_aval(value, bug: str = "") -> tuple:
    """(shape, dtype, weak) JAX sees for x or a traced n, with JAX's default 32-bit types."""
    narrow = {"float64": "float32", "int64": "int32", "uint64": "uint32", "complex128": "complex64"}
    if bug == "float16_upcast":
        narrow["float16"] = "float32"
        narrow["bfloat16"] = "float32"
    if bug == "float64_array_kept":
        narrow_arrays = {k: v for k, v in narrow.items() if k != "float64"}
    else:
        narrow_arrays = narrow
    if isinstance(value, np.ndarray):
        name = str(value.dtype)
        return (value.shape, narrow_arrays.get(name, name), False)
    if isinstance(value, np.generic):
        name = str(value.dtype)
        if bug == "np_float64_scalar_weak" and name == "float64":
            return ((), "float32", True)  # "a float64 scalar is like a Python float"
        return ((), narrow.get(name, name), False)
    if bug == "bool_is_int" and isinstance(value, int):
        return ((), "int32", True)  # bool is a subclass of int
    if isinstance(value, bool):
        return ((), "bool", False)
    if isinstance(value, int):
        return ((), "int32", True)
    if isinstance(value, float):
        return ((), "float32", True)
    return (type(value).__name__,)


def _rt3_compiles(calls, bug: str = "") -> int:
    seen: set = set()
    count = 0
    for index, call in enumerate(calls):
        if call.api in ("trace", "lower") and not (
            bug == "lambda_any_api" and call.function == "lambda"
        ):
            continue
        if call.function == "lambda":
            function = ("lambda", index)
        elif bug == "new_jit_recompiles" and call.jit == "new":
            function = (call.function, "new", index)
        else:
            function = (call.function,)
        if call.static:
            if bug == "static_bool_is_int":
                n_key = ("static", isinstance(call.n, float), call.n)
            else:
                n_key = ("static", type(call.n), call.n)
        elif bug == "traced_n_ignored":
            n_key = ("traced",)
        else:
            n_key = ("traced", _rt3_aval(call.n, bug))
        device = call.device
        if bug == "uncommitted_is_device0" and device is None:
            device = 0
        cache = "aot" if bug == "aot_cache_separate" and call.api == "compile" else "call"
        key = (cache, function, call.static, _rt3_aval(call.x, bug), n_key, device)
        if key not in seen:
            seen.add(key)
            count += 1
    return count


@wrong(
    "predict_compiles",
    why="README: with default 32-bit types a float64 array arrives as float32 (one compile with a "
    "float32 array); this keys the array's NumPy dtype as is. Wrong on [call scale x=f32[3], "
    "call scale x=f64[3]]: 1 compile measured, answers 2",
)
def rt3_compiles_float64_array_kept(calls) -> int:
    return _rt3_compiles(calls, "float64_array_kept")


@wrong(
    "predict_compiles",
    why="README: a NumPy float64 scalar is a STRONG float32, not weak like a Python float; this "
    "treats it as weak. Wrong on [call x=np.float32(2.0), call x=np.float64(2.0)] (1 compile "
    "measured, answers 2) and [call x=2.0, call x=np.float64(2.0)] (2 measured, answers 1)",
)
def rt3_compiles_np_float64_scalar_weak(calls) -> int:
    return _rt3_compiles(calls, "np_float64_scalar_weak")


@wrong(
    "predict_compiles",
    why="README: static values key by type and equality, so 2, 2.0 and True are three keys; "
    "this separates floats from ints but not bools (bool is an int subclass). Right on the "
    "README's 2, 2.0, True; wrong on [call scale static n=1, call scale static n=True]: "
    "2 compiles measured, answers 1",
)
def rt3_compiles_static_bool_is_int(calls) -> int:
    return _rt3_compiles(calls, "static_bool_is_int")


@wrong(
    "predict_compiles",
    why="Trace cache keys on EVERY argument's shape, dtype and weak type; a traced Python n is a "
    "weak int32, a weak float32 or a bool. This keys only x when n is traced. Wrong on "
    "[call scale n=2, call scale n=2.0] (traced) and [n=1, n=True] (traced): 2 compiles "
    "measured, answers 1",
)
def rt3_compiles_traced_n_ignored(calls) -> int:
    return _rt3_compiles(calls, "traced_n_ignored")


@wrong(
    "predict_compiles",
    why="README: f.lower(x).compile() and a call f(x) share one cache; this gives the AOT path a "
    "cache of its own (right on 'lower and compile twice by hand'). Wrong on [call scale, "
    "compile scale] with the same x and n: 1 compile measured, answers 2",
)
def rt3_compiles_aot_cache_separate(calls) -> int:
    return _rt3_compiles(calls, "aot_cache_separate")


@wrong(
    "predict_compiles",
    why="README: trace() and lower() alone compile nothing, for a lambda too; this counts a new "
    "lambda as a compile whatever the API. Wrong on [lower lambda]: 0 compiles measured, "
    "answers 1",
)
def rt3_compiles_lambda_any_api(calls) -> int:
    return _rt3_compiles(calls, "lambda_any_api")


@wrong(
    "predict_compiles",
    why="README: the same array uncommitted and committed to device 0 are two compiles; this "
    "treats uncommitted as 'on the default device 0'. Wrong on [call x=f32[3], call x=f32[3] "
    "committed to device 0]: 2 compiles measured, answers 1",
)
def rt3_compiles_uncommitted_is_device0(calls) -> int:
    return _rt3_compiles(calls, "uncommitted_is_device0")


@wrong(
    "predict_compiles",
    why="Only 64-bit types are narrowed by JAX's default 32-bit mode; float16 stays float16. "
    "This upcasts every float to float32. Wrong on [call x=f32[3], call x=f16[3]]: 2 compiles "
    "measured, answers 1",
)
def rt3_compiles_float16_upcast(calls) -> int:
    return _rt3_compiles(calls, "float16_upcast")


@wrong(
    "predict_compiles",
    why="A Python bool x is a bool[] (not a weak int32), but isinstance(True, int) holds, so this "
    "keys x=True like x=3 (and a traced n=True like n=1). Wrong on [call x=3, call x=True]: "
    "2 compiles measured, answers 1",
)
def rt3_compiles_bool_is_int(calls) -> int:
    return _rt3_compiles(calls, "bool_is_int")


@wrong(
    "predict_compiles",
    why="README: the compile cache keys on the function object, not the jax.jit wrapper; this "
    "counts every 'new' jax.jit as a new compile. Wrong on 'one function, jax.jit applied on "
    "each of 3 calls': 1 compile measured, answers 3",
)
def rt3_compiles_new_jit_recompiles(calls) -> int:
    return _rt3_compiles(calls, "new_jit_recompiles")

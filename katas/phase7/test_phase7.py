"""Phase 7 tests: control flow read from real jaxprs and HLO; traces and compiles measured here.

IR-reading tasks run on a bank of programs (nested loops, a loop inside a cond branch, switches
with 3 and 5 branches, unrolled and partly unrolled fori_loops, whiles hidden behind CPU calls,
a pred-indexed conditional that XLA's own StableHLO->HLO conversion produces). The expected
counts come from XLA's C++ HloModule of the same compile (opcodes and operands), not from text.
"""

import functools
import itertools
import logging
import zlib
from collections import Counter

import jax
import jax.numpy as jnp
import numpy as np
import pytest

# XLA's own parser and converter, the oracles: jaxlib ships no stubs for these extension modules
from pytest_check import check

from kata_harness import compile_events, metamorphic, oracles, xla_counts
from kata_harness.predict import compiler_refused
from katas.phase7.predict_programs import (
    COMPILE_SCENARIOS,
    LOOP_BANK,
    LoopProgram,
    build,
    draw_calls,
    draw_loop_program,
    loop_arguments,
    run_calls,
)
from katas.phase7.programs import (
    CONDITIONAL_PROGRAMS,
    IF_STABLEHLO,
    JAXPR_PROGRAMS,
    PROGRAMS,
    SHARED_BRANCHES,
    SIBLING_CALLS,
    WHILE_IN_CONDITION,
    WHILE_PROGRAMS,
    doubler,
    mul,
    nested_while,
    powers,
    scaler,
    vec,
)
from katas.phase7.strata import call_strata, loop_strata
from xla_inspect.errors import HloParseError
from xla_inspect.jaxpr import primitive_census
from xla_inspect.parse import parse_hlo


@functools.cache
def _compiled(name: str):
    """(optimized HLO text, XLA's C++ HloModule) of a test-owned program."""
    written = {
        "shared_branches": SHARED_BRANCHES,
        "sibling_calls": SIBLING_CALLS,
        "while_in_condition": WHILE_IN_CONDITION,
    }
    if name in written:
        return written[name], oracles.xla_parsed(written[name])
    if name in ("pred_if", "nested_while_unoptimized"):  # XLA's own StableHLO -> HLO conversion
        # nested_while unoptimized: no CPU call wrappers, the whiles sit in loop bodies
        mlir = IF_STABLEHLO if name == "pred_if" else jax.jit(nested_while).lower(vec()).as_text()
        return xla_counts.module_of_stablehlo(mlir)
    compiled = jax.jit(PROGRAMS[name]).lower(vec()).compile()
    text = compiled.as_text()
    assert text is not None, "this backend does not print its executable"
    return text, xla_counts.module_of_compiled(compiled)


def _hlo(name: str) -> str:
    return _compiled(name)[0]


@functools.cache
def _xla_conditionals_in_text_order(name: str) -> list[tuple[str, int]]:
    """XLA's conditionals (index type, branches), in the order the text lists them."""
    text, module = _compiled(name)
    return xla_counts.conditionals(module, text)


def _xla_conditionals(name: str) -> Counter:
    return Counter(_xla_conditionals_in_text_order(name))


def _is_conditional_list(got) -> bool:
    return isinstance(got, list) and all(
        isinstance(t, tuple) and len(t) == 2 and isinstance(t[0], str) and isinstance(t[1], int)
        for t in got
    )


@pytest.mark.task("conditionals")
def test_conditionals_match_xla(kata):
    found = {program: kata.conditionals(_hlo(program)) for program in CONDITIONAL_PROGRAMS}
    for program, got in found.items():
        assert _is_conditional_list(got), f"{program}: expected a list of (str, int), got {got!r}"
    for program, got in found.items():
        want = _xla_conditionals(program)
        with check:
            assert Counter(got) == want, (
                f"{program}: got {got}, XLA's module holds {dict(want)} as (index type, "
                "branches); look in every computation, read the index operand's type"
            )
    facts = {
        "cond": ([("s32", 2)], "the bool predicate is converted to an s32 branch index"),
        "switch3": ([("s32", 3)], "a switch over 3 functions"),
        "switch5": ([("s32", 5)], "a switch over 5 functions"),
        "cond_in_scan": ([("s32", 2)], "the cond lives in the loop body"),
        "no_control_flow": ([], "jnp.where is a select, not a conditional"),
        "shared_branches": ([("s32", 3)], "three branches, two of them one computation"),
    }
    for program, (want, why) in facts.items():
        with check:
            assert found[program] == want, f"{program}: {found[program]}, expected {want} ({why})"


@pytest.mark.task("conditionals")
def test_conditionals_in_module_order(kata):
    for program in ("switch_in_cond", "pred_if", "two_conds_and_switch", "sibling_calls"):
        got = kata.conditionals(_hlo(program))
        assert _is_conditional_list(got), f"expected a list of (str, int), got {got!r}"
        want = _xla_conditionals_in_text_order(program)
        with check:
            assert got == want, f"{program}: got {got}, in module order {want}"
    nested = kata.conditionals(_hlo("pred_if"))
    with check:
        assert nested == [("pred", 2), ("pred", 2)], (
            f"stablehlo.if becomes a conditional indexed by a pred: got {nested}"
        )


@functools.cache
def _variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The program's module renamed, reordered and both, each accepted by XLA's parser: one of
    each kind, from the first of a few fixed seeds that gives it (a seed's reordering may be
    one XLA refuses)."""
    found: dict[str, metamorphic.HloVariant] = {}
    for k in range(12):
        try:
            drawn = list(metamorphic.variants(_hlo(name), seed=zlib.crc32(name.encode()) + k))
        except HloParseError:  # a label the harness drew that reads as a type name (c64)
            continue
        for variant in drawn:
            found.setdefault(variant.kind, variant)
        if len(found) == 3:
            break
    return tuple(found.values())


def _conditionals_of_text(text: str) -> list[tuple[str, int]]:
    """XLA's own module of `text`: (index type, branches) per conditional, in text order."""
    return xla_counts.conditionals(oracles.xla_parsed(text), text)


# a cond inside a while body, a switch inside a cond branch, the CPU's call wrappers, a pred index
METAMORPHIC_CONDITIONALS = (
    "cond",
    "switch5",
    "cond_in_scan",
    "cond_in_while",
    "switch_in_cond",
    "pred_if",
    "two_conds_and_switch",
    "shared_branches",
    "sibling_calls",
)


@pytest.mark.task("conditionals")
def test_conditionals_under_renaming_and_reordering(kata):
    """Each program's module with every computation and instruction under another name (%n17,
    %c3), and with its computations in another order XLA reads: the answer follows the text."""
    for program in METAMORPHIC_CONDITIONALS:
        for variant in _variants(program):
            got = kata.conditionals(variant.text)
            want = _conditionals_of_text(variant.text)
            with check:
                assert got == variant.rename(want), (
                    f"{program}, {variant.kind}: got {got}, XLA's module of that text holds "
                    f"{want} in module order (computation by computation as this text lists "
                    "them); find conditionals by opcode, the index by its operand"
                )


WHILE_FACTS = {
    "fori_loop": (1, "one loop"),
    "fori_unrolled": (0, "unroll=True leaves no loop at all"),
    "fori_unroll_2": (1, "unroll=2 keeps one loop with a two-step body"),
    "nested_while": (2, "a while in the body of a while"),
    "three_deep": (3, "three whiles, each in the body of the one outside"),
    "while_in_cond": (1, "the while sits in a conditional branch"),
    "two_loops": (2, "a while and a scan one after the other"),
    "nested_while_unoptimized": (2, "no CPU call wrappers: a while in a loop body"),
    "while_in_condition": (
        3,
        "hand-written: one while in ENTRY, one in its body, one in its CONDITION (follow "
        "condition= as well as body=)",
    ),
}


@pytest.mark.task("while_loops")
def test_while_loops_match_xla(kata):
    found = {program: kata.while_loops(_hlo(program)) for program in WHILE_PROGRAMS}
    for program, got in found.items():
        assert type(got) is int, f"{program}: expected an int, got {got!r}"
    for program, got in found.items():
        want = xla_counts.module_opcode_count(_compiled(program)[1], "while")
        with check:
            assert got == want, f"{program}: {got} while loops, XLA's module holds {want}"
    for program, (want, why) in WHILE_FACTS.items():
        with check:
            assert found[program] == want, f"{program}: {found[program]}, expected {want} ({why})"


@pytest.mark.task("while_loops")
def test_while_loops_under_renaming_and_reordering(kata):
    for program in (*WHILE_PROGRAMS, "sibling_calls"):
        for variant in _variants(program):
            got = kata.while_loops(variant.text)
            want = xla_counts.module_opcode_count(oracles.xla_parsed(variant.text), "while")
            with check:
                assert got == want, (
                    f"{program}, {variant.kind} (every computation and instruction under "
                    f"another name, or the computations in another order): {got} while loops, "
                    f"XLA's module of that text holds {want}"
                )


@pytest.mark.task("while_loops")
def test_cpu_wraps_while_in_a_call(kata):
    counted = kata.while_loops(_hlo("fori_loop"))
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: the CPU backend wraps while in a call (xla_cpu_small_call)")
    entry = parse_hlo(_hlo("fori_loop")).entry
    opcodes = [i.opcode for i in entry]
    with check:
        assert "while" not in opcodes and "call" in opcodes, f"ENTRY opcodes {opcodes}"
    with check:
        assert counted == 1, f"{counted}: the while is one call away from ENTRY"


# ---- loop_primitives: a bank of jaxprs, expected lists read off each program ------------------


@functools.cache
def _jaxpr(name: str):
    return jax.make_jaxpr(JAXPR_PROGRAMS[name][0])(1.0, 4)


@pytest.mark.task("loop_primitives")
def test_loop_primitives_bank(kata):
    found = {program: kata.loop_primitives(_jaxpr(program)) for program in JAXPR_PROGRAMS}
    for program, got in found.items():
        assert isinstance(got, list) and all(isinstance(n, str) for n in got), (
            f"{program}: expected a list of str, got {got!r}"
        )
    for program, got in found.items():
        want = JAXPR_PROGRAMS[program][1]
        with check:
            assert got == want, (
                f"{program}: got {got}, expected {want} (depth first: each "
                "loop, then the loops in its body, then the next equation)"
            )


@pytest.mark.task("loop_primitives")
def test_loop_counts_match_the_primitive_census(kata):
    for program in JAXPR_PROGRAMS:
        got = kata.loop_primitives(_jaxpr(program))
        assert isinstance(got, list), f"{program}: expected a list, got {got!r}"
        census = primitive_census(_jaxpr(program))
        want = {name: census[name] for name in ("scan", "while") if census[name]}
        with check:
            assert dict(Counter(got)) == want, (
                f"{program}: {dict(Counter(got))}, the jaxpr holds {want} (nested ones too)"
            )


@pytest.mark.task("loop_primitives")
def test_static_bounds_scan_dynamic_bounds_while(kata):
    static = kata.loop_primitives(_jaxpr("static_bounds"))
    dynamic = kata.loop_primitives(_jaxpr("traced_bounds"))
    with check:
        assert static == ["scan"], f"fori_loop(0, 5): {static}; a known trip count is a scan"
    with check:
        assert dynamic == ["while"], f"fori_loop(0, n) with traced n: {dynamic}"


@pytest.mark.task("loop_primitives")
def test_open_and_closed_jaxprs_alike(kata):
    for program in ("nested_then_sequential", "inside_custom_jvp", "while_in_cond"):
        closed = _jaxpr(program)
        from_closed = kata.loop_primitives(closed)
        from_open = kata.loop_primitives(closed.jaxpr)
        with check:
            assert from_open == from_closed == JAXPR_PROGRAMS[program][1], (
                f"{program}: closed jaxpr {from_closed}, its .jaxpr {from_open}"
            )


# ---- count_traces -----------------------------------------------------------------------------


def _count(kata, make, static_argnums, calls) -> tuple[int, int]:
    """(the kata's count, how many times the function's body ran while the kata counted)."""
    traces = []
    got = kata.count_traces(make(traces), static_argnums, calls)
    assert type(got) is int, f"expected an int, got {got!r}"
    return got, len(traces)


@pytest.mark.task("count_traces")
def test_one_trace_per_static_value(kata):
    ns = [2, 3, 2, 3, 4, 2]
    got, ran = _count(kata, powers, (1,), [(vec(), n) for n in ns])
    with check:
        assert got == len(set(ns)), f"{got} traces for static values {ns}: one per new value"
    with check:
        assert got == ran, f"you counted {got}, the function body ran {ran} times"


@pytest.mark.task("count_traces")
def test_new_shapes_trace_again(kata):
    calls = [(vec(3), 2), (vec(4), 2), (vec(3), 2), (vec(4), 3)]
    got, ran = _count(kata, powers, (1,), calls)
    keys = {(x.shape, n) for x, n in calls}
    with check:
        assert got == len(keys), f"{got} traces, expected {len(keys)}: (shape, static value) pairs"
    with check:
        assert got == ran, f"you counted {got}, the function body ran {ran} times"


@pytest.mark.task("count_traces")
def test_static_values_that_hash_alike(kata):
    # -1 and -2 have the same hash in CPython but are different values: two traces.
    # 2, 2.0 and True compare equal to 2 or 1 and hash alike, yet their types differ: the jit
    # cache keeps them apart, so each traces.
    collide, ran_collide = _count(kata, powers, (1,), [(vec(), -1), (vec(), -2), (vec(), -1)])
    typed, ran_typed = _count(
        kata, powers, (1,), [(vec(), 2), (vec(), 2.0), (vec(), 2), (vec(), 1), (vec(), True)]
    )
    with check:
        assert collide == ran_collide == 2, (
            f"static -1, -2, -1: counted {collide}, the body ran {ran_collide} times, expected 2 "
            "(equal hashes are not equal values)"
        )
    with check:
        assert typed == ran_typed == 4, (
            f"static 2, 2.0, 2, 1, True: counted {typed}, the body ran {ran_typed} times, "
            "expected 4 (an int, a float and a bool are different cache keys)"
        )


@pytest.mark.task("count_traces")
def test_dynamic_arguments_trace_per_type(kata):
    # Not static: the value never matters, its abstract type does (shape, dtype, weak type).
    calls = [
        (vec(), 2),
        (vec(), 3),
        (vec(), 2.0),
        (vec(), np.float32(2.0)),
        (vec(), np.int32(2)),
        (vec(), 5.0),
        (vec(4, np.float16), 2.0),
    ]
    got, ran = _count(kata, scaler, (), calls)
    with check:
        assert got == ran == 5, (
            f"counted {got}, the body ran {ran} times, expected 5: weak int, weak float, "
            "f32, i32 and a new x; the values 2, 3 and 5.0 never retrace"
        )


@pytest.mark.task("count_traces")
def test_traces_are_not_compiles(kata):
    # One trace, three compiles: the same abstract types committed to three devices.
    if jax.device_count() < 3:
        pytest.skip("needs 3 CPU devices")
    calls = [(jax.device_put(vec(), d), 2.0) for d in jax.devices()[:3]]
    with compile_events.measured_compiles() as measured:
        got, ran = _count(kata, scaler, (), calls)
    with check:
        assert len(measured) >= 3, f"XLA compiled {len(measured)} times, expected 3"
    with check:
        assert got == ran == 1, (
            f"counted {got}, the body ran {ran} times, expected 1 trace: XLA compiled "
            f"{len(measured)} times (once per device), but JAX traced once"
        )


# ---- compile_counter --------------------------------------------------------------------------


def _count_of(counter) -> int:
    count = getattr(counter, "count", None)
    assert type(count) is int, f"the counter's .count should be an int, got {count!r}"
    return count


@pytest.mark.task("compile_counter")
def test_compile_counter_counts_backend_compiles(kata):
    f = doubler()
    lowered = f.lower(vec(6))  # traced and lowered before the block: only its compile is inside
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        for n in (3, 4, 3, 5, 4):
            f(vec(n))
        lowered.compile()
    count = _count_of(counter)
    with check:
        assert count == len(measured), (
            f"counted {count}, XLA compiled {len(measured)} times (three shapes traced "
            "and compiled, plus one program lowered earlier and compiled in the block: tracing "
            "and lowering are events of their own)"
        )
    with check:
        assert len(measured) == 4, f"three shapes and one pre-lowered program, {len(measured)}"


@pytest.mark.task("compile_counter")
def test_tracing_and_lowering_are_not_compiles(kata):
    f = doubler()
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        jax.make_jaxpr(lambda v: jnp.sin(v) + 1.0)(vec(3))
        jax.eval_shape(lambda v: v @ v, vec(5))
        f.lower(vec(7))  # traced and lowered, never compiled
    count = _count_of(counter)
    with check:
        assert len(measured) == 0, f"nothing should compile here, XLA compiled {len(measured)}"
    with check:
        assert count == 0, (
            f"counted {count}: make_jaxpr, eval_shape and lower() trace and lower but never compile"
        )


@pytest.mark.task("compile_counter")
def test_eager_ops_compile_without_tracing(kata):
    x = vec(9)
    with kata.compile_counter() as counter, compile_events.measured_compiles() as measured:
        jnp.sin(x)
        jnp.cos(x)
        jnp.sin(x)  # cached
    count = _count_of(counter)
    with check:
        assert len(measured) == 2, f"two eager ops, XLA compiled {len(measured)} programs"
    with check:
        assert count == len(measured), (
            f"counted {count}, XLA compiled {len(measured)}: eager ops compile small programs "
            "without a jit trace"
        )


@pytest.mark.task("compile_counter")
def test_compile_counter_stops_at_exit(kata):
    f = doubler()
    with kata.compile_counter() as first:
        f(vec(3))
    with kata.compile_counter() as second:
        f(vec(4))
        f(vec(3))
    f(vec(5))
    with check:
        assert _count_of(first) == 1, f"first counter: {first.count}, expected 1 (compiles "
        "after its block must not count)"
    with check:
        assert _count_of(second) == 1, f"second counter: {second.count}, expected 1 (a cache "
        "hit does not compile)"


@pytest.mark.task("compile_counter")
def test_nested_counters_and_live_counts(kata):
    f = doubler()
    with compile_events.measured_compiles() as everything:
        with kata.compile_counter() as outer:
            f(vec(3))
            seen_inside = _count_of(outer)
            with kata.compile_counter() as inner:
                f(vec(4))
                f(vec(10))
            f(vec(11))
        after_counters = len(everything)
        f(vec(12))  # the test's own listener must still hear this one
    with check:
        assert seen_inside == 1, f".count inside the block read {seen_inside} after one compile"
    with check:
        assert _count_of(inner) == 2, f"inner counter {inner.count}, expected 2"
    with check:
        assert _count_of(outer) == 4, f"outer counter {outer.count}, expected 4 (it keeps "
        "counting while and after an inner counter runs)"
    with check:
        assert len(everything) == after_counters + 1, (
            "a listener registered by someone else stopped hearing compiles after your counter "
            "exited: remove only your own listener"
        )


@pytest.mark.task("compile_counter")
def test_counter_stops_when_the_block_raises(kata):
    f = doubler()
    counter = None
    with pytest.raises(KeyError, match="leaving the block"):
        with kata.compile_counter() as counter:
            f(vec(3))
            raise KeyError("leaving the block")
    assert counter is not None
    f(vec(4))
    f(vec(5))
    with check:
        assert _count_of(counter) == 1, (
            f"counted {counter.count}: compiles after a block that raised still counted "
            "(unregister in a finally)"
        )


# ---- bucketed_mean ----------------------------------------------------------------------------

BUCKETS = (8, 16, 32)
ODD_BUCKETS = (40, 5, 12)  # unsorted, not powers of two


def _mean(kata, x, buckets) -> float:
    try:
        got = kata.bucketed_mean(x, buckets)
    except ValueError as error:
        pytest.fail(f"length {len(x)} fits a bucket of {buckets}, yet: ValueError {error}")
    assert type(got) is float, f"expected a Python float, got {type(got).__name__}"
    return got


def _new_compiles(kata, lengths, buckets) -> list[int]:
    """Backend compiles caused by each call, in order; each result is checked against NumPy."""
    counts = []
    for n in lengths:
        x = np.arange(n, dtype=np.float32) + 0.5
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        counts.append(len(measured))
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {buckets}: {got}, expected {np.mean(x)}"
            )
    return counts


@pytest.mark.task("bucketed_mean")
def test_bucketing_bounds_compiles(kata):
    first = _new_compiles(kata, (1,), BUCKETS)[0]  # bucket 8: whatever a first call compiles
    same_bucket = sum(_new_compiles(kata, (5, 8, 3, 7), BUCKETS))
    new_bucket = _new_compiles(kata, (9,), BUCKETS)[0]
    again = sum(_new_compiles(kata, (12, 16, 10), BUCKETS))
    with check:
        assert first >= 1, f"the first call compiled {first} programs: is anything jitted?"
    with check:
        assert same_bucket == 0, (
            f"new lengths in a bucket already compiled cost {same_bucket} compiles, expected 0: "
            "is the length static, or is an eager op run on each new length?"
        )
    with check:
        assert new_bucket >= 1, (
            "length 9 needs bucket 16, a new shape, yet nothing compiled: is every input "
            "padded to the same size? Short inputs then pay for the largest bucket"
        )
    with check:
        assert again == 0, (
            f"lengths 12, 16, 10 fit bucket 16, compiled for length 9; {again} compiles, expected 0"
        )


@pytest.mark.task("bucketed_mean")
def test_smallest_bucket_of_an_unsorted_tuple(kata):
    # buckets (40, 5, 12): 3 -> 5, 5 -> 5, 6 -> 12, 12 -> 12, 13 -> 40, 40 -> 40, 2 -> 5
    lengths = (3, 5, 4, 6, 12, 13, 40, 2)
    fits = {3: 5, 5: 5, 4: 5, 6: 12, 12: 12, 13: 40, 40: 40, 2: 5}
    counts = _new_compiles(kata, lengths, ODD_BUCKETS)
    seen = set()
    for n, compiles in zip(lengths, counts, strict=True):
        bucket = fits[n]
        with check:
            if bucket in seen:
                assert compiles == 0, (
                    f"length {n} fits bucket {bucket} (smallest bucket >= length, buckets "
                    f"{ODD_BUCKETS}), already compiled, yet {compiles} compiles"
                )
            else:
                assert compiles >= 1, (
                    f"length {n} is the first to need bucket {bucket} of {ODD_BUCKETS}, yet "
                    "nothing compiled: which bucket did you pad to?"
                )
        seen.add(bucket)


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_is_correct(kata):
    rng = np.random.default_rng(0)
    for n in (1, 7, 8, 9, 31, 32):
        x = rng.normal(size=n).astype(np.float32) * 10.0 + 100.0
        got = _mean(kata, x, BUCKETS)
        with check:
            assert got == pytest.approx(float(np.mean(x)), rel=1e-5), (
                f"length {n}, buckets {BUCKETS}: {got}, expected {np.mean(x)} (padding must "
                "not count)"
            )


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_other_dtypes(kata):
    rng = np.random.default_rng(3)
    for dtype in (np.float16, np.float32, np.float64):
        for n in (2, 11):
            x = (rng.normal(size=n) + 4.0).astype(dtype)
            got = _mean(kata, x, BUCKETS)
            with check:
                assert got == pytest.approx(float(np.mean(x.astype(np.float64))), rel=2e-3), (
                    f"{np.dtype(dtype).name} length {n}: {got}, expected {np.mean(x)}"
                )


def _fresh_values(fresh, n: int, dtype) -> np.ndarray:
    """Small integers (exact in every float dtype), zeros among them."""
    x = np.array([fresh.randint(-3, 4) for _ in range(n)], dtype=dtype)
    x[fresh.randrange(n)] = 0
    return x


@pytest.mark.task("bucketed_mean")
def test_bucketed_mean_on_fresh_buckets_and_lengths(kata, fresh):
    """Buckets drawn in any order (sizes no other test uses, so each is new to this process),
    lengths in every bucket and at its edges, a float dtype, values with zeros: the mean must
    be NumPy's, a bucket's first length must compile and the next ones must not."""
    buckets = tuple(fresh.sample(range(41, 161), fresh.randint(2, 4)))
    dtype = fresh.choice((np.float16, np.float32, np.float64))
    edges = [0, *sorted(buckets)]
    lengths = []
    for low, high in itertools.pairwise(edges):
        lengths += [high, fresh.randint(low + 1, high), fresh.randint(low + 1, high)]
    fresh.shuffle(lengths)
    seen = set()
    for n in lengths:
        x = _fresh_values(fresh, n, dtype)
        bucket = min(b for b in buckets if b >= n)
        case = f"length {n} ({np.dtype(dtype).name}), buckets {buckets}"
        with compile_events.measured_compiles() as measured:
            got = _mean(kata, x, buckets)
        want = float(np.mean(x.astype(np.float64)))
        if got != pytest.approx(want, rel=2e-3, abs=1e-3):
            pytest.fail(f"{case}, x {x.tolist()}: mean {got}, NumPy says {want}; {fresh.where()}")
        if bucket in seen and measured:
            pytest.fail(
                f"{case}: bucket {bucket} was compiled already, yet {len(measured)} compiles "
                f"(which bucket did you pad to? is anything static?); {fresh.where()}"
            )
        if bucket not in seen and not measured:
            pytest.fail(
                f"{case}: the first length needing bucket {bucket} (smallest bucket >= length), "
                f"yet nothing compiled: which size did you pad to?; {fresh.where()}"
            )
        seen.add(bucket)
    too_long = max(buckets) + fresh.randint(1, 20)
    with pytest.raises(ValueError):
        kata.bucketed_mean(np.ones(too_long, dtype), buckets)
        pytest.fail(f"length {too_long} exceeds buckets {buckets}: expected ValueError")


@pytest.mark.task("bucketed_mean")
def test_too_long_raises(kata):
    for buckets, n in ((BUCKETS, 33), (ODD_BUCKETS, 41), ((3,), 4)):
        with pytest.raises(ValueError):
            kata.bucketed_mean(np.ones(n, np.float32), buckets)


# ---- explain_miss -----------------------------------------------------------------------------


def _explain(kata, f, first, second) -> list[str]:
    got = kata.explain_miss(f, first, second)
    assert isinstance(got, list) and all(isinstance(m, str) for m in got), (
        f"expected a list of str, got {got!r}"
    )
    return got


def _one_explanation(kata, f, first, second) -> str:
    messages = _explain(kata, f, first, second)
    assert len(messages) == 1, (
        f"{len(messages)} explanations, expected one for the second call: {messages}"
    )
    return messages[0]


@pytest.mark.task("explain_miss")
def test_explains_a_shape_miss(kata):
    text = _one_explanation(kata, mul, (vec(3), 2.0), (vec(4), 2.0))
    with check:
        assert "at x" in text, f"the explanation should name argument x:\n{text}"
    with check:
        assert "f32[4]" in text and "f32[3]" in text, f"expected f32[4] and f32[3] in:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_dtype_miss(kata):
    def scale(x, y):
        return x * y

    text = _one_explanation(kata, scale, (vec(3), 2.0), (vec(3, np.float16), 2.0))
    with check:
        assert "at x" in text, f"the explanation should name argument x:\n{text}"
    with check:
        assert "f16[3]" in text and "f32[3]" in text, f"expected f16[3] and f32[3] in:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_weak_type_miss(kata):
    def shift(x, y):
        return x + y

    text = _one_explanation(kata, shift, (vec(3), 2.0), (vec(3), np.float32(2.0)))
    with check:
        assert "at y" in text, f"the explanation should name argument y:\n{text}"
    with check:
        assert "weak_type" in text, f"a Python float is weakly typed, np.float32 is not:\n{text}"


@pytest.mark.task("explain_miss")
def test_explains_a_pytree_miss(kata):
    def pair(t):
        return t[0] * t[1]

    text = _one_explanation(kata, pair, ((vec(3), vec(3)),), ([vec(3), vec(3)],))
    with check:
        assert "list" in text and "tuple" in text, f"a tuple became a list:\n{text}"


@pytest.mark.task("explain_miss")
def test_only_explanations_are_returned(kata):
    def noisy(x):
        logging.getLogger("jax").warning("noisy traced again")  # a log record, not a miss
        return x + 1.0

    messages = _explain(kata, noisy, (vec(3),), (vec(5),))
    with check:
        assert len(messages) == 1 and "noisy traced again" not in messages[0], (
            f"expected only the cache-miss explanation, got {messages}"
        )


@pytest.mark.task("explain_miss")
def test_no_miss_no_explanation(kata):
    original = jax.config.jax_explain_cache_misses
    found = {}
    try:
        for before in (False, True):
            jax.config.update("jax_explain_cache_misses", before)
            messages = _explain(kata, mul, (vec(3), 2.0), (vec(3), 3.0))
            found[before] = (messages, jax.config.jax_explain_cache_misses)
    finally:
        jax.config.update("jax_explain_cache_misses", original)  # keep other tests quiet
    for before, (messages, after) in found.items():
        with check:
            assert messages == [], f"a new Python float is not a new cache key; got {messages}"
        with check:
            assert after == before, (
                f"the setting was {before} before the call and {after} after it: restore "
                "the value you found, not a fixed one"
            )


# ---- predict_while_loops and predict_compiles: predictions checked against XLA -----------------
# Each prediction is asked for one case at a time (the harness refuses the compiler around every
# call); the case is then compiled or run here. Fixed cases (the programs the task started with)
# and cases drawn fresh every run over the whole domain the docstrings state, a few per trap.


def _predicted(kata, task: str, case) -> int:
    predicted = getattr(kata, task)(case)
    assert type(predicted) is int, f"{task}: expected an int, got {predicted!r}"
    return predicted


def _whiles_in(program: LoopProgram) -> int:
    """`while` instructions in XLA's module of the compiled program, every computation."""
    return _whiles_of_text(repr(program), program)  # the repr tells unroll=True from unroll=1


@functools.cache
def _whiles_of_text(_key: str, program: LoopProgram) -> int:
    compiled = jax.jit(build(program)).lower(*loop_arguments()).compile()
    return xla_counts.opcode_counts(compiled)["while"]


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_on_the_bank(kata):
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: while counts measured on XLA:CPU's optimized HLO")
    for name, program in LOOP_BANK.items():
        predicted = _predicted(kata, "predict_while_loops", program)
        if predicted != _whiles_in(program):
            pytest.fail(
                f"{name} ({program.describe()}): you predicted {predicted} while loop(s); the "
                "optimized HLO has another number (which loops does XLA unroll or fold, and "
                "which stay?)"
            )


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_on_fresh_programs(kata, fresh):
    """One program drawn per situation the contract allows, every run (strata.loop_strata: each
    loop kind at 0, 1 and more trips, unrolls with and without a remainder, empty and nested
    bodies, every wrap, grad chains), and one drawn over the whole domain."""
    if jax.default_backend() != "cpu":
        pytest.skip("CPU-only fact: while counts measured on XLA:CPU's optimized HLO")
    programs = {**loop_strata(fresh), "anything the domain allows": draw_loop_program(fresh)}
    for situation, program in programs.items():
        predicted = _predicted(kata, "predict_while_loops", program)
        compiled = _whiles_in(program)
        if predicted != compiled:
            pytest.fail(
                f"{situation}: {program.describe()}: you predicted {predicted} while loop(s), "
                f"the optimized HLO holds {compiled}; {fresh.where()}"
            )


@pytest.mark.task("predict_while_loops")
def test_predict_while_loops_does_not_compile(kata):
    for program in (LOOP_BANK["fori_loop inside fori_loop"], LOOP_BANK["grad of a tanh fori_loop"]):
        with compiler_refused("predict_while_loops"):
            kata.predict_while_loops(program)


@functools.cache
def _bank_compiles(name: str) -> int:
    return compile_events.compiles_of(lambda: run_calls(COMPILE_SCENARIOS[name]))


@pytest.mark.task("predict_compiles")
def test_predict_compiles_on_the_bank(kata):
    if jax.device_count() < 3:
        pytest.skip("needs 3 devices: one scenario commits the same shapes to three of them")
    for name, calls in COMPILE_SCENARIOS.items():
        predicted = _predicted(kata, "predict_compiles", list(calls))
        if predicted != _bank_compiles(name):
            pytest.fail(
                f"{name}: you predicted {predicted} compile(s); jax.monitoring counted another "
                "number (what is in jit's cache key: shapes, dtypes, static values, devices?)"
            )


@pytest.mark.task("predict_compiles")
def test_predict_compiles_on_fresh_patterns(kata, fresh):
    """One pattern drawn per respect of jit's cache key, every run (strata.call_strata: two
    calls differing in exactly that respect, the rest drawn; APIs, wrappers, lambdas and
    devices likewise), and one drawn over the whole domain."""
    if jax.device_count() < 3:
        pytest.skip("needs 3 devices: the patterns commit arguments to devices 0, 1 and 2")
    patterns = {**call_strata(fresh), "anything the domain allows": draw_calls(fresh)}
    for situation, calls in patterns.items():
        predicted = _predicted(kata, "predict_compiles", list(calls))
        measured = compile_events.compiles_of(lambda calls=calls: run_calls(calls))
        if predicted != measured:
            steps = "; ".join(f"{n}. {call.describe()}" for n, call in enumerate(calls, 1))
            pytest.fail(
                f"{situation}, from empty caches: {steps}. You predicted {predicted} "
                f"compile(s), jax.monitoring counted {measured}; {fresh.where()}"
            )


@pytest.mark.task("predict_compiles")
def test_predict_compiles_does_not_compile(kata):
    for name in ("same shapes committed to 3 devices", "lower and compile twice by hand"):
        with compiler_refused("predict_compiles"):
            kata.predict_compiles(list(COMPILE_SCENARIOS[name]))

"""Red team, phase 6, round 11: plausible wrong answers of kinds earlier rounds did not write."""

from __future__ import annotations

import math
import time

import jax
import numpy as np

from kata_harness.decoys import wrong
from xla_inspect.parse import parse_hlo


def _rt11_ca(compiled):
    ca = compiled.cost_analysis()
    if isinstance(ca, (list, tuple)):
        ca = ca[0]
    return dict(ca or {})


def _rt11_timing(me, eager_s, jit_s, repeats, ratio):
    """The Timing of the module this answer was swapped into (else the stub's)."""
    import sys

    kw = dict(eager_s=eager_s, jit_s=jit_s, repeats=repeats, ratio=ratio)
    for mod in list(sys.modules.values()):
        try:
            if getattr(mod, "eager_vs_jit", None) is me and hasattr(mod, "Timing"):
                return mod.Timing(**kw)
        except Exception:  # noqa: BLE001
            continue
    from katas.phase6.kata import Timing

    return Timing(**kw)


def _rt11_block(out):
    return jax.tree_util.tree_map(
        lambda a: a.block_until_ready() if hasattr(a, "block_until_ready") else a, out
    )


# ----------------------------------------------------------------------------------- cost_of


@wrong(
    "cost_of",
    why="'bytes_accessed ... read from the compiled program': takes the memory traffic as the "
    "buffers going in and out (memory_analysis argument + output bytes), i.e. one kernel that "
    "reads every argument once; x - x.mean() on f32[256,256] gives 524292, XLA says 786440 "
    "(two kernels read x twice); an unused or sliced argument is also off",
)
def _rt11_cost_of_bytes_from_buffers(f, *args):
    c = jax.jit(f).lower(*args).compile()
    ca = _rt11_ca(c)
    m = c.memory_analysis()
    return {
        "flops": float(ca.get("flops", 0.0)),
        "transcendentals": float(ca.get("transcendentals", 0.0)),
        "bytes_accessed": float(m.argument_size_in_bytes + m.output_size_in_bytes),
    }


# ---------------------------------------------------------------------------- fusion_traffic


def _rt11_prim_fn(eqn):
    from jax.extend.core import Literal

    consts = {i: v.val for i, v in enumerate(eqn.invars) if isinstance(v, Literal)}
    n = len(eqn.invars)

    def fn(*vals):
        it = iter(vals)
        full = [consts[i] if i in consts else next(it) for i in range(n)]
        out = eqn.primitive.bind(*full, **eqn.params)
        return tuple(out) if eqn.primitive.multiple_results else out

    return fn


@wrong(
    "fusion_traffic",
    why="'op_by_op: ... over the steps, each compiled as its own program': splits every step "
    "into its jaxpr primitives and compiles each primitive alone ('an eager runtime runs each "
    "op'), so a step holding several ops is not one program; STEP_BANK 'bf16, several ops and "
    "a row sum in one step' on bf16[40,24] counts v*2 and +1 round trips the contract does not",
)
def _rt11_fusion_traffic_per_primitive(steps, x):
    from jax.extend.core import Literal

    total = 0.0
    v = x
    for step in steps:
        closed = jax.make_jaxpr(step)(v)
        env = {}
        for var, val in zip(closed.jaxpr.invars, [v]):
            env[var] = val
        for var, val in zip(closed.jaxpr.constvars, closed.consts):
            env[var] = val
        for eqn in closed.jaxpr.eqns:
            ins = [env[a] for a in eqn.invars if not isinstance(a, Literal)]
            fn = _rt11_prim_fn(eqn)
            total += float(_rt11_ca(jax.jit(fn).lower(*ins).compile()).get("bytes accessed", 0.0))
            out = jax.jit(fn)(*ins)
            outs = out if eqn.primitive.multiple_results else (out,)
            for ov, o in zip(eqn.outvars, outs):
                env[ov] = o
        res = [env[o] if not isinstance(o, Literal) else o.val for o in closed.jaxpr.outvars]
        v = res[0]

    def fused(u):
        for s in steps:
            u = s(u)
        return u

    ca = _rt11_ca(jax.jit(fused).lower(x).compile())
    return {"op_by_op": total, "fused": float(ca.get("bytes accessed", 0.0))}


# ----------------------------------------------------------------------------- memory_report


@wrong(
    "memory_report",
    why="'compiled for args': closes over Python scalars (as static values, so jit 'does not "
    "trace them') and compiles only the array arguments, remapping donate_argnums; MEMORY_BANK "
    "'int8 and a python scalar' (3, s8[10,7]) gives argument 70, XLA plans 74 (the weakly typed "
    "scalar is a 4-byte parameter)",
)
def _rt11_memory_report_scalars_static(f, *args, donate_argnums=()):
    keep = [i for i, a in enumerate(args) if not isinstance(a, (int, float, complex, bool))]

    def g(*arrays):
        full = list(args)
        for i, a in zip(keep, arrays):
            full[i] = a
        return f(*full)

    donate = tuple(keep.index(i) for i in donate_argnums if i in keep)
    m = (
        jax.jit(g, donate_argnums=donate)
        .lower(*[args[i] for i in keep])
        .compile()
        .memory_analysis()
    )
    return {
        "argument": int(m.argument_size_in_bytes),
        "output": int(m.output_size_in_bytes),
        "temp": int(m.temp_size_in_bytes),
        "alias": int(m.alias_size_in_bytes),
    }


# ------------------------------------------------------------------------ aliased_parameters


def _rt11_header_entries(hlo_text):
    import re

    attrs = parse_hlo(hlo_text).attributes
    raw = attrs.get("input_output_alias", "") if hasattr(attrs, "get") else ""
    if not raw:
        m = re.search(r"input_output_alias=\{(.*?\))\s*\}", hlo_text.split("\n", 1)[0])
        raw = m.group(1) if m else ""
    return re.findall(r"\{([\d,\s]*)\}\s*:\s*\((\d+)\s*,\s*\{[\d,\s]*\}\s*,\s*[\w-]+\)", raw)


@wrong(
    "aliased_parameters",
    why="'{parameter number: output shape index}' with 'give ()' / tuple[int, ...]: builds the "
    "output index as a list ([1] instead of (1,)), and a list never equals a tuple; "
    "'outputs rotated' gives {0: [1], 1: [2], 2: [0]}, want {0: (1,), 1: (2,), 2: (0,)}",
)
def _rt11_aliased_parameters_list_index(hlo_text):
    out = {}
    for o, p in _rt11_header_entries(hlo_text):
        out[int(p)] = [int(t) for t in o.replace(" ", "").split(",") if t]
    return out


# -------------------------------------------------------------------------- naive_temp_bytes

_RT11_BITS = {"pred": 8, "c64": 64, "c128": 128}


def _rt11_bits(dtype):
    import re

    d = str(dtype).lower()
    if d in _RT11_BITS:
        return _RT11_BITS[d]
    m = re.match(r"[a-z]+(\d+)", d)
    return int(m.group(1)) if m else 32


def _rt11_size_two_per_byte(si):
    if si.is_tuple:
        return sum(_rt11_size_two_per_byte(e) for e in (si.elements or ()))
    n = math.prod(int(d) for d in (si.dims or ()))
    if "E(" in str(si.layout or ""):
        return (n + 1) // 2  # "packed: two elements to a byte"
    return n * ((_rt11_bits(si.dtype) + 7) // 8)


@wrong(
    "naive_temp_bytes",
    why="'unless its layout packs the elements ... 4 bits an element': treats any packed "
    "layout as two elements a byte instead of the dtype's bit width; an s2[9]{0:E(2)} "
    "intermediate (XLA:CPU packs jnp int2 so: 18 bits, 3 bytes) gives 5",
)
def _rt11_naive_temp_bytes_packed_two_per_byte(hlo_text):
    entry = parse_hlo(hlo_text).entry
    instrs = list(entry.instructions)
    root = next(i for i in instrs if i.is_root)
    outs = {root.name}
    if root.opcode == "tuple":
        outs |= {str(o).lstrip("%") for o in root.operands}
    total = 0
    for ins in instrs:
        if ins.name.lstrip("%") in outs or ins.name in outs:
            continue
        if ins.opcode in ("parameter", "constant", "bitcast", "tuple", "get-tuple-element"):
            continue
        total += _rt11_size_two_per_byte(ins.shape_info)
    return total


# ----------------------------------------------------------------------------- eager_vs_jit


@wrong(
    "eager_vs_jit",
    why="'repeats: timed calls of each kind': reports the timed calls of both kinds together "
    "(2 * repeats); eager_vs_jit(jnp.sin, (x,), 5) says repeats=10, want 5",
)
def _rt11_eager_vs_jit_repeats_both_kinds(f, args, repeats):
    g = jax.jit(f)
    _rt11_block(f(*args))
    _rt11_block(g(*args))
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt11_block(f(*args))
    eager = (time.perf_counter() - t0) / repeats
    t0 = time.perf_counter()
    for _ in range(repeats):
        _rt11_block(g(*args))
    jit = (time.perf_counter() - t0) / repeats
    return _rt11_timing(_rt11_eager_vs_jit_repeats_both_kinds, eager, jit, 2 * repeats, eager / jit)


@wrong(
    "eager_vs_jit",
    why="'read with time.perf_counter()': times with time.process_time (CPU seconds of every "
    "thread of the process, not elapsed time, and 1/64 s granular on some systems): XLA:CPU's "
    "worker threads inflate it, idle waits vanish from it; a clock faked through perf_counter "
    "is never read",
)
def _rt11_eager_vs_jit_process_time(f, args, repeats):
    g = jax.jit(f)
    _rt11_block(f(*args))
    _rt11_block(g(*args))
    t0 = time.process_time()
    for _ in range(repeats):
        _rt11_block(f(*args))
    eager = (time.process_time() - t0) / repeats
    t0 = time.process_time()
    for _ in range(repeats):
        _rt11_block(g(*args))
    jit = (time.process_time() - t0) / repeats
    eager = eager or 1e-9
    jit = jit or 1e-9
    return _rt11_timing(_rt11_eager_vs_jit_process_time, eager, jit, repeats, eager / jit)


# ------------------------------------------------------------------------ predict_chain_temp


@wrong(
    "predict_chain_temp",
    why="'chains of any depth': special-cases depth 1 only, so depth 0 (x returned as is, no "
    "product, temp 0) falls into the even-depth rule; rows=16, width=16, depth=0, itemsize=4 "
    "gives 2048, XLA plans 0",
)
def _rt11_predict_chain_temp_depth_zero_even(rows, width, depth, itemsize):
    x = rows * width * itemsize
    if depth == 1:
        return 0
    if depth == 2 or depth % 2 == 1:
        return x
    return 2 * x


@wrong(
    "predict_chain_temp",
    why="'which allocation besides temp can hold one': simulates a greedy allocator that puts "
    "each product in the lowest free slot, the output allocation being slot 0 only for the last "
    "product; gets depth 4 right (2 buffers) but says depth 6 needs 3 (p1..p5 cycling), "
    "rows=width=16 f32 depth 6 gives 3072, XLA plans 2048",
)
def _rt11_predict_chain_temp_greedy_slots(rows, width, depth, itemsize):
    x = rows * width * itemsize
    if depth < 2:
        return 0
    if depth == 2 or depth % 2 == 1:
        return x
    return (2 + (depth - 4) // 2) * x


# --------------------------------------------------------------------- predict_bytes_accessed


def _rt11_correct_bytes(program, x):
    r, c = (int(d) for d in x.shape)
    n = r * c
    it = int(np.dtype(x.dtype).itemsize)
    if program in ("tanh(exp(2x + 1) - 3)", "exp(x)", "x.T + 1", "x * 2 with an unused y"):
        return 2 * n * it
    if program == "x + y":
        return 3 * n * it
    if program == "x + b":
        return 2 * n * it + c * it
    if program == "x.sum(axis=0)":
        return n * 4 + c * 4
    if program == "x.sum()":
        return n * 4 + 4
    if program == "x.astype(bf16) * 2":
        return n * it + n * 2
    if program == "x.astype(f32) * 0.5":
        return n * it + n * 4
    if program == "x[:, : x.shape[1] // 2] * 2":
        return 2 * r * (c // 2) * it
    if program == "x - x.mean()":
        return 3 * n * 4 + 8
    raise KeyError(program)


@wrong(
    "predict_bytes_accessed",
    why="'which programs need more than one kernel': models x - x.mean() as three kernels "
    "(sum, then a scalar divide by n, then the subtraction), the divide reading and writing a "
    "4-byte scalar; f32[256,256] gives 786448, XLA says 786440 (the divide fuses into the "
    "reduction's kernel)",
)
def _rt11_predict_bytes_accessed_mean_divide_kernel(program, x):
    b = _rt11_correct_bytes(program, x)
    if program == "x - x.mean()":
        b += 8
    return b


def _rt11_header_entries_full(hlo_text):
    import re

    first = hlo_text.split("\n", 1)[0]
    m = re.search(r"input_output_alias=\{(.*?\))\s*\}", first)
    raw = m.group(1) if m else ""
    return re.findall(r"\{([\d,\s]*)\}\s*:\s*\((\d+)\s*,\s*\{([\d,\s]*)\}\s*,\s*[\w-]+\)", raw)


@wrong(
    "aliased_parameters",
    why="'{parameter number: output shape index}': keeps the index inside the parameter so as "
    "not to lose it, keying an entry whose second braces are not empty by (parameter, *index); "
    "HANDWRITTEN_ALIAS ({2}: (0, {1}, must-alias)) gives {1: (0,), (0, 1): (2,)}, want "
    "{1: (0,), 0: (2,)}",
)
def _rt11_aliased_parameters_keyed_with_inner_index(hlo_text):
    out = {}
    for o, p, inner in _rt11_header_entries_full(hlo_text):
        idx = tuple(int(t) for t in o.replace(" ", "").split(",") if t)
        pin = tuple(int(t) for t in inner.replace(" ", "").split(",") if t)
        out[(int(p), *pin) if pin else int(p)] = idx
    return out

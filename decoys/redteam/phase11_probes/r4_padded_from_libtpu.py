# probe: padded_bytes: asks libtpu (a deviceless compile for one v5e chip, memory_analysis of an identity program) for the padded size instead of reading the given layout: a reading task has no compiler refusal, so this measures the layout the compiler picks, not the one in the text
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

COLLECTIVES = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
NO_WORK = ("get-tuple-element", "bitcast", "tuple", "parameter", "constant")
MOVES = (
    "parameter", "constant", "bitcast", "broadcast", "reshape", "transpose", "copy", "convert",
    "fusion", "tuple", "get-tuple-element", "custom-call",
)  # fmt: skip

# ---- shared readers (the careful parts; each answer below breaks one clause) ----------------


def _bits(dtype: str) -> float:
    if dtype == "pred":
        return 8
    digits = re.search(r"\d+", dtype)
    return int(digits.group()) if digits else 8


def _async_kind(module, inst):
    """The collective an ENTRY start instruction starts, else None."""
    op = inst.opcode
    if op == "fusion" and inst.attribute("kind") == "kCustom":
        comps = reachable(module, inst.called_computations)
        body = [i for c in comps for i in c.instructions]
        if any(
            i.opcode == "custom-call" and "AsyncCollectiveStart" in i.attributes_text for i in body
        ):
            for i in body:
                if i.opcode in COLLECTIVES:
                    return i.opcode
        return None
    if op == "async-start":
        comps = reachable(module, inst.called_computations)
        for c in comps:
            for i in c.instructions:
                if i.opcode in COLLECTIVES:
                    return i.opcode
        return None
    if op.endswith("-start") and op.removesuffix("-start") in COLLECTIVES:
        return op.removesuffix("-start")
    return None


def _channel_of_fusion(module, inst):
    for c in reachable(module, inst.called_computations):
        for i in c.instructions:
            if i.opcode in COLLECTIVES:
                return i.attribute("channel_id")
    return None


def _holds_done(module, inst):
    comps = reachable(module, inst.called_computations)
    return any(
        i.opcode == "custom-call" and "AsyncCollectiveDone" in i.attributes_text
        for c in comps
        for i in c.instructions
    )


def _starts(module, comps=None):
    found = {}
    for comp in comps if comps is not None else (module.entry,):
        for inst in comp.instructions:
            kind = _async_kind(module, inst)
            if kind is not None:
                found[inst.name] = kind
    return found


def _done_index(module, entry, k, start):
    insts = entry.instructions
    if start.opcode == "fusion":
        channel = _channel_of_fusion(module, start)
        for j in range(k + 1, len(insts)):
            other = insts[j]
            if (
                other.opcode == "fusion"
                and _holds_done(module, other)
                and _channel_of_fusion(module, other) == channel
            ):
                return j
        return None
    for j in range(k + 1, len(insts)):
        if insts[j].opcode.endswith("-done") and start.name in insts[j].operands:
            return j
    return None


def _overlap(hlo_text, skip=NO_WORK, pair=None):
    module = parse_hlo(hlo_text)
    entry = module.entry
    insts = entry.instructions
    starts = _starts(module)
    out = {}
    for k, inst in enumerate(insts):
        if inst.name not in starts:
            continue
        j = (pair or _done_index)(module, entry, k, inst)
        if j is None:
            continue
        out[inst.name] = [i.name for i in insts[k + 1 : j] if i.opcode not in skip]
    return out


def _bytes_of(shape: Shape, skip_scalars=False, bits=_bits) -> float:
    if shape.is_tuple:
        return sum(_bytes_of(e, skip_scalars, bits) for e in shape.elements)
    if skip_scalars and not shape.dims:
        return 0
    return math.prod(shape.dims) * bits(shape.dtype) / 8


def _group_spelling(text: str, devices: int):
    text = text.strip()
    if text in ("{}", ""):
        return [list(range(devices))]
    if text.startswith("{"):
        return [[int(x) for x in g.split(",") if x.strip()] for g in re.findall(r"\{([\d,\s]*)\}", text[1:-1])]
    if text.startswith("["):
        m = re.match(r"\[(\d+),(\d+)\]<=\[([\d,]+)\](?:T\(([\d,]+)\))?", text)
        g, s = int(m.group(1)), int(m.group(2))
        dims = [int(d) for d in m.group(3).split(",")]
        arr = np.arange(math.prod(dims)).reshape(dims)
        if m.group(4):
            arr = arr.transpose([int(p) for p in m.group(4).split(",")])
        return arr.reshape(g, s).tolist()
    m = re.match(r"mesh\[(.*?)\]\s*\{(.*?)\}", text)
    axes = [(a, int(n)) for a, n in re.findall(r"'(\w+)'=(\d+)", m.group(1))]
    names = [a for a in re.findall(r"'(\w+)'", m.group(2))]
    order = [a for a, _ in axes]
    arr = np.arange(math.prod(n for _, n in axes)).reshape([n for _, n in axes])
    rest = [order.index(a) for a in order if a not in names]
    named = [order.index(a) for a in names]
    arr = arr.transpose(rest + named)
    size = math.prod(axes[i][1] for i in named)
    return arr.reshape(-1, size).tolist()


def _devices(module) -> int:
    attrs = module.attributes
    return int(attrs.get("replica_count", 1)) * int(attrs.get("num_partitions", 1))


def _groups(hlo_text, devices=_devices, spelling=_group_spelling):
    module = parse_hlo(hlo_text)
    n = devices(module)
    out = {}
    for comp in module.computations:
        for inst in comp.instructions:
            groups = inst.attribute("replica_groups")
            channel = inst.attribute("channel_id")
            if groups is None or channel is None or int(channel) in out:
                continue
            out[int(channel)] = spelling(groups, n)
    return out


def _padded(shape_text, bits=_bits, first_tile_sizes=None, prod=math.prod):
    shape = Shape(shape_text)
    dims = list(shape.dims)
    layout = shape.layout or ""
    tiles = re.findall(r"\(([\d,]*)\)", layout.partition(":")[2].split("S(")[0])
    if "T(" in layout and tiles:
        first = [int(t) for t in tiles[0].split(",")]
        if first_tile_sizes is not None:
            first = first[-first_tile_sizes:]
        order = shape.minor_to_major
        for size, dim in zip(reversed(first), order, strict=False):
            dims[dim] = -(-dims[dim] // size) * size
    total = prod(dims) * bits(shape.dtype)
    return int(total // 8)




def _collective_bytes(hlo_text, key=None, skip_scalars=False, bits=_bits):
    module = parse_hlo(hlo_text)
    seen = set()
    out: dict[str, float] = {}
    for comp in module.computations:
        for inst in comp.instructions:
            if inst.opcode not in COLLECTIVES:
                continue
            channel = inst.attribute("channel_id")
            k = key(inst) if key else (channel if channel is not None else ("solo", id(inst)))
            if k in seen:
                continue
            seen.add(k)
            out[inst.opcode] = out.get(inst.opcode, 0) + _bytes_of(
                Shape(inst.shape), skip_scalars, bits
            )
    return {k: int(v) for k, v in out.items()}


def _moved(hlo_text, every=False, space=lambda t: "S(1)" in t, through=()):
    module = parse_hlo(hlo_text)
    out = {}
    for comp in module.computations if every else (module.entry,):
        for inst in comp.instructions:
            if inst.opcode not in ("copy-start", "copy") or not inst.operands:
                continue
            src = comp.instruction(inst.operands[0])
            while src is not None and src.opcode in through and src.operands:
                src = comp.instruction(src.operands[0])
            if src is None or src.opcode != "parameter":
                continue
            shape = Shape(inst.shape)
            dest = shape.elements[0] if shape.is_tuple else shape
            if not space(dest.layout or ""):
                continue
            number = int(src.payload) if src.payload else int(re.search(r"\d+", src.attributes_text).group())
            if inst.opcode == "copy":
                out[number] = "copy"
            elif inst.attribute("cross_program_prefetch_index") is not None:
                out[number] = "cross-program prefetch"
            else:
                out[number] = "prefetch"
    return out


def _matmul_table(hlo_text):
    module = parse_hlo(hlo_text)
    out = {}
    for inst in module.entry.instructions:
        if inst.opcode != "fusion":
            continue
        body = [i for c in reachable(module, inst.called_computations) for i in c.instructions]
        if not any(i.opcode == "convolution" for i in body):
            continue
        out[inst.name] = sorted(
            {
                i.opcode
                for i in body
                if i.opcode != "convolution"
                and i.opcode not in MOVES
                and i.opcode.removesuffix("-start").removesuffix("-done") not in COLLECTIVES
            }
        )
    return out


def async_collectives(hlo_text: str) -> dict[str, str]:
    """The collectives XLA made asynchronous in the ENTRY computation of optimized HLO.

    Return {start instruction name: collective opcode} ("all-gather", "all-reduce",
    "reduce-scatter", "all-to-all", "collective-permute"). Two spellings: XLA:TPU wraps the
    collective in a `kind=kCustom` fusion whose called computation holds it and a custom-call
    with `custom_call_target="AsyncCollectiveStart"`, root or not (the name of that fusion is
    the start);
    elsewhere the start is an op such as `all-gather-start` or `collective-permute-start`.
    An async `copy-start` moves memory, it is no collective. No async collective: {}.
    Names say nothing: the tests rename every instruction and computation (`%n17`).
    """
    return _starts(parse_hlo(hlo_text))

def overlapped_work(hlo_text: str) -> dict[str, list[str]]:
    """What XLA scheduled while each async collective was in flight.

    For every start of `async_collectives`: the names of the ENTRY instructions strictly between
    the start and its done, in the order the module prints them (a module with
    `is_scheduled=true` prints ENTRY in schedule order), leaving out those that do no work:
    get-tuple-element, bitcast, tuple, parameter, constant. The done of a TPU start is the
    kCustom fusion whose body holds `AsyncCollectiveDone` and the same collective (the same
    `channel_id`); the done of an `X-start` op is the `X-done` op that takes it as operand.
    """
    return _overlap(hlo_text)

def matmul_fusions(hlo_text: str) -> dict[str, list[str]]:
    """The matmuls of TPU HLO and the arithmetic XLA fused into them.

    XLA:TPU prints a dot as a `convolution`. For every ENTRY `fusion` whose called computations,
    nested ones included, hold a convolution: {fusion name: sorted distinct opcodes of the other
    work in those computations}, leaving out the convolution itself and the opcodes that only
    move, view or wrap data: parameter, constant, bitcast, broadcast, reshape, transpose, copy,
    convert, fusion, tuple, get-tuple-element, custom-call and the collectives.
    """
    return _matmul_table(hlo_text)

def device_groups(hlo_text: str) -> dict[int, list[list[int]]]:
    """Which devices talk to each other: {channel_id: replica groups} for every collective with
    a `replica_groups` attribute, in any computation.

    A group is a list of device numbers (positions in the device assignment, 0..N-1). XLA prints
    groups three ways: explicit `{{0,1},{2,3}}`; an iota list `[G,S]<=[dims]` or
    `[G,S]<=[dims]T(perm)`; and mesh axes `mesh['a'=2,'b'=2] {'b'}`. Give each group's devices in
    the order the spelling lists them (the order a gather concatenates); the groups themselves in
    any order. An empty `replica_groups={}` is one group of every device, 0..N-1, N being the
    module header's `replica_count` times its `num_partitions` (one when not printed). A
    collective copied into several computations keeps its channel_id: one entry.
    """
    return _groups(hlo_text)

def collective_bytes(hlo_text: str) -> dict[str, int]:
    """Bytes of data each device receives from collectives: {opcode: bytes}, summed per opcode.

    Count every all-gather, all-reduce, reduce-scatter, all-to-all and collective-permute of
    any computation once per channel_id (the TPU async wrappers copy one collective into several
    bodies); one without a channel_id is a collective of its own. Its bytes are those of its
    result on one device, logical: element count times the dtype's width (a tuple result: the
    sum of its elements), never the padded tiles; the width in bits, so an s4 element is half a
    byte. Opcodes with no collective are left out.
    """
    return _collective_bytes(hlo_text)

def padded_bytes(shape_text: str) -> int:
    """Bytes a TPU buffer of this array shape occupies, tiles padded, e.g. for
    `bf16[1000,300]{0,1:T(8,128)(2,1)}`.

    The layout lists dimensions minor to major, then the tiles: the first tile covers as many
    of the most minor dimensions as it has sizes (`T(8,128)`: 128 along the most minor, 8 along
    the next; `T(1024)`: the most minor only), and each of them is padded up to a multiple of its
    tile size; later tiles such as `(2,1)` split the first one without adding padding. Bytes per
    element from the dtype's bit width (s4: half a byte; pred: one byte). No tile: the logical
    size.
    """
    import jax
    import jax.numpy as jnp

    from xla_inspect import targets

    shape = Shape(shape_text)
    name = shape.dtype
    kinds = {"s": "int", "u": "uint", "f": "float", "c": "complex"}
    if name == "pred":
        dtype = jnp.bool_
    elif name == "bf16":
        dtype = jnp.bfloat16
    elif name.startswith("f8"):
        dtype = jnp.dtype("float8_" + name[2:])
    else:
        dtype = jnp.dtype(kinds[name[0]] + name[1:])
    tpu = targets.get("tpu-v5e:2x2")
    arg = tpu.place(jax.ShapeDtypeStruct(tuple(shape.dims), dtype))
    compiled = jax.jit(lambda v: v).lower(arg).compile()
    return int(compiled.memory_analysis().argument_size_in_bytes)

def prefetched_parameters(hlo_text: str) -> dict[int, str]:
    """ENTRY parameters that XLA moved into memory space S(1), and how.

    {parameter number: "cross-program prefetch" | "prefetch" | "copy"} for every `copy-start`
    or `copy` in ENTRY whose operand is a parameter and whose result (for copy-start: the first
    tuple element) has `S(1)` in its layout: a copy-start with a
    `cross_program_prefetch_index` is the cross-program prefetch, another copy-start a prefetch,
    a plain copy a "copy". Use the number in `parameter(N)`.
    """
    return _moved(hlo_text)

def predict_layer_flops(m: int, k: int, n: int, data: int, model: int) -> int:
    """Predict, without compiling, the flops per device libtpu's cost_analysis gives for
    `relu(x @ w + b)` in f32 with x [m, k] split P('data', None), w [k, n] split
    P(None, 'model'), b [n] split P('model') and the output P('data', 'model'), on a mesh of
    `data` x `model` TPU devices. Sizes divide evenly. (XLA:CPU's cost_analysis of the same
    sharded program counts the same flops when k >= 2 and a device's block has two or more
    elements: the tests check against it when libtpu is missing, on such sizes. A smaller dot
    XLA:CPU rewrites into elementwise ops, which count less.)
    """
    rows, cols = m // data, n // model
    if k == 1:
        return rows * cols * 3
    if rows == 1 or cols == 1:
        return rows * cols * (2 * k + 1)
    return rows * cols * (2 * k + 2)

def gather_free_specs() -> tuple[P, P]:
    """PartitionSpecs (for w1, for w2) of `relu(x @ w1) @ w2` on a ('data', 'model') mesh of
    2 x 2 TPU devices, x [batch, 256] split P('data', None), w1 [256, 1024], w2 [1024, 256],
    output P('data', None).

    Budget, read from the compiler: no all-gather and no collective-permute anywhere in the
    compiled program, and argument bytes per device at most x's plus half of what the
    replicated weights take (checked with libtpu, and with XLA:CPU's partitioner over 4 CPU
    devices, which runs without it).
    """
    return P(None, "model"), P("model", None)

def predict_allreduce_bytes(
    batch: int, width: int, hidden: int, data: int, model: int, itemsize: int
) -> int:
    """Predict, without compiling, the bytes each device receives from the all-reduce of
    `relu(x @ w1) @ w2` on a `data` x `model` TPU mesh, with x [batch, width] split
    P('data', None), the output split the same way, and w1 [width, hidden] and w2 [hidden, width]
    split over 'model' as your `gather_free_specs` splits them (no weight is gathered), all
    arrays of `itemsize`-byte elements. Bytes as `collective_bytes` counts them (the logical
    result on one device); 0 when the program needs no all-reduce. (Without libtpu the tests
    compile the same program for up to 8 CPU devices, in f32 and f16, which XLA:CPU sums in
    their own dtype.)
    """
    return 0 if model == 1 else (batch // data) * width * itemsize

def step_donation() -> tuple[int, ...]:
    """donate_argnums for `sgd_step(params, momentum, batch) -> (params, momentum, loss)`
    (programs.py) compiled for one TPU v5e chip.

    Budget, read from memory_analysis: the aliased bytes equal the params and momentum bytes,
    and the peak is at most the undonated peak minus those bytes. The caller evaluates on the
    batch after the step, so it must stay valid. The numbers mean what `jax.jit` makes of
    them (a negative one counts from the end): jax must donate no array of the batch.
    """
    return (0, 1)
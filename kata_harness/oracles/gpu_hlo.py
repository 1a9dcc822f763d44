"""Phase 12's oracles: facts of GPU HLO read with XLA's own parser (``jaxlib._hlo``: opcodes,
the printed instruction, the module's schedule), NumPy arithmetic on a program's shapes, and,
for the compiled programs of the decide tasks, counts read with the toolkit's reader.

Each function takes a module's text (or a program's shapes) and never the kata's answer.
"""

from __future__ import annotations

import math
import re
from collections import Counter
from functools import cache

from xla_inspect.parse import parse_hlo

from . import xla_parsed

_KIND = re.compile(r"\bkind=(\w+)")
_CUSTOM = re.compile(r'"fusion_(?:backend_)?config":\{[^{}]*?"kind":"([^"]+)"')
_CALLS = re.compile(r"\bcalls=%?([\w.-]+)")
SHAPE = re.compile(r"\b([a-z]+\d*)\[([\d,]*)\]")
_ANY_COLLECTIVE = re.compile(
    r"^(all-gather|all-reduce|reduce-scatter|collective-permute|all-to-all)(-start)?$"
)


def opcode(instruction) -> str:
    """The opcode as XLA prints it (all-gather-start, exponential): the word after the
    instruction's shape in XLA's own printing (the enum's names differ: kExp is exponential)."""
    rest = instruction.to_string().split(" = ", 1)[1]
    depth = 0
    for position, char in enumerate(rest):
        depth += (char == "(") - (char == ")")
        if char == " " and depth == 0:
            return rest[position + 1 :].split("(", 1)[0]
    raise AssertionError(f"no opcode in {rest[:80]}")


@cache
def parsed(text: str):
    """XLA's parse of a module: [(computation, instruction name, opcode, printed text)]."""
    module = xla_parsed(text)
    return module, [
        (c.name, i.name, opcode(i), i.to_string())
        for c in module.computations()
        for i in c.instructions()
    ]


def label(printed: str) -> str:
    """A fusion's kind as printed (kLoop), with the kind its backend_config names, if any, in
    brackets (kCustom(__triton), and kLoop(__dynamic_memcpy) for a kLoop fusion so marked)."""
    kind = _KIND.search(printed)
    custom = _CUSTOM.search(printed)
    base = kind.group(1) if kind else ""
    return f"{base}({custom.group(1)})" if custom else base


def fusion_kinds(text: str) -> dict[str, int]:
    """Fusions of every computation, counted by :func:`label`."""
    _, rows = parsed(text)
    return dict(Counter(label(p) for _, _, op, p in rows if op == "fusion"))


def fusion_callers(text: str) -> dict[str, tuple[str, str]]:
    """fused computation -> (computation holding the fusion, the fusion's kind label)."""
    _, rows = parsed(text)
    callers = {}
    for computation, _, op, printed in rows:
        called = _CALLS.search(printed)
        if op == "fusion" and called:
            callers[called.group(1)] = (computation, label(printed))
    return callers


_CALLED = re.compile(
    r"\b(?:calls|to_apply|body|condition|true_computation|false_computation)=%([\w.-]+)"
    r"|\bbranch_computations=\{([^}]*)\}"
)


def fusion_places(text: str) -> set[str]:
    """Where a module's fusions sit: the opcode of every instruction (of XLA's parse) calling a
    computation that holds a fusion (while, conditional, call, fusion, ...), "ENTRY" when the
    entry computation holds one, and the opcode of every asynchronous fusion start."""
    _, rows = parsed(text)
    holders = {c for c, _, op, _ in rows if op == "fusion"}
    places = {op for _, _, op, _ in rows if op == "fusion-start"}
    if holders.intersection(re.findall(r"^ENTRY %?([\w.-]+)", text, re.MULTILINE)):
        places.add("ENTRY")
    for _, _, op, printed in rows:
        for single, many in _CALLED.findall(printed):
            called = [single] if single else [n.strip().lstrip("%") for n in many.split(",")]
            if holders.intersection(called):
                places.add(op)
    return places


def _fusion_calls(text: str) -> dict[str, set[str]]:
    """computation -> the computations its fusions call (XLA's parse)."""
    _, rows = parsed(text)
    calls: dict[str, set[str]] = {}
    for computation, _, op, printed in rows:
        called = _CALLS.search(printed)
        if op == "fusion" and called:
            calls.setdefault(computation, set()).add(called.group(1))
    return calls


def _reached(start: str, calls: dict[str, set[str]]) -> set[str]:
    """``start`` and every computation its fusions reach, nested ones too."""
    found, todo = set(), [start]
    while todo:
        name = todo.pop()
        if name not in found:
            found.add(name)
            todo.extend(calls.get(name, ()))
    return found


def fused_computations(text: str) -> set[str]:
    """Computations some fusion reaches (its fused computation and those nested in it)."""
    calls = _fusion_calls(text)
    return set().union(*(_reached(c, calls) for called in calls.values() for c in called))


def reduce_homes(text: str) -> dict[str, int]:
    """The reduces of XLA's parse by kernel: those a fusion of a computation that no fusion
    calls reaches (its fused computation and the fusions nested in it), under that outermost
    fusion's :func:`label`, once per such fusion (two fusions calling one fused computation
    are two kernels); the rest "unfused"."""
    _, rows = parsed(text)
    calls = _fusion_calls(text)
    fused = fused_computations(text)
    reduces = Counter(computation for computation, _, op, _ in rows if op == "reduce")
    homes: Counter[str] = Counter()
    for computation, _, op, printed in rows:
        called = _CALLS.search(printed)
        if op == "fusion" and called and computation not in fused:
            homes[label(printed)] += sum(reduces[c] for c in _reached(called.group(1), calls))
    homes["unfused"] += sum(n for c, n in reduces.items() if c not in fused)
    return {kind: n for kind, n in homes.items() if n}


def library_calls(text: str, name: str) -> dict[str, str]:
    """{cuBLAS or cuDNN custom-call: the epilogue or activation mode XLA prints in it}; ``name``
    names the module when a call prints neither."""
    _, rows = parsed(text)
    found = {}
    for _, instruction, op, printed in rows:
        target = re.search(r'custom_call_target="(__(?:cublas|cudnn)\$[^"]*)"', printed)
        if op != "custom-call" or not target:
            continue
        value = re.search(r'\\?"(?:epilogue|activation_mode)\\?":\\?"(\w+)', printed)
        assert value, f"{name}: {instruction} prints no epilogue or activation mode"
        found[instruction] = value.group(1)
    return found


def einsum_flops(specs, shapes) -> int:
    """Flops of a chain of einsums (2 per multiply-add), from their specs and operand shapes."""
    sizes: dict[str, int] = {}
    operands = [shapes[0]] + list(shapes[1:])
    letters = [specs[0].split("->")[0].split(",")[0]] + [
        s.split("->")[0].split(",")[1] for s in specs
    ]
    for indices, shape in zip(letters, operands, strict=True):
        sizes.update(zip(indices, shape, strict=True))
    return sum(
        2 * math.prod(sizes[i] for i in set(spec.split("->")[0].replace(",", ""))) for spec in specs
    )


def dense_flops(dense_shapes) -> int:
    """Flops of the dense stack's matmuls, from its (shape, dtype) list: x first, then every
    other 2-D shape a weight [k, n] multiplying x's rows."""
    rows = dense_shapes[0][0][0]
    weights = [s for s, _ in dense_shapes if len(s) == 2][1:]
    return sum(2 * rows * k * n for k, n in weights)


def schedule(text: str) -> dict[str, list[str]]:
    """computation -> instruction names in XLA's own schedule."""
    module, _ = parsed(text)
    order: dict[str, list[str]] = {}
    current = None
    for line in module.schedule().to_string().splitlines():
        head = re.match(r"computation ([^\s:]+)", line)  # "... (thread main):" on newer XLA
        if head:
            current = order.setdefault(head.group(1), [])
        elif line.strip() and current is not None:
            current.append(line.strip())
    return order


def async_wrapped(text: str) -> set[str]:
    """Computations XLA treats as part of an async-start (it prints them inline, as sugar such
    as reduce-scatter-start): those holding some async-start's wrapped root."""
    module, _ = parsed(text)
    roots = {
        i.async_wrapped_root().name
        for c in module.computations()
        for i in c.instructions()
        if str(i.opcode).endswith("kAsyncStart")
    }
    return {c.name for c in module.computations() if any(i.name in roots for i in c.instructions())}


_PLAIN_COLLECTIVES = {
    "all-gather",
    "all-reduce",
    "reduce-scatter",
    "collective-permute",
    "all-to-all",
}


def _collective_start(op: str, printed: str, holders: set[str]) -> bool:
    """A collective's start: <collective>-start, or an async-start whose wrapped computation
    (its calls=) holds a collective, wherever in it (XLA names such a start after the wrapped
    computation's root, which may be a tuple or bitcast of the collective)."""
    if op.endswith("-start") and op.removesuffix("-start") in _PLAIN_COLLECTIVES:
        return True
    called = _CALLS.search(printed)
    return op == "async-start" and called is not None and called.group(1) in holders


_GENERIC = {
    "kAsyncStart": "async-start",
    "kAsyncUpdate": "async-update",
    "kAsyncDone": "async-done",
}


def overlaps(text: str, generic: bool = False) -> dict[str, list[str]]:
    """{collective: opcodes XLA scheduled while it is in flight} in every computation that is
    neither an async-start's wrapped one nor reached by a fusion (a synchronous collective:
    nothing). With ``generic``, an in-flight op that XLA's opcode enum calls an async op
    (kAsyncStart, ...) is listed as async-start / async-update / async-done, however XLA prints
    it (fusion-start, reduce-scatter-start: its sugar for an async op wrapping another)."""
    module, rows = parsed(text)
    opcode_of = {(c, n): op for c, n, op, _ in rows}
    listed = dict(opcode_of)
    if generic:
        for c in module.computations():
            for i in c.instructions():
                enum = str(i.opcode).rsplit(".", 1)[-1]
                if enum in _GENERIC:
                    listed[(c.name, i.name)] = _GENERIC[enum]
    printed = {(c, n): p for c, n, _, p in rows}
    holders = {c for c, _, op, _ in rows if op in _PLAIN_COLLECTIVES}
    skipped = async_wrapped(text) | fused_computations(text)
    found: dict[str, list[str]] = {}
    for computation, names in schedule(text).items():
        if computation in skipped:
            continue
        for position, instruction in enumerate(names):
            op = opcode_of[(computation, instruction)]
            if op in _PLAIN_COLLECTIVES:
                found[instruction] = []
            elif _collective_start(op, printed[(computation, instruction)], holders):
                later = [(n, listed[(computation, n)], printed[(computation, n)]) for n in names]
                found[instruction] = _in_flight(instruction, later[position + 1 :])
    return found


_STEP = re.compile(r" [\w-]+-(update|done)\(%([\w.-]+)\)")


def _in_flight(start: str, later: list[tuple[str, str, str]]) -> list[str]:
    """The opcodes XLA scheduled after ``start`` up to the done that ends it, which reads the
    start or the last of its async updates (start -> update -> done, as XLA prints them); the
    updates are steps of the same asynchronous op and left out."""
    chain, between = {start}, []
    for name, op, printed in later:
        step = _STEP.search(printed)
        if step and step.group(2) in chain:
            if step.group(1) == "done":
                return between
            chain.add(name)
        else:
            between.append(op)
    raise AssertionError(f"XLA's schedule has no done for {start}")


def _shape_bytes(shape: str) -> int:
    produced = 0
    for dtype, dims in SHAPE.findall(shape):
        width = int(re.sub(r"\D", "", dtype) or 8)
        produced += math.prod(int(d) for d in dims.split(",") if d) * width // 8
    return produced


def gathers(text: str) -> tuple[int, int, int]:
    """(bytes the all-gathers produce, async gathers with a GEMM kernel in flight, gathers)."""
    entry = parse_hlo(text).entry
    order = list(entry)
    produced, overlapped, count = 0, 0, 0
    for position, instruction in enumerate(order):
        if instruction.opcode in ("all-gather", "all-gather-done"):
            count += 1
            produced += _shape_bytes(instruction.shape)
        if instruction.opcode == "all-gather-start":
            rest = order[position + 1 :]
            end = next(k for k, j in enumerate(rest) if instruction.name in j.operands)
            overlapped += any("gemm" in (j.attribute("backend_config") or "") for j in rest[:end])
    return produced, overlapped, count


def collective_bytes(text: str) -> tuple[int, int]:
    """(collectives in every computation, bytes their results hold)."""
    count, produced = 0, 0
    for computation in parse_hlo(text).computations:
        for instruction in computation:
            if _ANY_COLLECTIVE.match(instruction.opcode):
                count += 1
                produced += _shape_bytes(instruction.shape)
    return count, produced


def kernels(text: str) -> int:
    """Kernels the ENTRY launches: fusions and custom calls."""
    return sum(i.opcode in ("fusion", "custom-call") for i in parse_hlo(text).entry)


_CUBLAS_TARGET = re.compile(r'custom_call_target="(__cublas\$[^"]*)"')


def gemm_kernels(text: str) -> Counter[str]:
    """The GEMM kernels of a compiled module, over every computation: its Triton GEMM fusions
    counted by kind label (`kCustom(__triton_nested_gemm_fusion)`, ...) and its cuBLAS calls by
    target (`__cublas$lt$matmul`, ...): what options about collectives leave as they are."""
    kernels: Counter[str] = Counter()
    for _, _, op, printed in parsed(text)[1]:
        target = _CUBLAS_TARGET.search(printed) if op == "custom-call" else None
        if target:
            kernels[target.group(1)] += 1
        elif op == "fusion" and "gemm" in label(printed):
            kernels[label(printed)] += 1
    return kernels


def all_reduced(text: str) -> dict[str, int]:
    """Elements all-reduced per dtype, from the all-reduces of XLA's parse."""
    _, rows = parsed(text)
    found: Counter[str] = Counter()
    for _, _, op, printed in rows:
        if op in ("all-reduce", "all-reduce-start"):
            head = printed.split(" all-reduce")[0]
            for dtype, dims in SHAPE.findall(head):
                found[dtype] += math.prod(int(d) for d in dims.split(",") if d)
    return dict(found)


def all_reduced_read(text: str) -> dict[str, int]:
    """Elements all-reduced per dtype, from the all-reduces the toolkit's reader finds in every
    computation of a compiled module."""
    found: Counter[str] = Counter()
    for computation in parse_hlo(text).computations:
        for instruction in computation:
            if instruction.opcode in ("all-reduce", "all-reduce-start"):
                for dtype, dims in SHAPE.findall(instruction.shape):
                    found[dtype] += math.prod(int(d) for d in dims.split(",") if d)
    return dict(found)


def data_parallel_all_reduces(leaves: list[tuple[str, tuple[int, ...]]]) -> dict[str, int]:
    """Elements XLA:GPU all-reduces per dtype for the data-parallel gradients of parameters with
    these (HLO dtype, shape) leaves: its all-reduce combiner concatenates every gradient of one
    dtype into one flat all-reduce, so each dtype's count is the sum of its leaves' elements; a
    dtype whose leaves are all empty has nothing to all-reduce and no all-reduce (checked
    against XLA:GPU's compile, with the gpu group, by phase 12's
    test_allreduce_elements_of_random_pytrees_match_xla)."""
    found: Counter[str] = Counter()
    for dtype, shape in leaves:
        found[dtype] += math.prod(shape)
    return {dtype: count for dtype, count in found.items() if count}


def replicated_bytes(shapes, itemsize: int) -> int:
    """Bytes that arrays of these shapes and `itemsize`-byte elements take on one device when
    every device holds all of them (XLA:CPU's memory analysis: no tiles, no padding)."""
    return sum(math.prod(shape) for shape in shapes) * itemsize

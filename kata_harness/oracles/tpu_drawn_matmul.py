"""Phase 11's drawn matmul fusions: modules made from a ``random.Random`` for matmul_fusions.

Every draw holds every situation: ENTRY fusions of every kind (kLoop and kOutput in every draw)
whose convolution sits in the fusion's own body or in a nested fusion (in one of them three or
four levels down), epilogues using every kind of op (elementwise, pad, slice, concatenate,
reverse, iota, dynamic slices, select, clamp, sort, and the reducers called by reduce,
reduce-window and map), conversions that only move data, an ENTRY fusion with no convolution, a
bare convolution in ENTRY, two ENTRY fusions calling one body, and matmul fusions in a while
body and in a called computation (no ENTRY fusion). The facts come from XLA's parse
(:func:`.tpu_hlo.matmul_fusions`).
"""

from __future__ import annotations

import random

from .tpu_drawn_schedule import Computations

G = "f32[16,16]{1,0}"
UNARY = ("tanh", "exponential", "negate", "abs", "sqrt", "log", "sine", "cosine", "floor")
BINARY = ("add", "multiply", "maximum", "minimum", "subtract", "divide", "power")
REDUCERS = ("maximum", "minimum", "add", "multiply")
FUSION_KINDS = ("kLoop", "kOutput", "kInput", "kCustom")
EPILOGUES = (
    "unary",
    "binary",
    "pad",
    "concatenate",
    "reverse",
    "iota",
    "dynamic",
    "reduce-window",
    "map",
    "reduce",
    "select",
    "clamp",
    "sort",
    "convert",
)


def _scalar_computation(c: Computations, rng: random.Random, what: str) -> str:
    """A reducer (two f32 scalars), a map body (one) or a sort comparator."""
    if what == "map":
        op = rng.choice(UNARY)
        return c.add(["f32[]"], lambda n: [], lambda n: f"f32[] {op}(%{n[0]})")
    if what == "sort":
        return c.add(
            ["f32[]", "f32[]"],
            lambda n: [],
            lambda n: f"pred[] compare(%{n[0]}, %{n[1]}), direction=LT",
        )
    op = rng.choice(REDUCERS)
    return c.add(["f32[]", "f32[]"], lambda n: [], lambda n: f"f32[] {op}(%{n[0]}, %{n[1]})")


def epilogue(c: Computations, rng: random.Random, kind: str, cur: str) -> list[str]:
    """Lines applying one op of `kind` to %cur (shape G); the last line's value is shape G."""
    n, z, t = c.name(), c.name(), c.name()
    zero = f"%{z} = f32[] constant(0)"
    if kind == "unary":
        return [f"%{n} = {G} {rng.choice(UNARY)}(%{cur})"]
    if kind == "binary":
        return [f"%{n} = {G} {rng.choice(BINARY)}(%{cur}, %{cur})"]
    if kind == "pad":
        return [
            zero,
            f"%{t} = f32[18,18]{{1,0}} pad(%{cur}, %{z}), padding=1_1x1_1",
            f"%{n} = {G} slice(%{t}), slice={{[1:17], [1:17]}}",
        ]
    if kind == "concatenate":
        return [
            f"%{t} = f32[32,16]{{1,0}} concatenate(%{cur}, %{cur}), dimensions={{0}}",
            f"%{n} = {G} slice(%{t}), slice={{[0:16], [0:16]}}",
        ]
    if kind == "reverse":
        return [f"%{n} = {G} reverse(%{cur}), dimensions={{0}}"]
    if kind == "iota":
        return [f"%{t} = {G} iota(), iota_dimension=0", f"%{n} = {G} add(%{cur}, %{t})"]
    if kind == "dynamic":
        i, part = c.name(), c.name()
        return [
            f"%{i} = s32[] constant(0)",
            f"%{part} = f32[8,16]{{1,0}} dynamic-slice(%{cur}, %{i}, %{i}), "
            "dynamic_slice_sizes={8,16}",
            f"%{n} = {G} dynamic-update-slice(%{cur}, %{part}, %{i}, %{i})",
        ]
    if kind == "reduce-window":
        reducer = _scalar_computation(c, rng, "reduce")
        return [
            zero,
            f"%{n} = {G} reduce-window(%{cur}, %{z}), window={{size=3x3 pad=1_1x1_1}}, "
            f"to_apply=%{reducer}",
        ]
    if kind == "map":
        body = _scalar_computation(c, rng, "map")
        return [f"%{n} = {G} map(%{cur}), dimensions={{0,1}}, to_apply=%{body}"]
    if kind == "reduce":
        reducer = _scalar_computation(c, rng, "reduce")
        return [
            zero,
            f"%{t} = f32[16]{{0}} reduce(%{cur}, %{z}), dimensions={{1}}, to_apply=%{reducer}",
            f"%{n} = {G} broadcast(%{t}), dimensions={{0}}",
        ]
    if kind == "select":
        b, p = c.name(), c.name()
        return [
            zero,
            f"%{b} = {G} broadcast(%{z}), dimensions={{}}",
            f"%{p} = pred[16,16]{{1,0}} compare(%{cur}, %{b}), direction=GT",
            f"%{n} = {G} select(%{p}, %{cur}, %{b})",
        ]
    if kind == "clamp":
        b = c.name()
        return [
            zero,
            f"%{b} = {G} broadcast(%{z}), dimensions={{}}",
            f"%{n} = {G} clamp(%{b}, %{cur}, %{cur})",
        ]
    if kind == "sort":
        comparator = _scalar_computation(c, rng, "sort")
        return [f"%{n} = {G} sort(%{cur}), dimensions={{1}}, to_apply=%{comparator}"]
    return [  # convert there and back: moves data only
        f"%{t} = s32[16,16]{{1,0}} convert(%{cur})",
        f"%{n} = {G} convert(%{t})",
    ]


def _last(lines: list[str], default: str) -> str:
    return lines[-1].split(" = ")[0].lstrip("%") if lines else default


def _chain(c: Computations, rng: random.Random, kinds: list[str], cur: str) -> list[str]:
    lines: list[str] = []
    for kind in kinds:
        lines += epilogue(c, rng, kind, _last(lines, cur))
    return lines


def matmul_computation(c: Computations, rng: random.Random, kinds: list[str]) -> str:
    """A fused computation of two G operands: their convolution and the epilogue `kinds`, the
    convolution in this body or in a nested fusion, part of the epilogue maybe nested too."""
    split = rng.randint(0, len(kinds))
    shape = rng.choice(("flat", "nested matmul", "nested epilogue"))
    conv = c.name()

    def conv_line(n: list[str]) -> str:
        return f"%{conv} = {G} convolution(%{n[0]}, %{n[1]}), dim_labels=bf_io->bf"

    if shape == "flat":
        lines_of = _chain(c, rng, kinds, conv)
        return c.add(
            [G, G],
            lambda n: [conv_line(n), *lines_of],
            lambda n: f"{G} bitcast(%{_last(lines_of, conv)})",
        )
    if shape == "nested matmul":
        inner_lines = _chain(c, rng, kinds[:split], conv)
        inner = c.add(
            [G, G],
            lambda n: [conv_line(n), *inner_lines],
            lambda n: f"{G} bitcast(%{_last(inner_lines, conv)})",
        )
        fused = c.name()
        outer_lines = _chain(c, rng, kinds[split:], fused)
        return c.add(
            [G, G],
            lambda n: (
                [f"%{fused} = {G} fusion(%{n[0]}, %{n[1]}), kind=kOutput, calls=%{inner}"]
                + outer_lines
            ),
            lambda n: f"{G} bitcast(%{_last(outer_lines, fused)})",
        )
    inner_lines = _chain(c, rng, kinds[split:], "IN")
    inner = c.add(
        [G],
        lambda n: [line.replace("%IN", f"%{n[0]}") for line in inner_lines],
        lambda n: f"{G} bitcast(%{_last(inner_lines, n[0])})",
    )
    head, fused = _chain(c, rng, kinds[:split], conv), c.name()
    return c.add(
        [G, G],
        lambda n: [
            conv_line(n),
            *head,
            f"%{fused} = {G} fusion(%{_last(head, conv)}), kind=kLoop, calls=%{inner}",
        ],
        lambda n: f"{G} bitcast(%{fused})",
    )


def _wrapped(c: Computations, body: str) -> str:
    """A computation of two G operands whose one fusion calls `body`."""
    fused = c.name()
    return c.add(
        [G, G],
        lambda n: [f"%{fused} = {G} fusion(%{n[0]}, %{n[1]}), kind=kOutput, calls=%{body}"],
        lambda n: f"{G} bitcast(%{fused})",
    )


def matmul_module(rng: random.Random) -> str:
    """A module holding every matmul-fusion situation (see the module docstring)."""
    c = Computations(rng)
    x, w = c.name(), c.name()
    kinds: list[str] = list(EPILOGUES)
    rng.shuffle(kinds)
    count = rng.randint(3, 5)
    groups = [kinds[k::count] for k in range(count)]
    entry, results = [f"%{x} = {G} parameter(0)", f"%{w} = {G} parameter(1)"], []
    # the fusion kind says nothing: kLoop and kOutput matmul fusions in every draw
    fusion_kinds = ["kLoop", "kOutput", *rng.choices(FUSION_KINDS, k=count - 1)]
    rng.shuffle(fusion_kinds)
    for group, fusion_kind in zip(groups, fusion_kinds, strict=False):
        body, f = (
            matmul_computation(c, rng, group + rng.sample(EPILOGUES, rng.randint(0, 2))),
            c.name(),
        )
        entry.append(f"%{f} = {G} fusion(%{x}, %{w}), kind={fusion_kind}, calls=%{body}")
        results.append(f)
    # a matmul body two fusions down: the convolution three or four levels below ENTRY
    deep, f = matmul_computation(c, rng, rng.sample(EPILOGUES, 2)), c.name()
    for _ in range(2):
        deep = _wrapped(c, deep)
    entry.append(f"%{f} = {G} fusion(%{x}, %{w}), kind={rng.choice(FUSION_KINDS)}, calls=%{deep}")
    results.append(f)
    # two ENTRY fusions calling one body (two identical layers): each is a matmul fusion
    twin = c.name()
    entry.append(f"%{twin} = {G} fusion(%{w}, %{x}), kind={fusion_kinds[-1]}, calls=%{body}")
    results.append(twin)
    # no convolution in this fusion, of any kind; a bare one in ENTRY
    plain = c.add([G], lambda n: [], lambda n: f"{G} {rng.choice(UNARY)}(%{n[0]})")
    loose, bare = c.name(), c.name()
    entry += [
        f"%{loose} = {G} fusion(%{x}), kind={rng.choice(FUSION_KINDS)}, calls=%{plain}",
        f"%{bare} = {G} convolution(%{x}, %{w}), dim_labels=bf_io->bf",
    ]
    results += [loose, bare]
    # matmul fusions outside ENTRY: in a called computation and in a while body
    for place in ("call", "while"):
        body, f = matmul_computation(c, rng, rng.sample(EPILOGUES, 2)), c.name()
        params = [G, G] if place == "call" else [G]
        holder = c.add(
            params,
            lambda n, body=body, f=f: [
                f"%{f} = {G} fusion(%{n[0]}, %{n[-1]}), kind=kOutput, calls=%{body}"
            ],
            lambda n, f=f: f"{G} bitcast(%{f})",
        )
        out = c.name()
        if place == "call":
            entry.append(f"%{out} = {G} call(%{x}, %{w}), to_apply=%{holder}")
        else:
            cond = c.add([G], lambda n: [], lambda n: "pred[] constant(false)")
            entry.append(f"%{out} = {G} while(%{x}), condition=%{cond}, body=%{holder}")
        results.append(out)
    rng.shuffle(entry)  # parameters first, then any order (every operand is a parameter)
    entry.sort(key=lambda line: "parameter(" not in line)
    entry.append(
        f"ROOT %{c.name()} = ({', '.join(G for _ in results)}) "
        f"tuple({', '.join('%' + r for r in results)})"
    )
    out_type = ", ".join("f32[16,16]" for _ in results)
    return (
        "HloModule drawn_matmuls, num_partitions=4\n\n"
        + "\n".join(c.texts)
        + f"\nENTRY %{c.name()} (a: f32[16,16], b: f32[16,16]) -> ({out_type}) {{\n"
        + "\n".join(f"  {line}" for line in entry)
        + "\n}\n"
    )

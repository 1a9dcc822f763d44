"""Phase 11's drawn schedules: scheduled TPU-style modules made from a ``random.Random`` for
the reading tasks async_collectives and overlapped_work.

Each module holds every situation the contract allows, in every draw (kinds, names, order and
windows drawn afresh): TPU kCustom starts whose body ends in the AsyncCollectiveStart marker or
in a tuple of its elements, the collective in the body or in a fusion the body calls; generic
``X-start`` ops, ``async-start`` wrappers of a collective and of plain compute, an async
``copy-start``, two starts of one signature (same kind, shape and
pairs, other channels) finishing in the other order, a while body with an async pair of its
own, two generic starts of one kind without a channel_id (cross-replica) finishing in the
other order, and windows holding every kind of work (copies, transposes, slices, barriers,
tokens, a synchronous collective, a fusion) beside the views. The facts come from XLA's
parse of the text (:mod:`.tpu_hlo`), never from the builder.
"""

from __future__ import annotations

import random
from collections.abc import Callable

F = "f32[8,128]{1,0}"
U32 = "u32[]{:S(2)}"
# operand shape of each kind whose result is F (4 devices)
OPERAND = {"all-gather": "f32[2,128]{1,0}", "reduce-scatter": "f32[32,128]{1,0}"}
KINDS = ("all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute")
GENERIC = ("all-gather", "all-reduce", "collective-permute")  # the kinds with an X-start op
PAIRS = "source_target_pairs={{0,1},{1,2},{2,3},{3,0}}"
COMPUTE = ("exponential", "tanh", "negate", "log", "sine")
PLUS = (
    "%plus (a: f32[], b: f32[]) -> f32[] {\n  %a = f32[] parameter(0)\n  %b = f32[] parameter(1)\n"
    "  ROOT %ab = f32[] add(%a, %b)\n}\n"
)


class Names:
    """Fresh instruction and computation names that say nothing about what they name."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.used = rng, set()

    def __call__(self) -> str:
        while True:
            name = f"{self.rng.choice('abcdeghkmnpqrsuvwxyz')}{self.rng.randint(0, 99999)}"
            if name not in self.used:
                self.used.add(name)
                return name


def collective(kind: str, operand: str, channel: int) -> str:
    """The text after '=' of a collective of `kind` on %operand whose result is F."""
    attrs = {
        "all-gather": "replica_groups={{0,1,2,3}}, dimensions={0}",
        "all-reduce": "replica_groups={{0,1,2,3}}, to_apply=%plus",
        "reduce-scatter": "replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%plus",
        "all-to-all": "replica_groups={{0,1,2,3}}, dimensions={0}",
        "collective-permute": PAIRS,
    }[kind]
    return f"{F} {kind}(%{operand}), channel_id={channel}, {attrs}"


Lines = Callable[[list[str]], list[str]]


class Computations:
    """Called computations written with fresh names."""

    def __init__(self, rng: random.Random) -> None:
        self.rng, self.name = rng, Names(rng)
        self.texts: list[str] = []

    def add(self, params: list[str], lines: Lines, root: Callable[[list[str]], str]) -> str:
        """A computation of `params` (shapes): `lines(names)` then `ROOT = root(names)`."""
        name, names = self.name(), [self.name() for _ in params]
        head = ", ".join(f"{n}: {s.split('{')[0]}" for n, s in zip(names, params, strict=True))
        result = shape_of(root(names))
        body = [
            f"  %{n} = {s} parameter({k})"
            for k, (n, s) in enumerate(zip(names, params, strict=True))
        ]
        body += [f"  {line}" for line in lines(names)]
        body.append(f"  ROOT %{self.name()} = {root(names)}")
        result_type = result.split("{")[0]
        if result.startswith("("):
            result_type = "(" + ", ".join(s.split("{")[0] for s in _tuple_parts(result)) + ")"
        self.texts.append(f"%{name} ({head}) -> {result_type} {{\n" + "\n".join(body) + "\n}\n")
        return name


def shape_of(text: str) -> str:
    """The shape that begins an instruction's text ("(f32[2]{0}, u32[]) tuple(...)")."""
    if not text.startswith("("):
        return text.split(" ")[0]
    depth = 0
    for k, ch in enumerate(text):
        depth += ch in "{(["
        depth -= ch in "})]"
        if depth == 0:
            return text[: k + 1]
    return text


def _tuple_parts(shape: str) -> list[str]:
    inner, parts, depth, current = shape[1:-1], [], 0, ""
    for ch in inner:
        depth += ch in "{(["
        depth -= ch in "})]"
        if ch == "," and depth == 0:
            parts.append(current.strip())
            current = ""
        else:
            current += ch
    return [*parts, current.strip()]


# A pair is (start lines, done lines); every line is "%name = ...".
Pair = tuple[list[str], list[str]]


def _holding(
    c: Computations, kind: str, channel: int, name: str, operand: str, nested: bool
) -> str:
    """The line `%name = ` the collective on %operand, or (nested) a fusion of %operand whose
    body holds the collective."""
    if not nested:
        return f"%{name} = {collective(kind, operand, channel)}"
    inner = c.add([OPERAND.get(kind, F)], lambda m: [], lambda m: collective(kind, m[0], channel))
    return f"%{name} = {F} fusion(%{operand}), kind=kLoop, calls=%{inner}"


def tpu_pair(
    c: Computations, kind: str, operand: str, channel: int, tuple_root: bool, nested: bool = False
) -> Pair:
    """A kCustom start fusion and its done fusion around `kind` (channel `channel`); nested:
    the collective sits in a fusion called from each body (the marker stays in the body)."""
    wrapped = OPERAND.get(kind, F)
    context = f"({wrapped}, {F}, {U32})"
    coll, marker, parts = c.name(), c.name(), [c.name() for _ in range(3)]
    held = _holding(c, kind, channel, coll, "IN", nested)

    def marker_text(n: list[str]) -> str:
        return f'{context} custom-call(%{coll}), custom_call_target="AsyncCollectiveStart"'

    def begin_lines(n: list[str]) -> list[str]:
        lines = [held.replace("%IN", f"%{n[0]}")]
        if tuple_root:  # the body ends in a tuple of the marker's elements
            lines.append(f"%{marker} = {marker_text(n)}")
            lines += [
                f"%{p} = {s} get-tuple-element(%{marker}), index={k}"
                for k, (p, s) in enumerate(zip(parts, [wrapped, F, U32], strict=True))
            ]
        return lines

    def begin_root(n: list[str]) -> str:
        if tuple_root:
            return f"{context} tuple({', '.join('%' + p for p in parts)})"
        return marker_text(n)

    begin = c.add([wrapped], begin_lines, begin_root)
    done_coll = c.name()
    done_held = _holding(c, kind, channel, done_coll, "IN", nested)
    end = c.add(
        [wrapped, F, U32],
        lambda n: [done_held.replace("%IN", f"%{n[0]}")],
        lambda n: (
            f"{F} custom-call(%{n[0]}, %{n[1]}, %{done_coll}, %{n[2]}), "
            'custom_call_target="AsyncCollectiveDone"'
        ),
    )
    start, done, gtes = c.name(), c.name(), [c.name() for _ in range(3)]
    return (
        [f"%{start} = {context} fusion(%{operand}), kind=kCustom, calls=%{begin}"],
        [
            *(
                f"%{g} = {s} get-tuple-element(%{start}), index={k}"
                for k, (g, s) in enumerate(zip(gtes, [wrapped, F, U32], strict=True))
            ),
            f"%{done} = {F} fusion({', '.join('%' + g for g in gtes)}), kind=kCustom, calls=%{end}",
        ],
    )


def generic_pair(c: Computations, kind: str, operand: str, channel: int | None) -> Pair:
    """An `X-start` op and the `X-done` that takes it; channel None: a cross-replica one,
    printed without a channel_id."""
    start, done = c.name(), c.name()
    shape, rest = {
        "all-gather": (
            f"({OPERAND['all-gather']}, {F})",
            "replica_groups={{0,1,2,3}}, dimensions={0}",
        ),
        "all-reduce": (F, "replica_groups={{0,1,2,3}}, to_apply=%plus"),
        "collective-permute": (f"({F}, {F}, u32[], u32[])", PAIRS),
    }[kind]
    return (
        [f"%{start} = {shape} {kind}-start(%{operand}), {_channel(channel)}{rest}"],
        [f"%{done} = {F} {kind}-done(%{start})"],
    )


def _channel(channel: int | None) -> str:
    return "" if channel is None else f"channel_id={channel}, "


def async_pair(c: Computations, root: str, operand: str, channel: int) -> Pair:
    """An async-start of a computation whose root is a collective (root in KINDS) or plain
    compute (an elementwise opcode), and its async-done."""
    wrapped = OPERAND.get(root, F)
    body = c.add(
        [wrapped],
        lambda n: [],
        (lambda n: collective(root, n[0], channel))
        if root in KINDS
        else (lambda n: f"{F} {root}(%{n[0]})"),
    )
    start, done = c.name(), c.name()
    return (
        [f"%{start} = (({wrapped}), {F}) async-start(%{operand}), calls=%{body}"],
        [f"%{done} = {F} async-done(%{start})"],
    )


def copy_pair(c: Computations, operand: str) -> Pair:
    start, done = c.name(), c.name()
    return (
        [f"%{start} = ({F}, {F}, u32[]) copy-start(%{operand})"],
        [f"%{done} = {F} copy-done(%{start})"],
    )


def work(c: Computations, kind: str, operand: str, channel: int) -> list[str]:
    """Lines of one piece of work (or view) on %operand (shape F)."""
    n = c.name()
    if kind in COMPUTE:
        return [f"%{n} = {F} {kind}(%{operand})"]
    if kind == "fusion":
        body = c.add([F], lambda p: [], lambda p: f"{F} tanh(%{p[0]})")
        return [f"%{n} = {F} fusion(%{operand}), kind=kLoop, calls=%{body}"]
    if kind == "after-all":
        token = c.name()
        return [
            f"%{token} = token[] after-all()",
            f"%{n} = {F} add-dependency(%{operand}, %{token})",
        ]
    if kind == "collective":
        return [f"%{n} = {collective('all-reduce', operand, channel)}"]
    if kind == "tuple":
        inner = c.name()
        return [
            f"%{inner} = ({F}, {F}) tuple(%{operand}, %{operand})",
            f"%{n} = {F} get-tuple-element(%{inner}), index=1",
        ]
    if kind == "constant":
        zero = c.name()
        return [f"%{zero} = f32[] constant(0)", f"%{n} = {F} broadcast(%{zero}), dimensions={{}}"]
    return [
        {
            "copy": f"%{n} = {F} copy(%{operand})",
            "transpose": f"%{n} = f32[128,8]{{1,0}} transpose(%{operand}), dimensions={{1,0}}",
            "reshape": f"%{n} = f32[1024]{{0}} reshape(%{operand})",
            "slice": f"%{n} = f32[4,128]{{1,0}} slice(%{operand}), slice={{[0:4], [0:128]}}",
            "opt-barrier": f"%{n} = {F} opt-barrier(%{operand})",
            "bitcast": f"%{n} = f32[1024]{{0}} bitcast(%{operand})",
        }[kind]
    ]


WORK = (
    *COMPUTE,
    "fusion",
    "after-all",
    "collective",
    "tuple",
    "constant",
    "copy",
    "transpose",
    "reshape",
    "slice",
    "opt-barrier",
    "bitcast",
)


def _name_of(line: str) -> str:
    return line.split(" = ")[0].lstrip("%").removeprefix("ROOT %")


def _loop(c: Computations, rng: random.Random, x: str, channel: int) -> str:
    """A while loop on %x whose body holds an async pair of its own (no ENTRY start)."""
    kind = rng.choice(("all-reduce", "collective-permute"))
    how = rng.choice(("tpu", "generic", "async"))
    if how == "tpu":
        start, done = tpu_pair(c, kind, "STATE", channel, *rng.sample((False, True), 2))
    elif how == "generic":
        start, done = generic_pair(c, kind, "STATE", channel)
    else:
        start, done = async_pair(c, kind, "STATE", channel)
    lines = [*start, *work(c, rng.choice(COMPUTE), "STATE", 0), *done]
    body = c.add(
        [F],
        lambda n: [line.replace("%STATE", f"%{n[0]}") for line in lines],
        lambda n: f"{F} copy(%{_name_of(done[-1])})",
    )
    cond = c.add([F], lambda n: [], lambda n: "pred[] constant(false)")
    return f"%{c.name()} = {F} while(%{x}), condition=%{cond}, body=%{body}"


def async_module(rng: random.Random) -> str:
    """A scheduled module holding every async situation (see the module docstring)."""
    c = Computations(rng)
    params = {F: c.name(), OPERAND["all-gather"]: c.name(), OPERAND["reduce-scatter"]: c.name()}
    channels = iter(rng.sample(range(1, 400), 40))
    x = params[F]
    pairs: list[Pair] = []
    nested = rng.choice((False, True))  # one of the two TPU starts holds it in a nested fusion
    for tuple_root in (False, True):
        kind = rng.choice(KINDS)
        operand = params[OPERAND.get(kind, F)]
        pairs.append(tpu_pair(c, kind, operand, next(channels), tuple_root, nested == tuple_root))
    kind = rng.choice(GENERIC)
    pairs.append(generic_pair(c, kind, params[OPERAND.get(kind, F)], next(channels)))
    kind = rng.choice(KINDS)
    pairs.append(async_pair(c, kind, params[OPERAND.get(kind, F)], next(channels)))
    pairs.append(async_pair(c, rng.choice(COMPUTE), x, next(channels)))
    pairs.append(copy_pair(c, x))
    seq: list[list[str]] = []
    for start, done in pairs:
        at = rng.randint(0, len(seq))
        seq.insert(at, start)
        seq.insert(rng.randint(at + 1, len(seq)), done)
    # two starts of one signature finishing in the other order, around everything else; work
    # between the two dones
    kind = rng.choice(("all-reduce", "collective-permute", "all-to-all"))
    p, q = (tpu_pair(c, kind, x, next(channels), *rng.sample((False, True), 2)) for _ in "pq")
    at = rng.randint(0, len(seq))
    late = work(c, rng.choice(COMPUTE), x, 0)
    seq = [p[0], *seq[:at], q[0], *seq[at:], q[1], late, p[1]]
    # two generic starts of one kind without a channel_id, finishing in the other order
    kind = rng.choice(GENERIC)
    outer = generic_pair(c, kind, params[OPERAND.get(kind, F)], None)
    inner = generic_pair(c, kind, params[OPERAND.get(kind, F)], None)
    at = rng.randint(0, len(seq))
    seq[at:at] = [outer[0], inner[0], inner[1], work(c, rng.choice(COMPUTE), x, 0), outer[1]]
    pieces = [*WORK, "parameter", "loop", *(rng.choice(WORK) for _ in range(4))]
    slots: dict[int, list[list[str]]] = {}
    for piece in pieces:
        if piece == "parameter":
            lines = [f"%{c.name()} = {F} parameter(3)"]
        elif piece == "loop":
            lines = [_loop(c, rng, x, next(channels))]
        else:
            lines = work(c, piece, x, next(channels))
        slots.setdefault(rng.randint(1, len(seq) - 1), []).append(lines)
    entry = [f"%{name} = {shape} parameter({k})" for k, (shape, name) in enumerate(params.items())]
    for k, event in enumerate(seq):
        for lines in slots.get(k, []):
            entry += lines
        entry += event
    results = [_name_of(done[-1]) for _, done in [*pairs, p, q, outer, inner]]
    shapes = [*params, F]
    head = ", ".join(f"i{k}: {s.split('{')[0]}" for k, s in enumerate(shapes))
    out = ", ".join(F.split("{")[0] for _ in results)
    entry.append(
        f"ROOT %{c.name()} = ({', '.join(F for _ in results)}) "
        f"tuple({', '.join('%' + r for r in results)})"
    )
    return (
        "HloModule drawn_async, is_scheduled=true, num_partitions=4\n\n"
        + PLUS
        + "\n"
        + "\n".join(c.texts)
        + f"\nENTRY %{c.name()} ({head}) -> ({out}) {{\n"
        + "\n".join(f"  {line}" for line in entry)
        + "\n}\n"
    )

"""HLO modules drawn for phase 7's reading tasks (conditionals, while_loops): a new module every
run, with every place a conditional or a while may sit in a module that XLA's parser reads.

Compiled programs put control flow in few places (ENTRY, loop bodies, s32-indexed branches,
the CPU's call wrappers), and the metamorphic variants give every instruction a name of its
own. A drawn module always holds, whatever the seed:

- a computation nothing calls, with a conditional and a while in it;
- a while whose condition picks its predicate with a conditional;
- a pred-indexed conditional (true_computation=, false_computation=) whose true branch holds a
  while;
- one computation holding two whiles and a conditional, called from two call sites;
- instruction names that repeat across computations: every conditional's index is `%k` (pred
  in some computations, s32 in others), every while is `%loop`;
- a while whose result nothing reads (not ROOT, no operand of anything), in a drawn one of
  ENTRY, the computation nothing calls or the one called from two sites: XLA's parser keeps
  it (only optimization removes dead code), so it is an instruction like any other;
- a conditional whose result nothing reads, at a drawn place in ENTRY;
- two conditionals in ENTRY that do not read each other (one pred-indexed, one s32), the
  instruction adding them reading them in the other order than the text prints them: text
  order is not the order a walk back from ROOT reaches instructions in;
- the same while line (`%loop = ... while(%init), condition=%c, body=%b`) in two
  computations: identical text, two instructions.

What is drawn: the computation names, which leaf computations serve as branches (repeats
included) and how many branches an s32 conditional has, which index the condition's
conditional reads, the order of the features in ENTRY and the order the computations are
printed in (callees before callers, as XLA's parser requires; on request, the computation
nothing calls after ENTRY, so ENTRY is neither first nor last: XLA keeps a module's uncalled
computations wherever they were added). The expected answers come from
XLA's parser (kata_harness.oracles), never from this description.
"""

from __future__ import annotations

import random

_NAMES = (
    "alder", "birch", "cedar", "dogwood", "elm", "fir", "ginkgo", "hazel", "ivy", "juniper",
    "larch", "maple", "oak", "pine", "rowan", "spruce", "tamarack", "willow", "yew", "aspen",
)  # fmt: skip
_LEAF_OPS = ("add(%a, %a)", "negate(%a)", "multiply(%a, %a)", "subtract(%a, %a)")
_PAIR = "(s32[], f32[4]{0})"
KINDS = (None, "s32", "pred")


def _computation(name: str, params: str, result: str, lines: list[str], entry=False) -> str:
    head = f"ENTRY %{name}" if entry else f"%{name}"
    body = "\n".join(f"  {line}" for line in lines)
    return f"{head} ({params}) -> {result} {{\n{body}\n}}\n"


def _index(kind: str, value: str, tag: str = "") -> list[str]:
    """Lines computing the conditional index %k (pred or s32) from f32[4] %value."""
    lines = [
        f"%e{tag} = f32[1]{{0}} slice({value}), slice={{[0:1]}}",
        f"%sc{tag} = f32[] reshape(%e{tag})",
    ]
    if kind == "pred":
        compare = f"%k{tag} = pred[] compare(%sc{tag}, %zero{tag}), direction=GT"
        return [*lines, f"%zero{tag} = f32[] constant(0)", compare]
    return [*lines, f"%k{tag} = s32[] convert(%sc{tag})"]


def _conditional(result: str, value: str, branches: list[str], kind: str, tag: str = "") -> str:
    if kind == "pred":
        true, false = branches
        return (
            f"{result} = f32[4]{{0}} conditional(%k{tag}, {value}, {value}), "
            f"true_computation=%{true}, false_computation=%{false}"
        )
    operands = ", ".join([value] * len(branches))
    listed = ", ".join(f"%{b}" for b in branches)
    listing = f"branch_computations={{{listed}}}"
    return f"{result} = f32[4]{{0}} conditional(%k{tag}, {operands}), {listing}"


def _idle_while(value: str, loop: tuple[str, str]) -> list[str]:
    """A while over f32[4] %value whose result nothing reads."""
    condition, body = loop
    return [
        "%idle_start = s32[] constant(0)",
        f"%idle_init = {_PAIR} tuple(%idle_start, {value})",
        f"%idle = {_PAIR} while(%idle_init), condition=%{condition}, body=%{body}",
    ]


def _idle_conditional(value: str, branches: list[str], kind: str) -> list[str]:
    """A conditional over f32[4] %value whose result nothing reads."""
    return [*_index(kind, value, "_idle"), _conditional("%idle_c", value, branches, kind, "_idle")]


def _apart(value: str, result: str, first: tuple, second: tuple, tag: str) -> list[str]:
    """Two conditionals of %value, each (kind, branches), that do not read each other, printed
    first then second; %result adds them in the other order (second, first)."""
    lines, names = [], []
    for part, (kind, branches) in zip("ab", (first, second), strict=True):
        names.append(f"%c{tag}{part}")
        lines += [*_index(kind, value, tag + part)]
        lines += [_conditional(names[-1], value, branches, kind, tag + part)]
    return [*lines, f"{result} = f32[4]{{0}} add({names[1]}, {names[0]})"]


def _while(result: str, value: str, loop: tuple[str, str], tag: str = "") -> list[str]:
    condition, body = loop
    return [
        f"%start{tag} = s32[] constant(0)",
        f"%init{tag} = {_PAIR} tuple(%start{tag}, {value})",
        f"%loop{tag} = {_PAIR} while(%init{tag}), condition=%{condition}, body=%{body}",
        f"{result} = f32[4]{{0}} get-tuple-element(%loop{tag}), index=1",
    ]


class _Draw:
    def __init__(self, rng: random.Random) -> None:
        self.rng = rng
        self.names = iter(rng.sample(_NAMES, len(_NAMES)))
        self.texts: dict[str, str] = {}
        self.calls: dict[str, set[str]] = {}

    def add(self, text: str, name: str, calls: set[str]) -> str:
        self.texts[name], self.calls[name] = text, calls
        return name

    def leaf(self) -> str:
        name = next(self.names)
        op = self.rng.choice(_LEAF_OPS)
        lines = ["%a = f32[4]{0} parameter(0)", f"ROOT %r = f32[4]{{0}} {op}"]
        return self.add(_computation(name, "a: f32[4]", "f32[4]", lines), name, set())

    def branches(self, leaves: list[str]) -> list[str]:
        return [self.rng.choice(leaves) for _ in range(self.rng.randint(1, 4))]

    def condition(self, keep: str) -> str:
        """A loop condition (counter < 3) whose ROOT is a conditional choosing the predicate."""
        name = next(self.names)
        lines = [
            f"%s = {_PAIR} parameter(0)",
            "%i = s32[] get-tuple-element(%s), index=0",
            "%three = s32[] constant(3)",
            "%lt = pred[] compare(%i, %three), direction=LT",
        ]
        if self.rng.random() < 0.5:
            lines += ["%k = pred[] compare(%i, %three), direction=NE"]
            lines += [
                "ROOT %c = pred[] conditional(%k, %lt, %lt), "
                f"true_computation=%{keep}, false_computation=%{keep}"
            ]
        else:
            lines += ["%k = s32[] add(%i, %three)"]
            lines += [f"ROOT %c = pred[] conditional(%k, %lt), branch_computations={{%{keep}}}"]
        return self.add(_computation(name, f"s: {_PAIR}", "pred[]", lines), name, {keep})

    def body(self, leaves: list[str], conditional: bool) -> str:
        """A loop body: counter + 1, and the f32[4] through a conditional (s32) or a leaf."""
        name = next(self.names)
        lines = [
            f"%t = {_PAIR} parameter(0)",
            "%i = s32[] get-tuple-element(%t), index=0",
            "%x = f32[4]{0} get-tuple-element(%t), index=1",
            "%one = s32[] constant(1)",
            "%next = s32[] add(%i, %one)",
        ]
        if conditional:
            called = self.branches(leaves)
            lines += [*_index("s32", "%x"), _conditional("%y", "%x", called, "s32")]
        else:
            called = [self.rng.choice(leaves)]
            lines += [f"%y = f32[4]{{0}} call(%x), to_apply=%{called[0]}"]
        lines += [f"ROOT %out = {_PAIR} tuple(%next, %y)"]
        return self.add(_computation(name, f"t: {_PAIR}", _PAIR, lines), name, set(called))

    def region(
        self, leaves: list[str], loops: list[tuple[str, str]], kind: str | None, idle=False
    ) -> str:
        """f32[4] -> f32[4] holding one while per (condition, body) in `loops`, one after the
        other, and, unless kind is None, a conditional of that index kind over leaves; with
        idle, one more while over the first loop's computations, its result read by nothing."""
        name = next(self.names)
        lines = ["%x0 = f32[4]{0} parameter(0)"]
        for n, loop in enumerate(loops):
            lines += _while(f"%x{n + 1}", f"%x{n}", loop, str(n or ""))
        if idle:
            spot = self.rng.randint(1, len(lines))
            lines[spot:spot] = _idle_while("%x0", loops[0])
        called = {c for loop in loops for c in loop}
        root = f"%x{len(loops)}"
        if kind is not None:
            branches = self.branches(leaves) if kind == "s32" else self.rng.sample(leaves, 2)
            lines += [*_index(kind, root), _conditional("%c", root, branches, kind)]
            called |= set(branches)
            root = "%c"
        lines += [f"ROOT %r = f32[4]{{0}} copy({root})"]
        return self.add(_computation(name, "x0: f32[4]", "f32[4]", lines), name, called)

    def ordered(self, late: frozenset[str] = frozenset()) -> str:
        """The computations in a drawn order that defines every callee before its callers; the
        computations in `late` (nothing calls them) printed after ENTRY."""
        done: list[str] = []
        waiting = dict(self.calls)
        while waiting:
            ready = sorted(n for n, calls in waiting.items() if calls <= set(done))
            if "ENTRY" not in done:
                ready = [n for n in ready if n not in late] or ready
            pick = self.rng.choice(ready)
            done.append(pick)
            del waiting[pick]
        return "HloModule drawn_control_flow\n\n" + "\n".join(self.texts[n] for n in done)


def draw_control_module(rng: random.Random, uncalled_after_entry: bool = False) -> str:
    """A module holding every place listed in the module docstring, drawn afresh; the
    computation nothing calls printed after ENTRY if `uncalled_after_entry` (ENTRY then sits
    among the computations, not last), wherever the drawn order puts it otherwise."""
    draw = _Draw(rng)
    leaves = [draw.leaf() for _ in range(rng.randint(2, 3))]
    keep = next(draw.names)
    draw.add(
        _computation(keep, "a: pred[]", "pred[]", ["ROOT %a = pred[] parameter(0)"]), keep, set()
    )
    plain = draw.body(leaves, conditional=False)
    idle = rng.choice(("entry", "orphan", "shared"))  # where the while nothing reads sits
    orphan = [(draw.condition(keep), plain)]
    uncalled = draw.region(leaves, orphan, "pred", idle=idle == "orphan")  # nothing calls it
    twice = [(draw.condition(keep), draw.body(leaves, True)), (draw.condition(keep), plain)]
    shared = draw.region(leaves, twice, "s32", idle=idle == "shared")  # called from two sites
    # the same while line (%loop, %init, condition and body) in a second computation
    hoisted = draw.region(leaves, [rng.choice((orphan[0], twice[0]))], rng.choice(KINDS))
    outer = (draw.condition(keep), draw.body(leaves, rng.random() < 0.5))
    apart = [("pred", rng.sample(leaves, 2)), ("s32", draw.branches(leaves))]
    rng.shuffle(apart)  # which of the two independent conditionals the text prints first
    features = [
        lambda v, y, tag: [f"{y} = f32[4]{{0}} call({v}), to_apply=%{shared}"],
        lambda v, y, tag: [
            *_index("pred", v, tag),
            _conditional(y, v, [hoisted, rng.choice(leaves)], "pred", tag),
        ],
        lambda v, y, tag: [f"{y} = f32[4]{{0}} call({v}), to_apply=%{shared}"],
        lambda v, y, tag: _while(y, v, outer, tag),
        lambda v, y, tag: _apart(v, y, apart[0], apart[1], tag),
    ]
    if rng.random() < 0.5:  # a second while of ENTRY, through the same computations
        features.append(lambda v, y, tag: _while(y, v, outer, tag))
    rng.shuffle(features)
    dead = rng.choice(("pred", "s32"))  # a conditional nothing reads, at a drawn place
    dead_branches = rng.sample(leaves, 2) if dead == "pred" else draw.branches(leaves)
    dead_at = rng.randint(0, len(features))
    lines = ["%x0 = f32[4]{0} parameter(0)"]
    for n, feature in enumerate(features):
        if n == dead_at:
            lines += _idle_conditional(f"%x{n}", dead_branches, dead)
        lines += feature(f"%x{n}", f"%x{n + 1}", str(n))
    if dead_at == len(features):
        lines += _idle_conditional(f"%x{dead_at}", dead_branches, dead)
    if idle == "entry":
        lines += _idle_while(f"%x{rng.randint(0, len(features))}", outer)
    lines += [f"ROOT %out = f32[4]{{0}} copy(%x{len(features)})"]
    entry = _computation(next(draw.names), "x0: f32[4]", "f32[4]", lines, entry=True)
    draw.add(entry, "ENTRY", {shared, hoisted, *leaves, *outer})
    return draw.ordered(frozenset({uncalled}) if uncalled_after_entry else frozenset())

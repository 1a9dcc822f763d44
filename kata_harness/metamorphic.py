"""Metamorphic variants of an HLO module: the same facts under other names and in another order.

A reading task's answer must follow the module's facts, not the way XLA happened to print them
today. :func:`variants` gives, for a module in XLA's printed form (``%`` before every name), the
module with every computation and instruction renamed to a label that says nothing of its opcode
(``%n17``), and with its computations in another order; each is confirmed by XLA's own parser
(:mod:`.oracles`). A test runs the learner's function on each and compares with the expected
answer carried through :meth:`HloVariant.rename`, so an answer that finds an instruction by its
printed name, or pairs things by their order, fails on its own. :func:`nested` moves what
each ENTRY fusion calls one nested fusion further down, for tasks that read what a kernel's
``calls=`` reach.
"""

from __future__ import annotations

import random
import re
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

from xla_inspect.normalize import renumber_names
from xla_inspect.parse import parse_hlo

from . import oracles

_WORD = r"[A-Za-z_][A-Za-z0-9_.\-]*"
_NAME = re.compile(rf"%({_WORD})")
_HEADER = re.compile(rf"^(ENTRY )?%({_WORD}) \((.*?)\) -> ", re.MULTILINE)
_SIGNATURE_NAME = re.compile(rf"(?<![A-Za-z0-9_.\-])({_WORD})(?=: )")


@dataclass(frozen=True, slots=True)
class HloVariant:
    """``text``: the module changed by ``kind``; ``names``: old name -> new name."""

    kind: str
    text: str
    names: dict[str, str] = field(default_factory=dict)

    def rename(self, value: Any) -> Any:
        """``value`` (an expected answer) with every name it holds renamed, through strings,
        lists, tuples, sets and dict keys and values."""
        if isinstance(value, str):
            return self.names.get(value, value)
        if isinstance(value, dict):
            return type(value)((self.rename(k), self.rename(v)) for k, v in value.items())
        if isinstance(value, (list, tuple, set, frozenset)):
            return type(value)(self.rename(v) for v in value)
        return value


def renamed(text: str, rng: random.Random) -> HloVariant | None:
    """Every computation and instruction under a fresh label (``k3``, ``n41``), shuffled so
    that label order says nothing either; None if one table cannot rename the module (a name
    defined twice)."""
    module = parse_hlo(text)
    computations = [c.name for c in module.computations]
    instructions = _written([i.name for c in module.computations for i in c], text)
    if len(set(instructions)) != len(instructions) or set(instructions) & set(computations):
        return None  # a name used twice: not the printed form one table can rename
    labels = rng.sample(range(10 * len(instructions) + 10), len(instructions))
    names = {old: f"n{label}" for old, label in zip(instructions, labels, strict=True)}
    c_labels = rng.sample(range(10 * len(computations) + 10), len(computations))
    # "k": a computation labelled c64 would read as a complex type
    names |= {old: f"k{label}" for old, label in zip(computations, c_labels, strict=True)}
    if "%" in text:
        relabelled = _relabel_printed(text, names)
    else:  # JAX's unoptimized text prints names bare: go through XLA-style canonical names
        relabelled = _relabel_bare(text, names, module)
    if relabelled is None:
        return None
    found = parse_hlo(relabelled)
    relabelled_names = [i.name for c in found.computations for i in c]
    if _written(relabelled_names, relabelled) != [names[n] for n in instructions]:
        return None  # a name the relabelling did not reach
    return HloVariant("renamed", relabelled, names)


def _written(names: list[str], text: str) -> list[str]:
    """The names of ``names`` the text writes: in XLA's printed form, not those of the
    computations the reader builds for ``X-start`` sugar (``fusion-start(...), calls=...``),
    whose instructions XLA names for itself and the text never shows."""
    if "%" not in text:
        return names
    shown = set(_NAME.findall(text))
    return [n for n in names if n in shown]


def _relabel_printed(text: str, names: dict[str, str]) -> str:
    """XLA's printed form: every name after a '%', and a signature's parameters before ':'."""
    relabelled = _NAME.sub(lambda m: "%" + names.get(m[1], m[1]), text)

    def signature(match: re.Match[str]) -> str:
        inner = _SIGNATURE_NAME.sub(lambda m: names.get(m[1], m[1]), match[3])
        return f"{match[1] or ''}%{match[2]} ({inner}) -> "

    return _HEADER.sub(signature, relabelled)


_STRING = re.compile(r'"(?:[^"\\\n]|\\.)*"')


def _relabel_bare(text: str, names: dict[str, str], module: Any) -> str | None:
    """Names without '%': xla_inspect's canonical renumbering first (``main``, ``comp.0``,
    ``sine.1``: words no opcode, attribute or shape spells), then, computation by computation,
    each canonical word outside strings replaced by its label."""
    canonical_text = renumber_names(text)
    canonical = parse_hlo(canonical_text)
    if len(canonical.computations) != len(module.computations):
        return None
    global_table = {
        c.name: names[o.name]
        for o, c in zip(module.computations, canonical.computations, strict=True)
    }
    blocks = list(_ANY_BLOCK.finditer(canonical_text))
    if len(blocks) != len(module.computations):
        return None
    pieces, at = [], 0
    for block, old, new in zip(blocks, module.computations, canonical.computations, strict=True):
        local = [i.name for i in new]
        if len(set(local)) != len(local) or len(local) != len(list(old)):
            return None
        table = global_table | {n: names[o.name] for o, n in zip(old, local, strict=True)}
        pieces += [canonical_text[at : block.start()], _substitute(block[0], table)]
        at = block.end()
    return "".join(pieces) + canonical_text[at:]


def _substitute(block: str, table: dict[str, str]) -> str:
    """``block`` with each word of ``table`` (outside strings) replaced."""
    word = re.compile(
        r"(?<![\w.\-%])("
        + "|".join(map(re.escape, sorted(table, key=len, reverse=True)))
        + r")(?![\w\-]|\.\d)"
    )
    strings = _STRING.findall(block)
    pieces = [word.sub(lambda m: table[m[1]], piece) for piece in _STRING.split(block)]
    return "".join(p + (strings[k] if k < len(strings) else "") for k, p in enumerate(pieces))


def reordered(text: str, rng: random.Random) -> HloVariant | None:
    """The computations in another order XLA accepts (a computation after those it calls, as
    XLA's parser wants); None if no other order exists."""
    blocks = list(_ANY_BLOCK.finditer(text))
    if not blocks or "".join(b[0] for b in blocks).split() != text[blocks[0].start() :].split():
        return None  # something between the computations this reading would drop
    names = [_BLOCK_NAME.match(b[0])[1] for b in blocks]  # type: ignore[index]
    calls = {
        i: {j for j, n in enumerate(names) if j != i and _mentions(b[0][b[0].index("{") :], n)}
        for i, b in enumerate(blocks)
    }
    for _ in range(20):
        order: list[int] = []
        while len(order) < len(blocks):
            ready = [i for i in range(len(blocks)) if i not in order and calls[i] <= set(order)]
            if not ready:
                return None  # a cycle: not a module XLA reads
            order.append(rng.choice(ready))
        if order != list(range(len(blocks))):
            body = "".join(blocks[i][0] + "\n" for i in order)
            return HloVariant("reordered", text[: blocks[0].start()] + body)
    return None


# A computation: its header (over several lines, up to the '{' that ends one) and its body.
_ANY_BLOCK = re.compile(
    rf"^(?:ENTRY )?%?{_WORD}[ \t]*(?:\(.*?)?\{{\n.*?^\}}\n", re.MULTILINE | re.DOTALL
)
_BLOCK_NAME = re.compile(rf"(?:ENTRY )?%?({_WORD})")


def _mentions(body: str, name: str) -> bool:
    return re.search(rf"(?<![\w.\-]){re.escape(name)}(?![\w\-]|\.\d)", body) is not None


_ENTRY_BLOCK = re.compile(r"^ENTRY .*?^\}\n", re.MULTILINE | re.DOTALL)
_PARAMETER = re.compile(rf"^\s*%({_WORD}) = (\S+) parameter\((\d+)\)", re.MULTILINE)
_ROOT_SHAPE = re.compile(r"^\s*ROOT %\S+ = (.*?) [a-z][\w\-]*\(", re.MULTILINE)


def nested(text: str) -> HloVariant | None:
    """Each computation an ENTRY fusion calls moved one level down: the fusion calls a new
    computation whose only work is a nested fusion calling the old one (what XLA prints for
    nested fusions), so a fact found only in the computations an ENTRY instruction calls
    directly is lost. None if ENTRY calls no fusion or XLA's parser refuses the result."""
    entry = _ENTRY_BLOCK.search(text)
    if entry is None:
        return None
    called = sorted(set(re.findall(rf" fusion\(.*?calls=%({_WORD})", entry[0])))
    blocks = {_BLOCK_NAME.match(b[0])[1]: b[0] for b in _ANY_BLOCK.finditer(text)}  # type: ignore[index]
    added = []
    for name in called:
        block = blocks.get(name)
        if block is None:
            return None
        header = block[: block.index("{\n")]
        params = sorted(_PARAMETER.findall(block), key=lambda p: int(p[2]))
        root = _ROOT_SHAPE.search(block)
        if root is None or "->" not in header:
            return None
        signature = ", ".join(
            f"{p}.nest: {re.sub(r'{[^}]*}', '', shape)}" for p, shape, _ in params
        )
        lines = [f"  %{p}.nest = {shape} parameter({n})" for p, shape, n in params]
        operands = ", ".join(f"%{p}.nest" for p, _, _ in params)
        lines.append(
            f"  ROOT %{name}.nest.root = {root[1]} fusion({operands}), kind=kLoop, calls=%{name}"
        )
        result = header.rsplit("->", 1)[1].strip()
        added.append(f"%{name}.nest ({signature}) -> {result} {{\n" + "\n".join(lines) + "\n}\n\n")
    if not added:
        return None
    names = "|".join(map(re.escape, sorted(called, key=len, reverse=True)))
    body = re.sub(rf"(calls=%)({names})(?![\w.\-])", r"\1\2.nest", entry[0])
    moved = text[: entry.start()] + "".join(added) + body + text[entry.end() :]
    return HloVariant("nested", moved) if oracles.xla_accepts(moved) else None


def trailing(text: str, rng: random.Random) -> HloVariant | None:
    """A computation nothing calls printed after ENTRY (XLA's parser accepts it, and XLA
    prints a module's uncalled computations in the order they were added): a copy, under
    fresh names, of one computation ENTRY reaches, so ENTRY is not the last computation and
    the ENTRY keyword, not the place, says which one it is. None if the module has no other
    computation, prints names bare, or XLA's parser refuses the result."""
    entry = _ENTRY_BLOCK.search(text)
    if entry is None or "%" not in text:
        return None
    others = [b[0] for b in _ANY_BLOCK.finditer(text) if not b[0].startswith("ENTRY ")]
    if not others:
        return None
    block = rng.choice(others)
    header = block[: block.index("{\n")]
    defined = {m[1] for m in re.finditer(rf"^\s*(?:ROOT )?%({_WORD}) = ", block, re.MULTILINE)}
    defined |= set(_SIGNATURE_NAME.findall(header))
    old = _BLOCK_NAME.match(block)[1]  # type: ignore[index]
    suffix = f".uncalled{rng.randrange(1000)}"
    names = {n: n + suffix for n in defined} | {old: old + suffix}
    copy = _NAME.sub(lambda m: "%" + names.get(m[1], m[1]), block)
    at = copy.index("{\n")
    copy = _SIGNATURE_NAME.sub(lambda m: names.get(m[1], m[1]), copy[:at]) + copy[at:]
    moved = text[: entry.end()] + "\n" + copy + text[entry.end() :]
    return HloVariant("uncalled after ENTRY", moved) if oracles.xla_accepts(moved) else None


def shared(text: str, name: str) -> HloVariant | None:
    """A second ENTRY fusion calling the same computation as the ENTRY fusion ``name`` (XLA's
    parser accepts two fusions with one fused computation): a copy of ``name``'s line under
    the name ``<name>.twin``, placed right after it, taking over ``name``'s first use in ENTRY,
    so a fact found by walking what each kernel calls must be found for both kernels, not
    once for the module. None if ``name`` is no ENTRY fusion with a later user there, or XLA's
    parser refuses the result."""
    entry = _ENTRY_BLOCK.search(text)
    if entry is None:
        return None
    lines = entry[0].split("\n")
    own = re.compile(rf"^(\s*)%{re.escape(name)} = (.* fusion\(.*)$")
    at = next((i for i, line in enumerate(lines) if own.match(line)), None)
    if at is None:
        return None
    use = re.compile(rf"%{re.escape(name)}(?=[,)])")
    user = next((i for i in range(at + 1, len(lines)) if use.search(lines[i])), None)
    if user is None:
        return None
    twin = f"{name}.twin"
    if re.search(rf"%{re.escape(twin)}(?![\w.\-])", text):
        return None
    match = own.match(lines[at])
    assert match is not None
    lines[user] = use.sub(f"%{twin}", lines[user], count=1)
    lines.insert(at + 1, f"{match[1]}%{twin} = {match[2]}")
    moved = text[: entry.start()] + "\n".join(lines) + text[entry.end() :]
    found = HloVariant("two fusions calling one computation", moved, {name: twin})
    return found if oracles.xla_accepts(moved) else None


def variants(text: str, seed: int) -> Iterator[HloVariant]:
    """The renamed and the reordered module, then both at once, each accepted by XLA's parser
    (a variant XLA refuses is left out: the fact must hold for modules XLA reads)."""
    rng = random.Random(seed)
    first = renamed(text, rng)
    found = [first, reordered(text, rng)]
    if first is not None:
        both = reordered(first.text, rng)
        if both is not None:
            found.append(HloVariant("renamed+reordered", both.text, first.names))
    for variant in found:
        if variant is not None and oracles.xla_accepts(variant.text):
            yield variant

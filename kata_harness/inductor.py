"""Oracles and metamorphic variants for the code PyTorch's Inductor generates (phase 16).

The oracles read the facts a phase-16 test compares with without ``xla_inspect.inductor`` (which
the references use): Inductor's generated module line by line, and XLA's module through XLA's
own parser (:mod:`.oracles`). The variants are the generated module with its buffers, its
``call`` inputs and its fused kernels' numbers renamed, its kernel definitions reordered, kernel
calls of ``call`` nested in blocks and maybe its comments (the ``# AOT ID`` header among them)
dropped, each still a module Python parses; a reading task's answer must not change under any of
them.
"""

from __future__ import annotations

import ast
import functools
import io
import itertools
import random
import re
import tokenize
from dataclasses import dataclass

from . import oracles

_CALL_DEF = re.compile(r"^(?P<indent>\s*)def call\((?:self, )?args\):\s*$", re.M)
_KERNEL_LINE = re.compile(
    r"^\s+(?:\w+ = )?(?:(?P<fused>cpp_fused_\w+)|extern_kernels\.(?P<extern>\w+)"
    r"|torch\.ops\.aten\.(?P<fallback>\w+)\.\w+)\("
)
_ASSERT = re.compile(r"^\s+assert_size_stride(?P<grouped>_grouped)?\((?P<rest>.*)\)\s*$")
_KERNEL_DEF = re.compile(r"^(cpp_fused_\w+) = async_compile\.\w+\(", re.M)
_FUSED_NAME = re.compile(r"^cpp_fused_(?:(?P<ops>\w+?)_)?(?P<n>\d+)$")  # cpp_fused_0: no ops


# ---- Inductor's generated module, read line by line -------------------------------------


@dataclass(frozen=True, slots=True)
class Call:
    """One kernel line of `call`: its `kind` ("fused", "extern", "fallback"), the kernel's
    name as written after `extern_kernels.` / `torch.ops.aten.` or in full (`cpp_fused_...`),
    and the whole line."""

    kind: str
    name: str
    line: str


def call_body(code: str) -> list[str]:
    """The lines of the generated module's `call` function (after its `def` line)."""
    match = _CALL_DEF.search(code)
    assert match is not None, "no call function in the generated code"
    indent = len(match["indent"])
    body: list[str] = []
    for line in code[match.end() :].splitlines()[1:]:
        if line.strip() and len(line) - len(line.lstrip()) <= indent:
            break
        body.append(line)
    return body


def calls(code: str) -> list[Call]:
    found = []
    for line in call_body(code):
        match = _KERNEL_LINE.match(line)
        if match:
            kind = next(k for k in ("fused", "extern", "fallback") if match[k])
            found.append(Call(kind, match[kind], line))
    return found


def fused_ops(name: str) -> str:
    match = _FUSED_NAME.match(name)
    assert match is not None, name
    return match["ops"] or ""


def inputs(code: str) -> list[str]:
    for line in call_body(code):
        left, sep, right = line.partition(" = ")
        if sep and right.strip() == "args":
            return [name.strip() for name in left.split(",") if name.strip()]
    raise AssertionError("call does not unpack args")


def asserted_sizes(code: str) -> dict[str, tuple[int, ...]]:
    """Each input's size as `call`'s assert_size_stride lines state it."""
    sizes: dict[str, tuple[int, ...]] = {}
    for line in call_body(code):
        match = _ASSERT.match(line)
        if not match:
            continue
        args = ast.literal_eval(
            "(" + re.sub(r"\b([A-Za-z_]\w*)\b(?!')", r"'\1'", match["rest"]) + ")"
        )
        if match["grouped"]:
            sizes.update(zip(args[0], args[1], strict=True))
        else:
            sizes[args[0]] = tuple(args[1])
    return sizes


def accumulators(cpp: str) -> int:
    """Reductions of a C++ kernel: declarations `<type> tmp_accN = ...;` (the `_vec`, `_arr`
    and `_local` companions of an accumulator are not counted)."""
    count = 0
    for line in cpp.splitlines():
        words = line.split()
        if len(words) >= 3 and words[2] == "=" and re.fullmatch(r"tmp_acc\d+", words[1]):
            count += 1
    return count


def kernel_sources(code: str) -> dict[str, str]:
    sources: dict[str, str] = {}
    for match in _KERNEL_DEF.finditer(code):
        start = code.index("r'''", match.end())
        sources[match[1]] = code[start + 4 : code.index("'''", start + 4)]
    return sources


# ---- XLA's module, through XLA's parser ---------------------------------------------------


@dataclass(frozen=True, slots=True)
class XlaKernel:
    """An ENTRY instruction that runs code: a fusion, dot, custom-call, reduce or
    reduce-window; `reductions` counts reduce and reduce-window in it and what its calls=
    reach; `holds_dot` whether a dot or custom-call is among them."""

    name: str
    opcode: str
    kind: str | None
    operands: tuple[str, ...]
    reductions: int
    holds_dot: bool


_OPCODES = {
    "kFusion": "fusion",
    "kDot": "dot",
    "kCustomCall": "custom-call",
    "kReduce": "reduce",
    "kReduceWindow": "reduce-window",
}


def _opcode(instruction) -> str:
    name = str(instruction.opcode).rsplit(".", 1)[-1]
    return _OPCODES.get(name, name)


def xla_kernels(text: str) -> list[XlaKernel]:
    """The ENTRY kernels of `text`, in ENTRY order (a new list each call: several tests read
    one module, and XLA's parser reads it once)."""
    return list(_xla_kernels(text))


@functools.lru_cache(maxsize=256)
def _xla_kernels(text: str) -> tuple[XlaKernel, ...]:
    module = oracles.xla_parsed(text)
    entry_name = re.search(r"^ENTRY %?([\w.\-]+)", text, re.M)
    assert entry_name is not None, "no ENTRY computation"
    by_name = {c.name: c for c in module.computations()}
    entry = by_name[entry_name[1]]

    def reached(instruction, seen: set[str]) -> list[str]:
        opcodes = [_opcode(instruction)]
        for name in re.findall(r"\bcalls=%?([\w.\-]+)", instruction.to_string()):
            if name not in seen:
                seen.add(name)
                for inner in by_name[name].instructions():
                    opcodes += reached(inner, seen)
        return opcodes

    found = []
    for instruction in entry.instructions():
        opcode = _opcode(instruction)
        if opcode not in _OPCODES.values():
            continue
        opcodes = reached(instruction, set())
        kind = re.search(r"\bkind=(\w+)", instruction.to_string())
        found.append(
            XlaKernel(
                name=instruction.name,
                opcode=opcode,
                kind=kind[1] if kind else None,
                operands=tuple(o.name for o in instruction.operands()),
                reductions=sum(o in ("reduce", "reduce-window") for o in opcodes),
                holds_dot=any(o in ("dot", "custom-call") for o in opcodes),
            )
        )
    return tuple(found)


def rank1_parameters(text: str) -> list[str]:
    """The ENTRY parameters of rank 1, in ENTRY order (a new list each call)."""
    return list(_rank1_parameters(text))


@functools.lru_cache(maxsize=256)
def _rank1_parameters(text: str) -> tuple[str, ...]:
    module = oracles.xla_parsed(text)
    entry_name = re.search(r"^ENTRY %?([\w.\-]+)", text, re.M)
    assert entry_name is not None
    entry = next(c for c in module.computations() if c.name == entry_name[1])
    found = []
    for instruction in entry.instructions():
        # the shape as XLA prints it (jaxlib 0.10's instructions have no shape attribute)
        shape = re.search(r" = \w+\[([^\]]*)\]", instruction.to_string())
        rank1 = shape is not None and shape[1] != "" and "," not in shape[1]
        if _opcode(instruction) == "kParameter" and rank1:
            found.append(instruction.name)
    return tuple(found)


# ---- metamorphic variants of generated code --------------------------------------------


def census(hlo: str, code: str) -> dict[str, dict[str, int]]:
    """Library and fused kernels of each compiler, as kernel_census counts them."""
    xla = {"library": 0, "fused": 0}
    for k in xla_kernels(hlo):
        if k.opcode in ("dot", "custom-call") or (k.opcode == "fusion" and k.kind == "kCustom"):
            xla["library"] += 1
        elif k.opcode == "fusion":
            xla["fused"] += 1
    return {"xla": xla, "inductor": kernel_kinds(code)}


def kernel_kinds(code: str) -> dict[str, int]:
    """Inductor's library calls and fallbacks ("library") and fused kernel calls ("fused")."""
    found = calls(code)
    fused = sum(c.kind == "fused" for c in found)
    return {"library": len(found) - fused, "fused": fused}


def variant(
    code: str, rng: random.Random, comments: bool | None = None, overlapping: bool | None = None
) -> str:
    """`code` with every buffer and every non-tangent input of `call` renamed, `call`'s inputs
    unpacked in another order, each fused kernel renumbered (its ops kept), kernel calls nested
    in blocks (:func:`_nest_calls`), and the kernel definitions in another order; its comments
    kept when `comments` is true, dropped when false, either when None. With `overlapping`
    (either when None) the new names are parts of one another: each input's name is part of
    every buffer's (`v7` in `v7v12_3`), and some input names begin others' (`v1`, `v12`), so
    a name is found by whole words, not as a piece of a line."""
    keep = rng.random() < 0.5 if comments is None else comments
    overlap = rng.random() < 0.5 if overlapping is None else overlapping
    names: dict[str, str] = {}
    labels = rng.sample(range(1000), 1000)
    given = [name for name in inputs(code) if not name.startswith("tangents_")]
    if overlap:
        stems = rng.sample(range(1, 10), 9)
        numbers = [*stems, *(10 * s + rng.randrange(10) for s in stems)]
        rng.shuffle(numbers)
        numbers += [n for n in labels if n not in numbers]  # more than 18 inputs
        for name, number in zip(given, numbers, strict=False):
            names[name] = f"v{number}"
        whole = "".join(names[n] for n in given) or "v"
        for name in sorted(set(re.findall(r"\bbuf\d+\b", code))):
            names[name] = f"{whole}_{labels.pop()}"
    else:
        for name in given:
            names[name] = f"in{labels.pop()}_{rng.choice(['x', 'p', 'arg'])}"
        for name in sorted(set(re.findall(r"\bbuf\d+\b", code))):
            names[name] = f"tmp{labels.pop()}"
    for name in kernel_sources(code):
        ops = fused_ops(name)
        names[name] = f"cpp_fused_{ops}_{labels.pop()}" if ops else f"cpp_fused_{labels.pop()}"
    renamed = _rename_tokens(code, names, keep)
    return _reorder_definitions(_nest_calls(_shuffle_inputs(renamed, rng), rng), rng)


_FUSED_STATEMENT = re.compile(r"^[ \t]+cpp_fused_\w+\(.*\)[ \t]*$", re.M)


def repeated(code: str, rng: random.Random) -> str | None:
    """`code` whose `call` runs one of its fused kernel statements (drawn) twice: a copy of the
    line right after it, in the same block (Inductor defines a kernel once and calls it
    wherever it needs that code, as HANDWRITTEN calls `cpp_fused_add_relu_3` twice). None when
    `call` runs no fused kernel."""
    match = _CALL_DEF.search(code)
    assert match is not None, "no call function in the generated code"
    start = code.index("\n", match.end()) + 1  # call's body, as call_body reads it
    end = start + len("\n".join(call_body(code)))
    spots = list(_FUSED_STATEMENT.finditer(code, start, end))
    if not spots:
        return None
    spot = rng.choice(spots)
    return f"{code[: spot.end()]}\n{spot[0]}{code[spot.end() :]}"


def _shuffle_inputs(code: str, rng: random.Random) -> str:
    """`call`'s `a, b, c = args` with its names in another order (each keeps its asserts)."""
    unpack = re.compile(r"^(?P<indent>\s+)(?P<names>\w+(?:, \w+)+) = args$", re.M)

    def shuffled(match: re.Match[str]) -> str:
        names = match["names"].split(", ")
        rng.shuffle(names)
        return f"{match['indent']}{', '.join(names)} = args"

    return unpack.sub(shuffled, code, count=1)


def _rename_tokens(code: str, names: dict[str, str], comments: bool) -> str:
    out = []
    previous = None
    listed = "|".join(map(re.escape, names))
    word = re.compile(rf"(?<![\w.])({listed})\b") if names else None  # not aten.addmm
    for token in tokenize.generate_tokens(io.StringIO(code).readline):
        if token.type == tokenize.COMMENT and not comments:
            continue  # the line keeps its NL token: a blank line where the comment was
        if token.type == tokenize.NAME and token.string in names and previous != ".":
            token = token._replace(string=names[token.string])
        elif token.type == tokenize.COMMENT and word is not None:  # "# buffer buf0 (op: ...)"
            token = token._replace(string=word.sub(lambda m: names[m[1]], token.string))
        out.append(token)
        previous = token.string if token.type == tokenize.OP else None
    return tokenize.untokenize(out)


# blocks a statement of `call` may run in: (the lines opening it, the last one opening the
# branch the statement runs in, which `args`, cleared by then, always takes; the lines closing it)
_BLOCKS = (
    (("with record_function('graph_call'):",), ()),
    (("if len(args) == 0:",), ()),
    (("if args:", "    pass", "else:"), ()),
    (("for _ in range(1):",), ()),
    (("for _ in args:", "    pass", "else:"), ()),
    (("while True:",), ("    break",)),
    (("try:",), ("finally:", "    pass")),
    (("try:", "    pass", "finally:"), ()),
    (("try:", "    pass", "except LookupError:", "    raise", "else:"), ()),
)


def _nest_calls(code: str, rng: random.Random) -> str:
    """`code` with some kernel calls of `call` each in a block of its own (one or two deep),
    among them, when `call` runs two kernels or more, one that runs before a kernel left where
    it was: `call` runs the same kernels in the same order."""
    lines = code.split("\n")
    match = _CALL_DEF.search(code)
    assert match is not None, "no call function in the generated code"
    first = code[: match.end()].count("\n") + 1  # the line after `def call`
    depth = len(lines[first - 1]) - len(lines[first - 1].lstrip())
    at = []
    for i in range(first, len(lines)):
        if lines[i].strip() and len(lines[i]) - len(lines[i].lstrip()) <= depth:
            break
        if _KERNEL_LINE.match(lines[i]):
            at.append(i)
    wrapped = {i for i in at if rng.random() < 0.5}
    pairs = itertools.pairwise(at)
    if len(at) > 1 and not any(a in wrapped and b not in wrapped for a, b in pairs):
        cut = rng.randrange(1, len(at))  # nested before the cut, in place after it
        wrapped = set(at[:cut])
    for i in sorted(wrapped, reverse=True):
        for _ in range(rng.choice((1, 1, 2))):
            line = lines[i].split("\n")[0]
            indent = line[: len(line) - len(line.lstrip())]
            opening, closing = rng.choice(_BLOCKS)
            inner = lines[i].replace("\n", "\n    ")
            block = [indent + o for o in opening] + ["    " + inner] + [indent + c for c in closing]
            lines[i] = "\n".join(block)
    return "\n".join(lines)


def _reorder_definitions(code: str, rng: random.Random) -> str:
    starts = [m.start() for m in _KERNEL_DEF.finditer(code)]
    if len(starts) < 2:
        return code
    blocks = []
    for start in starts:
        end = code.index("''')", start) + len("''')\n")
        blocks.append(code[start:end])
    tail_start = code.index("''')", starts[-1]) + len("''')\n")
    head = code[: starts[0]]
    shuffled = blocks[:]
    rng.shuffle(shuffled)
    return head + "\n\n".join(b.strip("\n") + "\n" for b in shuffled) + code[tail_start:]

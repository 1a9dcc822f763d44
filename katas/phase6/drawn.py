"""Cases phase 6's tests draw on every run (the `fresh` fixture): ENTRY computations of
naive_temp_bytes. Each is built so that the property it varies (every element type XLA has, a
ROOT that is not the last line, a while loop's body) changes the answer on every draw; the
expected values come from XLA (kata_harness.oracles.memory), never from a formula here.
"""

from __future__ import annotations

import random

from kata_harness.oracles import memory as oracle

PACKABLE = ("s4", "u4", "f4e2m1fn")  # 4-bit types XLA:CPU packs two to a byte ({0:E(4)})


def naive_module(fresh: random.Random) -> tuple[str, set[str]]:
    """An ENTRY computation drawn for this run and the names of the instructions whose results
    are its intermediates: a convert to every element type XLA knows (4-bit ones packed or not),
    an iota, a bitcast-convert, a broadcast of a constant, a fusion, a reduce, a while loop whose
    body and condition compute values of their own; the views (bitcast, tuple,
    get-tuple-element), constants and parameters around them; a ROOT (an array, or a tuple of
    some results) followed by instructions it does not use. Instruction names are drawn."""
    n = fresh.randrange(3, 40, 2)  # odd: a packed 4-bit buffer rounds up to a whole byte
    vec = f"f32[{n}]{{0}}"
    labels = iter(fresh.sample(range(100, 999), 80))
    blocks: list[list[tuple[str, str, bool]]] = []  # per block: (name, line, counted)

    def add(shape: str, body: str, counted: bool, new_block: bool = False) -> str:
        if new_block:
            blocks.append([])
        label = f"v{next(labels)}"
        blocks[-1].append((label, f"%{label} = {shape} {body}", counted))
        return label

    for dtype in oracle.element_types():
        layout = "{0:E(4)}" if dtype in PACKABLE and fresh.random() < 0.5 else "{0}"
        add(f"{dtype}[{n}]{layout}", "convert(%x)", True, new_block=True)
    add(f"s32[{n + 5}]{{0}}", "iota(), iota_dimension=0", True, new_block=True)
    add(f"{fresh.choice(['s32', 'u32'])}[{n}]{{0}}", "bitcast-convert(%x)", True, new_block=True)
    add(f"f32[1,{n}]{{1,0}}", "bitcast(%x)", False, new_block=True)
    two = add("f32[]", "constant(2)", False, new_block=True)
    add(f"f32[{n},3]{{1,0}}", f"broadcast(%{two}), dimensions={{}}", True)
    zero = add("f32[]", "constant(0)", False, new_block=True)
    add("f32[]", f"reduce(%x, %{zero}), dimensions={{0}}, to_apply=%add", True)
    fresh.shuffle(blocks)
    tail = [blocks.pop(fresh.randrange(len(blocks))) for _ in range(fresh.randint(1, 3))]
    # what the ROOT uses comes after the shuffled blocks and before the ROOT
    add(vec, "fusion(%x), kind=kLoop, calls=%fused", True, new_block=True)
    start = add("s32[]", "constant(0)", False, new_block=True)
    state = f"(s32[], {vec})"
    init = add(state, f"tuple(%{start}, %x)", False)
    loop = add(state, f"while(%{init}), condition=%cond, body=%body", True)
    final = add(vec, f"get-tuple-element(%{loop}), index=1", False)
    wide_shape = f"f32[{n},7]{{1,0}}"  # 28 bytes an element of x: no other result is as large
    wide = add(wide_shape, f"broadcast(%{final}), dimensions={{0}}", True)
    lines = [entry for block in blocks for entry in block]
    counted = {label for label, _, c in lines + [e for b in tail for e in b] if c}
    root = f"v{next(labels)}"
    if fresh.random() < 0.5:  # an array ROOT
        root_shape = wide_shape
        root_line = f"ROOT %{root} = {root_shape} add(%{wide}, %{wide})"
    else:  # a tuple ROOT: the loop's result, the wide broadcast and some intermediates
        picks = fresh.sample(
            [e for e in lines if e[2] and e[0] not in (loop, wide)], fresh.randint(0, 2)
        )
        outputs = [(final, vec), (wide, wide_shape)]
        outputs += [(label, line.split(" = ")[1].split(" ")[0]) for label, line, _ in picks]
        fresh.shuffle(outputs)
        counted -= {label for label, _ in outputs}
        root_shape = "(" + ", ".join(shape for _, shape in outputs) + ")"
        operands = ", ".join(f"%{label}" for label, _ in outputs)
        root_line = f"ROOT %{root} = {root_shape} tuple({operands})"
    body = [line for _, line, _ in lines] + [root_line]
    body += [line for block in tail for _, line, _ in block]
    text = _MODULE.format(n=n, vec=vec, state=state, limit=fresh.randint(2, 9), root=root_shape)
    return text + "\n".join(f"  {line}" for line in body) + "\n}\n", counted


_MODULE = """\
HloModule drawn_naive

%add (lhs: f32[], rhs: f32[]) -> f32[] {{
  %lhs = f32[] parameter(0)
  %rhs = f32[] parameter(1)
  ROOT %plus = f32[] add(%lhs, %rhs)
}}

%fused (p: f32[{n}]) -> f32[{n}] {{
  %p = {vec} parameter(0)
  %e = {vec} exponential(%p)
  ROOT %t = {vec} tanh(%e)
}}

%body (state: {state}) -> {state} {{
  %state = {state} parameter(0)
  %i = s32[] get-tuple-element(%state), index=0
  %v = {vec} get-tuple-element(%state), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%i, %one)
  %sine = {vec} sine(%v)
  %product = {vec} multiply(%sine, %v)
  ROOT %carry = {state} tuple(%next, %product)
}}

%cond (cstate: {state}) -> pred[] {{
  %cstate = {state} parameter(0)
  %ci = s32[] get-tuple-element(%cstate), index=0
  %limit = s32[] constant({limit})
  ROOT %below = pred[] compare(%ci, %limit), direction=LT
}}

ENTRY %main (x: f32[{n}]) -> {root} {{
  %x = {vec} parameter(0)
"""

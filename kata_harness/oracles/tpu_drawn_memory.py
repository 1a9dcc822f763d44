"""Phase 11's drawn moves into fast memory: modules made from a ``random.Random`` for
prefetched_parameters.

Every draw holds every situation: ENTRY parameters (numbered apart from their order and names)
prefetched by a copy-start into S(1), tiled and untiled, scalars among them (``f32[]{:S(1)}``,
no tile); cross-program prefetches of index 0 and 1; plain copies into S(1), one of them into
another layout as well (the other dimension order, a drawn tile: still a move); copies that stay in
the default memory (another layout, a copy-start there, an eviction out of S(1)); a copy-start
and a copy of a parameter into another memory space (the host's S(5), S(2), ...); a parameter
moved through a bitcast (no parameter is the operand); a constant moved into S(1); and a while
body whose own parameter is prefetched (no ENTRY parameter). The facts come from XLA's parse
(:func:`.tpu_hlo.prefetches`).
"""

from __future__ import annotations

import random

from .tpu_drawn_schedule import Names

U32 = "u32[]{:S(2)}"
MOVES = (
    "prefetch",
    "prefetch scalar",
    "cross 0",
    "cross 1",
    "copy",
    "copy scalar",
    "copy relayout",
    "layout",
    "evict",
    "stay",
    "untouched",
    "via bitcast",
    "offload",
    "offload copy",
)
_STILL = ("layout", "evict", "stay", "untouched", "via bitcast", "offload", "offload copy")
# memory spaces other than S(1): the host's (S(5) on TPU) and others a layout may name
_ELSEWHERE = (2, 3, 4, 5, 10)


_TILES_2D = ("", ":T(8,128)", ":T(8,128)(2,1)", ":T(4,128)")


def _shape(rng: random.Random, move: str) -> tuple[str, str, str]:
    """(shape in the default memory, the same in S(1), the same in another layout); for a
    "copy relayout", the S(1) shape has the other dimension order and a drawn tile."""
    if "scalar" in move:
        dtype = rng.choice(("f32", "s32", "bf16"))
        return f"{dtype}[]", f"{dtype}[]{{:S(1)}}", f"{dtype}[]"
    dtype = rng.choice(("f32", "bf16", "s8", "f8e4m3fn"))
    rank = 2 if move == "copy relayout" else rng.choice((1, 2))
    dims = ",".join(str(rng.randint(1, 300)) for _ in range(rank))
    if rank == 1:
        tile = rng.choice(("", ":T(256)", ":T(1024)"))
        return (
            f"{dtype}[{dims}]{{0{tile}}}",
            f"{dtype}[{dims}]{{0{tile or ':'}S(1)}}",
            f"{dtype}[{dims}]{{0}}",
        )
    tile = rng.choice(_TILES_2D)
    own, flipped = rng.sample(("1,0", "0,1"), 2)  # the parameter's order, and the other one
    order, fast_tile = own, tile
    if move == "copy relayout":
        order, fast_tile = flipped, rng.choice(_TILES_2D)
    return (
        f"{dtype}[{dims}]{{{own}{tile}}}",
        f"{dtype}[{dims}]{{{order}{fast_tile or ':'}S(1)}}",
        f"{dtype}[{dims}]{{{flipped}{tile}}}",
    )


def prefetch_module(rng: random.Random) -> str:
    """A scheduled module holding every kind of move (see the module docstring)."""
    name = Names(rng)
    moves = [*MOVES, *rng.choices(("prefetch", "copy", "untouched", "stay"), k=3)]
    rng.shuffle(moves)
    numbers = rng.sample(range(len(moves)), len(moves))
    # ENTRY's parameter(0) stays where it is, while the loop body's parameter(0) is prefetched
    still = rng.choice([k for k, move in enumerate(moves) if move in _STILL])
    zero = numbers.index(0)
    numbers[zero], numbers[still] = numbers[still], 0
    signature: dict[int, str] = {}
    lines, later, outputs = [], [], []
    for move, number in zip(moves, numbers, strict=True):
        default, fast, other = _shape(rng, move)
        p = name()
        given = fast if move == "evict" else default
        signature[number] = given
        lines.append(f"%{p} = {given} parameter({number})")
        out, done = name(), name()
        if move.startswith(("prefetch", "cross")):
            index = f", cross_program_prefetch_index={move[-1]}" if move.startswith("cross") else ""
            lines.append(f"%{out} = ({fast}, {default}, {U32}) copy-start(%{p}){index}")
            later.append((f"%{done} = {fast} copy-done(%{out})", done, fast))
        elif move.startswith("copy"):
            lines.append(f"%{out} = {fast} copy(%{p})")
            outputs.append((out, fast))
        elif move == "layout":
            lines.append(f"%{out} = {other} copy(%{p})")
            outputs.append((out, other))
        elif move in ("evict", "stay"):
            lines.append(f"%{out} = ({default}, {given}, {U32}) copy-start(%{p})")
            later.append((f"%{done} = {default} copy-done(%{out})", done, default))
        elif move.startswith("offload"):
            away = fast.replace("S(1)", f"S({rng.choice(_ELSEWHERE)})")
            if move == "offload copy":
                lines.append(f"%{out} = {away} copy(%{p})")
                outputs.append((out, away))
            else:
                lines.append(f"%{out} = ({away}, {default}, {U32}) copy-start(%{p})")
                later.append((f"%{done} = {away} copy-done(%{out})", done, away))
        elif move == "via bitcast":
            view = name()
            lines.append(f"%{view} = {default} bitcast(%{p})")
            lines.append(f"%{out} = ({fast}, {default}, {U32}) copy-start(%{view})")
            later.append((f"%{done} = {fast} copy-done(%{out})", done, fast))
    # a constant moved into S(1), and a loop whose body prefetches its own parameter
    constant, moved, landed = name(), name(), name()
    lines += [
        f"%{constant} = f32[2]{{0:T(256)}} constant({{1, 2}})",
        f"%{moved} = (f32[2]{{0:T(256)S(1)}}, f32[2]{{0:T(256)}}, {U32}) copy-start(%{constant})",
    ]
    later.append(
        (f"%{landed} = f32[2]{{0:T(256)S(1)}} copy-done(%{moved})", landed, "f32[2]{0:T(256)S(1)}")
    )
    state = "f32[8,128]{1,0:T(8,128)}"
    body, cond, loop, first = name(), name(), name(), name()
    start, arrived = name(), name()
    loops = (
        f"%{body} ({first}: f32[8,128]) -> f32[8,128] {{\n"
        f"  %{first} = {state} parameter(0)\n"
        f"  %{start} = (f32[8,128]{{1,0:T(8,128)S(1)}}, {state}, {U32}) copy-start(%{first})\n"
        f"  %{arrived} = f32[8,128]{{1,0:T(8,128)S(1)}} copy-done(%{start})\n"
        f"  ROOT %{name()} = {state} copy(%{arrived})\n}}\n\n"
        f"%{cond} ({name()}: f32[8,128]) -> pred[] {{\n"
        f"  %{name()} = {state} parameter(0)\n  ROOT %{name()} = pred[] constant(false)\n}}\n"
    )
    seed_state = name()
    number = len(moves)
    signature[number] = state
    lines += [
        f"%{seed_state} = {state} parameter({number})",
        f"%{loop} = {state} while(%{seed_state}), condition=%{cond}, body=%{body}",
    ]
    outputs.append((loop, state))
    rng.shuffle(later)
    for text, done, shape in later:
        lines.append(text)
        outputs.append((done, shape))
    params = ", ".join(f"q{k}: {_bare(signature[k])}" for k in sorted(signature))
    return (
        "HloModule drawn_moves, is_scheduled=true\n\n"
        + loops
        + f"\nENTRY %{name()} ({params}) -> ({', '.join(_bare(s) for _, s in outputs)}) {{\n"
        + "\n".join(f"  {line}" for line in lines)
        + f"\n  ROOT %{name()} = ({', '.join(s for _, s in outputs)}) "
        + f"tuple({', '.join('%' + o for o, _ in outputs)})\n}}\n"
    )


def _bare(shape: str) -> str:
    return shape.split("{")[0]

"""ENTRY computations of naive_temp_bytes drawn on every run (the `fresh` fixture): every element
type XLA has, packed layouts with E(n) in every place a layout may hold it (after tiles, before a
memory space, inside tuple-shaped results) and at widths other than the dtype's own, a while
loop whose state nests a tuple, ops that look as if they wrote no buffer (slices, in-place
updates, custom-calls, opt-barrier), a ROOT that is not the last line. Each result's bytes come
from XLA's own print of the module (kata_harness.oracles.memory), never from a formula here.
"""

from __future__ import annotations

import random
from collections.abc import Callable

from kata_harness.oracles import memory as oracle

# Sub-byte types XLA:CPU packs, and the bits an element then takes: a layout {0:E(n)} stores n
# bits an element (jnp.int2[9] compiles to s2[9]{0:E(2)}, jnp.int4[9] to s4[9]{0:E(4)}).
# jaxlib's PrimitiveType enum lists no 2-bit type, but XLA's parser and compiler know them.
PACKABLE = {"s2": 2, "u2": 2, "s4": 4, "u4": 4, "f4e2m1fn": 4}


def naive_module(fresh: random.Random) -> tuple[str, set[str]]:
    """An ENTRY computation drawn for this run and the names of the instructions whose results
    are its intermediates: a convert to every element type XLA knows (2- and 4-bit ones packed or
    not, E(n) straight after the colon, after a tile or before a memory space; packed ones also
    of rank 2 or 3, every dimension odd, any dimension minor), converts packed below their own
    width (u8 at E(4), pred at E(1)), a multi-output fusion and an opt-barrier whose tuples hold
    packed arrays, an iota, a bitcast-convert, a broadcast of a constant, a fusion, a reduce, a
    while loop whose body and condition compute values of their own and whose state nests a
    tuple (in a drawn arrangement); the views (bitcast, tuple, get-tuple-element), constants and
    parameters around them; a ROOT (an array, or a tuple of some results) followed by
    instructions it does not use; and after ENTRY, computations nothing calls. Instruction names
    are drawn."""
    n = fresh.randrange(3, 40, 2)  # odd: a packed 2- or 4-bit buffer rounds up to a byte
    vec = f"f32[{n}]{{0}}"
    labels = iter(fresh.sample(range(100, 999), 80))
    blocks: list[list[tuple[str, str, bool]]] = []  # per block: (name, line, counted)

    def add(shape: str, body: str, counted: bool, new_block: bool = False) -> str:
        if new_block:
            blocks.append([])
        label = f"v{next(labels)}"
        blocks[-1].append((label, f"%{label} = {shape} {body}", counted))
        return label

    # each width packed in every module (one type of it for sure, the others maybe): a rule that
    # reads a packed layout as two elements a byte, whatever its E(n), meets a 2-bit buffer
    packed = {fresh.choice([t for t, b in PACKABLE.items() if b == bits]) for bits in (2, 4)}
    packed |= {dtype for dtype in PACKABLE if fresh.random() < 0.5}
    tiled = fresh.choice(sorted(packed))  # E(n) after a tile in every module
    for dtype in sorted(set(oracle.element_types()) | set(PACKABLE)):
        if dtype in packed:
            layout = packed_layout(fresh, n, PACKABLE[dtype], tile=dtype == tiled or None)
        else:
            layout = "{0}"
        add(f"{dtype}[{n}]{layout}", "convert(%x)", True, new_block=True)
    off = off_width(fresh)
    for dtype, bits in off:  # E(n) below the dtype's own width: n bits all the same
        add(f"{dtype}[{n}]{packed_layout(fresh, n, bits)}", "convert(%x)", True, new_block=True)
    multi = _tuple_of(fresh, [vec, *(f"{t}[{n}]{packed_layout(fresh, n, b)}" for t, b in off)])
    add(_shape(multi), "fusion(%x), kind=kLoop, calls=%multi", True, new_block=True)
    _opt_barrier(fresh, n, add, f"{tiled}[{n}]{packed_layout(fresh, n, PACKABLE[tiled])}")
    for dtype in sorted(packed):  # of rank 2 or 3 as well: the buffer rounds up, not each row
        bits = PACKABLE[dtype]
        row = add(f"{dtype}[{n}]{{0:E({bits})}}", "convert(%x)", True, new_block=True)
        dims = [fresh.choice((3, 5, 7)) for _ in range(fresh.randint(1, 2))]
        at = fresh.randint(0, len(dims))
        dims.insert(at, n)  # every dimension odd: no row is a whole number of bytes
        order = ",".join(map(str, fresh.sample(range(len(dims)), len(dims))))  # any one minor
        shape = f"{dtype}[{','.join(map(str, dims))}]{{{order}:E({bits})}}"
        add(shape, f"broadcast(%{row}), dimensions={{{at}}}", True)
    add(f"s32[{n + 5}]{{0}}", "iota(), iota_dimension=0", True, new_block=True)
    add(f"{fresh.choice(['s32', 'u32'])}[{n}]{{0}}", "bitcast-convert(%x)", True, new_block=True)
    add(f"f32[1,{n}]{{1,0}}", "bitcast(%x)", False, new_block=True)
    two = add("f32[]", "constant(2)", False, new_block=True)
    add(f"f32[{n},3]{{1,0}}", f"broadcast(%{two}), dimensions={{}}", True)
    zero = add("f32[]", "constant(0)", False, new_block=True)
    add("f32[]", f"reduce(%x, %{zero}), dimensions={{0}}, to_apply=%add", True)
    _in_place_and_slices(fresh, n, add)
    fresh.shuffle(blocks)
    tail = [blocks.pop(fresh.randrange(len(blocks))) for _ in range(fresh.randint(1, 3))]
    # what the ROOT uses comes after the shuffled blocks and before the ROOT
    add(vec, "fusion(%x), kind=kLoop, calls=%fused", True, new_block=True)
    tree = fresh.choice(STATE_TREES)  # the loop state: a tuple holding a tuple
    leaves = {"i": "s32[]", "v": vec, "e": f"f32[{n},{fresh.randint(2, 5)}]{{1,0}}"}
    state = _tuple_shape(tree, leaves)
    values = {
        "i": add("s32[]", "constant(0)", False, new_block=True),
        "v": "x",
        "e": add(leaves["e"], "broadcast(%x), dimensions={0}", True),
    }
    init = _build(tree, leaves, values, lambda shape, body: add(shape, body, False))
    loop = add(state, f"while(%{init}), condition=%cond, body=%body", True)
    final = loop
    for index, shape in _path(tree, leaves, "v"):  # views of the loop's result
        final = add(shape, f"get-tuple-element(%{final}), index={index}", False)
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
            [e for e in lines if e[2] and e[0] not in (loop, wide) and " = (" not in e[1]],
            fresh.randint(0, 2),
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
    text = _MODULE.format(
        n=n,
        vec=vec,
        state=state,
        limit=fresh.randint(2, 9),
        root=root_shape,
        body=_loop_body(tree, leaves),
        multi=_shape(multi),
        multi_body=_multi_body(multi),
        counter=_read(tree, leaves, "i", "cstate", "c"),
    )
    entry = text + "\n".join(f"  {line}" for line in body) + "\n}\n"
    return entry + "".join(_spares(fresh, n)), counted


# Targets of the drawn custom-calls: LAPACK's own names (XLA:CPU's factorizations) and others;
# XLA's parser takes any target, and every custom-call result is a buffer of its own.
CUSTOM_TARGETS = ("lapack_spotrf_ffi", "lapack_sgeqrf_ffi", "lapack_sgetrf_ffi", "kata_kernel")


def _in_place_and_slices(fresh: random.Random, n: int, add: Callable) -> None:
    """Blocks of ops that look as if they wrote no buffer of their own, each counted as the
    contract says (only bitcast, tuple and get-tuple-element re-view one): a slice and a
    dynamic-slice (views in NumPy, new buffers in HLO), a dynamic-update-slice and a scatter
    (which XLA may run in place), a custom-call of an array and one of a tuple that states
    output_to_operand_aliasing (as LAPACK's do on XLA:CPU), a gather, a pad and a reverse."""
    vec = f"f32[{n}]{{0}}"
    k = fresh.randint(1, n - 1)
    lo = fresh.randint(0, n - k)
    at = add("s32[]", f"constant({fresh.randrange(n)})", False, new_block=True)
    part = add(f"f32[{k}]{{0}}", f"slice(%x), slice={{[{lo}:{lo + k}]}}", True)
    updated = add(vec, f"dynamic-update-slice(%x, %{part}, %{at})", True)
    add(f"f32[{k}]{{0}}", f"dynamic-slice(%{updated}, %{at}), dynamic_slice_sizes={{{k}}}", True)
    m = fresh.randint(1, 4)
    rows = ", ".join(f"{{{fresh.randrange(n)}}}" for _ in range(m))
    index = add(f"s32[{m},1]{{1,0}}", f"constant({{ {rows} }})", False, new_block=True)
    updates = add(f"f32[{m}]{{0}}", f"slice(%x), slice={{[0:{m}]}}", True)
    add(
        vec,
        f"scatter(%x, %{index}, %{updates}), update_window_dims={{}}, "
        "inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1, "
        "to_apply=%add",
        True,
    )
    add(
        f"f32[{m},{k}]{{1,0}}",
        f"gather(%x, %{index}), offset_dims={{1}}, collapsed_slice_dims={{}}, "
        f"start_index_map={{0}}, index_vector_dim=1, slice_sizes={{{k}}}",
        True,
    )
    target, other = fresh.sample(CUSTOM_TARGETS, 2)
    add(vec, f'custom-call(%x), custom_call_target="{target}"', True, new_block=True)
    info = fresh.choice(["s32[]", "s32[1]{0}", f"s4[{n}]{packed_layout(fresh, n, 4)}"])
    call = add(
        f"({vec}, {info})",
        f'custom-call(%x), custom_call_target="{other}", '
        "output_to_operand_aliasing={{0}: (0, {})}",
        True,
        new_block=True,
    )
    add(vec, f"get-tuple-element(%{call}), index=0", False)
    low, high = fresh.randint(0, 3), fresh.randint(1, 4)
    pad_value = add("f32[]", "constant(0)", False, new_block=True)
    add(f"f32[{n + low + high}]{{0}}", f"pad(%x, %{pad_value}), padding={low}_{high}", True)
    add(vec, "reverse(%x), dimensions={0}", True, new_block=True)


def _spares(fresh: random.Random, n: int) -> list[str]:
    """One or two computations nothing calls, printed after ENTRY (XLA's parser takes a
    computation anywhere after those it calls): their instructions compute values of their own,
    none of ENTRY's intermediates, so the module's last computation is not its ENTRY."""
    spares = []
    for k in range(fresh.randint(1, 2)):
        wide = f"f32[{n},{fresh.randint(2, 9)}]{{1,0}}"
        vec = f"f32[{n}]{{0}}"
        spares.append(
            f"\n%spare{k} (u: f32[{n}]) -> {wide} {{\n"
            f"  %u = {vec} parameter(0)\n"
            f"  %e = {vec} exponential(%u)\n"
            f"  %l = {vec} log(%e)\n"
            f"  %b = {wide} broadcast(%l), dimensions={{0}}\n"
            f"  ROOT %n = {wide} negate(%b)\n"
            "}\n"
        )
    return spares


def packed_layout(fresh: random.Random, n: int, bits: int, tile: bool | None = None) -> str:
    """A rank-1 layout storing `bits` bits an element: E(n) straight after the colon, after a
    tile (one that divides n: no padding), before a memory space S(1), or both."""
    tile = fresh.random() < 0.5 if tile is None else tile
    size = fresh.choice([d for d in range(2, n + 1) if n % d == 0])
    space = "S(1)" if fresh.random() < 0.5 else ""
    return f"{{0:{f'T({size})' if tile else ''}E({bits}){space}}}"


# Integer types and pred at their own width: each may be stored packed at fewer bits.
WIDTHS = {"pred": 8, "s8": 8, "u8": 8, "s16": 16, "u16": 16, "s32": 32, "u32": 32, "s64": 64}
WIDTHS |= {"u64": 64, "s4": 4, "u4": 4, "s2": 2, "u2": 2}


def off_width(fresh: random.Random) -> list[tuple[str, int]]:
    """Two (type, bits) pairs, bits below the type's width: one type of 8 bits or more, and one
    of any width (pred only at 1 bit)."""
    wide = [t for t, w in WIDTHS.items() if w >= 8]
    pairs = []
    for dtype in (fresh.choice(wide), fresh.choice(list(WIDTHS))):
        below = [1] if dtype == "pred" else [b for b in (1, 2, 4) if b < WIDTHS[dtype]]
        pairs.append((dtype, fresh.choice(below)))
    return pairs


def _tuple_of(fresh: random.Random, shapes: list[str]) -> tuple:
    """The shapes in a drawn order, as a flat tuple or with two of them in a tuple of their own."""
    tree: list = fresh.sample(shapes, len(shapes))
    if fresh.random() < 0.5:
        tree = fresh.sample([tuple(tree[:2]), *tree[2:]], len(tree) - 1)
    return tuple(tree)


def _shape(tree) -> str:
    return tree if isinstance(tree, str) else "(" + ", ".join(map(_shape, tree)) + ")"


def _multi_body(tree: tuple) -> str:
    """The body of %multi: each array of `tree` converted from %q, in tuples nested as `tree`."""
    lines: list[str] = []

    def emit(node) -> str:
        name = f"m{len(lines)}"
        if isinstance(node, str):
            lines.append(f"  %{name} = {node} convert(%q)")
            return name
        parts = [emit(child) for child in node]
        name = f"m{len(lines)}"
        lines.append(f"  %{name} = {_shape(node)} tuple({', '.join('%' + p for p in parts)})")
        return name

    emit(tree)
    lines[-1] = "  ROOT" + lines[-1][1:]
    return "\n".join(lines)


def _opt_barrier(fresh: random.Random, n: int, add: Callable, packed: str) -> None:
    """An opt-barrier of a tuple holding a packed array and one of an array, each read by a later
    op: opt-barrier forwards its operand, yet it is no view (only bitcast, tuple and
    get-tuple-element are), so its result counts."""
    vec = f"f32[{n}]{{0}}"
    small = add(packed, "convert(%x)", True, new_block=True)
    elements = fresh.sample([(small, packed), ("x", vec)], 2)
    shape = "(" + ", ".join(s for _, s in elements) + ")"
    both = add(shape, f"tuple({', '.join('%' + e for e, _ in elements)})", False)
    barrier = add(shape, f"opt-barrier(%{both})", True)
    index = [e for e, _ in elements].index("x")
    read = add(vec, f"get-tuple-element(%{barrier}), index={index}", False)
    held = add(vec, f"opt-barrier(%{read})", True)
    add(vec, f"negate(%{held})", True)


# Arrangements of the loop state's counter i, carried vector v and passed-through matrix e: each
# nests a tuple, whose arrays count as much as the outer tuple's.
STATE_TREES = ((("i", "v"), "e"), ("i", ("v", "e")), ("e", ("i", "v")), (("e",), "i", "v"))


def _tuple_shape(tree, leaves: dict[str, str]) -> str:
    if isinstance(tree, str):
        return leaves[tree]
    return "(" + ", ".join(_tuple_shape(t, leaves) for t in tree) + ")"


def _path(tree, leaves: dict[str, str], leaf: str) -> list[tuple[int, str]]:
    """(index, shape of the element) per get-tuple-element from the state down to `leaf`."""
    for index, child in enumerate(tree):
        if child == leaf:
            return [(index, leaves[leaf])]
        if not isinstance(child, str) and (rest := _path(child, leaves, leaf)):
            return [(index, _tuple_shape(child, leaves)), *rest]
    return []


def _read(tree, leaves: dict[str, str], leaf: str, source: str, prefix: str) -> str:
    """Lines reading `leaf` out of the state `source` into %{prefix}{leaf}."""
    lines, name, path = [], source, _path(tree, leaves, leaf)
    for depth, (index, shape) in enumerate(path):
        step = f"{prefix}{leaf}" if depth == len(path) - 1 else f"{prefix}{leaf}{depth}"
        lines.append(f"  %{step} = {shape} get-tuple-element(%{name}), index={index}")
        name = step
    return "\n".join(lines)


def _build(tree, leaves: dict[str, str], values: dict[str, str], emit: Callable) -> str:
    """The name of a tuple of `values` nested as `tree`, its tuples emitted innermost first."""
    parts = [values[t] if isinstance(t, str) else _build(t, leaves, values, emit) for t in tree]
    return emit(_tuple_shape(tree, leaves), "tuple(" + ", ".join(f"%{p}" for p in parts) + ")")


def _loop_body(tree, leaves: dict[str, str]) -> str:
    """The while body: counts i up, replaces v by sin(v) * v, passes e through, nested as `tree`."""
    lines = [_read(tree, leaves, leaf, "state", "b") for leaf in "ive"]
    lines += [
        "  %one = s32[] constant(1)",
        "  %next = s32[] add(%bi, %one)",
        f"  %sine = {leaves['v']} sine(%bv)",
        f"  %product = {leaves['v']} multiply(%sine, %bv)",
    ]
    names = iter(f"t{k}" for k in range(9))

    def emit(shape: str, body: str) -> str:
        name = next(names)
        lines.append(f"  %{name} = {shape} {body}")
        return name

    carry = _build(tree, leaves, {"i": "next", "v": "product", "e": "be"}, emit)
    lines[-1] = lines[-1].replace(f"  %{carry} = ", "  ROOT %carry = ")  # the outermost tuple
    return "\n".join(lines)


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

%multi (q: f32[{n}]) -> {multi} {{
  %q = {vec} parameter(0)
{multi_body}
}}

%body (state: {state}) -> {state} {{
  %state = {state} parameter(0)
{body}
}}

%cond (cstate: {state}) -> pred[] {{
  %cstate = {state} parameter(0)
{counter}
  %limit = s32[] constant({limit})
  ROOT %below = pred[] compare(%ci, %limit), direction=LT
}}

ENTRY %main (x: f32[{n}]) -> {root} {{
  %x = {vec} parameter(0)
"""

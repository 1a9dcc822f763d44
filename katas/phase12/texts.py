"""The modules phase 12's reading tests read: the recordings (programs.RECORDINGS), the
hand-written ones (programs.HANDWRITTEN) and programs.block compiled for this host's CPU, each
as printed and as its metamorphic variants (every name relabelled, computations reordered, each
accepted by XLA's parser)."""

import random
import re
import zlib
from functools import cache

import jax

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo, xla_accepts
from kata_harness.targets import recorded
from katas.phase12.programs import BLOCK_SHAPES, HANDWRITTEN, block, sds

PHASE = "phase12"
CPU_BLOCK = "block_cpu"


@cache
def text(name: str) -> str:
    """A recorded module, a hand-written one (programs.HANDWRITTEN), or (CPU_BLOCK)
    programs.block compiled for this host's CPU now."""
    if name == CPU_BLOCK:
        compiled = jax.jit(block).lower(*(sds(s, d) for s, d in BLOCK_SHAPES)).compile()
        printed = compiled.as_text()
        assert printed is not None
        return printed
    if name in HANDWRITTEN:
        return HANDWRITTEN[name]
    return recorded(PHASE, name)


@cache
def variants(name: str) -> tuple[metamorphic.HloVariant, ...]:
    """The module renamed (every name a label like %n17), its computations reordered, and
    (attributes_reordered) every instruction's attributes in another order, each confirmed by
    XLA's parser; seeded by the module's name."""
    seed = zlib.crc32(name.encode())
    found = tuple(metamorphic.variants(text(name), seed=seed))
    assert found, f"{name}: no metamorphic variant XLA accepts"
    moved = attributes_reordered(text(name), random.Random(seed))
    return found if moved is None else (*found, moved)


def forms(name: str):
    """(what, text, variant): the module as XLA printed it (variant None), then each variant.
    An answer must follow the module's facts, not its names or the order of its computations."""
    yield name, text(name), None
    seed = zlib.crc32(name.encode())
    for variant in variants(name):
        yield f"{name} ({variant.kind}, seed {seed})", variant.text, variant


_OPENS, _CLOSES = "([{", ")]}"


def _top_level(attributes: str) -> list[str]:
    """``attributes`` split on the commas at bracket depth 0 outside quotes."""
    parts, depth, quoted, start = [], 0, False, 0
    for at, char in enumerate(attributes):
        if char == '"' and (at == 0 or attributes[at - 1] != "\\"):
            quoted = not quoted
        elif not quoted and char in _OPENS:
            depth += 1
        elif not quoted and char in _CLOSES:
            depth -= 1
        elif not quoted and depth == 0 and char == ",":
            parts.append(attributes[start:at].strip())
            start = at + 1
    return [*parts, attributes[start:].strip()]


def _operands_end(line: str) -> int | None:
    """Where the instruction's operand list (or payload) closes: past the `(` that follows the
    opcode, after its shape (a tuple shape is in parentheses too); None if no instruction."""
    at = line.find(" = ")
    if at < 0:
        return None
    at += 3
    if line.startswith("(", at):  # a tuple shape: past its closing parenthesis
        at = _closing(line, at) + 1
    else:  # past the shape's layout, which may hold parentheses (`{1,0:T(8,128)}`)
        brace = line.find("{", at)
        space = line.find(" ", at)
        if 0 <= brace < space:
            at = _closing(line, brace) + 1
    at = line.find("(", at)
    return None if at < 0 else _closing(line, at) + 1


def _closing(line: str, at: int) -> int:
    depth = 0
    for index in range(at, len(line)):
        depth += (line[index] in _OPENS) - (line[index] in _CLOSES)
        if depth == 0:
            return index
    return len(line)


def attributes_reordered(printed: str, rng: random.Random) -> metamorphic.HloVariant | None:
    """Every instruction's attributes (`kind=`, `calls=`, `metadata=`, `backend_config=`...) in
    a drawn order, a `backend_config` never last when others follow the operands (XLA prints it
    last; its parser takes attributes in any order): a fact read from one attribute must be
    read from that attribute alone, not from it to the end of the line. None if XLA's parser
    refuses the result."""
    lines = printed.split("\n")
    for number, line in enumerate(lines):
        end = _operands_end(line)
        if end is None or not line.startswith(", ", end):
            continue
        parts = _top_level(line[end + 2 :])
        rng.shuffle(parts)
        last = len(parts) - 1
        if last and parts[last].startswith("backend_config="):
            other = rng.randrange(last)
            parts[other], parts[last] = parts[last], parts[other]
        lines[number] = line[:end] + ", " + ", ".join(parts)
    moved = "\n".join(lines)
    return metamorphic.HloVariant("attributes reordered", moved) if xla_accepts(moved) else None


def renamed_keys(variant, expected: dict) -> dict:
    """expected with its keys (instruction names) renamed as in the variant; values kept (an
    opcode such as "fusion" may also be some instruction's name)."""
    return expected if variant is None else {variant.rename(k): v for k, v in expected.items()}


def matched(pattern: str, text: str) -> str:
    """The first group of ``pattern`` in ``text`` (which must hold it)."""
    found = re.search(pattern, text)
    assert found is not None, f"{pattern!r} not in {text[:120]!r}"
    return found.group(1)


_MODE = re.compile(r'"activation_mode":"(kNone|kRelu)"')
_DEFAULTS = r'"(?:epilogue":"DEFAULT|activation_mode":"kNone)"'
_DEFAULT_FIELD = re.compile(rf"{_DEFAULTS},|,{_DEFAULTS}(?=\}})")


def modes_swapped(text: str) -> str:
    """Every cuDNN call's activation_mode kNone made kRelu and kRelu kNone (XLA's parser keeps a
    backend_config as written): a `__cudnn$convForward` then records kRelu, so the answer must
    come from the config, not from the target's name."""
    return _MODE.sub(
        lambda m: '"activation_mode":"' + ("kRelu" if m[1] == "kNone" else "kNone") + '"', text
    )


def defaults_left_out(text: str) -> str:
    """Every `"epilogue":"DEFAULT"` and `"activation_mode":"kNone"` field left out of its JSON,
    as proto3 JSON may print a field holding its default: the call keeps that default."""
    return _DEFAULT_FIELD.sub("", text)


def uncalled(name: str) -> metamorphic.HloVariant:
    """The module with a copy, under fresh names and called by nothing, of a computation that
    holds a fusion (metamorphic.trailing, the first seed whose copy holds one): its fusions are
    fusions of the module too (every computation the text holds)."""
    base = gpu_hlo.fusion_kinds(text(name))
    for seed in range(64):
        found = metamorphic.trailing(text(name), random.Random(seed))
        if found is not None and gpu_hlo.fusion_kinds(found.text) != base:
            return found
    raise AssertionError(f"{name}: no computation holding a fusion to copy")


def shared_across_kinds(name: str) -> metamorphic.HloVariant:
    """The module with a second ENTRY fusion (metamorphic.shared) calling the fused computation
    of its first ENTRY kInput fusion that reaches a reduce, printed kind=kLoop: one fused
    computation, two kernels of two kinds (the reduce counts once under each)."""
    printed = text(name)
    entry = matched(r"(?m)^ENTRY %([\w.-]+)", printed)
    before = gpu_hlo.reduce_homes(printed).get("kLoop", 0)
    for computation, fusion, op, line in gpu_hlo.parsed(printed)[1]:
        if computation != entry or op != "fusion" or "kind=kInput" not in line:
            continue
        twin = metamorphic.shared(printed, fusion)
        if twin is None:
            continue
        own = re.compile(rf"(?m)^(\s*%{re.escape(fusion)}\.twin = .*?)kind=kInput")
        moved = own.sub(r"\1kind=kLoop", twin.text, count=1)
        if xla_accepts(moved) and gpu_hlo.reduce_homes(moved).get("kLoop", 0) > before:
            return metamorphic.HloVariant("two fusions of two kinds calling one computation", moved)
    raise AssertionError(f"{name}: no ENTRY kInput fusion reaching a reduce to share")


def gemm_fusions(printed: str) -> list[tuple[str, str]]:
    """(fusion, fused computation) of each ENTRY fusion whose fused computation holds a dot
    (XLA's parse): a Triton GEMM's kernel, which metamorphic.shared can give a twin."""
    entry = matched(r"(?m)^ENTRY %?([\w.-]+)", printed)
    rows = gpu_hlo.parsed(printed)[1]
    dots = {c for c, _, op, _ in rows if op == "dot"}
    found = []
    for computation, fusion, op, line in rows:
        if computation == entry and op == "fusion":
            called = matched(r"calls=%?([\w.-]+)", line)
            if called in dots:
                found.append((fusion, called))
    return sorted(found)


def calls_fused(printed: str, computation: str) -> str:
    """The module with every `call` of ``computation`` made a fusion of it (`fusion(...),
    kind=kCustom, calls=` in place of `call(...), to_apply=`: the same operands, the same
    computation, now a fused one); names printed with or without `%`. XLA's parser must accept
    it."""
    call = re.compile(
        rf"(?m)^(\s*(?:ROOT )?%?[\w.-]+ = .*? )call\((.*)\), to_apply=(%?){re.escape(computation)}$"
    )
    moved, count = call.subn(r"\1fusion(\2), kind=kCustom, calls=\3" + computation, printed)
    assert count, f"no call of {computation}"
    assert xla_accepts(moved), f"XLA refuses the calls of {computation} made fusions"
    return moved


def async_wrapped(name: str) -> metamorphic.HloVariant:
    """The module with each ENTRY GEMM fusion (a kCustom fusion whose fused computation holds a
    dot) started asynchronously: moved into a computation of its own that a generic
    async-start wraps (XLA reads it as fusion-start), its value taken from the async-done.
    The same kernels do the same work."""
    printed = text(name)
    entry = _ENTRY.search(printed)
    assert entry is not None, f"{name}: no ENTRY"
    body = entry[0]
    shapes = dict(
        re.findall(r"(?m)^\s*(?:ROOT )?%([\w.-]+) = ([a-z]\w*\[[\d,]*\]\{[\d,]*\}) ", body)
    )
    dots = {c for c, _, op, _ in gpu_hlo.parsed(printed)[1] if op == "dot"}
    added, lines = [], body.split("\n")
    for at, line in enumerate(lines):
        found = _FUSION_LINE.match(line)
        if not found or found["calls"] not in dots or "kind=kCustom" not in found["rest"]:
            continue
        fusion, shape, operands = found["name"], found["shape"], found["operands"].split(", ")
        if not all(o.lstrip("%") in shapes for o in operands):
            continue
        kept = [shapes[o.lstrip("%")] for o in operands]
        own = [f"{fusion}.w{i}" for i in range(len(operands))]
        signature = ", ".join(f"{p}: {s.split('{')[0]}" for p, s in zip(own, kept, strict=True))
        params = "".join(
            f"  %{p} = {s} parameter({i})\n" for i, (p, s) in enumerate(zip(own, kept, strict=True))
        )
        inner = ", ".join(f"%{p}" for p in own)
        added.append(
            f"%{fusion}.wrapped ({signature}) -> {shape.split('{')[0]} {{\n{params}"
            f"  ROOT %{fusion}.inner = {shape} fusion({inner}){found['rest']}\n}}\n\n"
        )
        lines[at] = (
            f"{found['indent']}%{fusion}.start = (({', '.join(kept)}), {shape}, s32[]) "
            f"async-start({found['operands']}), calls=%{fusion}.wrapped\n"
            f"{found['indent']}%{fusion} = {shape} async-done(%{fusion}.start)"
        )
    assert added, f"{name}: no ENTRY GEMM fusion to start asynchronously"
    moved = printed[: entry.start()] + "".join(added) + "\n".join(lines) + printed[entry.end() :]
    assert xla_accepts(moved), f"{name}: XLA refuses its GEMM fusions started asynchronously"
    return metamorphic.HloVariant("GEMM fusions started asynchronously", moved)


_ENTRY = re.compile(r"(?ms)^ENTRY .*?^\}")
_FUSION_LINE = re.compile(
    r"^(?P<indent>\s*)%(?P<name>[\w.-]+) = (?P<shape>[a-z]\w*\[[\d,]*\]\{[\d,]*\}) "
    r"fusion\((?P<operands>[^()]*)\)(?P<rest>, kind=.*?calls=%(?P<calls>[\w.-]+).*)$"
)


# cuDNN calls that are no convolution, as XLA:GPU emits them (layer norm, fused attention,
# filter reordering), each with the config XLA gives its kind; "{}" and no backend_config at
# all are spellings any of them may take.
_ALGORITHM = '"algorithm":{"algo_id":"-1","math_type":"DEFAULT_MATH","is_cudnn_frontend":true}'
OTHER_CUDNN_CALLS = {
    "__cudnn$norm": '{"operation_queue_id":"0","cudnn_norm_backend_config":{"epsilon":1e-05,'
    f'"kind":"LAYER_FWD_INFER",{_ALGORITHM}}}}}',
    "__cudnn$fmhaSoftmax": '{"operation_queue_id":"0","cudnn_fmha_backend_config":{'
    f'{_ALGORITHM},"fmha_scale":0.125,"is_flash_attention":true,"mask_type":"NO_MASK"}}}}',
    "__cudnn$fmhaScaleBiasSoftmax": '{"cudnn_fmha_backend_config":{"fmha_scale":1,'
    f'"dropout_rate":0,"seed":42,"mask_type":"PADDING_CAUSAL",{_ALGORITHM}}}}}',
    "__cudnn$fmhaSoftmaxBackward": '{"operation_queue_id":"0","cudnn_fmha_backend_config":{'
    f'{_ALGORITHM},"fmha_scale":0.5}}}}',
    "__cudnn$convReorderFilter": '{"operation_queue_id":"0"}',
}


def other_cudnn_calls(name: str, rng: random.Random) -> tuple[str, dict[str, str]]:
    """The module with 2 to 4 cuDNN calls of other kinds than a convolution (drawn from
    OTHER_CUDNN_CALLS, each printing its own config, `{}` or no backend_config; at least one
    printing none and one printing a config, whatever the draw) added to ENTRY before its ROOT,
    reading ENTRY's first parameter: (text, {added call: its target})."""
    printed = text(name)
    entry = _ENTRY.search(printed)
    assert entry is not None, f"{name}: no ENTRY"
    body = entry[0]
    param = re.search(r"(?m)^\s*%([\w.-]+) = ([a-z]\w*\[[\d,]*\]\{[\d,]*\}) parameter\(", body)
    assert param is not None, f"{name}: no array parameter in ENTRY"
    added: dict[str, str] = {}
    lines = []
    targets = rng.sample(sorted(OTHER_CUDNN_CALLS), rng.randint(2, 4))
    # Every draw holds a call printed with no backend_config and one printed with a config (its
    # own kind's or `{}`), in drawn places; the others print a drawn form.
    forms = [None, rng.choice(("own", "{}"))]
    forms += [rng.choice(("own", "{}", None)) for _ in targets[2:]]
    rng.shuffle(forms)
    for target, form in zip(targets, forms, strict=True):
        call = f"cudnn-{target.split('$')[1].lower()}.{rng.randrange(100, 1000)}"
        config = OTHER_CUDNN_CALLS[target] if form == "own" else form
        tail = "" if config is None else f", backend_config={config}"
        lines.append(
            f"  %{call} = ({param[2]}, u8[0]{{0}}) custom-call(%{param[1]}), "
            f'custom_call_target="{target}"{tail}\n'
        )
        added[call] = target
    at = body.index("  ROOT ")
    moved = (
        printed[: entry.start()] + body[:at] + "".join(lines) + body[at:] + printed[entry.end() :]
    )
    assert xla_accepts(moved), f"{name}: XLA refuses the added cuDNN calls"
    return moved, added


def copied_uncalled(printed: str, computation: str) -> str:
    """The module with a copy of ``computation`` (ENTRY too: the copy is no ENTRY) under fresh
    names (every name it defines, and its own, suffixed .uncalled), printed last and called by
    nothing; names printed with or without `%`. XLA's parser must accept it."""
    head = re.compile(rf"(?m)^(?:ENTRY )?%?{re.escape(computation)}[ (].*?\{{\n(?:.*\n)*?\}}")
    found = head.search(printed)
    assert found is not None, f"no computation {computation}"
    block = found[0].removeprefix("ENTRY ")
    defined = set(re.findall(r"(?m)^\s*(?:ROOT )?%?([\w.-]+) = ", block))
    defined |= set(re.findall(r"[(,] ?%?([\w.-]+): ", block.split("{\n", 1)[0]))
    names = {n: f"{n}.uncalled" for n in defined | {computation}}
    pattern = re.compile(r"(?<![\w.-])(%?)([\w.-]+)(?![\w.-])")
    copy = pattern.sub(lambda m: m[1] + names.get(m[2], m[2]), block)
    moved = printed.rstrip("\n") + "\n\n" + copy + "\n"
    assert xla_accepts(moved), f"XLA refuses a copy of {computation} nothing calls"
    return moved


_DONE = re.compile(r"^\s*%([\w.-]+) = .*? [\w-]+-done\(%[\w.-]+\)")
_BLOCK = re.compile(r"(?ms)^(?:ENTRY )?%[\w.-]+ .*?\{\n.*?^\}")


def dones_delayed(name: str) -> metamorphic.HloVariant:
    """The module with every async done (`*-done`) printed as late as its users allow: right
    before the first instruction that reads it (the ROOT at the latest), so what a computation
    runs after a start, whatever it is (a while, a call, a fusion), is in flight. The module
    stays scheduled (printed order is execution order) and XLA's parser must accept it."""
    printed = text(name)

    def delay(block: re.Match[str]) -> str:
        lines = block[0].split("\n")
        for done in [line for line in lines if _DONE.match(line)]:
            at = lines.index(done)
            reads = re.compile(rf"%{re.escape(_DONE.match(done)[1])}(?![\w.-])")  # type: ignore[index]
            later = range(at + 1, len(lines))
            user = next((i for i in later if reads.search(lines[i].split(" = ", 1)[-1])), None)
            if user is None:  # read by nothing: before the ROOT, if the ROOT comes later
                user = next((i for i in later if lines[i].lstrip().startswith("ROOT ")), None)
            if user is not None:
                lines.insert(user - 1, lines.pop(at))
        return "\n".join(lines)

    moved = _BLOCK.sub(delay, printed)
    assert moved != printed, f"{name}: no done to delay"
    assert xla_accepts(moved), f"{name}: XLA refuses its dones delayed"
    return metamorphic.HloVariant("every async done as late as its users allow", moved)


def fusions_called(name: str, through: str = "call") -> metamorphic.HloVariant:
    """The module with each ENTRY fusion (whose operands ENTRY defines as arrays) moved into a
    computation of its own that a `call` in its place calls (to_apply=), or with ``through``
    "conditional" the one branch of a `conditional` (its operands in a tuple, branch index a
    constant 0): the same kernels in the same order, each now reached through a call."""
    printed = text(name)
    entry = _ENTRY.search(printed)
    assert entry is not None, f"{name}: no ENTRY"
    body = entry[0]
    shapes = dict(
        re.findall(r"(?m)^\s*(?:ROOT )?%([\w.-]+) = ([a-z]\w*\[[\d,]*\]\{[\d,]*\}) ", body)
    )
    added, lines = [], body.split("\n")
    for at, line in enumerate(lines):
        found = _FUSION_LINE.match(line)
        operands = found["operands"].split(", ") if found else []
        if not found or not all(o.lstrip("%") in shapes for o in operands):
            continue
        fusion, shape = found["name"], found["shape"]
        kept = [shapes[o.lstrip("%")] for o in operands]
        own = [f"{fusion}.c{i}" for i in range(len(operands))]
        signature = ", ".join(f"{p}: {s.split('{')[0]}" for p, s in zip(own, kept, strict=True))
        params = "".join(
            f"  %{p} = {s} parameter({i})\n" for i, (p, s) in enumerate(zip(own, kept, strict=True))
        )
        inner = ", ".join(f"%{p}" for p in own)
        indent, tupled = found["indent"], f"({', '.join(kept)})"
        if through == "conditional":
            signature = f"{fusion}.arg: ({', '.join(k.split('{')[0] for k in kept)})"
            params = f"  %{fusion}.arg = {tupled} parameter(0)\n" + "".join(
                f"  %{p} = {k} get-tuple-element(%{fusion}.arg), index={i}\n"
                for i, (p, k) in enumerate(zip(own, kept, strict=True))
            )
        added.append(
            f"%{fusion}.callee ({signature}) -> {shape.split('{')[0]} {{\n{params}"
            f"  ROOT %{fusion}.inner = {shape} fusion({inner}){found['rest']}\n}}\n\n"
        )
        lines[at] = (
            f"{indent}%{fusion} = {shape} call({found['operands']}), to_apply=%{fusion}.callee"
            if through == "call"
            else f"{indent}%{fusion}.args = {tupled} tuple({found['operands']})\n"
            f"{indent}%{fusion}.branch = s32[] constant(0)\n"
            f"{indent}%{fusion} = {shape} conditional(%{fusion}.branch, %{fusion}.args), "
            f"branch_computations={{%{fusion}.callee}}"
        )
    assert added, f"{name}: no ENTRY fusion to call"
    moved = printed[: entry.start()] + "".join(added) + "\n".join(lines) + printed[entry.end() :]
    assert xla_accepts(moved), f"{name}: XLA refuses its ENTRY fusions called"
    return metamorphic.HloVariant(f"ENTRY fusions reached through a {through} each", moved)

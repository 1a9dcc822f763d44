"""Phase 3 reference: dump and read HLO."""

from __future__ import annotations

import math
from collections import Counter
from pathlib import Path

import jax

from xla_inspect.parse import parse_hlo


def three_texts(f, *args) -> dict[str, str]:
    # One lowering gives StableHLO and unoptimized HLO; compiling it gives the optimized HLO.
    lowered = jax.jit(f).lower(*args)
    optimized = lowered.compile().as_text()
    assert optimized is not None, "this backend does not print its executable"
    return {
        "stablehlo": lowered.as_text(),
        "hlo": lowered.as_text(dialect="hlo"),
        "optimized": optimized,
    }


def _stamps(folder: Path) -> dict[Path, tuple[int, int, int]]:
    return {p: (s.st_mtime_ns, s.st_size, s.st_ino) for p in folder.iterdir() if (s := p.stat())}


def dump_files(f, args: tuple, directory: str) -> tuple[Path, Path]:
    # Compiler options scope the dump to this compile; its files are the ones it wrote: new, or
    # rewritten when an earlier process had left files with these very names.
    folder = Path(directory)
    folder.mkdir(parents=True, exist_ok=True)
    before = _stamps(folder)
    options = {"xla_dump_to": str(folder), "xla_dump_hlo_as_text": True}
    jax.jit(f).lower(*args).compile(compiler_options=options)
    written = sorted(p for p, stamp in _stamps(folder).items() if before.get(p) != stamp)
    first = next(p for p in written if p.name.endswith(".before_optimizations.txt"))
    last = next(p for p in written if p.name.endswith("after_optimizations.txt"))
    return first, last


def _layout(shape) -> str:
    # A scalar's layout is empty ("{}"; the text prints f32[] without braces); a tuple's is its
    # elements' layouts in parentheses.
    if shape.is_tuple:
        return "(" + ", ".join(_layout(element) for element in shape.elements) + ")"
    return shape.layout or "{}"


def entry_parameter_layouts(hlo_text: str) -> list[str]:
    # Only ENTRY's parameters are the program's inputs; order them by parameter number.
    entry = parse_hlo(hlo_text).entry
    params = {int(i.payload): i for i in entry if i.opcode == "parameter" and i.payload}
    return [_layout(params[number].shape_info) for number in sorted(params)]


def entry_root(hlo_text: str) -> tuple[str, str]:
    # The program's result is ENTRY's ROOT; its shape line carries the layout.
    root = parse_hlo(hlo_text).entry.root
    return root.opcode, root.shape


def _called_opcodes(module, name: str) -> Counter:
    # A fused computation may call others (a reduce's reducer): count those too.
    counts: Counter = Counter()
    for instruction in module[name]:
        if instruction.opcode != "parameter":
            counts[instruction.opcode] += 1
        for called in instruction.called_computations:
            counts += _called_opcodes(module, called)
    return counts


def fusion_contents(hlo_text: str) -> dict[str, Counter]:
    # Follow each fusion's calls= to its fused computation; the kind is on the fusion itself.
    module = parse_hlo(hlo_text)
    contents: dict[str, Counter] = {}
    for computation in module:
        for instruction in computation:
            if instruction.opcode == "fusion":
                counts = contents.setdefault(instruction.attribute("kind", ""), Counter())
                for name in instruction.called_computations:
                    counts += _called_opcodes(module, name)
    return contents


def constants(hlo_text: str) -> list[tuple[str, str]]:
    # Fusion moves small constants into fused computations: look in every computation.
    return [
        (i.shape, i.payload)
        for computation in parse_hlo(hlo_text)
        for i in computation
        if i.opcode == "constant" and i.payload is not None
    ]


def flops(f, *args) -> float:
    # cost_analysis() is a dict now; XLA omits keys whose value is zero.
    cost = jax.jit(f).lower(*args).compile().cost_analysis()
    assert cost is not None, "this backend has no cost analysis"
    return float(cost.get("flops", 0.0))


def mlp_flops(batch: int, in_dim: int, hidden: int, out_dim: int) -> int:
    # 2 flops per multiply-add of each dot; 1 per element for each bias add and for relu's max;
    # broadcasting the biases moves data and costs no flops.
    dots = 2 * batch * in_dim * hidden + 2 * batch * hidden * out_dim
    return dots + batch * hidden + batch * hidden + batch * out_dim


_XLA_DTYPES = {"float32": "f32", "bfloat16": "bf16", "float16": "f16", "int32": "s32"}


def _printed(dtype: str, dims: tuple[int, ...]) -> str:
    layout = "{" + ",".join(str(d) for d in reversed(range(len(dims)))) + "}" if dims else ""
    return f"{_XLA_DTYPES[dtype]}[{','.join(map(str, dims))}]{layout}"


def predict_entry_root(program: str, args: tuple[jax.ShapeDtypeStruct, ...]) -> tuple[str, str]:
    # On XLA:CPU every element-wise op, reduction and transpose ends up in a loop fusion, so the
    # ROOT of one computed result is a fusion; several results are gathered by a tuple. A result
    # that is an input (or a reshape of one, a free bitcast; x.T of a vector; a cast to the dtype
    # it has) cannot be handed back in the input's buffer, so XLA copies it. The result's dtype
    # follows jnp (sin of an int32 is float32); shapes are row-major: minor-to-major
    # {n-1,...,0}, none on a scalar; bfloat16 prints bf16 and int32 s32.
    dims, dtype = tuple(args[0].shape), args[0].dtype.name
    real = "float32" if dtype == "int32" else dtype
    if program == "(v, x)":
        v = args[1]
        return "tuple", f"({_printed(v.dtype.name, tuple(v.shape))}, {_printed(dtype, dims)})"
    if program == "(x * 2, x + 1)":
        return "tuple", f"({_printed(dtype, dims)}, {_printed(dtype, dims)})"
    if program == "(x, x.sum())":
        return "tuple", f"({_printed(dtype, dims)}, {_printed(dtype, ())})"
    if program == "x.reshape(2, -1, x.shape[-1])":
        # A matrix of two rows gains a middle dimension of 1: layout assignment gives the bitcast
        # the layout {2,0,1} and the copy back to row-major fuses with it (a loop fusion).
        middle = math.prod(dims) // (2 * dims[-1])
        return "fusion" if middle == 1 else "copy", _printed(dtype, (2, middle, dims[-1]))
    if program == "x itself" or (program == "x.T" and len(dims) == 1):
        return "copy", _printed(dtype, dims)
    if program == "x.astype(jnp.bfloat16)":
        return "copy" if dtype == "bfloat16" else "fusion", _printed("bfloat16", dims)
    fused = {
        "x * 2 + 1": (dtype, dims),
        "jnp.sin(x)": (real, dims),
        "jnp.tanh(x)": (real, dims),
        "x + 1": (dtype, dims),
        "x.sum(axis=1)": (dtype, dims[:1] + dims[2:]),
        "x.max()": (dtype, ()),
        "x.T": (dtype, dims[::-1]),
    }
    return "fusion", _printed(*fused[program])

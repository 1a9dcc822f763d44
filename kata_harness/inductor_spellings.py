"""Fresh spellings of Inductor's generated code that phase 16's recordings never show.

:func:`respelled` gives each fused kernel the name of other ATen operators, drawn from `OPS`
(among them names that end in a digit: torch 2.15 names the kernel of `torch.expm1(x)`
`cpp_fused_expm1_0` and that of `torch.atan2(x, y)` `cpp_fused_atan2_0`), and declares each
reduction's accumulator with another C++ type Inductor's CPU backend declares
(`torch._inductor.codegen.cpp_utils.DTYPE_TO_CPP`: a max over a uint8 tensor declares
`uint8_t tmp_acc0`). When the module defines two kernels or more that fuse named operators,
two of them get one name the other's with a digit more (`cpp_fused_sum_1` and
`cpp_fused_sum_10`, as Inductor numbers a graph's eleventh kernel), the longer one defined
first and, when two kernels differ in their reductions, two that do: a kernel's source is found
by its whole name, not by the first text that starts with it. Each fallback
`torch.ops.aten.<op>.<overload>(...)` of `call` calls another ATen operator, drawn from
`FALLBACKS`, one of them (when it runs any) an operator that views a tensor (`view.dtype`,
`as_strided`, `permute`...): a fallback is a kernel whatever it computes. It may also state
the inputs' sizes symbolically, as a dynamic-shape compile does
(`assert_size_stride(arg2_1, (s1, ), (1, ))`: each size other than 1 named `s<k>`, one name
per value), and leave out `call`'s `args.clear()` (a `call` written by hand, or by another
release, need not clear its arguments). The kernels `call` runs, their order, kinds, library
names and reductions, and each input's number of dimensions stay as they were: a reading
task's answer must follow the names, types and sizes, and the oracles of :mod:`.inductor` read
them from the respelled text.
"""

from __future__ import annotations

import ast
import itertools
import random
import re

from . import inductor

# ATen operators as Inductor names them in a fused kernel's name; the last ones end in a digit
OPS = (
    "_softmax",
    "_unsafe_view",
    "abs",
    "add",
    "amax",
    "clone",
    "div",
    "exp",
    "gelu",
    "mul",
    "native_layer_norm",
    "relu",
    "sum",
    "tanh",
    "atan2",
    "exp2",
    "expm1",
    "log10",
    "log1p",
    "log2",
)
_DIGIT_OPS = tuple(op for op in OPS if op[-1].isdigit())

# C++ types of an accumulator (DTYPE_TO_CPP's values); a Welford or IndexValue one holds a float
SCALARS = (
    "float",
    "double",
    "at::Half",
    "at::BFloat16",
    "int64_t",
    "int32_t",
    "int16_t",
    "int8_t",
    "uint64_t",
    "uint32_t",
    "uint16_t",
    "uint8_t",
    "bool",
    "at::complex<float>",
    "at::complex<double>",
    "at::Float8_e4m3fn",
    "at::Float8_e5m2",
)
FLOATS = ("float", "double", "at::Half", "at::BFloat16")

# ATen operators (op, overload) a fallback may call: first those that view a tensor (Inductor
# lowers most views to `reinterpret_tensor`, yet falls back to `view.dtype` and others: still a
# kernel statement of `call`), then others it has no lowering for
VIEWS = (
    ("view", "dtype"),
    ("view", "default"),
    ("_unsafe_view", "default"),
    ("as_strided", "default"),
    ("permute", "default"),
    ("expand", "default"),
    ("reshape", "default"),
    ("t", "default"),
    ("transpose", "int"),
    ("squeeze", "dim"),
    ("unsqueeze", "default"),
    ("alias", "default"),
    ("slice", "Tensor"),
    ("select", "int"),
    ("diagonal", "default"),
    ("unfold", "default"),
    ("view_as_real", "default"),
)
FALLBACKS = (
    *VIEWS,
    ("convolution", "default"),
    ("index", "Tensor"),
    ("index_put_", "default"),
    ("sort", "default"),
    ("topk", "default"),
    ("cumsum", "default"),
    ("nonzero", "default"),
    ("linalg_cholesky_ex", "default"),
    ("_addmm_activation", "default"),
    ("bernoulli_", "float"),
)

_DECLARATION = re.compile(
    r"^(?P<indent>[ \t]*)(?P<type>[\w:]+(?:<(?P<inner>[\w:<>]+)>)?)"
    r"(?P<rest>[ \t]+tmp_acc\d+[ \t]*=.*)$",
    re.M,
)


def respelled(code: str, rng: random.Random) -> str:
    """`code` with its fused kernels renamed (one of them, when it has any that fuses named
    operators, after operators whose last name ends in a digit; two of them, when it has two,
    with names one a prefix of the other, the longer defined first), its fallbacks calling
    other ATen operators (:func:`refallen`) and its accumulators retyped."""
    names: dict[str, str] = {}
    sources = inductor.kernel_sources(code)
    kernels = [k for k in sources if inductor.fused_ops(k)]
    digit_last = rng.choice(kernels) if kernels else None
    for kernel in kernels:
        number = kernel.rsplit("_", 1)[1]
        ops = rng.sample(OPS, rng.randint(1, 3))
        if kernel == digit_last:
            last = rng.choice(_DIGIT_OPS)
            ops = [op for op in ops if op < last] + [last]
        names[kernel] = f"cpp_fused_{'_'.join(sorted(set(ops)))}_{number}"
    names.update(_prefixed_pair(kernels, sources, names, digit_last, rng))
    if names:
        pattern = re.compile(r"\b(" + "|".join(map(re.escape, names)) + r")\b")
        code = pattern.sub(lambda m: names[m[1]], code)
    code = _DECLARATION.sub(lambda m: _retyped(m, rng), code)
    code = refallen(code, rng)
    if rng.random() < 0.5:
        code = symbolic_sizes(code)
    if rng.random() < 0.5:
        code = unclear(code)
    return code


_FALLBACK = re.compile(r"^(?P<head>[ \t]+(?:\w+ = )?torch\.ops\.aten\.)\w+\.\w+\(", re.M)


def refallen(code: str, rng: random.Random) -> str:
    """`code` whose fallback statements (`torch.ops.aten.<op>.<overload>(...)`, assigned or
    bare) call other ATen operators drawn from `FALLBACKS`, one of them, when there is one, a
    view (`VIEWS`); their arguments, places and number stay."""
    spots = list(_FALLBACK.finditer(code))
    if not spots:
        return code
    view = rng.randrange(len(spots))
    drawn = [rng.choice(VIEWS if i == view else FALLBACKS) for i in range(len(spots))]
    for spot, (op, overload) in zip(reversed(spots), reversed(drawn), strict=True):
        code = f"{code[: spot.start()]}{spot['head']}{op}.{overload}({code[spot.end() :]}"
    return code


_CLEAR = re.compile(r"^(?P<indent>[ \t]+)args\.clear\(\)[ \t]*\n", re.M)
_READS_ARGS = re.compile(r"^[ \t]+(?:if|for|while)\b.*\bargs\b", re.M)


def unclear(code: str) -> str:
    """`code` whose `call` does not write `args.clear()`: the line left out, or, when a block
    of `call` tests `args` (:func:`.inductor.variant`'s nesting), spelled `del args[:]`."""
    if _READS_ARGS.search(code):
        return _CLEAR.sub(lambda m: f"{m['indent']}del args[:]\n", code)
    return _CLEAR.sub("", code)


_ASSERT_LINE = re.compile(
    r"^(?P<indent>[ \t]+)(?P<stmt>assert_size_stride(?:_grouped)?\(.*\))$", re.M
)


def symbolic_sizes(code: str) -> str:
    """`code` with the sizes its `assert_size_stride` lines state written as a dynamic-shape
    compile writes them: each integer other than 1 in a size (not a stride) named `s<k>`, one
    name per distinct value, numbered in the order first seen; each size keeps its dimensions."""
    symbols: dict[int, str] = {}

    def rewritten(match: re.Match[str]) -> str:
        stmt = match["stmt"]
        call = ast.parse(stmt).body[0]
        assert isinstance(call, ast.Expr) and isinstance(call.value, ast.Call)
        size = call.value.args[1]
        spots: list[tuple[int, int, int]] = []  # (start, end, value) of each integer size
        for node in ast.walk(size):
            value = node.value if isinstance(node, ast.Constant) else None
            if type(value) is int and value != 1:
                assert isinstance(node, ast.Constant) and node.end_col_offset is not None
                spots.append((node.col_offset, node.end_col_offset, value))
        for _, _, value in sorted(spots):
            symbols.setdefault(value, f"s{len(symbols)}")
        for start, end, value in sorted(spots, reverse=True):
            stmt = stmt[:start] + symbols[value] + stmt[end:]
        return match["indent"] + stmt

    return _ASSERT_LINE.sub(rewritten, code)


def _prefixed_pair(
    kernels: list[str],
    sources: dict[str, str],
    names: dict[str, str],
    digit_last: str | None,
    rng: random.Random,
) -> dict[str, str]:
    """New names for two of `kernels` (in the order they are defined): the one defined first
    `cpp_fused_<ops>_<n><d>`, the other `cpp_fused_<ops>_<n>`, both fusing the same operators;
    two whose sources declare different numbers of accumulators when the module has such."""
    pairs = list(itertools.combinations(kernels, 2))
    differ = [
        (a, b)
        for a, b in pairs
        if inductor.accumulators(sources[a]) != inductor.accumulators(sources[b])
    ]
    if not pairs:
        return {}
    first, second = rng.choice(differ or pairs)
    ops = inductor.fused_ops(names[first if digit_last == first else second])
    taken = {names.get(k, k) for k in sources} - {names[first], names[second]}
    while True:
        short = f"cpp_fused_{ops}_{rng.randint(1, 99)}"
        longer = f"{short}{rng.randint(0, 9)}"
        if short not in taken and longer not in taken:
            return {first: longer, second: short}


def _retyped(match: re.Match[str], rng: random.Random) -> str:
    if match["inner"]:  # Welford<float>, IndexValue<float>: the type it holds, on its line
        old, new = match["inner"], rng.choice(FLOATS)
        kind = match["type"][: -len(match["inner"]) - 2]
        declared = f"{kind}<{new}>"
    else:
        old, new = match["type"], rng.choice(SCALARS)
        declared = new
    rest = re.sub(rf"(?<![\w:]){re.escape(old)}(?![\w:])", new, match["rest"])
    return f"{match['indent']}{declared}{rest}"

"""Instructions written without a shape: the reader infers the shape XLA's parser infers, and
rejects (with line and column) where XLA's parser cannot infer one.

The oracle is jaxlib's private `jaxlib._hlo.hlo_module_from_text`: each instruction's shape is
read from the module XLA prints back, through our reader of that printed (fully shaped) text.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from kata_harness import oracles, versions
from xla_inspect.errors import HloParseError
from xla_inspect.hlo.infer import CannotInfer, infer_shape
from xla_inspect.model import HloModule, Shape
from xla_inspect.parse import parse_hlo

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )

HERE = Path(__file__).parent

_ADD = """
sum {
  sa = f32[] parameter(0)
  sb = f32[] parameter(1)
  ROOT ss = f32[] add(sa, sb)
}
"""
_PAIR_SUM = """
pair_sum {
  pa = f32[] parameter(0)
  pi = s32[] parameter(1)
  pb = f32[] parameter(2)
  pj = s32[] parameter(3)
  ps = f32[] add(pa, pb)
  pt = s32[] add(pi, pj)
  ROOT pr = (f32[], s32[]) tuple(ps, pt)
}
"""
_LOOP = """
cond {
  c0 = (s32[], f32[4]) parameter(0)
  i0 = s32[] get-tuple-element(c0), index=0
  n0 = s32[] constant(3)
  ROOT lt = pred[] compare(i0, n0), direction=LT
}
body {
  c1 = (s32[], f32[4]) parameter(0)
  i1 = s32[] get-tuple-element(c1), index=0
  one = s32[] constant(1)
  next = add(i1, one)
  v1 = get-tuple-element(c1), index=1
  w1 = exponential(v1)
  ROOT out = tuple(next, w1)
}
"""
_BRANCHES = """
left {
  x0 = f32[4] parameter(0)
  ROOT y0 = negate(x0)
}
right {
  x1 = f32[4] parameter(0)
  ROOT y1 = abs(x1)
}
"""

_GREATER = """
greater {
  ga = f32[] parameter(0)
  gb = f32[] parameter(1)
  ROOT gt = pred[] compare(ga, gb), direction=GT
}
"""
_LESS = """
less {
  la = f32[] parameter(0)
  lb = f32[] parameter(1)
  ROOT lt1 = compare(la, lb), direction=LT
}
less2 {
  ma = f32[] parameter(0)
  mb = f32[] parameter(1)
  mc = s32[] parameter(2)
  md = s32[] parameter(3)
  ROOT lt2 = compare(ma, mb), direction=LT
}
"""

# (name, module text): each has at least one instruction without a shape; XLA accepts each
INFERRED = [
    (
        "unary",
        "ENTRY e {\n x = f32[3,4]{0,1} parameter(0)\n n = negate(x)\n t = tanh(n)\n"
        " ROOT s = sqrt(t)\n}",
    ),
    (
        "unary-more",
        "ENTRY e {\n x = f16[5] parameter(0)\n a = exponential-minus-one(x)\n"
        " b = log-plus-one(a)\n c = floor(b)\n d = sign(c)\n ROOT r = round-nearest-even(d)\n}",
    ),
    (
        "integer-unary",
        "ENTRY e {\n x = s32[7] parameter(0)\n a = count-leading-zeros(x)\n"
        " b = popcnt(a)\n ROOT c = not(b)\n}",
    ),
    (
        "complex-parts",
        "ENTRY e {\n c = c64[2,3] parameter(0)\n r = real(c)\n i = imag(c)\n"
        " a = abs(c)\n ROOT t = tuple(r, i, a)\n}",
    ),
    (
        "complex-of-f64",
        "ENTRY e {\n x = f64[2] parameter(0)\n y = f64[2] parameter(1)\n ROOT c = complex(x, y)\n}",
    ),
    ("binary", "ENTRY e {\n x = s4[5,5] parameter(0)\n ROOT y = add(x, x)\n}"),
    (
        "binary-more",
        "ENTRY e {\n x = f32[8] parameter(0)\n y = f32[8] parameter(1)\n"
        " a = multiply(x, y)\n b = subtract(a, y)\n c = maximum(b, x)\n d = minimum(c, y)\n"
        " e = remainder(d, x)\n ROOT f = divide(e, y)\n}",
    ),
    (
        "binary-scalar-and-degenerate",
        "ENTRY e {\n x = f32[2,3]{0,1} parameter(0)\n z = f32[] parameter(1)\n"
        " o = f32[1,3] parameter(2)\n a = add(x, z)\n b = multiply(z, x)\n"
        " c = subtract(o, x)\n ROOT d = compare(x, o), direction=EQ\n}",
    ),
    (
        "logical",
        "ENTRY e {\n x = pred[3] parameter(0)\n y = pred[3] parameter(1)\n"
        " a = and(x, y)\n b = or(a, y)\n ROOT c = xor(b, x)\n}",
    ),
    (
        "compare-keeps-layout",
        "ENTRY e {\n x = f32[2,3]{0,1} parameter(0)\n ROOT c = compare(x, x), direction=GT\n}",
    ),
    ("is-finite", "ENTRY e {\n x = bf16[6] parameter(0)\n ROOT f = is-finite(x)\n}"),
    (
        "select-clamp",
        "ENTRY e {\n p = pred[4] parameter(0)\n x = f32[4] parameter(1)\n"
        " y = f32[4] parameter(2)\n s = select(p, x, y)\n ROOT c = clamp(x, s, y)\n}",
    ),
    (
        "scalar-select",
        "ENTRY e {\n p = pred[] parameter(0)\n x = f32[4] parameter(1)\n"
        " ROOT s = select(p, x, x)\n}",
    ),
    (
        "tuple-gte",
        "ENTRY e {\n x = f32[2] parameter(0)\n y = s8[] parameter(1)\n"
        " t = tuple(x, y)\n u = tuple(t, x)\n g = get-tuple-element(u), index=0\n"
        " ROOT h = get-tuple-element(g), index=1\n}",
    ),
    ("after-all", "ENTRY e {\n a = after-all()\n b = after-all(a)\n ROOT c = after-all(a, b)\n}"),
    (
        "while",
        _LOOP + "ENTRY e {\n i = s32[] constant(0)\n v = f32[4] parameter(0)\n"
        " t = tuple(i, v)\n ROOT w = while(t), condition=cond, body=body\n}",
    ),
    ("call", _ADD + "ENTRY e {\n x = f32[] parameter(0)\n ROOT c = call(x, x), to_apply=sum\n}"),
    (
        "conditional-index",
        _BRANCHES + "ENTRY e {\n i = s32[] parameter(0)\n"
        " x = f32[4] parameter(1)\n"
        " ROOT c = conditional(i, x, x), branch_computations={left, right}\n}",
    ),
    (
        "conditional-pred",
        _BRANCHES + "ENTRY e {\n p = pred[] parameter(0)\n"
        " x = f32[4] parameter(1)\n"
        " ROOT c = conditional(p, x, x), true_computation=left, false_computation=right\n}",
    ),
    (
        "transpose",
        "ENTRY e {\n x = f32[2,3,5] parameter(0)\n ROOT t = transpose(x), dimensions={2,0,1}\n}",
    ),
    (
        "dot-matmul",
        "ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[3,7] parameter(1)\n"
        " ROOT d = dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
    ),
    (
        "dot-batched",
        "ENTRY e {\n a = bf16[4,2,3] parameter(0)\n b = bf16[4,5,3] parameter(1)\n"
        " ROOT d = dot(a, b), lhs_batch_dims={0}, lhs_contracting_dims={2},"
        " rhs_batch_dims={0}, rhs_contracting_dims={2}\n}",
    ),
    (
        "dot-outer",
        "ENTRY e {\n a = f32[2] parameter(0)\n b = f32[3] parameter(1)\n ROOT d = dot(a, b)\n}",
    ),
    (
        "concatenate",
        "ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[2,5] parameter(1)\n"
        " ROOT c = concatenate(a, b, a), dimensions={1}\n}",
    ),
    (
        "pad",
        "ENTRY e {\n x = f32[3,4] parameter(0)\n z = f32[] constant(0)\n"
        " ROOT p = pad(x, z), padding=1_2_1x-1_0\n}",
    ),
    (
        "pad-empty-dim",
        "ENTRY e {\n x = f32[0,4] parameter(0)\n z = f32[] constant(0)\n"
        " ROOT p = pad(x, z), padding=1_1_3x0_0_2\n}",
    ),
    (
        "reduce",
        _ADD + "ENTRY e {\n x = f32[3,4,5] parameter(0)\n z = f32[] constant(0)\n"
        " ROOT r = reduce(x, z), dimensions={0,2}, to_apply=sum\n}",
    ),
    (
        "reduce-variadic",
        _PAIR_SUM + "ENTRY e {\n x = f32[3,4] parameter(0)\n"
        " y = s32[3,4] parameter(1)\n z = f32[] constant(0)\n k = s32[] constant(0)\n"
        " ROOT r = reduce(x, y, z, k), dimensions={1}, to_apply=pair_sum\n}",
    ),
    (
        "reduce-window",
        _ADD + "ENTRY e {\n x = f32[9,10] parameter(0)\n z = f32[] constant(0)\n"
        " ROOT r = reduce-window(x, z), window={size=3x2 stride=2x3 pad=1_1x0_1"
        " lhs_dilate=1x2 rhs_dilate=2x1}, to_apply=sum\n}",
    ),
    (
        "reduce-window-scalar",
        _ADD + "ENTRY e {\n x = f32[] parameter(0)\n ROOT r = reduce-window(x, x), to_apply=sum\n}",
    ),
    (
        "reverse-copy",
        "ENTRY e {\n x = u8[3,2]{0,1} parameter(0)\n"
        " r = reverse(x), dimensions={0}\n ROOT c = copy(r)\n}",
    ),
    (
        "typed-operands",
        "ENTRY e {\n x = f32[4] parameter(0)\n ROOT y = add(f32[4] x, f32[4] %x)\n}",
    ),
    (
        "tuple-element-operand",
        "ENTRY e {\n p = (f32[2], s32[3]) parameter(0)\n ROOT n = negate(p#1)\n}",
    ),
    (
        "broadcast-reads-dimensions-as-new-sizes",
        "ENTRY e {\n x = f32[2] parameter(0)\n ROOT b = broadcast(x), dimensions={3,1}\n}",
    ),
    (
        "sort-and-topk",
        _LESS + "ENTRY e {\n x = f32[4,6] parameter(0)\n i = s32[4,6] parameter(1)\n"
        " s = sort(x), dimensions={1}, to_apply=less\n"
        " t = sort(x, i), dimensions={0}, to_apply=less2\n"
        " ROOT k = topk(s), k=2, largest=true\n}",
    ),
    (
        "fft",
        "ENTRY e {\n x = f32[3,8] parameter(0)\n r = fft(x), fft_type=RFFT, fft_length={8}\n"
        " c = fft(r), fft_type=FFT, fft_length={5}\n"
        " ROOT i = fft(c), fft_type=IRFFT, fft_length={8}\n}",
    ),
    (
        "convolution",
        "ENTRY e {\n x = f32[2,9,10,3] parameter(0)\n w = f32[3,2,3,8] parameter(1)\n"
        " ROOT c = convolution(x, w), window={size=3x2 stride=2x1 pad=1_1x0_1 rhs_dilate=1x2},"
        " dim_labels=b01f_01io->bf01\n}",
    ),
    (
        "gather",
        "ENTRY e {\n x = f32[5,7] parameter(0)\n i = s32[4,1] parameter(1)\n"
        " ROOT g = gather(x, i), offset_dims={1}, collapsed_slice_dims={0},"
        " start_index_map={0}, index_vector_dim=1, slice_sizes={1,3}\n}",
    ),
    (
        "scatter",
        _ADD + "ENTRY e {\n x = f32[5,7] parameter(0)\n i = s32[2,1] parameter(1)\n"
        " u = f32[2,7] parameter(2)\n ROOT s = scatter(x, i, u), update_window_dims={1},"
        " inserted_window_dims={0}, scatter_dims_to_operand_dims={0}, index_vector_dim=1,"
        " to_apply=sum\n}",
    ),
    (
        "linear-algebra",
        "ENTRY e {\n a = f32[2,4,4] parameter(0)\n b = f32[2,4,3] parameter(1)\n"
        " l = cholesky(a), lower=true\n ROOT x = triangular-solve(l, b), left_side=true,"
        " lower=true, transpose_a=NO_TRANSPOSE\n}",
    ),
    (
        "batch-norm",
        "ENTRY e {\n x = f32[2,3,5] parameter(0)\n s = f32[3] parameter(1)\n"
        " o = f32[3] parameter(2)\n t = batch-norm-training(x, s, o), epsilon=0.001,"
        " feature_index=1\n m = f32[3] parameter(3)\n v = f32[3] parameter(4)\n"
        " i = batch-norm-inference(x, s, o, m, v), epsilon=0.001, feature_index=1\n"
        " g = batch-norm-grad(x, s, m, v, i), epsilon=0.001, feature_index=1\n"
        " ROOT r = tuple(t, i, g)\n}",
    ),
    (
        "map-and-select-and-scatter",
        _ADD + _GREATER + "ENTRY e {\n x = f32[4,6] parameter(0)\n y = f32[4,6] parameter(1)\n"
        " m = map(x, y), dimensions={0,1}, to_apply=sum\n s = f32[2,3] parameter(2)\n"
        " z = f32[] constant(0)\n ROOT r = select-and-scatter(m, s, z),"
        " window={size=2x2 stride=2x2}, select=greater, scatter=sum\n}",
    ),
    (
        "attributes-next-line",
        "ENTRY e {\n x = f32[2,3] parameter(0)\n ROOT t = transpose(x)\n  , dimensions={1,0}\n}",
    ),
]

# (name, module text): instructions written as operands; XLA accepts each
NESTED = [
    (
        "nested-parameter",
        "ENTRY e {\n ROOT r = sqrt(f32[3,4] broadcast(f32[] parameter(0)))\n}",
    ),
    (
        "nested-broadcast-of-a-scalar-with-a-layout",
        "ENTRY e {\n c = s4[]{:E(4)} parameter(0)\n x = s4[2] parameter(1)\n"
        " ROOT a = add(x, s4[2]{0:E(4)} broadcast(c))\n}",
    ),
    (
        "nested-two-levels",
        "ENTRY e {\n x = f32[5] parameter(1)\n"
        " ROOT r = add(f32[5] negate(f32[5] parameter(0)), exponential(x))\n}",
    ),
    (
        "nested-same-opcode-twice",
        "ENTRY e {\n x = f32[2] parameter(0)\n"
        " ROOT t = tuple(negate(x), negate(negate(x)), f32[] constant(1.5))\n}",
    ),
]

# (name, module text, the offending line): an instruction written as an operand that XLA
# rejects, for the attribute it would need there
NESTED_REJECTED = [
    (
        "nested-broadcast-of-an-array",
        "ENTRY e {\n ROOT r = sqrt(f32[3,4] broadcast(f32[4] parameter(0)))\n}",
        2,
    ),
    (
        "nested-opcode-that-needs-an-attribute",
        "ENTRY e {\n x = f32[2,3] parameter(0)\n ROOT n = negate(f32[3,2] transpose(x))\n}",
        3,
    ),
]

# (name, module text, the offending line): XLA rejects each for the instruction without a shape
NOT_INFERRED = [
    ("parameter", "ENTRY e {\n ROOT x = parameter(0)\n}", 2),
    ("constant", "ENTRY e {\n ROOT c = constant(1)\n}", 2),
    (
        "binary-shapes-differ",
        "ENTRY e {\n x = f32[2] parameter(0)\n y = f32[3] parameter(1)\n ROOT a = add(x, y)\n}",
        4,
    ),
    (
        "transpose-not-permutation",
        "ENTRY e {\n x = f32[2,3] parameter(0)\n ROOT t = transpose(x), dimensions={0,0}\n}",
        3,
    ),
    (
        "concatenate-mismatch",
        "ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[3,5] parameter(1)\n"
        " ROOT c = concatenate(a, b), dimensions={1}\n}",
        4,
    ),
    (
        "dot-contracting-sizes",
        "ENTRY e {\n a = f32[2,3] parameter(0)\n b = f32[4,7] parameter(1)\n"
        " ROOT d = dot(a, b), lhs_contracting_dims={1}, rhs_contracting_dims={0}\n}",
        4,
    ),
    ("nested-parameter-without-shape", "ENTRY e {\n ROOT n = negate(parameter(0))\n}", 2),
    ("convert", "ENTRY e {\n x = f32[2] parameter(0)\n ROOT c = convert(x)\n}", 3),
    ("iota", "ENTRY e {\n ROOT i = iota(), iota_dimension=0\n}", 2),
]


def _shapes(module: HloModule) -> dict[tuple[str, str], Shape]:
    """Each instruction's shape by (computation, instruction name). The get-tuple-element that
    operand `p#1` adds is named `p#1` by our reader and `p_1` by XLA's: keyed as XLA names it."""
    return {
        (c.name, i.name.replace("#", "_")): Shape(i.shape)
        for c in module.computations
        for i in c.instructions
    }


def _same_shape(ours: Shape, xla: Shape) -> bool:
    """Equal element types and dimensions (tuples element by element); the layout too where
    ours states one."""
    if ours.is_tuple or xla.is_tuple:
        return len(ours.elements) == len(xla.elements) and all(
            _same_shape(a, b) for a, b in zip(ours.elements, xla.elements, strict=True)
        )
    if (ours.dtype, ours.dims) != (xla.dtype, xla.dims):
        return False
    return ours.layout is None or ours.minor_to_major == xla.minor_to_major


def _xla_shapes(text: str) -> dict[tuple[str, str], Shape] | None:
    """XLA's shape of each (computation, instruction), or None when its parser rejects `text`."""
    verdict = oracles.xla_verdict(text)  # in a helper process: an abort is a verdict there
    if verdict.kind != "accepted":
        return None
    return _shapes(parse_hlo(verdict.facts["text"]))


def _assert_agrees(text: str) -> None:
    """Our reader and XLA's parser agree on `text`: both reject it, or both accept it and give
    every instruction the same shape."""
    expected = _xla_shapes(text)
    try:
        ours = _shapes(parse_hlo(text))
    except HloParseError as error:
        assert expected is None, f"XLA accepts, we reject: {error}"
        return
    assert expected is not None, "XLA rejects, we accept"
    assert ours.keys() == expected.keys()
    wrong = {
        k: (ours[k].text, expected[k].text) for k in ours if not _same_shape(ours[k], expected[k])
    }
    assert not wrong


@pytest.mark.parametrize(
    ("name", "text"),
    [
        # `p#1` (an element of a tuple as an operand) is newer syntax than some XLA parsers read
        pytest.param(n, t, marks=versions.requires_jax(versions.NEWER_SYNTAX_GATE))
        if versions.uses_newer_hlo_syntax(t)
        else (n, t)
        for n, t in INFERRED
    ],
    ids=[n for n, _ in INFERRED],
)
def test_inferred_shape_is_xlas(name: str, text: str) -> None:
    assert _xla_shapes(text) is not None, f"{name}: XLA's parser rejects the example"
    _assert_agrees(text)


@pytest.mark.parametrize(("name", "text"), NESTED, ids=[n for n, _ in NESTED])
def test_nested_instructions_are_xlas(name: str, text: str) -> None:
    assert _xla_shapes(text) is not None, f"{name}: XLA's parser rejects the example"
    _assert_agrees(text)


@pytest.mark.parametrize(
    ("name", "text", "line"), NESTED_REJECTED, ids=[n for n, _, _ in NESTED_REJECTED]
)
def test_nested_instruction_xla_rejects_is_rejected(name: str, text: str, line: int) -> None:
    assert _xla_shapes(text) is None, f"{name}: XLA's parser accepts the example"
    with pytest.raises(HloParseError) as caught:
        parse_hlo(text)
    assert (caught.value.line_no, caught.value.col is not None) == (line, True)


@pytest.mark.parametrize(
    ("name", "text", "line"), NOT_INFERRED, ids=[n for n, _, _ in NOT_INFERRED]
)
def test_shape_xla_cannot_infer_is_rejected_where_it_is_missing(
    name: str, text: str, line: int
) -> None:
    assert _xla_shapes(text) is None, f"{name}: XLA's parser accepts the example"
    with pytest.raises(HloParseError) as caught:
        parse_hlo(text)
    assert caught.value.line_no == line
    assert caught.value.col is not None
    assert "shape" in caught.value.expected


def test_unknown_rule_names_the_opcode() -> None:
    with pytest.raises(CannotInfer, match="'custom-call'"):
        infer_shape("custom-call", ["f32[3]"], 'custom_call_target="f"', lambda _: None)


# -- hypothesis: corpus modules with the shape dropped from some instructions ------------------

# an instruction line with a shape, other than parameter, constant and broadcast (whose form
# without a shape means another broadcast, so the rest of the module no longer fits)
_SHAPED_LINE = re.compile(
    r"^(\s*(?:ROOT )?%?[\w.\-]+ = )(\S+|\([^=]*?\)) "
    r"((?!parameter\(|constant\(|broadcast\()[a-z][a-z0-9\-]*\()",
    re.M,
)
_SOURCES = [
    text
    for text in (p.read_text() for p in sorted((HERE / "corpus").glob("*.hlo")))
    if len(text) < 60_000
]


@settings(
    max_examples=40,
    deadline=None,
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow],
)
@given(data=st.data())
def test_dropping_shapes_from_corpus_modules_matches_xla(data: st.DataObject) -> None:
    text = data.draw(st.sampled_from(_SOURCES), label="module")
    lines = list(_SHAPED_LINE.finditer(text))
    chosen = data.draw(
        st.sets(st.integers(0, len(lines) - 1), min_size=1, max_size=8), label="lines"
    )
    pieces, at = [], 0
    for index in sorted(chosen):
        match = lines[index]
        pieces += [text[at : match.start(2)]]
        at = match.start(3)
    dropped = "".join(pieces) + text[at:]
    verdict = oracles.xla_verdict(dropped)
    if verdict.kind != "accepted":
        if "infer shape" in verdict.message:
            with pytest.raises(HloParseError):
                parse_hlo(dropped)
        # else XLA inferred every shape and then rejected an inferred shape that does not fit
        # the written one (say a f32 result where bf16 was written): checks the reader does
        # not make on any instruction, so this case says nothing about inference
        return
    _assert_agrees(dropped)

"""The modules the desugaring tests give XLA's parser and the reader: instructions without a
shape that XLA infers (INFERRED), instructions written as operands that XLA accepts (NESTED) and
rejects (NESTED_REJECTED), and shapes XLA cannot infer (NOT_INFERRED). A data table, read by
test_desugar.py.
"""

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

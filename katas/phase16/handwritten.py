"""Modules written by hand for phase 16, for what the recorded and compiled ones never show.

`HANDWRITTEN` and `HANDWRITTEN_ROWS` are modules in the form Inductor generates (and so are the
two graphs of handwritten_train.HANDWRITTEN_TRAIN);
`HANDWRITTEN_HLO` holds optimized HLO modules as XLA prints them (each one XLA's parser accepts,
which the tests check through the oracles).
"""

# A module written by hand in the form Inductor generates, for what the recordings never show:
# `call` at module level (as releases before the Runner class print it), one fused kernel
# called twice, two kernels defined but never called, an ATen fallback assigned to a buffer,
# library calls other than addmm/mm, and calls that a comment of `call` only mentions. Its
# kernels: bmm, fused add_relu (2 reductions), baddbmm, fused add_relu again, fallback
# _addmm_activation.
HANDWRITTEN = """# AOT ID: ['0_inference']
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
async_compile = AsyncCompile()


cpp_fused_add_relu_3 = async_compile.cpp_pybinding(['float*', 'const float*'], r'''
extern "C" void kernel(float* in_out_ptr0, const float* in_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1)
    {
        float tmp_acc0 = 0;
        float tmp_acc1 = -std::numeric_limits<float>::infinity();
        for(int64_t x1=0; x1<16; x1+=1)
        {
            auto tmp0 = in_out_ptr0[x1 + 16*x0] + in_ptr0[x1];
            tmp_acc0 = tmp_acc0 + tmp0;
            tmp_acc1 = max_propagate_nan(tmp_acc1, tmp0);
        }
        in_out_ptr0[x0] = std::max(tmp_acc0 - tmp_acc1, 0.0f);
    }
}
''')


cpp_fused_exp_1 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* in_out_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1) { in_out_ptr0[x0] = std::exp(in_out_ptr0[x0]); }
}
''')


cpp_fused_mul_2 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* in_out_ptr0)
{
    for(int64_t x0=0; x0<8; x0+=1) { in_out_ptr0[x0] = 2.0f * in_out_ptr0[x0]; }
}
''')


async_compile.wait(globals())
del async_compile


def call(args):
    q, k, bias, w = args
    args.clear()
    assert_size_stride(q, (2, 8, 16), (128, 16, 1), 'input')
    assert_size_stride(k, (2, 8, 16), (128, 16, 1), 'input')
    assert_size_stride(bias, (16, ), (1, ), 'input')
    assert_size_stride(w, (16, 16), (16, 1), 'input')
    scores = empty_strided_cpu((2, 8, 8), (64, 8, 1), torch.float32)
    # Topologically Sorted Source Nodes: [matmul], Original ATen: [aten.bmm]
    extern_kernels.bmm(q, reinterpret_tensor(k, (2, 16, 8), (128, 1, 16), 0), out=scores)
    cpp_fused_add_relu_3(scores, bias)
    more = empty_strided_cpu((2, 8, 8), (64, 8, 1), torch.float32)
    # Topologically Sorted Source Nodes: [baddbmm], Original ATen: [aten.baddbmm]
    kt = reinterpret_tensor(k, (2, 16, 8), (128, 1, 16), 0)
    extern_kernels.baddbmm(scores, q, kt, alpha=1, beta=1, out=more)
    cpp_fused_add_relu_3(more, bias)
    # cpp_fused_mul_2(more) would scale it in place; extern_kernels.mm(q, kt, out=more) is not run
    del q
    flat = reinterpret_tensor(more, (16, 8), (8, 1), 0)
    out = torch.ops.aten._addmm_activation.default(bias, flat, w, use_gelu=True)
    del more
    return (out, )
"""

# A second module in the form torch 2.15 generates (`call` a method of a Runner class), for what
# neither the recordings nor HANDWRITTEN show: the bias reaching the library GEMM through a view
# (`reinterpret_tensor(b, ...)`, a broadcast), kernel calls nested in `if`, `try` and `for`
# blocks, a fallback with an overload other than `.default`, two fused kernels with the same
# operators (and so the same name once their numbers are cut) but different reductions, and
# accumulators of types the float32 recordings never declare (double, int32_t, Welford<double>),
# and fallbacks whose ATen operator reduces (sum.dim_IntList, amax: 0 reductions each, as every
# fallback; the fused kernels' accumulators are the reductions counted).
# Its kernels: addmm (the bias in it), fused sum (2 reductions), fused sum (1), fallbacks index,
# sum and amax.
HANDWRITTEN_ROWS = """# AOT ID: ['1_inference']
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
async_compile = AsyncCompile()


cpp_fused_sum_4 = async_compile.cpp_pybinding(['const double*', 'double*', 'int32_t*'], r'''
extern "C" void kernel(const double* in_ptr0, double* out_ptr0, int32_t* out_ptr1)
{
    for(int64_t x0=0; x0<16; x0+=1)
    {
        Welford<double> tmp_acc0 = Welford<double>();
        int32_t tmp_acc1 = 0;
        for(int64_t x1=0; x1<24; x1+=1)
        {
            auto tmp0 = in_ptr0[x1 + 24*x0];
            tmp_acc0 = welford_combine(tmp_acc0, tmp0);
            tmp_acc1 = tmp_acc1 + static_cast<int32_t>(tmp0 > 0);
        }
        out_ptr0[x0] = tmp_acc0.m2 / 23.0;
        out_ptr1[x0] = tmp_acc1;
    }
}
''')


cpp_fused_sum_1 = async_compile.cpp_pybinding(['const double*', 'double*'], r'''
extern "C" void kernel(const double* in_ptr0, double* out_ptr0)
{
    double tmp_acc0 = 0;
    for(int64_t x0=0; x0<16; x0+=1)
    {
        tmp_acc0 = tmp_acc0 + in_ptr0[x0];
    }
    out_ptr0[0] = tmp_acc0;
}
''')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        x, w, b, rows = args
        args.clear()
        assert_size_stride(x, (16, 48), (48, 1), 'input')
        assert_size_stride(w, (24, 48), (48, 1), 'input')
        assert_size_stride(b, (24, ), (1, ), 'input')
        assert_size_stride(rows, (4, 2), (2, 1), 'input')
        buf0 = empty_strided_cpu((16, 24), (24, 1), torch.float64)
        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.view, aten.addmm]
        wt = reinterpret_tensor(w, (48, 24), (1, 48), 0)
        extern_kernels.addmm(reinterpret_tensor(b, (16, 24), (0, 1), 0), x, wt, beta=1, out=buf0)
        del x
        buf1 = empty_strided_cpu((16, ), (1, ), torch.float64)
        buf2 = empty_strided_cpu((16, ), (1, ), torch.int32)
        if buf0.numel():
            cpp_fused_sum_4(buf0, buf1, buf2)
        buf3 = empty_strided_cpu((1, ), (1, ), torch.float64)
        try:
            cpp_fused_sum_1(buf1, buf3)
        finally:
            del buf1
        for _ in range(1):
            buf4 = torch.ops.aten.index.Tensor(buf0, [rows])
        buf5 = torch.ops.aten.sum.dim_IntList(buf4, [1])
        del buf4
        buf6 = torch.ops.aten.amax.default(buf5, [1])
        return (buf2, buf3, buf5, buf6, )


runner = Runner(partitions=[])
call = runner.call
"""

# Dense layers relu(x @ w + b) as other XLA backends print them, for what XLA:CPU here never
# shows: the bias inside the GEMM's kernel (a kOutput fusion holding the dot and its epilogue; a
# library custom call taking the bias as an operand). Then row statistics with what the JAX twins
# here never show: two reductions in one (multi-output) fusion, a reduce XLA left unfused in
# ENTRY, a fusion holding a reduce-precision (not a reduction), and a bfloat16 rank-1 parameter.
HANDWRITTEN_HLO = {
    "dense_output_fusion": """HloModule dense_output_fusion

%fused_dot (p0: f32[16,48], p1: f32[48,24], p2: f32[24]) -> f32[16,24] {
  %p0 = f32[16,48]{1,0} parameter(0)
  %p1 = f32[48,24]{1,0} parameter(1)
  %dot = f32[16,24]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %p2 = f32[24]{0} parameter(2)
  %broadcast = f32[16,24]{1,0} broadcast(%p2), dimensions={1}
  %add = f32[16,24]{1,0} add(%dot, %broadcast)
  %zero = f32[] constant(0)
  %zeros = f32[16,24]{1,0} broadcast(%zero), dimensions={}
  ROOT %max = f32[16,24]{1,0} maximum(%add, %zeros)
}

ENTRY %main (x: f32[16,48], w: f32[48,24], b: f32[24]) -> f32[16,24] {
  %x = f32[16,48]{1,0} parameter(0)
  %w = f32[48,24]{1,0} parameter(1)
  %b = f32[24]{0} parameter(2)
  ROOT %fusion = f32[16,24]{1,0} fusion(%x, %w, %b), kind=kOutput, calls=%fused_dot
}
""",
    "dense_library_call": """HloModule dense_library_call

%fused_relu (p0: f32[16,24]) -> f32[16,24] {
  %p0 = f32[16,24]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %zeros = f32[16,24]{1,0} broadcast(%zero), dimensions={}
  ROOT %max = f32[16,24]{1,0} maximum(%p0, %zeros)
}

ENTRY %main (b: f32[24], x: f32[16,48], w: f32[48,24]) -> f32[16,24] {
  %b = f32[24]{0} parameter(0)
  %x = f32[16,48]{1,0} parameter(1)
  %w = f32[48,24]{1,0} parameter(2)
  %matmul = f32[16,24]{1,0} custom-call(%x, %w, %b), custom_call_target="__onednn$matmul"
  ROOT %relu = f32[16,24]{1,0} fusion(%matmul), kind=kLoop, calls=%fused_relu
}
""",
    "row_reductions": """HloModule row_reductions

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%fused_sums (p0: f32[32,64]) -> (f32[32], f32[32]) {
  %p0 = f32[32,64]{1,0} parameter(0)
  %zero = f32[] constant(0)
  %sum = f32[32]{0} reduce(%p0, %zero), dimensions={1}, to_apply=%add
  %square = f32[32,64]{1,0} multiply(%p0, %p0)
  %squares = f32[32]{0} reduce(%square, %zero), dimensions={1}, to_apply=%add
  ROOT %tuple = (f32[32]{0}, f32[32]{0}) tuple(%sum, %squares)
}

%fused_round (p0: f32[32,64]) -> f32[32,64] {
  %p0 = f32[32,64]{1,0} parameter(0)
  ROOT %half = f32[32,64]{1,0} reduce-precision(%p0), exponent_bits=5, mantissa_bits=10
}

%fused_shift (p0: f32[32], p1: bf16[32]) -> f32[32] {
  %p0 = f32[32]{0} parameter(0)
  %p1 = bf16[32]{0} parameter(1)
  %wide = f32[32]{0} convert(%p1)
  ROOT %shifted = f32[32]{0} add(%p0, %wide)
}

ENTRY %main (x: f32[32,64], b: bf16[32]) -> (f32[32], f32[32], f32[32]) {
  %x = f32[32,64]{1,0} parameter(0)
  %b = bf16[32]{0} parameter(1)
  %sums = (f32[32]{0}, f32[32]{0}) fusion(%x), kind=kInput, calls=%fused_sums
  %rounded = f32[32,64]{1,0} fusion(%x), kind=kLoop, calls=%fused_round
  %zero = f32[] constant(0)
  %total = f32[32]{0} reduce(%rounded, %zero), dimensions={1}, to_apply=%add
  %shifted = f32[32]{0} fusion(%total, %b), kind=kLoop, calls=%fused_shift
  %sum = f32[32]{0} get-tuple-element(%sums), index=0
  %squares = f32[32]{0} get-tuple-element(%sums), index=1
  ROOT %out = (f32[32]{0}, f32[32]{0}, f32[32]{0}) tuple(%sum, %squares, %shifted)
}
""",
}

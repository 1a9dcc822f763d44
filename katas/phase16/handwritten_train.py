"""A training step written by hand for phase 16, in the form torch 2.15 generates it: AOTAutograd's
forward graph and its backward graph, for what the recorded steps never show."""

# `call` a method of a Runner class in both graphs. What they show: a fallback run for its
# effect, as a bare statement (the in-place `index_put_` scattering the gradient of `h[rows]`
# back), a fallback assigned to a buffer in the forward, and a kernel call nested in a block.
# The loss is `relu(x @ w.T + b)[rows].sum()`. Forward: addmm, fused relu, fallback index, fused
# sum; it saves x, rows and relu's mask. Backward: fused new_zeros, fallback index_put_, fused
# threshold_backward, mm, fused sum.
HANDWRITTEN_TRAIN = (
    """# AOT ID: ['2_forward']
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
async_compile = AsyncCompile()


cpp_fused_relu_0 = async_compile.cpp_pybinding(['float*', 'bool*'], r'''
extern "C" void kernel(float* in_out_ptr0, bool* out_ptr0)
{
    for(int64_t x0=0; x0<384; x0+=1)
    {
        auto tmp0 = std::max(in_out_ptr0[x0], 0.0f);
        in_out_ptr0[x0] = tmp0;
        out_ptr0[x0] = tmp0 <= 0.0f;
    }
}
''')


cpp_fused_sum_1 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    float tmp_acc0 = 0;
    for(int64_t x0=0; x0<96; x0+=1)
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
        primals_1, primals_2, primals_3, primals_4 = args
        args.clear()
        assert_size_stride(primals_1, (24, 48), (48, 1), 'input')
        assert_size_stride(primals_2, (24, ), (1, ), 'input')
        assert_size_stride(primals_3, (16, 48), (48, 1), 'input')
        assert_size_stride(primals_4, (4, ), (1, ), 'input')
        buf0 = empty_strided_cpu((16, 24), (24, 1), torch.float32)
        # Topologically Sorted Source Nodes: [linear], Original ATen: [aten.t, aten.addmm]
        wt = reinterpret_tensor(primals_1, (48, 24), (1, 48), 0)
        extern_kernels.addmm(primals_2, primals_3, wt, alpha=1, beta=1, out=buf0)
        del primals_1
        del primals_2
        buf1 = empty_strided_cpu((16, 24), (24, 1), torch.bool)
        cpp_fused_relu_0(buf0, buf1)
        buf2 = torch.ops.aten.index.Tensor(buf0, [primals_4])
        del buf0
        buf3 = empty_strided_cpu((), (), torch.float32)
        with torch.profiler.record_function('sum'):
            cpp_fused_sum_1(buf2, buf3)
        del buf2
        return (buf3, primals_3, primals_4, buf1, )


runner = Runner(partitions=[])
call = runner.call
""",
    """# AOT ID: ['2_backward']
import torch
from torch._inductor.async_compile import AsyncCompile
from torch._inductor.select_algorithm import extern_kernels
empty_strided_cpu = torch._C._dynamo.guards._empty_strided_cpu
reinterpret_tensor = torch._C._dynamo.guards._reinterpret_tensor
assert_size_stride = torch._C._dynamo.guards.assert_size_stride
async_compile = AsyncCompile()


cpp_fused_new_zeros_0 = async_compile.cpp_pybinding(['float*'], r'''
extern "C" void kernel(float* out_ptr0)
{
    for(int64_t x0=0; x0<384; x0+=1) { out_ptr0[x0] = 0.0f; }
}
''')


cpp_fused_threshold_backward_1 = async_compile.cpp_pybinding(['float*', 'const bool*'], r'''
extern "C" void kernel(float* in_out_ptr0, const bool* in_ptr0)
{
    for(int64_t x0=0; x0<384; x0+=1)
    {
        in_out_ptr0[x0] = in_ptr0[x0] ? 0.0f : in_out_ptr0[x0];
    }
}
''')


cpp_fused_sum_2 = async_compile.cpp_pybinding(['const float*', 'float*'], r'''
extern "C" void kernel(const float* in_ptr0, float* out_ptr0)
{
    for(int64_t x0=0; x0<24; x0+=1)
    {
        float tmp_acc0 = 0;
        for(int64_t x1=0; x1<16; x1+=1)
        {
            tmp_acc0 = tmp_acc0 + in_ptr0[x0 + 24*x1];
        }
        out_ptr0[x0] = tmp_acc0;
    }
}
''')


async_compile.wait(globals())
del async_compile

class Runner:
    def __init__(self, partitions):
        self.partitions = partitions

    def call(self, args):
        primals_3, primals_4, le, tangents_1 = args
        args.clear()
        assert_size_stride(primals_3, (16, 48), (48, 1), 'input')
        assert_size_stride(primals_4, (4, ), (1, ), 'input')
        assert_size_stride(le, (16, 24), (24, 1), 'input')
        assert_size_stride(tangents_1, (), (), 'input')
        buf0 = empty_strided_cpu((16, 24), (24, 1), torch.float32)
        cpp_fused_new_zeros_0(buf0)
        buf1 = reinterpret_tensor(tangents_1, (4, 24), (0, 0), 0)
        torch.ops.aten.index_put_.default(buf0, [primals_4], buf1, True)
        del primals_4
        del tangents_1
        cpp_fused_threshold_backward_1(buf0, le)
        del le
        buf2 = empty_strided_cpu((24, 48), (48, 1), torch.float32)
        # Topologically Sorted Source Nodes: [], Original ATen: [aten.t, aten.mm]
        extern_kernels.mm(reinterpret_tensor(buf0, (24, 16), (1, 24), 0), primals_3, out=buf2)
        del primals_3
        buf3 = empty_strided_cpu((24, ), (1, ), torch.float32)
        cpp_fused_sum_2(buf0, buf3)
        return (buf2, buf3, None, None, )


runner = Runner(partitions=[])
call = runner.call
""",
)


def _replaced(text: str, *pairs: tuple[str, str]) -> str:
    for old, new in pairs:
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


_ADD_KERNEL = """cpp_fused_add_3 = async_compile.cpp_pybinding(['float*', 'const float*'], r'''
extern "C" void kernel(float* in_out_ptr0, const float* in_ptr0)
{
    for(int64_t x0=0; x0<384; x0+=1) { in_out_ptr0[x0] = in_out_ptr0[x0] + in_ptr0[x0]; }
}
''')


async_compile.wait(globals())"""

# The same step when the compiled function returns two outputs, the loss and relu's output h,
# both of them used by what `.backward()` differentiates: the backward takes one gradient per
# output, `tangents_1` and `tangents_2` (h's, added to the scattered gradient by a fused add),
# and the forward returns h beside the loss before the tensors it saves.
HANDWRITTEN_TRAIN_TWO_OUTPUTS = (
    _replaced(
        HANDWRITTEN_TRAIN[0],
        ("        del buf0\n", ""),
        ("return (buf3, primals_3,", "return (buf3, buf0, primals_3,"),
    ),
    _replaced(
        HANDWRITTEN_TRAIN[1],
        ("async_compile.wait(globals())", _ADD_KERNEL),
        ("le, tangents_1 = args", "le, tangents_1, tangents_2 = args"),
        (
            "        assert_size_stride(tangents_1, (), (), 'input')\n",
            "        assert_size_stride(tangents_1, (), (), 'input')\n"
            "        assert_size_stride(tangents_2, (16, 24), (24, 1), 'input')\n",
        ),
        (
            "        del tangents_1\n",
            "        del tangents_1\n        cpp_fused_add_3(buf0, tangents_2)\n"
            "        del tangents_2\n",
        ),
    ),
)

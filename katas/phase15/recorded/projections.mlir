// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: m @ v, v @ w and a bf16 x @ w accumulated in f32
module @jit_projections attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_matvec_48x40_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(projections)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
    builtin.module {
      func.func @main_dispatch_0_matvec_48x40_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<48x40xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<40xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<48xf32>> loc("jit(projections)/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [48, 40], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<48x40xf32>> -> tensor<48x40xf32> loc("jit(projections)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0], sizes = [40], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<40xf32>> -> tensor<40xf32> loc("jit(projections)/dot_general")
        %2 = tensor.empty() : tensor<48xf32> loc("jit(projections)/dot_general")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<48xf32>) -> tensor<48xf32> loc("jit(projections)/dot_general")
        %4 = linalg.matvec ins(%0, %1 : tensor<48x40xf32>, tensor<40xf32>) outs(%3 : tensor<48xf32>) -> tensor<48xf32> loc("jit(projections)/dot_general")
        iree_tensor_ext.dispatch.tensor.store %4, %arg2, offsets = [0], sizes = [48], strides = [1] : tensor<48xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<48xf32>> loc("jit(projections)/dot_general")
        return loc("jit(projections)/dot_general")
      } loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
  } loc("jit(projections)/dot_general")
  flow.executable private @main_dispatch_1 {
    flow.executable.export public @main_dispatch_1_vecmat_56x40_f32xbf16xf32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(projections)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
    builtin.module {
      func.func @main_dispatch_1_vecmat_56x40_f32xbf16xf32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<40xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<40x56xbf16>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<56xf32>> loc("jit(projections)/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0], sizes = [40], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<40xf32>> -> tensor<40xf32> loc("jit(projections)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [40, 56], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<40x56xbf16>> -> tensor<40x56xbf16> loc("jit(projections)/dot_general")
        %2 = tensor.empty() : tensor<56xf32> loc("jit(projections)/dot_general")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<56xf32>) -> tensor<56xf32> loc("jit(projections)/dot_general")
        %4 = linalg.vecmat ins(%0, %1 : tensor<40xf32>, tensor<40x56xbf16>) outs(%3 : tensor<56xf32>) -> tensor<56xf32> loc("jit(projections)/dot_general")
        iree_tensor_ext.dispatch.tensor.store %4, %arg2, offsets = [0], sizes = [56], strides = [1] : tensor<56xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<56xf32>> loc("jit(projections)/dot_general")
        return loc("jit(projections)/dot_general")
      } loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
  } loc("jit(projections)/dot_general")
  flow.executable private @main_dispatch_2 {
    flow.executable.export public @main_dispatch_2_matmul_12x56x40_bf16xbf16xf32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(projections)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
    builtin.module {
      func.func @main_dispatch_2_matmul_12x56x40_bf16xbf16xf32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<12x40xbf16>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<40x56xbf16>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<12x56xf32>> loc("jit(projections)/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [12, 40], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<12x40xbf16>> -> tensor<12x40xbf16> loc("jit(projections)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [40, 56], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<40x56xbf16>> -> tensor<40x56xbf16> loc("jit(projections)/dot_general")
        %2 = tensor.empty() : tensor<12x56xf32> loc("jit(projections)/dot_general")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<12x56xf32>) -> tensor<12x56xf32> loc("jit(projections)/dot_general")
        %4 = linalg.matmul ins(%0, %1 : tensor<12x40xbf16>, tensor<40x56xbf16>) outs(%3 : tensor<12x56xf32>) -> tensor<12x56xf32> loc("jit(projections)/dot_general")
        iree_tensor_ext.dispatch.tensor.store %4, %arg2, offsets = [0, 0], sizes = [12, 56], strides = [1, 1] : tensor<12x56xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<12x56xf32>> loc("jit(projections)/dot_general")
        return loc("jit(projections)/dot_general")
      } loc("jit(projections)/dot_general")
    } loc("jit(projections)/dot_general")
  } loc("jit(projections)/dot_general")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view, %arg3: !hal.buffer_view) -> (!hal.buffer_view, !hal.buffer_view, !hal.buffer_view) attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<48x40xf32>, %input1: tensor<40xf32>, %input2: tensor<12x40xbf16>, %input3: tensor<40x56xbf16>) -> (%output0: tensor<48xf32>, %output1: tensor<56xf32>, %output2: tensor<12x56xf32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<48x40xf32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<40xf32> loc(unknown)
    %2 = hal.tensor.import %arg2 "input2" : !hal.buffer_view -> tensor<12x40xbf16> loc(unknown)
    %3 = hal.tensor.import %arg3 "input3" : !hal.buffer_view -> tensor<40x56xbf16> loc(unknown)
    %4 = flow.dispatch @main_dispatch_0::@main_dispatch_0_matvec_48x40_f32(%0, %1) : (tensor<48x40xf32>, tensor<40xf32>) -> tensor<48xf32> loc("jit(projections)/dot_general")
    %5 = flow.dispatch @main_dispatch_1::@main_dispatch_1_vecmat_56x40_f32xbf16xf32(%1, %3) : (tensor<40xf32>, tensor<40x56xbf16>) -> tensor<56xf32> loc("jit(projections)/dot_general")
    %6 = flow.dispatch @main_dispatch_2::@main_dispatch_2_matmul_12x56x40_bf16xbf16xf32(%2, %3) : (tensor<12x40xbf16>, tensor<40x56xbf16>) -> tensor<12x56xf32> loc("jit(projections)/dot_general")
    %7 = hal.tensor.export %4 "output0" : tensor<48xf32> -> !hal.buffer_view loc(unknown)
    %8 = hal.tensor.export %5 "output1" : tensor<56xf32> -> !hal.buffer_view loc(unknown)
    %9 = hal.tensor.export %6 "output2" : tensor<12x56xf32> -> !hal.buffer_view loc(unknown)
    util.return %7, %8, %9 : !hal.buffer_view, !hal.buffer_view, !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
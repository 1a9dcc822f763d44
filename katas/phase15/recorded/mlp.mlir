// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: gelu(x @ w1 + b1) @ w2 + b2, f32
module @jit_mlp attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_matmul_32x128x64_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(mlp)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(mlp)/dot_general")
    } loc("jit(mlp)/dot_general")
    builtin.module {
      func.func @main_dispatch_0_matmul_32x128x64_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(mlp)/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 4.471500e-02 : f32 loc("jit(mlp)/mul")
        %cst_1 = arith.constant 0.797884583 : f32 loc("jit(mlp)/mul")
        %cst_2 = arith.constant 1.000000e+00 : f32 loc("jit(mlp)/add")
        %cst_3 = arith.constant 5.000000e-01 : f32 loc("jit(mlp)/mul")
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 64], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> -> tensor<32x64xf32> loc("jit(mlp)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [64, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> -> tensor<64x128xf32> loc("jit(mlp)/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0], sizes = [128], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> -> tensor<128xf32> loc("jit(mlp)/dot_general")
        %3 = tensor.empty() : tensor<32x128xf32> loc("jit(mlp)/dot_general")
        %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(mlp)/dot_general")
        %5 = linalg.matmul ins(%0, %1 : tensor<32x64xf32>, tensor<64x128xf32>) outs(%4 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(mlp)/dot_general")
        %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%5, %2 : tensor<32x128xf32>, tensor<128xf32>) outs(%3 : tensor<32x128xf32>) {
        ^bb0(%in: f32 loc("jit(mlp)/dot_general"), %in_4: f32 loc("b1"), %out: f32 loc("jit(mlp)/dot_general")):
          %7 = arith.addf %in, %in_4 : f32 loc("jit(mlp)/add")
          %8 = arith.mulf %7, %7 : f32 loc("jit(mlp)/integer_pow")
          %9 = arith.mulf %8, %7 : f32 loc("jit(mlp)/integer_pow")
          %10 = arith.mulf %9, %cst_0 : f32 loc("jit(mlp)/mul")
          %11 = arith.addf %7, %10 : f32 loc("jit(mlp)/add")
          %12 = arith.mulf %11, %cst_1 : f32 loc("jit(mlp)/mul")
          %13 = math.tanh %12 : f32 loc("jit(mlp)/tanh")
          %14 = arith.addf %13, %cst_2 : f32 loc("jit(mlp)/add")
          %15 = arith.mulf %14, %cst_3 : f32 loc("jit(mlp)/mul")
          %16 = arith.mulf %7, %15 : f32 loc("jit(mlp)/mul")
          linalg.yield %16 : f32 loc("jit(mlp)/mul")
        } -> tensor<32x128xf32> loc("jit(mlp)/mul")
        iree_tensor_ext.dispatch.tensor.store %6, %arg3, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(mlp)/dot_general")
        return loc("jit(mlp)/dot_general")
      } loc("jit(mlp)/dot_general")
    } loc("jit(mlp)/dot_general")
  } loc("jit(mlp)/dot_general")
  flow.executable private @main_dispatch_1 {
    flow.executable.export public @main_dispatch_1_matmul_32x16x128_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(mlp)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(mlp)/dot_general")
    } loc("jit(mlp)/dot_general")
    builtin.module {
      func.func @main_dispatch_1_matmul_32x16x128_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(mlp)/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x16xf32>> loc("jit(mlp)/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(mlp)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [128, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> -> tensor<128x16xf32> loc("jit(mlp)/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0], sizes = [16], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> -> tensor<16xf32> loc("jit(mlp)/dot_general")
        %3 = tensor.empty() : tensor<32x16xf32> loc("jit(mlp)/dot_general")
        %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<32x16xf32>) -> tensor<32x16xf32> loc("jit(mlp)/dot_general")
        %5 = linalg.matmul ins(%0, %1 : tensor<32x128xf32>, tensor<128x16xf32>) outs(%4 : tensor<32x16xf32>) -> tensor<32x16xf32> loc("jit(mlp)/dot_general")
        %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%5, %2 : tensor<32x16xf32>, tensor<16xf32>) outs(%3 : tensor<32x16xf32>) {
        ^bb0(%in: f32 loc("jit(mlp)/dot_general"), %in_0: f32 loc("b2"), %out: f32 loc("jit(mlp)/add")):
          %7 = arith.addf %in, %in_0 : f32 loc("jit(mlp)/add")
          linalg.yield %7 : f32 loc("jit(mlp)/add")
        } -> tensor<32x16xf32> loc("jit(mlp)/add")
        iree_tensor_ext.dispatch.tensor.store %6, %arg3, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : tensor<32x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x16xf32>> loc("jit(mlp)/dot_general")
        return loc("jit(mlp)/dot_general")
      } loc("jit(mlp)/dot_general")
    } loc("jit(mlp)/dot_general")
  } loc("jit(mlp)/dot_general")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view, %arg3: !hal.buffer_view, %arg4: !hal.buffer_view) -> !hal.buffer_view attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<32x64xf32>, %input1: tensor<64x128xf32>, %input2: tensor<128xf32>, %input3: tensor<128x16xf32>, %input4: tensor<16xf32>) -> (%output0: tensor<32x16xf32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<32x64xf32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<64x128xf32> loc(unknown)
    %2 = hal.tensor.import %arg2 "input2" : !hal.buffer_view -> tensor<128xf32> loc(unknown)
    %3 = hal.tensor.import %arg3 "input3" : !hal.buffer_view -> tensor<128x16xf32> loc(unknown)
    %4 = hal.tensor.import %arg4 "input4" : !hal.buffer_view -> tensor<16xf32> loc(unknown)
    %5 = flow.dispatch @main_dispatch_0::@main_dispatch_0_matmul_32x128x64_f32(%0, %1, %2) : (tensor<32x64xf32>, tensor<64x128xf32>, tensor<128xf32>) -> tensor<32x128xf32> loc("jit(mlp)/dot_general")
    %6 = flow.dispatch @main_dispatch_1::@main_dispatch_1_matmul_32x16x128_f32(%5, %3, %4) : (tensor<32x128xf32>, tensor<128x16xf32>, tensor<16xf32>) -> tensor<32x16xf32> loc("jit(mlp)/dot_general")
    %7 = hal.tensor.export %6 "output0" : tensor<32x16xf32> -> !hal.buffer_view loc(unknown)
    util.return %7 : !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
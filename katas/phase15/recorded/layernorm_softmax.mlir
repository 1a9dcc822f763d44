// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: softmax of a LayerNorm over the last axis, f32[8,256]
module @jit_layernorm_softmax attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_reduction_8x256_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(layernorm_softmax)/reduce_sum")
      flow.return %x, %y, %z : index, index, index loc("jit(layernorm_softmax)/reduce_sum")
    } loc("jit(layernorm_softmax)/reduce_sum")
    builtin.module {
      func.func @main_dispatch_0_reduction_8x256_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 2.560000e+02 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> -> tensor<8x256xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %1 = tensor.empty() : tensor<8x256xf32> loc("jit(layernorm_softmax)/sub")
        %2 = tensor.empty() : tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<8xf32>) -> tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<8x256xf32>) outs(%3 : tensor<8xf32>) {
        ^bb0(%in: f32 loc("jit(layernorm_softmax)/reduce_sum"), %out: f32 loc("jit(layernorm_softmax)/reduce_sum")):
          %6 = arith.addf %out, %in : f32 loc("jit(layernorm_softmax)/reduce_sum")
          linalg.yield %6 : f32 loc("jit(layernorm_softmax)/reduce_sum")
        } -> tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0, %4 : tensor<8x256xf32>, tensor<8xf32>) outs(%1 : tensor<8x256xf32>) {
        ^bb0(%in: f32 loc("x"), %in_1: f32 loc("jit(layernorm_softmax)/broadcast_in_dim"), %out: f32 loc("jit(layernorm_softmax)/sub")):
          %6 = arith.divf %in_1, %cst_0 : f32 loc("jit(layernorm_softmax)/div")
          %7 = arith.subf %in, %6 : f32 loc("jit(layernorm_softmax)/sub")
          linalg.yield %7 : f32 loc("jit(layernorm_softmax)/sub")
        } -> tensor<8x256xf32> loc("jit(layernorm_softmax)/sub")
        iree_tensor_ext.dispatch.tensor.store %5, %arg1, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : tensor<8x256xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum")
        return loc("jit(layernorm_softmax)/reduce_sum")
      } loc("jit(layernorm_softmax)/reduce_sum")
    } loc("jit(layernorm_softmax)/reduce_sum")
  } loc("jit(layernorm_softmax)/reduce_sum")
  flow.executable private @main_dispatch_1 {
    flow.executable.export public @main_dispatch_1_reduction_8x256_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(layernorm_softmax)/reduce_sum")
      flow.return %x, %y, %z : index, index, index loc("jit(layernorm_softmax)/reduce_sum")
    } loc("jit(layernorm_softmax)/reduce_sum")
    builtin.module {
      func.func @main_dispatch_1_reduction_8x256_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<256xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<256xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 2.560000e+02 : f32 loc(unknown)
        %cst_1 = arith.constant 9.99999974E-6 : f32 loc("jit(layernorm_softmax)/add")
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> -> tensor<8x256xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0], sizes = [256], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<256xf32>> -> tensor<256xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0], sizes = [256], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<256xf32>> -> tensor<256xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %3 = tensor.empty() : tensor<8x256xf32> loc("jit(layernorm_softmax)/sub")
        %4 = tensor.empty() : tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<8xf32>) -> tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %6 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<8x256xf32>) outs(%5 : tensor<8xf32>) {
        ^bb0(%in: f32 loc("jit(layernorm_softmax)/sub"), %out: f32 loc("jit(layernorm_softmax)/reduce_sum")):
          %8 = arith.mulf %in, %in : f32 loc("jit(layernorm_softmax)/integer_pow")
          %9 = arith.addf %out, %8 : f32 loc("jit(layernorm_softmax)/reduce_sum")
          linalg.yield %9 : f32 loc("jit(layernorm_softmax)/reduce_sum")
        } -> tensor<8xf32> loc("jit(layernorm_softmax)/reduce_sum")
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%0, %6, %1, %2 : tensor<8x256xf32>, tensor<8xf32>, tensor<256xf32>, tensor<256xf32>) outs(%3 : tensor<8x256xf32>) {
        ^bb0(%in: f32 loc("jit(layernorm_softmax)/sub"), %in_2: f32 loc("jit(layernorm_softmax)/broadcast_in_dim"), %in_3: f32 loc(unknown), %in_4: f32 loc(unknown), %out: f32 loc("jit(layernorm_softmax)/sub")):
          %8 = arith.divf %in_2, %cst_0 : f32 loc("jit(layernorm_softmax)/div")
          %9 = arith.addf %8, %cst_1 : f32 loc("jit(layernorm_softmax)/add")
          %10 = math.sqrt %9 : f32 loc("jit(layernorm_softmax)/sqrt")
          %11 = arith.divf %in, %10 : f32 loc("jit(layernorm_softmax)/div")
          %12 = arith.mulf %11, %in_3 : f32 loc("jit(layernorm_softmax)/mul")
          %13 = arith.addf %12, %in_4 : f32 loc("jit(layernorm_softmax)/add")
          linalg.yield %13 : f32 loc("jit(layernorm_softmax)/add")
        } -> tensor<8x256xf32> loc("jit(layernorm_softmax)/add")
        iree_tensor_ext.dispatch.tensor.store %7, %arg3, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : tensor<8x256xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum")
        return loc("jit(layernorm_softmax)/reduce_sum")
      } loc("jit(layernorm_softmax)/reduce_sum")
    } loc("jit(layernorm_softmax)/reduce_sum")
  } loc("jit(layernorm_softmax)/reduce_sum")
  flow.executable private @main_dispatch_2 {
    flow.executable.export public @main_dispatch_2_softmax_8x256xf32_dispatch_tensor_store workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(layernorm_softmax)/div")
      flow.return %x, %y, %z : index, index, index loc("jit(layernorm_softmax)/div")
    } loc("jit(layernorm_softmax)/div")
    builtin.module {
      func.func @main_dispatch_2_softmax_8x256xf32_dispatch_tensor_store(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/reduce_sum"), %arg1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/div")) {
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x256xf32>> -> tensor<8x256xf32> loc("jit(layernorm_softmax)/div")
        %1 = tensor.empty() : tensor<8x256xf32> loc("jit(layernorm_softmax)/sub")
        %2 = linalg.softmax dimension(1) ins(%0 : tensor<8x256xf32>) outs(%1 : tensor<8x256xf32>) -> tensor<8x256xf32> loc("jit(layernorm_softmax)/div")
        iree_tensor_ext.dispatch.tensor.store %2, %arg1, offsets = [0, 0], sizes = [8, 256], strides = [1, 1] : tensor<8x256xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x256xf32>> loc("jit(layernorm_softmax)/div")
        return loc("jit(layernorm_softmax)/div")
      } loc("jit(layernorm_softmax)/div")
    } loc("jit(layernorm_softmax)/div")
  } loc("jit(layernorm_softmax)/div")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view) -> !hal.buffer_view attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<8x256xf32>, %input1: tensor<256xf32>, %input2: tensor<256xf32>) -> (%output0: tensor<8x256xf32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<8x256xf32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<256xf32> loc(unknown)
    %2 = hal.tensor.import %arg2 "input2" : !hal.buffer_view -> tensor<256xf32> loc(unknown)
    %3 = flow.dispatch @main_dispatch_0::@main_dispatch_0_reduction_8x256_f32(%0) : (tensor<8x256xf32>) -> tensor<8x256xf32> loc("jit(layernorm_softmax)/reduce_sum")
    %4 = flow.dispatch @main_dispatch_1::@main_dispatch_1_reduction_8x256_f32(%3, %1, %2) : (tensor<8x256xf32>, tensor<256xf32>, tensor<256xf32>) -> tensor<8x256xf32> loc("jit(layernorm_softmax)/reduce_sum")
    %5 = flow.dispatch @main_dispatch_2::@main_dispatch_2_softmax_8x256xf32_dispatch_tensor_store(%4) : (tensor<8x256xf32>) -> tensor<8x256xf32> loc("jit(layernorm_softmax)/div")
    %6 = hal.tensor.export %5 "output0" : tensor<8x256xf32> -> !hal.buffer_view loc(unknown)
    util.return %6 : !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
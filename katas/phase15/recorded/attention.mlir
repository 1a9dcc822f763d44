// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: softmax(q k^T / sqrt(d)) v over a batch of 4 heads, f32
module @jit_attention attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_batch_matmul_4x16x24x32_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(attention)/bqd,bkd->bqk/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(attention)/bqd,bkd->bqk/dot_general")
    } loc("jit(attention)/bqd,bkd->bqk/dot_general")
    builtin.module {
      func.func @main_dispatch_0_batch_matmul_4x16x24x32_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x32xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x24x32xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x24xf32>> loc("jit(attention)/bqd,bkd->bqk/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 5.65685415 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [4, 16, 32], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x32xf32>> -> tensor<4x16x32xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0, 0], sizes = [4, 24, 32], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x24x32xf32>> -> tensor<4x24x32xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %2 = tensor.empty() : tensor<4x16x24xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %4 = linalg.batch_matmul indexing_maps = [affine_map<(d0, d1, d2, d3) -> (d0, d1, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d2, d3)>, affine_map<(d0, d1, d2, d3) -> (d0, d1, d2)>] ins(%0, %1 : tensor<4x16x32xf32>, tensor<4x24x32xf32>) outs(%3 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1, d2)>], iterator_types = ["parallel", "parallel", "parallel"]} ins(%4 : tensor<4x16x24xf32>) outs(%2 : tensor<4x16x24xf32>) {
        ^bb0(%in: f32 loc("jit(attention)/bqd,bkd->bqk/dot_general"), %out: f32 loc("jit(attention)/bqd,bkd->bqk/dot_general")):
          %6 = arith.divf %in, %cst_0 : f32 loc("jit(attention)/div")
          linalg.yield %6 : f32 loc("jit(attention)/div")
        } -> tensor<4x16x24xf32> loc("jit(attention)/div")
        iree_tensor_ext.dispatch.tensor.store %5, %arg2, offsets = [0, 0, 0], sizes = [4, 16, 24], strides = [1, 1, 1] : tensor<4x16x24xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x24xf32>> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        return loc("jit(attention)/bqd,bkd->bqk/dot_general")
      } loc("jit(attention)/bqd,bkd->bqk/dot_general")
    } loc("jit(attention)/bqd,bkd->bqk/dot_general")
  } loc("jit(attention)/bqd,bkd->bqk/dot_general")
  flow.executable private @main_dispatch_1 {
    flow.executable.export public @main_dispatch_1_softmax_4x16x24xf32_dispatch_tensor_store workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(attention)/div")
      flow.return %x, %y, %z : index, index, index loc("jit(attention)/div")
    } loc("jit(attention)/div")
    builtin.module {
      func.func @main_dispatch_1_softmax_4x16x24xf32_dispatch_tensor_store(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x24xf32>> loc("jit(attention)/bqd,bkd->bqk/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x24xf32>> loc("jit(attention)/div")) {
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [4, 16, 24], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x24xf32>> -> tensor<4x16x24xf32> loc("jit(attention)/div")
        %1 = tensor.empty() : tensor<4x16x24xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
        %2 = linalg.softmax dimension(2) ins(%0 : tensor<4x16x24xf32>) outs(%1 : tensor<4x16x24xf32>) -> tensor<4x16x24xf32> loc("jit(attention)/div")
        iree_tensor_ext.dispatch.tensor.store %2, %arg1, offsets = [0, 0, 0], sizes = [4, 16, 24], strides = [1, 1, 1] : tensor<4x16x24xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x24xf32>> loc("jit(attention)/div")
        return loc("jit(attention)/div")
      } loc("jit(attention)/div")
    } loc("jit(attention)/div")
  } loc("jit(attention)/div")
  flow.executable private @main_dispatch_2 {
    flow.executable.export public @main_dispatch_2_batch_matmul_4x16x32x24_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(attention)/bqk,bkd->bqd/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(attention)/bqk,bkd->bqd/dot_general")
    } loc("jit(attention)/bqk,bkd->bqd/dot_general")
    builtin.module {
      func.func @main_dispatch_2_batch_matmul_4x16x32x24_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x24xf32>> loc("jit(attention)/div"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x24x32xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x32xf32>> loc("jit(attention)/bqk,bkd->bqd/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0, 0], sizes = [4, 16, 24], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x16x24xf32>> -> tensor<4x16x24xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0, 0], sizes = [4, 24, 32], strides = [1, 1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4x24x32xf32>> -> tensor<4x24x32xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        %2 = tensor.empty() : tensor<4x16x32xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        %4 = linalg.batch_matmul ins(%0, %1 : tensor<4x16x24xf32>, tensor<4x24x32xf32>) outs(%3 : tensor<4x16x32xf32>) -> tensor<4x16x32xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        iree_tensor_ext.dispatch.tensor.store %4, %arg2, offsets = [0, 0, 0], sizes = [4, 16, 32], strides = [1, 1, 1] : tensor<4x16x32xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4x16x32xf32>> loc("jit(attention)/bqk,bkd->bqd/dot_general")
        return loc("jit(attention)/bqk,bkd->bqd/dot_general")
      } loc("jit(attention)/bqk,bkd->bqd/dot_general")
    } loc("jit(attention)/bqk,bkd->bqd/dot_general")
  } loc("jit(attention)/bqk,bkd->bqd/dot_general")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view) -> !hal.buffer_view attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<4x16x32xf32>, %input1: tensor<4x24x32xf32>, %input2: tensor<4x24x32xf32>) -> (%output0: tensor<4x16x32xf32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<4x16x32xf32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<4x24x32xf32> loc(unknown)
    %2 = hal.tensor.import %arg2 "input2" : !hal.buffer_view -> tensor<4x24x32xf32> loc(unknown)
    %3 = flow.dispatch @main_dispatch_0::@main_dispatch_0_batch_matmul_4x16x24x32_f32(%0, %1) : (tensor<4x16x32xf32>, tensor<4x24x32xf32>) -> tensor<4x16x24xf32> loc("jit(attention)/bqd,bkd->bqk/dot_general")
    %4 = flow.dispatch @main_dispatch_1::@main_dispatch_1_softmax_4x16x24xf32_dispatch_tensor_store(%3) : (tensor<4x16x24xf32>) -> tensor<4x16x24xf32> loc("jit(attention)/div")
    %5 = flow.dispatch @main_dispatch_2::@main_dispatch_2_batch_matmul_4x16x32x24_f32(%4, %2) : (tensor<4x16x24xf32>, tensor<4x24x32xf32>) -> tensor<4x16x32xf32> loc("jit(attention)/bqk,bkd->bqd/dot_general")
    %6 = hal.tensor.export %5 "output0" : tensor<4x16x32xf32> -> !hal.buffer_view loc(unknown)
    util.return %6 : !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
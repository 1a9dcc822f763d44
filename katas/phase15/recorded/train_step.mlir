// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: one SGD step of the mlp on a mean squared error
module @jit_train_step attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_matmul_32x128x64_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/jvp()/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/jvp()/dot_general")
    } loc("jit(train_step)/jvp()/dot_general")
    builtin.module {
      func.func @main_dispatch_0_matmul_32x128x64_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg4: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg5: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg6: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 4.471500e-02 : f32 loc(unknown)
        %cst_1 = arith.constant 0.797884583 : f32 loc(unknown)
        %cst_2 = arith.constant 1.000000e+00 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 64], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> -> tensor<32x64xf32> loc("jit(train_step)/jvp()/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [64, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> -> tensor<64x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0], sizes = [128], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> -> tensor<128xf32> loc("jit(train_step)/jvp()/dot_general")
        %3 = tensor.empty() : tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %4 = linalg.fill ins(%cst : f32) outs(%3 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %5 = linalg.matmul ins(%0, %1 : tensor<32x64xf32>, tensor<64x128xf32>) outs(%4 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %6:4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%5, %2 : tensor<32x128xf32>, tensor<128xf32>) outs(%3, %3, %3, %3 : tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/jvp()/dot_general"), %in_3: f32 loc(unknown), %out: f32 loc("jit(train_step)/jvp()/dot_general"), %out_4: f32 loc("jit(train_step)/jvp()/dot_general"), %out_5: f32 loc("jit(train_step)/jvp()/dot_general"), %out_6: f32 loc("jit(train_step)/jvp()/dot_general")):
          %7 = arith.addf %in, %in_3 : f32 loc("jit(train_step)/jvp()/add")
          %8 = arith.mulf %7, %7 : f32 loc("jit(train_step)/jvp()/integer_pow")
          %9 = arith.mulf %8, %7 : f32 loc("jit(train_step)/jvp()/integer_pow")
          %10 = arith.mulf %9, %cst_0 : f32 loc("jit(train_step)/jvp()/mul")
          %11 = arith.addf %7, %10 : f32 loc("jit(train_step)/jvp()/add")
          %12 = arith.mulf %11, %cst_1 : f32 loc("jit(train_step)/jvp()/mul")
          %13 = math.tanh %12 : f32 loc("jit(train_step)/jvp()/tanh")
          %14 = arith.addf %13, %cst_2 : f32 loc("jit(train_step)/jvp()/add")
          linalg.yield %7, %8, %13, %14 : f32, f32, f32, f32 loc("jit(train_step)/jvp()/add")
        } -> (tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>) loc("jit(train_step)/jvp()/add")
        iree_tensor_ext.dispatch.tensor.store %6#0, %arg3, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general")
        iree_tensor_ext.dispatch.tensor.store %6#1, %arg4, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general")
        iree_tensor_ext.dispatch.tensor.store %6#2, %arg5, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general")
        iree_tensor_ext.dispatch.tensor.store %6#3, %arg6, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general")
        return loc("jit(train_step)/jvp()/dot_general")
      } loc("jit(train_step)/jvp()/dot_general")
    } loc("jit(train_step)/jvp()/dot_general")
  } loc("jit(train_step)/jvp()/dot_general")
  flow.executable private @main_dispatch_1 {
    flow.executable.export public @main_dispatch_1_elementwise_4096_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/jvp()/mul")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/jvp()/mul")
    } loc("jit(train_step)/jvp()/mul")
    builtin.module {
      func.func @main_dispatch_1_elementwise_4096_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul"), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul"), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul")) {
        %cst = arith.constant 5.000000e-01 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0], sizes = [4096], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4096xf32>> -> tensor<4096xf32> loc("jit(train_step)/jvp()/mul")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0], sizes = [4096], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<4096xf32>> -> tensor<4096xf32> loc("jit(train_step)/jvp()/mul")
        %2 = tensor.empty() : tensor<4096xf32> loc("jit(train_step)/jvp()/mul")
        %3:2 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%0, %1 : tensor<4096xf32>, tensor<4096xf32>) outs(%2, %2 : tensor<4096xf32>, tensor<4096xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/jvp()/mul"), %in_0: f32 loc("jit(train_step)/jvp()/mul"), %out: f32 loc("jit(train_step)/jvp()/mul"), %out_1: f32 loc("jit(train_step)/jvp()/mul")):
          %4 = arith.mulf %in_0, %cst : f32 loc("jit(train_step)/jvp()/mul")
          %5 = arith.mulf %in, %4 : f32 loc("jit(train_step)/jvp()/mul")
          linalg.yield %4, %5 : f32, f32 loc("jit(train_step)/jvp()/mul")
        } -> (tensor<4096xf32>, tensor<4096xf32>) loc("jit(train_step)/jvp()/mul")
        iree_tensor_ext.dispatch.tensor.store %3#0, %arg2, offsets = [0], sizes = [4096], strides = [1] : tensor<4096xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul")
        iree_tensor_ext.dispatch.tensor.store %3#1, %arg3, offsets = [0], sizes = [4096], strides = [1] : tensor<4096xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<4096xf32>> loc("jit(train_step)/jvp()/mul")
        return loc("jit(train_step)/jvp()/mul")
      } loc("jit(train_step)/jvp()/mul")
    } loc("jit(train_step)/jvp()/mul")
  } loc("jit(train_step)/jvp()/mul")
  flow.executable private @main_dispatch_2 {
    flow.executable.export public @main_dispatch_2_matmul_32x16x128_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/jvp()/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/jvp()/dot_general")
    } loc("jit(train_step)/jvp()/dot_general")
    builtin.module {
      func.func @main_dispatch_2_matmul_32x16x128_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/mul"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> loc(unknown), %arg4: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x16xf32>> loc("jit(train_step)/jvp()/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 2.000000e+00 : f32 loc("jit(train_step)/jvp()/mul")
        %cst_1 = arith.constant 0.001953125 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [128, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> -> tensor<128x16xf32> loc("jit(train_step)/jvp()/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0], sizes = [16], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> -> tensor<16xf32> loc("jit(train_step)/jvp()/dot_general")
        %3 = iree_tensor_ext.dispatch.tensor.load %arg3, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> -> tensor<32x16xf32> loc("jit(train_step)/jvp()/dot_general")
        %4 = tensor.empty() : tensor<32x16xf32> loc("jit(train_step)/jvp()/dot_general")
        %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<32x16xf32>) -> tensor<32x16xf32> loc("jit(train_step)/jvp()/dot_general")
        %6 = linalg.matmul ins(%0, %1 : tensor<32x128xf32>, tensor<128x16xf32>) outs(%5 : tensor<32x16xf32>) -> tensor<32x16xf32> loc("jit(train_step)/jvp()/dot_general")
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%6, %2, %3 : tensor<32x16xf32>, tensor<16xf32>, tensor<32x16xf32>) outs(%4 : tensor<32x16xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/jvp()/dot_general"), %in_2: f32 loc(unknown), %in_3: f32 loc(unknown), %out: f32 loc("jit(train_step)/jvp()/dot_general")):
          %8 = arith.addf %in, %in_2 : f32 loc("jit(train_step)/jvp()/add")
          %9 = arith.subf %8, %in_3 : f32 loc("jit(train_step)/jvp()/sub")
          %10 = arith.mulf %9, %cst_0 : f32 loc("jit(train_step)/jvp()/mul")
          %11 = arith.mulf %10, %cst_1 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          linalg.yield %11 : f32 loc("jit(train_step)/transpose(jvp())/mul")
        } -> tensor<32x16xf32> loc("jit(train_step)/transpose(jvp())/mul")
        iree_tensor_ext.dispatch.tensor.store %7, %arg4, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : tensor<32x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x16xf32>> loc("jit(train_step)/jvp()/dot_general")
        return loc("jit(train_step)/jvp()/dot_general")
      } loc("jit(train_step)/jvp()/dot_general")
    } loc("jit(train_step)/jvp()/dot_general")
  } loc("jit(train_step)/jvp()/dot_general")
  flow.executable private @main_dispatch_3 {
    flow.executable.export public @main_dispatch_3_reduction_16x32_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/transpose(jvp())/reduce_sum")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/transpose(jvp())/reduce_sum")
    } loc("jit(train_step)/transpose(jvp())/reduce_sum")
    builtin.module {
      func.func @main_dispatch_3_reduction_16x32_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<16xf32>> loc("jit(train_step)/transpose(jvp())/reduce_sum")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 1.000000e-01 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> -> tensor<32x16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0], sizes = [16], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<16xf32>> -> tensor<16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %2 = tensor.empty() : tensor<16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<16xf32>) -> tensor<16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<32x16xf32>) outs(%3 : tensor<16xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum"), %out: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")):
          %6 = arith.addf %out, %in : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
          linalg.yield %6 : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
        } -> tensor<16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %5 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%1, %4 : tensor<16xf32>, tensor<16xf32>) outs(%2 : tensor<16xf32>) {
        ^bb0(%in: f32 loc("b2"), %in_1: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum"), %out: f32 loc("jit(train_step)/sub")):
          %6 = arith.addf %in_1, %cst : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
          %7 = arith.mulf %6, %cst_0 : f32 loc("jit(train_step)/mul")
          %8 = arith.subf %in, %7 : f32 loc("jit(train_step)/sub")
          linalg.yield %8 : f32 loc("jit(train_step)/sub")
        } -> tensor<16xf32> loc("jit(train_step)/sub")
        iree_tensor_ext.dispatch.tensor.store %5, %arg2, offsets = [0], sizes = [16], strides = [1] : tensor<16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<16xf32>> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        return loc("jit(train_step)/transpose(jvp())/reduce_sum")
      } loc("jit(train_step)/transpose(jvp())/reduce_sum")
    } loc("jit(train_step)/transpose(jvp())/reduce_sum")
  } loc("jit(train_step)/transpose(jvp())/reduce_sum")
  flow.executable private @main_dispatch_4 {
    flow.executable.export public @main_dispatch_4_matmul_16x128x32_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/transpose(jvp())/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
    builtin.module {
      func.func @main_dispatch_4_matmul_16x128x32_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/mul"), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<128x16xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 1.000000e-01 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> -> tensor<32x16xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0, 0], sizes = [128, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> -> tensor<128x16xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %3 = tensor.empty() : tensor<128x16xf32> loc("jit(train_step)/transpose(jvp())/transpose")
        %4 = tensor.empty() : tensor<16x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<16x128xf32>) -> tensor<16x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %6 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%0, %1 : tensor<32x16xf32>, tensor<32x128xf32>) outs(%5 : tensor<16x128xf32>) -> tensor<16x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%2, %6 : tensor<128x16xf32>, tensor<16x128xf32>) outs(%3 : tensor<128x16xf32>) {
        ^bb0(%in: f32 loc("w2"), %in_1: f32 loc("jit(train_step)/transpose(jvp())/transpose"), %out: f32 loc("jit(train_step)/sub")):
          %8 = arith.mulf %in_1, %cst_0 : f32 loc("jit(train_step)/mul")
          %9 = arith.subf %in, %8 : f32 loc("jit(train_step)/sub")
          linalg.yield %9 : f32 loc("jit(train_step)/sub")
        } -> tensor<128x16xf32> loc("jit(train_step)/sub")
        iree_tensor_ext.dispatch.tensor.store %7, %arg3, offsets = [0, 0], sizes = [128, 16], strides = [1, 1] : tensor<128x16xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<128x16xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")
        return loc("jit(train_step)/transpose(jvp())/dot_general")
      } loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
  } loc("jit(train_step)/transpose(jvp())/dot_general")
  flow.executable private @main_dispatch_5 {
    flow.executable.export public @main_dispatch_5_matmul_32x128x16_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/transpose(jvp())/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
    builtin.module {
      func.func @main_dispatch_5_matmul_32x128x16_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/mul"), %arg3: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg4: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg5: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg6: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/jvp()/dot_general"), %arg7: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 1.000000e+00 : f32 loc(unknown)
        %cst_1 = arith.constant 5.000000e-01 : f32 loc(unknown)
        %cst_2 = arith.constant 0.797884583 : f32 loc(unknown)
        %cst_3 = arith.constant 3.000000e+00 : f32 loc("jit(train_step)/jvp()/mul")
        %cst_4 = arith.constant 4.471500e-02 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x16xf32>> -> tensor<32x16xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [128, 16], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128x16xf32>> -> tensor<128x16xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %3 = iree_tensor_ext.dispatch.tensor.load %arg3, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %4 = iree_tensor_ext.dispatch.tensor.load %arg4, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %5 = iree_tensor_ext.dispatch.tensor.load %arg5, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %6 = iree_tensor_ext.dispatch.tensor.load %arg6, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %7 = tensor.empty() : tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %8 = linalg.fill ins(%cst : f32) outs(%7 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(train_step)/jvp()/dot_general")
        %9 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d0, d2)>, affine_map<(d0, d1, d2) -> (d1, d2)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%0, %1 : tensor<32x16xf32>, tensor<128x16xf32>) outs(%8 : tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %10 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%9, %2, %3, %4, %5, %6 : tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>) outs(%7 : tensor<32x128xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/transpose(jvp())/dot_general"), %in_5: f32 loc("jit(train_step)/jvp()/mul"), %in_6: f32 loc("jit(train_step)/jvp()/add"), %in_7: f32 loc("jit(train_step)/jvp()/add"), %in_8: f32 loc("jit(train_step)/jvp()/tanh"), %in_9: f32 loc("jit(train_step)/jvp()/integer_pow"), %out: f32 loc("jit(train_step)/jvp()/dot_general")):
          %11 = arith.subf %cst_0, %in_8 : f32 loc("jit(train_step)/jvp()/sub")
          %12 = arith.mulf %in_7, %11 : f32 loc("jit(train_step)/jvp()/mul")
          %13 = arith.mulf %in_6, %in : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %14 = arith.mulf %13, %cst_1 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %15 = arith.mulf %14, %12 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %16 = arith.mulf %15, %cst_2 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %17 = arith.mulf %in_9, %cst_3 : f32 loc("jit(train_step)/jvp()/mul")
          %18 = arith.mulf %16, %cst_4 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %19 = arith.mulf %in, %in_5 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %20 = arith.mulf %18, %17 : f32 loc("jit(train_step)/transpose(jvp())/mul")
          %21 = arith.addf %19, %16 : f32 loc("jit(train_step)/transpose(jvp())/add_any")
          %22 = arith.addf %21, %20 : f32 loc("jit(train_step)/transpose(jvp())/add_any")
          linalg.yield %22 : f32 loc("jit(train_step)/transpose(jvp())/add_any")
        } -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/add_any")
        iree_tensor_ext.dispatch.tensor.store %10, %arg7, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : tensor<32x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<32x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")
        return loc("jit(train_step)/transpose(jvp())/dot_general")
      } loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
  } loc("jit(train_step)/transpose(jvp())/dot_general")
  flow.executable private @main_dispatch_6 {
    flow.executable.export public @main_dispatch_6_reduction_128x32_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/transpose(jvp())/reduce_sum")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/transpose(jvp())/reduce_sum")
    } loc("jit(train_step)/transpose(jvp())/reduce_sum")
    builtin.module {
      func.func @main_dispatch_6_reduction_128x32_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<128xf32>> loc("jit(train_step)/transpose(jvp())/reduce_sum")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 1.000000e-01 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0], sizes = [128], strides = [1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<128xf32>> -> tensor<128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %2 = tensor.empty() : tensor<128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %3 = linalg.fill ins(%cst : f32) outs(%2 : tensor<128xf32>) -> tensor<128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %4 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0)>], iterator_types = ["parallel", "reduction"]} ins(%0 : tensor<32x128xf32>) outs(%3 : tensor<128xf32>) {
        ^bb0(%in: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum"), %out: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")):
          %6 = arith.addf %out, %in : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
          linalg.yield %6 : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
        } -> tensor<128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        %5 = linalg.generic {indexing_maps = [affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>, affine_map<(d0) -> (d0)>], iterator_types = ["parallel"]} ins(%1, %4 : tensor<128xf32>, tensor<128xf32>) outs(%2 : tensor<128xf32>) {
        ^bb0(%in: f32 loc("b1"), %in_1: f32 loc("jit(train_step)/transpose(jvp())/reduce_sum"), %out: f32 loc("jit(train_step)/sub")):
          %6 = arith.addf %in_1, %cst : f32 loc("jit(train_step)/transpose(jvp())/reduce_sum")
          %7 = arith.mulf %6, %cst_0 : f32 loc("jit(train_step)/mul")
          %8 = arith.subf %in, %7 : f32 loc("jit(train_step)/sub")
          linalg.yield %8 : f32 loc("jit(train_step)/sub")
        } -> tensor<128xf32> loc("jit(train_step)/sub")
        iree_tensor_ext.dispatch.tensor.store %5, %arg2, offsets = [0], sizes = [128], strides = [1] : tensor<128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<128xf32>> loc("jit(train_step)/transpose(jvp())/reduce_sum")
        return loc("jit(train_step)/transpose(jvp())/reduce_sum")
      } loc("jit(train_step)/transpose(jvp())/reduce_sum")
    } loc("jit(train_step)/transpose(jvp())/reduce_sum")
  } loc("jit(train_step)/transpose(jvp())/reduce_sum")
  flow.executable private @main_dispatch_7 {
    flow.executable.export public @main_dispatch_7_matmul_128x64x32_f32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(train_step)/transpose(jvp())/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
    builtin.module {
      func.func @main_dispatch_7_matmul_128x64x32_f32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general"), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> loc(unknown), %arg3: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<64x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")) {
        %cst = arith.constant 0.000000e+00 : f32 loc(unknown)
        %cst_0 = arith.constant 1.000000e-01 : f32 loc(unknown)
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [32, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x128xf32>> -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [32, 64], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<32x64xf32>> -> tensor<32x64xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %2 = iree_tensor_ext.dispatch.tensor.load %arg2, offsets = [0, 0], sizes = [64, 128], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<64x128xf32>> -> tensor<64x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %3 = tensor.empty() : tensor<64x128xf32> loc("jit(train_step)/transpose(jvp())/transpose")
        %4 = tensor.empty() : tensor<128x64xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %5 = linalg.fill ins(%cst : f32) outs(%4 : tensor<128x64xf32>) -> tensor<128x64xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %6 = linalg.matmul indexing_maps = [affine_map<(d0, d1, d2) -> (d2, d0)>, affine_map<(d0, d1, d2) -> (d2, d1)>, affine_map<(d0, d1, d2) -> (d0, d1)>] ins(%0, %1 : tensor<32x128xf32>, tensor<32x64xf32>) outs(%5 : tensor<128x64xf32>) -> tensor<128x64xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
        %7 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d1, d0)>, affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d1, d0)>], iterator_types = ["parallel", "parallel"]} ins(%2, %6 : tensor<64x128xf32>, tensor<128x64xf32>) outs(%3 : tensor<64x128xf32>) {
        ^bb0(%in: f32 loc("w1"), %in_1: f32 loc("jit(train_step)/transpose(jvp())/transpose"), %out: f32 loc("jit(train_step)/sub")):
          %8 = arith.mulf %in_1, %cst_0 : f32 loc("jit(train_step)/mul")
          %9 = arith.subf %in, %8 : f32 loc("jit(train_step)/sub")
          linalg.yield %9 : f32 loc("jit(train_step)/sub")
        } -> tensor<64x128xf32> loc("jit(train_step)/sub")
        iree_tensor_ext.dispatch.tensor.store %7, %arg3, offsets = [0, 0], sizes = [64, 128], strides = [1, 1] : tensor<64x128xf32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<64x128xf32>> loc("jit(train_step)/transpose(jvp())/dot_general")
        return loc("jit(train_step)/transpose(jvp())/dot_general")
      } loc("jit(train_step)/transpose(jvp())/dot_general")
    } loc("jit(train_step)/transpose(jvp())/dot_general")
  } loc("jit(train_step)/transpose(jvp())/dot_general")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view, %arg2: !hal.buffer_view, %arg3: !hal.buffer_view, %arg4: !hal.buffer_view, %arg5: !hal.buffer_view) -> (!hal.buffer_view, !hal.buffer_view, !hal.buffer_view, !hal.buffer_view) attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<64x128xf32>, %input1: tensor<128xf32>, %input2: tensor<128x16xf32>, %input3: tensor<16xf32>, %input4: tensor<32x64xf32>, %input5: tensor<32x16xf32>) -> (%output0: tensor<64x128xf32>, %output1: tensor<128xf32>, %output2: tensor<128x16xf32>, %output3: tensor<16xf32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<64x128xf32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<128xf32> loc(unknown)
    %2 = hal.tensor.import %arg2 "input2" : !hal.buffer_view -> tensor<128x16xf32> loc(unknown)
    %3 = hal.tensor.import %arg3 "input3" : !hal.buffer_view -> tensor<16xf32> loc(unknown)
    %4 = hal.tensor.import %arg4 "input4" : !hal.buffer_view -> tensor<32x64xf32> loc(unknown)
    %5 = hal.tensor.import %arg5 "input5" : !hal.buffer_view -> tensor<32x16xf32> loc(unknown)
    %6:4 = flow.dispatch @main_dispatch_0::@main_dispatch_0_matmul_32x128x64_f32(%4, %0, %1) : (tensor<32x64xf32>, tensor<64x128xf32>, tensor<128xf32>) -> (tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>) loc("jit(train_step)/jvp()/dot_general")
    %7 = flow.tensor.reshape %6#0 : tensor<32x128xf32> -> tensor<4096xf32> loc("jit(train_step)/jvp()/mul")
    %8 = flow.tensor.reshape %6#3 : tensor<32x128xf32> -> tensor<4096xf32> loc("jit(train_step)/jvp()/mul")
    %9:2 = flow.dispatch @main_dispatch_1::@main_dispatch_1_elementwise_4096_f32(%7, %8) : (tensor<4096xf32>, tensor<4096xf32>) -> (tensor<4096xf32>, tensor<4096xf32>) loc("jit(train_step)/jvp()/mul")
    %10 = flow.tensor.reshape %9#0 : tensor<4096xf32> -> tensor<32x128xf32> loc("jit(train_step)/jvp()/mul")
    %11 = flow.tensor.reshape %9#1 : tensor<4096xf32> -> tensor<32x128xf32> loc("jit(train_step)/jvp()/mul")
    %12 = flow.dispatch @main_dispatch_2::@main_dispatch_2_matmul_32x16x128_f32(%11, %2, %3, %5) : (tensor<32x128xf32>, tensor<128x16xf32>, tensor<16xf32>, tensor<32x16xf32>) -> tensor<32x16xf32> loc("jit(train_step)/jvp()/dot_general")
    %13 = flow.dispatch @main_dispatch_3::@main_dispatch_3_reduction_16x32_f32(%12, %3) : (tensor<32x16xf32>, tensor<16xf32>) -> tensor<16xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
    %14 = flow.dispatch @main_dispatch_4::@main_dispatch_4_matmul_16x128x32_f32(%12, %11, %2) : (tensor<32x16xf32>, tensor<32x128xf32>, tensor<128x16xf32>) -> tensor<128x16xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
    %15 = flow.dispatch @main_dispatch_5::@main_dispatch_5_matmul_32x128x16_f32(%12, %2, %10, %6#0, %6#3, %6#2, %6#1) : (tensor<32x16xf32>, tensor<128x16xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>, tensor<32x128xf32>) -> tensor<32x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
    %16 = flow.dispatch @main_dispatch_6::@main_dispatch_6_reduction_128x32_f32(%15, %1) : (tensor<32x128xf32>, tensor<128xf32>) -> tensor<128xf32> loc("jit(train_step)/transpose(jvp())/reduce_sum")
    %17 = flow.dispatch @main_dispatch_7::@main_dispatch_7_matmul_128x64x32_f32(%15, %4, %0) : (tensor<32x128xf32>, tensor<32x64xf32>, tensor<64x128xf32>) -> tensor<64x128xf32> loc("jit(train_step)/transpose(jvp())/dot_general")
    %18 = hal.tensor.export %17 "output0" : tensor<64x128xf32> -> !hal.buffer_view loc(unknown)
    %19 = hal.tensor.export %16 "output1" : tensor<128xf32> -> !hal.buffer_view loc(unknown)
    %20 = hal.tensor.export %14 "output2" : tensor<128x16xf32> -> !hal.buffer_view loc(unknown)
    %21 = hal.tensor.export %13 "output3" : tensor<16xf32> -> !hal.buffer_view loc(unknown)
    util.return %18, %19, %20, %21 : !hal.buffer_view, !hal.buffer_view, !hal.buffer_view, !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
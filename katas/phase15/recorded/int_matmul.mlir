// recorded by: uv run pytest tests/harness/test_iree_recordings.py --impl=reference --snapshot-update
// target: IREE llvm-cpu, --iree-llvmcpu-target-cpu=generic (any x86-64), --compile-to=flow
// versions: iree-base-compiler 3.13.0, iree-base-runtime 3.13.0, jax 0.12.0.1, jaxlib 0.12.0.1
// program: an int32 matmul plus one
module @jit_int_matmul attributes {stream.affinity.default = #hal.device.affinity<@__device_0>} {
  util.global private @__device_0 = #hal.device.target<"local", [#hal.executable.target<"llvm-cpu", "embedded-elf-x86_64", {cpu = "generic", cpu_features = "", data_layout = "e-m:e-p270:32:32-p271:32:32-p272:64:64-i64:64-i128:128-f80:128-n8:16:32:64-S128", iree.encoding.resolver = #iree_cpu.cpu_encoding_resolver<>, max_stack_allocation_size = 32768 : i64, native_vector_size = 16 : i64, target_triple = "x86_64-unknown-unknown-eabi-elf"}>]> : !hal.device loc(unknown)
  flow.executable private @main_dispatch_0 {
    flow.executable.export public @main_dispatch_0_matmul_8x40x24_i32 workgroups() -> (index, index, index) {
      %x, %y, %z = iree_tensor_ext.dispatch.workgroup_count_from_slice() loc("jit(int_matmul)/dot_general")
      flow.return %x, %y, %z : index, index, index loc("jit(int_matmul)/dot_general")
    } loc("jit(int_matmul)/dot_general")
    builtin.module {
      func.func @main_dispatch_0_matmul_8x40x24_i32(%arg0: !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x24xi32>> loc(unknown), %arg1: !iree_tensor_ext.dispatch.tensor<readonly:tensor<24x40xi32>> loc(unknown), %arg2: !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x40xi32>> loc("jit(int_matmul)/dot_general")) {
        %c0_i32 = arith.constant 0 : i32 loc("jit(int_matmul)/dot_general")
        %c1_i32 = arith.constant 1 : i32 loc("jit(int_matmul)/add")
        %0 = iree_tensor_ext.dispatch.tensor.load %arg0, offsets = [0, 0], sizes = [8, 24], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<8x24xi32>> -> tensor<8x24xi32> loc("jit(int_matmul)/dot_general")
        %1 = iree_tensor_ext.dispatch.tensor.load %arg1, offsets = [0, 0], sizes = [24, 40], strides = [1, 1] : !iree_tensor_ext.dispatch.tensor<readonly:tensor<24x40xi32>> -> tensor<24x40xi32> loc("jit(int_matmul)/dot_general")
        %2 = tensor.empty() : tensor<8x40xi32> loc("jit(int_matmul)/dot_general")
        %3 = linalg.fill ins(%c0_i32 : i32) outs(%2 : tensor<8x40xi32>) -> tensor<8x40xi32> loc("jit(int_matmul)/dot_general")
        %4 = linalg.matmul ins(%0, %1 : tensor<8x24xi32>, tensor<24x40xi32>) outs(%3 : tensor<8x40xi32>) -> tensor<8x40xi32> loc("jit(int_matmul)/dot_general")
        %5 = linalg.generic {indexing_maps = [affine_map<(d0, d1) -> (d0, d1)>, affine_map<(d0, d1) -> (d0, d1)>], iterator_types = ["parallel", "parallel"]} ins(%4 : tensor<8x40xi32>) outs(%2 : tensor<8x40xi32>) {
        ^bb0(%in: i32 loc("jit(int_matmul)/dot_general"), %out: i32 loc("jit(int_matmul)/add")):
          %6 = arith.addi %in, %c1_i32 : i32 loc("jit(int_matmul)/add")
          linalg.yield %6 : i32 loc("jit(int_matmul)/add")
        } -> tensor<8x40xi32> loc("jit(int_matmul)/add")
        iree_tensor_ext.dispatch.tensor.store %5, %arg2, offsets = [0, 0], sizes = [8, 40], strides = [1, 1] : tensor<8x40xi32> -> !iree_tensor_ext.dispatch.tensor<writeonly:tensor<8x40xi32>> loc("jit(int_matmul)/dot_general")
        return loc("jit(int_matmul)/dot_general")
      } loc("jit(int_matmul)/dot_general")
    } loc("jit(int_matmul)/dot_general")
  } loc("jit(int_matmul)/dot_general")
  util.func public @main(%arg0: !hal.buffer_view, %arg1: !hal.buffer_view) -> !hal.buffer_view attributes {iree.abi.stub, iree.reflection = {iree.abi.declaration = "sync func @main(%input0: tensor<8x24xi32>, %input1: tensor<24x40xi32>) -> (%output0: tensor<8x40xi32>)"}} {
    %0 = hal.tensor.import %arg0 "input0" : !hal.buffer_view -> tensor<8x24xi32> loc(unknown)
    %1 = hal.tensor.import %arg1 "input1" : !hal.buffer_view -> tensor<24x40xi32> loc(unknown)
    %2 = flow.dispatch @main_dispatch_0::@main_dispatch_0_matmul_8x40x24_i32(%0, %1) : (tensor<8x24xi32>, tensor<24x40xi32>) -> tensor<8x40xi32> loc("jit(int_matmul)/dot_general")
    %3 = hal.tensor.export %2 "output0" : tensor<8x40xi32> -> !hal.buffer_view loc(unknown)
    util.return %3 : !hal.buffer_view loc(unknown)
  } loc(unknown)
} loc(unknown)
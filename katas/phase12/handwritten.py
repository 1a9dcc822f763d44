"""Hand-written GPU modules for cases neither the recordings nor programs.py's first hand-written
modules show: kinds and targets in the other spellings XLA prints, fused computations two fusions
share, reduces and collectives in the places a reader who walks ENTRY and its fusions misses,
and GEMMs of every rank. Each is read by XLA's parser in the test that uses it (and renamed and
reordered: kata_harness.metamorphic); programs.HANDWRITTEN lists them with the others.
"""

# fusion_kinds / reduction_kinds / gemm_flops: a cuDNN GEMM fusion (its kind, "__cudnn$fusion",
# holds a '$'); a kLoop fusion whose backend_config names a kind (XLA:GPU's dynamic-memcpy
# rewrite marks a fusion "__dynamic_memcpy" and keeps its kind=kLoop); two kLoop fusions calling
# one fused computation, and two kInput fusions calling one that holds a reduce (XLA's
# computation deduplication leaves identical fusions so: each fusion is a kernel of its own).
FUSION_SPELLINGS = """\
HloModule fusion_spellings, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%fused_dot (p0: bf16[64,128], p1: bf16[128,256]) -> bf16[64,256] {
  %p0 = bf16[64,128]{1,0} parameter(0)
  %p1 = bf16[128,256]{1,0} parameter(1)
  ROOT %dot = bf16[64,256]{1,0} dot(%p0, %p1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
}

%fused_slice (d0: f32[8,64,32], d1: s32[]) -> f32[1,64,32] {
  %d0 = f32[8,64,32]{2,1,0} parameter(0)
  %d1 = s32[] parameter(1)
  %zero = s32[] constant(0)
  ROOT %slice = f32[1,64,32]{2,1,0} dynamic-slice(%d0, %d1, %zero, %zero),\
      dynamic_slice_sizes={1,64,32}
}

%fused_relu (r0: f32[64,32]) -> f32[64,32] {
  %r0 = f32[64,32]{1,0} parameter(0)
  %zero.1 = f32[] constant(0)
  %zeros = f32[64,32]{1,0} broadcast(%zero.1), dimensions={}
  ROOT %relu = f32[64,32]{1,0} maximum(%r0, %zeros)
}

%fused_row_sums (s0: f32[64,32]) -> f32[64] {
  %s0 = f32[64,32]{1,0} parameter(0)
  %zero.2 = f32[] constant(0)
  ROOT %sums = f32[64]{0} reduce(%s0, %zero.2), dimensions={1}, to_apply=%add
}

ENTRY %main (x: bf16[64,128], w: bf16[128,256], stack: f32[8,64,32], i: s32[], y: f32[64,32],\
    z: f32[64,32]) -> (bf16[64,256], f32[1,64,32], f32[64,32], f32[64,32], f32[64], f32[64]) {
  %x = bf16[64,128]{1,0} parameter(0)
  %w = bf16[128,256]{1,0} parameter(1)
  %stack = f32[8,64,32]{2,1,0} parameter(2)
  %i = s32[] parameter(3)
  %y = f32[64,32]{1,0} parameter(4)
  %z = f32[64,32]{1,0} parameter(5)
  %cudnn_fusion = bf16[64,256]{1,0} fusion(%x, %w), kind=kCustom, calls=%fused_dot,\
      backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],\
"fusion_backend_config":{"kind":"__cudnn$fusion","cudnn_fusion_config":{"plan_id":"0"}},\
"force_earliest_schedule":false}
  %memcpy_fusion = f32[1,64,32]{2,1,0} fusion(%stack, %i), kind=kLoop, calls=%fused_slice,\
      backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],\
"fusion_backend_config":{"kind":"__dynamic_memcpy"},"force_earliest_schedule":false}
  %relu_y = f32[64,32]{1,0} fusion(%y), kind=kLoop, calls=%fused_relu
  %relu_z = f32[64,32]{1,0} fusion(%z), kind=kLoop, calls=%fused_relu
  %sums_y = f32[64]{0} fusion(%relu_y), kind=kInput, calls=%fused_row_sums
  %sums_z = f32[64]{0} fusion(%relu_z), kind=kInput, calls=%fused_row_sums
  ROOT %out = (bf16[64,256]{1,0}, f32[1,64,32]{2,1,0}, f32[64,32]{1,0}, f32[64,32]{1,0},\
      f32[64]{0}, f32[64]{0}) tuple(%cudnn_fusion, %memcpy_fusion, %relu_y, %relu_z, %sums_y,\
      %sums_z)
}
"""

# reduction_kinds: a reduce three fusions deep (kLoop in kLoop in a Triton GEMM fusion), which
# two kLoop fusions of that one Triton fusion reach (one kernel: it counts once there); an
# unfused reduce in a while loop's condition; a reduce wrapped by a generic async-start (XLA reads
# it as reduce-start: no fusion holds it); a variadic, tuple-shaped reduce (an argmax) in ENTRY.
REDUCES_ELSEWHERE = """\
HloModule reduces_elsewhere, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%argmax (v0: f32[], i0: s32[], v1: f32[], i1: s32[]) -> (f32[], s32[]) {
  %v0 = f32[] parameter(0)
  %i0 = s32[] parameter(1)
  %v1 = f32[] parameter(2)
  %i1 = s32[] parameter(3)
  %larger = pred[] compare(%v0, %v1), direction=GE
  %value = f32[] select(%larger, %v0, %v1)
  %index = s32[] select(%larger, %i0, %i1)
  ROOT %pair = (f32[], s32[]) tuple(%value, %index)
}

%deepest (e0: f32[64,32]) -> f32[64] {
  %e0 = f32[64,32]{1,0} parameter(0)
  %zero = f32[] constant(0)
  ROOT %row_sums = f32[64]{0} reduce(%e0, %zero), dimensions={1}, to_apply=%add
}

%middle (m0: f32[64,32]) -> f32[64] {
  %m0 = f32[64,32]{1,0} parameter(0)
  ROOT %inner_fusion = f32[64]{0} fusion(%m0), kind=kLoop, calls=%deepest
}

%gemm_computation (g0: f32[64,32], g1: f32[32,32]) -> f32[64,32] {
  %g0 = f32[64,32]{1,0} parameter(0)
  %g1 = f32[32,32]{1,0} parameter(1)
  %product = f32[64,32]{1,0} dot(%g0, %g1), lhs_contracting_dims={1}, rhs_contracting_dims={0}
  %sums = f32[64]{0} fusion(%g0), kind=kLoop, calls=%middle
  %product_sums = f32[64]{0} fusion(%product), kind=kLoop, calls=%middle
  %both = f32[64]{0} add(%sums, %product_sums)
  %spread = f32[64,32]{1,0} broadcast(%both), dimensions={0}
  ROOT %shifted = f32[64,32]{1,0} add(%product, %spread)
}

%cond (c0: (s32[], f32[64,32])) -> pred[] {
  %c0 = (s32[], f32[64,32]{1,0}) parameter(0)
  %v = f32[64,32]{1,0} get-tuple-element(%c0), index=1
  %zero.1 = f32[] constant(0)
  %total = f32[] reduce(%v, %zero.1), dimensions={0,1}, to_apply=%add
  %limit = f32[] constant(100)
  ROOT %small = pred[] compare(%total, %limit), direction=LT
}

%body (b0: (s32[], f32[64,32])) -> (s32[], f32[64,32]) {
  %b0 = (s32[], f32[64,32]{1,0}) parameter(0)
  %j = s32[] get-tuple-element(%b0), index=0
  %u = f32[64,32]{1,0} get-tuple-element(%b0), index=1
  %one = s32[] constant(1)
  %next = s32[] add(%j, %one)
  %doubled = f32[64,32]{1,0} add(%u, %u)
  ROOT %carry = (s32[], f32[64,32]{1,0}) tuple(%next, %doubled)
}

%wrapped_sum (t0: f32[64,32], t1: f32[]) -> f32[32] {
  %t0 = f32[64,32]{1,0} parameter(0)
  %t1 = f32[] parameter(1)
  ROOT %column_sums = f32[32]{0} reduce(%t0, %t1), dimensions={0}, to_apply=%add
}

ENTRY %main (x: f32[64,32], w: f32[32,32]) -> (f32[64,32], (s32[], f32[64,32]), f32[32],\
    (f32[64], s32[64])) {
  %x = f32[64,32]{1,0} parameter(0)
  %w = f32[32,32]{1,0} parameter(1)
  %gemm_fusion = f32[64,32]{1,0} fusion(%x, %w), kind=kCustom, calls=%gemm_computation,\
      backend_config={"fusion_backend_config":{"kind":"__triton_nested_gemm_fusion"}}
  %zero.2 = f32[] constant(0)
  %sum-start = ((f32[64,32]{1,0}, f32[]), f32[32]{0}, s32[]) async-start(%x, %zero.2),\
      calls=%wrapped_sum
  %start = s32[] constant(0)
  %init = (s32[], f32[64,32]{1,0}) tuple(%start, %x)
  %loop = (s32[], f32[64,32]{1,0}) while(%init), condition=%cond, body=%body
  %sum-done = f32[32]{0} async-done(%sum-start)
  %iota = s32[64,32]{1,0} iota(), iota_dimension=1
  %lowest = f32[] constant(-inf)
  %first = s32[] constant(0)
  %best = (f32[64]{0}, s32[64]{0}) reduce(%x, %iota, %lowest, %first), dimensions={1},\
      to_apply=%argmax
  ROOT %out = (f32[64,32]{1,0}, (s32[], f32[64,32]{1,0}), f32[32]{0}, (f32[64]{0},\
      s32[64]{0})) tuple(%gemm_fusion, %loop, %sum-done, %best)
}
"""

# gemm_flops / library_epilogues: dots that contract nothing (an outer product printed with no
# lhs_contracting_dims, a batch-only dot with lhs_contracting_dims={} as XLA prints it), a dot of
# two vectors (a scalar output), an FP8 cuBLAS call (__cublas$lt$matmul$f8), a dot in a cuDNN
# GEMM fusion, and custom calls whose targets only look like library calls (jaxlib's typed-FFI
# cublas_geqrf_batched_ffi and cudnn_rnn_ffi, and cub's radix sort __cub$DeviceRadixSort, what
# XLA:GPU's sort rewriter makes of a jnp.sort: its target starts "__cub" like "__cublas$").
ODD_GEMMS = """\
HloModule odd_gemms, is_scheduled=true

%fused_dot (p0: bf16[64,128], p1: bf16[128,256]) -> bf16[64,256] {
  %p0 = bf16[64,128]{1,0} parameter(0)
  %p1 = bf16[128,256]{1,0} parameter(1)
  ROOT %cudnn_dot = bf16[64,256]{1,0} dot(%p0, %p1), lhs_contracting_dims={1},\
      rhs_contracting_dims={0}
}

ENTRY %main (a: f32[64], b: f32[32], c: f32[8,64], d: f32[8,32], u: f32[256], v: f32[256],\
    x8: f8e4m3fn[48,96], w8: f8e4m3fn[96,80], m: f32[64,8,8], x: bf16[64,128],\
    w: bf16[128,256], seq: f32[4,8,16], h0: f32[1,4,32], c0: f32[1,4,32], rnn_w: f32[6400],\
    lengths: s32[4], keys: f32[4096]) -> (f32[64,32], f32[8,64,32], f32[], bf16[48,80],\
    f32[64,8,8], f32[64,8], bf16[64,256], f32[4,8,32], f32[4096]) {
  %a = f32[64]{0} parameter(0)
  %b = f32[32]{0} parameter(1)
  %c = f32[8,64]{1,0} parameter(2)
  %d = f32[8,32]{1,0} parameter(3)
  %u = f32[256]{0} parameter(4)
  %v = f32[256]{0} parameter(5)
  %x8 = f8e4m3fn[48,96]{1,0} parameter(6)
  %w8 = f8e4m3fn[96,80]{1,0} parameter(7)
  %m = f32[64,8,8]{2,1,0} parameter(8)
  %x = bf16[64,128]{1,0} parameter(9)
  %w = bf16[128,256]{1,0} parameter(10)
  %seq = f32[4,8,16]{2,1,0} parameter(11)
  %h0 = f32[1,4,32]{2,1,0} parameter(12)
  %c0 = f32[1,4,32]{2,1,0} parameter(13)
  %rnn_w = f32[6400]{0} parameter(14)
  %lengths = s32[4]{0} parameter(15)
  %keys = f32[4096]{0} parameter(16)
  %outer = f32[64,32]{1,0} dot(%a, %b)
  %batched_outer = f32[8,64,32]{2,1,0} dot(%c, %d), lhs_batch_dims={0},\
      lhs_contracting_dims={}, rhs_batch_dims={0}, rhs_contracting_dims={}
  %inner = f32[] dot(%u, %v), lhs_contracting_dims={0}, rhs_contracting_dims={0}
  %one = f32[] constant(1)
  %f8-gemm = (bf16[48,80]{1,0}, s8[4194304]{0}) custom-call(%x8, %w8, %one, %one),\
      custom_call_target="__cublas$lt$matmul$f8",\
      backend_config={"operation_queue_id":"0","gemm_backend_config":{"alpha_real":1,\
"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],\
"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},\
"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],\
"algorithm":"ALG_UNSET"},"epilogue":"RELU","grad_x":false,"grad_y":false,\
"damax_output":false}}
  %product = bf16[48,80]{1,0} get-tuple-element(%f8-gemm), index=0
  %qr = (f32[64,8,8]{2,1,0}, f32[64,8]{1,0}) custom-call(%m),\
      custom_call_target="cublas_geqrf_batched_ffi", output_to_operand_aliasing={{0}: (0, {})},\
      api_version=API_VERSION_TYPED_FFI, backend_config={}
  %factors = f32[64,8,8]{2,1,0} get-tuple-element(%qr), index=0
  %taus = f32[64,8]{1,0} get-tuple-element(%qr), index=1
  %cudnn_fusion = bf16[64,256]{1,0} fusion(%x, %w), kind=kCustom, calls=%fused_dot,\
      backend_config={"operation_queue_id":"0","wait_on_operation_queues":[],\
"fusion_backend_config":{"kind":"__cudnn$fusion","cudnn_fusion_config":{"plan_id":"0"}},\
"force_earliest_schedule":false}
  %lstm = (f32[4,8,32]{2,1,0}, f32[1,4,32]{2,1,0}, f32[1,4,32]{2,1,0}, u8[0]{0}, u8[0]{0})\
      custom-call(%seq, %h0, %c0, %rnn_w, %lengths), custom_call_target="cudnn_rnn_ffi",\
      api_version=API_VERSION_TYPED_FFI, backend_config={bidirectional = false,\
      cudnn_allow_tf32 = false, dropout = 0.000000e+00 : f32, hidden_size = 32 : ui64,\
      input_size = 16 : ui64, max_seq_length = 8 : ui64, num_layers = 1 : ui64,\
      reserve_space_size = 0 : ui64, workspace_size = 0 : ui64}
  %hidden = f32[4,8,32]{2,1,0} get-tuple-element(%lstm), index=0
  %radix-sort = (f32[4096]{0}, u8[1792]{0}) custom-call(%keys),\
      custom_call_target="__cub$DeviceRadixSort", backend_config={"descending":false}
  %sorted = f32[4096]{0} get-tuple-element(%radix-sort), index=0
  ROOT %out = (f32[64,32]{1,0}, f32[8,64,32]{2,1,0}, f32[], bf16[48,80]{1,0},\
      f32[64,8,8]{2,1,0}, f32[64,8]{1,0}, bf16[64,256]{1,0}, f32[4,8,32]{2,1,0},\
      f32[4096]{0}) tuple(%outer, %batched_outer, %inner, %product, %factors, %taus,\
      %cudnn_fusion, %hidden, %sorted)
}
"""

# collective_overlap: an async-start whose wrapped computation holds a reduce-scatter under a
# tuple ROOT (XLA names the start after its root: not reduce-scatter-start), a copy-start /
# copy-done pair in flight with it (a copy, not a collective), and an all-reduce inside a fused
# computation (a fused computation's collectives are not listed).
ODD_COLLECTIVES = """\
HloModule odd_collectives, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%wrapped_scatter (p0: f32[32,16]) -> (f32[8,16]) {
  %p0 = f32[32,16]{1,0} parameter(0)
  %scattered = f32[8,16]{1,0} reduce-scatter(%p0), channel_id=1, replica_groups={{0,1,2,3}},\
      dimensions={0}, to_apply=%add
  ROOT %wrapped = (f32[8,16]{1,0}) tuple(%scattered)
}

%fused_all_reduce (q0: f32[8,16]) -> f32[8,16] {
  %q0 = f32[8,16]{1,0} parameter(0)
  %summed = f32[8,16]{1,0} all-reduce(%q0), channel_id=2, replica_groups={{0,1,2,3}},\
      to_apply=%add
  ROOT %squared = f32[8,16]{1,0} multiply(%summed, %summed)
}

ENTRY %main (x: f32[32,16], y: f32[8,16]) -> ((f32[8,16]), f32[8,16], f32[8,16], f32[8,16]) {
  %x = f32[32,16]{1,0} parameter(0)
  %y = f32[8,16]{1,0} parameter(1)
  %scatter-start = ((f32[32,16]{1,0}), (f32[8,16]{1,0})) async-start(%x), calls=%wrapped_scatter
  %copy-start = (f32[8,16]{1,0}, f32[8,16]{1,0}, u32[]) copy-start(%y)
  %negated = f32[8,16]{1,0} negate(%y)
  %copy-done = f32[8,16]{1,0} copy-done(%copy-start)
  %scatter-done = (f32[8,16]{1,0}) async-done(%scatter-start)
  %fused = f32[8,16]{1,0} fusion(%copy-done), kind=kCustom, calls=%fused_all_reduce,\
      backend_config={"fusion_backend_config":{"kind":"__custom_fusion"}}
  ROOT %out = ((f32[8,16]{1,0}), f32[8,16]{1,0}, f32[8,16]{1,0}, f32[8,16]{1,0})\
      tuple(%scatter-done, %negated, %copy-done, %fused)
}
"""

# collective_overlap: asynchronous collectives with async-update steps between start and done
# (the done reads the last update): a reduce-scatter in the generic spelling (async-start /
# async-update / async-done, XLA reads it as reduce-scatter-start ...) with an all-gather pair in
# flight, and an all-to-all in XLA's own spelling (all-to-all-start / -update / -done) with an
# async-start wrapping a fusion in flight (XLA reads it as fusion-start: no collective; this text
# prints it async-start / async-done, and the all-to-all's list says so); ragged-all-to-all,
# started asynchronously and synchronous, and collective-broadcast (collectives, but none of the
# five kinds the task lists); a synchronous all-gather.
ASYNC_CHAINS = """\
HloModule async_chains, is_scheduled=true

%add (a: f32[], b: f32[]) -> f32[] {
  %a = f32[] parameter(0)
  %b = f32[] parameter(1)
  ROOT %sum = f32[] add(%a, %b)
}

%wrapped_reduce_scatter (p0: f32[32,16]) -> f32[8,16] {
  %p0 = f32[32,16]{1,0} parameter(0)
  ROOT %scattered = f32[8,16]{1,0} reduce-scatter(%p0), channel_id=1,\
      replica_groups={{0,1,2,3}}, dimensions={0}, to_apply=%add
}

%fused_square (s0: f32[8,16]) -> f32[8,16] {
  %s0 = f32[8,16]{1,0} parameter(0)
  ROOT %square = f32[8,16]{1,0} multiply(%s0, %s0)
}

%wrapped_square (w0: f32[8,16]) -> f32[8,16] {
  %w0 = f32[8,16]{1,0} parameter(0)
  ROOT %square_fusion = f32[8,16]{1,0} fusion(%w0), kind=kLoop, calls=%fused_square
}

%wrapped_ragged (r0: f32[128], r1: f32[128], r2: s64[4], r3: s64[4], r4: s64[4], r5: s64[4])\
    -> f32[128] {
  %r0 = f32[128]{0} parameter(0)
  %r1 = f32[128]{0} parameter(1)
  %r2 = s64[4]{0} parameter(2)
  %r3 = s64[4]{0} parameter(3)
  %r4 = s64[4]{0} parameter(4)
  %r5 = s64[4]{0} parameter(5)
  ROOT %exchanged = f32[128]{0} ragged-all-to-all(%r0, %r1, %r2, %r3, %r4, %r5), channel_id=5,\
      replica_groups={{0,1,2,3}}
}

ENTRY %main (x: f32[32,16], y: f32[8,16], tokens: f32[128], buffer: f32[128], offsets: s64[4],\
    sizes: s64[4]) -> (f32[8,16], f32[32,16], f32[8,16], f32[8,16], f32[128], f32[128],\
    f32[8,16], f32[32,16], f32[8,16]) {
  %x = f32[32,16]{1,0} parameter(0)
  %y = f32[8,16]{1,0} parameter(1)
  %tokens = f32[128]{0} parameter(2)
  %buffer = f32[128]{0} parameter(3)
  %offsets = s64[4]{0} parameter(4)
  %sizes = s64[4]{0} parameter(5)
  %scatter-start = ((f32[32,16]{1,0}), f32[8,16]{1,0}) async-start(%x),\
      calls=%wrapped_reduce_scatter
  %negated = f32[8,16]{1,0} negate(%y)
  %scatter-update = ((f32[32,16]{1,0}), f32[8,16]{1,0}) async-update(%scatter-start)
  %gather-start = (f32[8,16]{1,0}, f32[32,16]{1,0}) all-gather-start(%negated), channel_id=2,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %exp = f32[8,16]{1,0} exponential(%negated)
  %gather-done = f32[32,16]{1,0} all-gather-done(%gather-start)
  %scatter-update.1 = ((f32[32,16]{1,0}), f32[8,16]{1,0}) async-update(%scatter-update)
  %sine = f32[8,16]{1,0} sine(%exp)
  %scatter-done = f32[8,16]{1,0} async-done(%scatter-update.1)
  %swap-start = ((f32[8,16]{1,0}), f32[8,16]{1,0}) all-to-all-start(%sine), channel_id=3,\
      replica_groups={{0,1,2,3}}, dimensions={0}
  %cosine = f32[8,16]{1,0} cosine(%sine)
  %square-start = ((f32[8,16]{1,0}), f32[8,16]{1,0}, s32[]) async-start(%scatter-done),\
      calls=%wrapped_square
  %swap-update = ((f32[8,16]{1,0}), f32[8,16]{1,0}) all-to-all-update(%swap-start)
  %floor = f32[8,16]{1,0} floor(%cosine)
  %square-done = f32[8,16]{1,0} async-done(%square-start)
  %swap-done = f32[8,16]{1,0} all-to-all-done(%swap-update)
  %tanh = f32[8,16]{1,0} tanh(%y)
  %ragged-start = ((f32[128]{0}, f32[128]{0}, s64[4]{0}, s64[4]{0}, s64[4]{0}, s64[4]{0}),\
      f32[128]{0}) async-start(%tokens, %buffer, %offsets, %sizes, %offsets, %sizes),\
      calls=%wrapped_ragged
  %log = f32[8,16]{1,0} log(%y)
  %ragged-done = f32[128]{0} async-done(%ragged-start)
  %ragged = f32[128]{0} ragged-all-to-all(%ragged-done, %buffer, %offsets, %sizes, %offsets,\
      %sizes), channel_id=6, replica_groups={{0,1,2,3}}
  %broadcast = f32[8,16]{1,0} collective-broadcast(%tanh), channel_id=7,\
      replica_groups={{0,1,2,3}}
  %gathered = f32[32,16]{1,0} all-gather(%log), channel_id=8, replica_groups={{0,1,2,3}},\
      dimensions={0}
  ROOT %out = (f32[8,16]{1,0}, f32[32,16]{1,0}, f32[8,16]{1,0}, f32[8,16]{1,0}, f32[128]{0},\
      f32[128]{0}, f32[8,16]{1,0}, f32[32,16]{1,0}, f32[8,16]{1,0}) tuple(%swap-done,\
      %gathered, %floor, %square-done, %ragged-done, %ragged, %broadcast, %gather-done,\
      %scatter-done)
}
"""

# library_epilogues / gemm_flops: a training forward pass's cuBLAS-Lt calls keep the
# pre-activation for the backward pass (an `_AUX` epilogue: the call's tuple gets the aux output
# after the product, before the workspace): GELU_AUX and BIAS_GELU_AUX, beside BIAS_RELU_AUX and
# a DEFAULT call. Their epilogues are printed as is: GELU_AUX is not GELU (another output).
AUX_EPILOGUES = """\
HloModule aux_epilogues, is_scheduled=true

ENTRY %main (x: bf16[64,96], w1: bf16[96,128], b1: bf16[128], w2: bf16[128,48],\
    b2: bf16[48], w3: bf16[48,40], w4: bf16[40,24]) -> (bf16[64,24], bf16[64,128],\
    bf16[64,48], bf16[64,40]) {
  %x = bf16[64,96]{1,0} parameter(0)
  %w1 = bf16[96,128]{1,0} parameter(1)
  %b1 = bf16[128]{0} parameter(2)
  %w2 = bf16[128,48]{1,0} parameter(3)
  %b2 = bf16[48]{0} parameter(4)
  %w3 = bf16[48,40]{1,0} parameter(5)
  %w4 = bf16[40,24]{1,0} parameter(6)
  %train-gemm = (bf16[64,128]{1,0}, bf16[64,128]{1,0}, s8[4194304]{0})\
      custom-call(%x, %w1, %b1), custom_call_target="__cublas$lt$matmul",\
      backend_config={"operation_queue_id":"0","gemm_backend_config":{"selected_algorithm":"0",\
"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],\
"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},\
"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],\
"algorithm":"ALG_UNSET"},"epilogue":"BIAS_GELU_AUX","lhs_stride":"6144","rhs_stride":"12288",\
"grad_x":false,"grad_y":false,"damax_output":false,"autotune_workspace_size":"4194304"}}
  %h1 = bf16[64,128]{1,0} get-tuple-element(%train-gemm), index=0
  %pre1 = bf16[64,128]{1,0} get-tuple-element(%train-gemm), index=1
  %relu-gemm = (bf16[64,48]{1,0}, bf16[64,48]{1,0}, s8[4194304]{0})\
      custom-call(%h1, %w2, %b2), custom_call_target="__cublas$lt$matmul",\
      backend_config={"operation_queue_id":"0","gemm_backend_config":{"selected_algorithm":"0",\
"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],\
"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},\
"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],\
"algorithm":"ALG_UNSET"},"epilogue":"BIAS_RELU_AUX","lhs_stride":"8192","rhs_stride":"6144",\
"grad_x":false,"grad_y":false,"damax_output":false,"autotune_workspace_size":"4194304"}}
  %h2 = bf16[64,48]{1,0} get-tuple-element(%relu-gemm), index=0
  %pre2 = bf16[64,48]{1,0} get-tuple-element(%relu-gemm), index=1
  %gelu-gemm = (bf16[64,40]{1,0}, bf16[64,40]{1,0}, s8[4194304]{0})\
      custom-call(%h2, %w3), custom_call_target="__cublas$lt$matmul",\
      backend_config={"operation_queue_id":"0","gemm_backend_config":{"selected_algorithm":"0",\
"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],\
"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},\
"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],\
"algorithm":"ALG_UNSET"},"epilogue":"GELU_AUX","lhs_stride":"3072","rhs_stride":"1920",\
"grad_x":false,"grad_y":false,"damax_output":false,"autotune_workspace_size":"4194304"}}
  %h3 = bf16[64,40]{1,0} get-tuple-element(%gelu-gemm), index=0
  %pre3 = bf16[64,40]{1,0} get-tuple-element(%gelu-gemm), index=1
  %head-gemm = (bf16[64,24]{1,0}, s8[4194304]{0}) custom-call(%h3, %w4),\
      custom_call_target="__cublas$lt$matmul",\
      backend_config={"operation_queue_id":"0","gemm_backend_config":{"selected_algorithm":"0",\
"alpha_real":1,"beta":0,"dot_dimension_numbers":{"lhs_contracting_dimensions":["1"],\
"rhs_contracting_dimensions":["0"],"lhs_batch_dimensions":[],"rhs_batch_dimensions":[]},\
"alpha_imag":0,"precision_config":{"operand_precision":["DEFAULT","DEFAULT"],\
"algorithm":"ALG_UNSET"},"epilogue":"DEFAULT","lhs_stride":"2560","rhs_stride":"960",\
"grad_x":false,"grad_y":false,"damax_output":false,"autotune_workspace_size":"4194304"}}
  %logits = bf16[64,24]{1,0} get-tuple-element(%head-gemm), index=0
  ROOT %out = (bf16[64,24]{1,0}, bf16[64,128]{1,0}, bf16[64,48]{1,0}, bf16[64,40]{1,0})\
      tuple(%logits, %pre1, %pre2, %pre3)
}
"""

MODULES = {
    "fusion_spellings": FUSION_SPELLINGS,
    "reduces_elsewhere": REDUCES_ELSEWHERE,
    "odd_gemms": ODD_GEMMS,
    "odd_collectives": ODD_COLLECTIVES,
    "async_chains": ASYNC_CHAINS,
    "aux_epilogues": AUX_EPILOGUES,
}

"""The opcode table (a data table): each opcode's operand count (None: variadic), the
async sugar (`all-reduce-start` ...), and the attributes each opcode allows besides those any
instruction may carry (XLA's hlo_parser.cc, per opcode).
"""

from __future__ import annotations

# XLA's opcode names (HLO_OPCODE_LIST in xla/hlo/ir/hlo_opcode.h, as the jaxlib in use knows
# them) and the operand count its parser demands, None where it takes any number (or checks it
# otherwise). The fixed counts were read off the C++ parser's "expects N operands" errors.
_FIXED_ARITY = {
    0: "iota partition-id replica-id rng-get-and-update-state",
    1: "abs acos acosh all-gather-done all-reduce-done asin asinh atanh bitcast bitcast-convert"
    " broadcast cbrt ceil cholesky collective-permute-done convert copy copy-done copy-start"
    " cosh cosine count-leading-zeros domain erf exponential exponential-minus-one fft floor"
    " get-dimension-size get-tuple-element imag infeed is-finite log log-plus-one logistic"
    " negate not opt-barrier popcnt real recv recv-done reduce-precision reshape reverse"
    " rng-bit-generator round-nearest-afz round-nearest-even rsqrt send-done shuffle sign sine"
    " sinh slice sqrt tan tanh topk transpose while",
    2: "add add-dependency and atan2 compare complex divide gather maximum minimum mulhi multiply"
    " or outfeed pad power remainder send set-dimension-size shift-left"
    " shift-right-arithmetic shift-right-logical stochastic-convert subtract triangular-solve"
    " xor",
    3: "batch-norm-training clamp ragged-dot select select-and-scatter",
    4: "scaled-dot",
    5: "batch-norm-grad batch-norm-inference",
}


_VARIADIC = (
    "after-all all-gather all-gather-start all-reduce all-reduce-start all-to-all async-done"
    " async-start async-update call collective-broadcast collective-permute"
    " collective-permute-start collective-reduce concatenate conditional constant convolution"
    " custom-call dot dynamic-reshape dynamic-slice dynamic-update-slice fusion map parameter"
    " ragged-all-to-all reduce reduce-scatter reduce-window rng scan scatter sort tuple"
)


OPCODE_ARITY: dict[str, int | None] = {op: None for op in _VARIADIC.split()}


OPCODE_ARITY.update({op: n for n, ops in _FIXED_ARITY.items() for op in ops.split()})


#: The generic async opcodes, by the suffix of the sugar that stands for them
ASYNC_OPCODES = {"-start": "async-start", "-update": "async-update", "-done": "async-done"}


# ops with async opcodes of their own (`all-gather-start`, `send-done`): XLA's parser knows no
# other `-start`/`-update`/`-done` of them (`all-gather-update`, `send-start`)
_OWN_ASYNC = frozenset({"all-gather", "all-reduce", "collective-permute", "copy", "recv", "send"})


def async_sugar(name: str) -> tuple[str, str] | None:
    """(generic async opcode, wrapped opcode) when `name` is XLA's sugar for an async op
    wrapping another (`abs-start`: async-start wrapping abs), else None. Opcodes that are
    asynchronous themselves (`all-gather-start`, `copy-done`) are not sugar."""
    if name in OPCODE_ARITY:
        return None
    for suffix, generic in ASYNC_OPCODES.items():
        if name.endswith(suffix):
            wrapped = name[: -len(suffix)]
            if wrapped in OPCODE_ARITY and wrapped not in _OWN_ASYNC:
                return generic, wrapped
    return None


def is_opcode(name: str) -> bool:
    """An XLA opcode, or `<op>-start`/`-update`/`-done` (an async op wrapping `<op>`)."""
    return name in OPCODE_ARITY or async_sugar(name) is not None


# The attributes XLA's parser takes per opcode: every instruction takes _ANY_INSTRUCTION, and
# each row names opcodes and the attributes they take besides. Read off the parser's own
# "unexpected attribute ... Allowed attributes: ..." error (jaxlib 0.12.0.1); test_oracle
# compares the table with the jaxlib in use. Conditional takes either the true/false pair or
# branch_computations.
_ANY_INSTRUCTION = (
    "backend_config control-predecessors frontend_attributes metadata origin"
    " parameter_replication sharding statistics"
)


_OPCODE_ATTRIBUTE_ROWS: tuple[tuple[str, str], ...] = (
    (
        (
            "abs add add-dependency after-all all-gather-done all-reduce-done and atan2"
            " bitcast bitcast-convert ceil clamp collective-permute-done complex constant"
            " convert copy copy-done count-leading-zeros divide dynamic-reshape"
            " dynamic-update-slice floor imag is-finite maximum minimum mulhi multiply"
            " negate not opt-barrier or parameter partition-id popcnt power real remainder"
            " replica-id round-nearest-afz round-nearest-even select shift-left"
            " shift-right-arithmetic shift-right-logical sign stochastic-convert subtract"
            " tuple xor"
        ),
        "",
    ),
    (
        (
            "acos acosh asin asinh atanh cbrt cosh cosine erf exponential"
            " exponential-minus-one log log-plus-one logistic rsqrt sine sinh sqrt tan"
            " tanh"
        ),
        "result_accuracy",
    ),
    (
        "all-gather all-gather-start",
        "channel_id constrain_layout dimensions replica_groups use_global_device_ids",
    ),
    (
        "all-reduce all-reduce-start",
        ("channel_id constrain_layout mode replica_groups to_apply use_global_device_ids"),
    ),
    (
        "all-to-all",
        "channel_id constrain_layout dimensions replica_groups",
    ),
    (
        "async-done",
        "async_execution_thread calls",
    ),
    (
        "async-start async-update",
        "async_execution_thread calls output_to_operand_aliasing",
    ),
    (
        "batch-norm-grad batch-norm-inference batch-norm-training",
        "epsilon feature_index",
    ),
    (
        ("broadcast concatenate get-dimension-size reverse set-dimension-size transpose"),
        "dimensions",
    ),
    (
        "call",
        "is_composite to_apply",
    ),
    (
        "cholesky",
        "lower",
    ),
    (
        "collective-broadcast",
        "channel_id has_dynamic_root replica_groups",
    ),
    (
        "collective-permute collective-permute-start",
        "channel_id slice_sizes source_target_pairs",
    ),
    (
        "collective-reduce",
        (
            "channel_id constrain_layout has_dynamic_root replica_groups to_apply"
            " use_global_device_ids"
        ),
    ),
    (
        "compare",
        "direction order type",
    ),
    (
        "conditional",
        "branch_computations false_computation true_computation",
    ),
    (
        "convolution",
        (
            "algorithm batch_group_count block_scaling_config convolution_kind dim_labels"
            " feature_group_count operand_precision sparsity_config window"
        ),
    ),
    (
        "copy-start",
        "cross_program_prefetch_index",
    ),
    (
        "custom-call",
        (
            "api_version batch_group_count called_computations"
            " custom_call_has_side_effect custom_call_target dim_labels"
            " feature_group_count literal operand_layout_constraints operand_precision"
            " output_to_operand_aliasing padding_type schedule to_apply window"
        ),
    ),
    (
        "domain",
        "domain",
    ),
    (
        "dot",
        (
            "algorithm block_scaling_config lhs_batch_dims lhs_contracting_dims"
            " operand_precision rhs_batch_dims rhs_contracting_dims sparsity_config"
        ),
    ),
    (
        "dynamic-slice",
        "dynamic_slice_sizes",
    ),
    (
        "fft",
        "fft_length fft_type",
    ),
    (
        "fusion",
        "calls kind output_to_operand_aliasing",
    ),
    (
        "gather",
        (
            "collapsed_slice_dims index_vector_dim indices_are_sorted offset_dims"
            " operand_batching_dims slice_sizes start_index_map"
            " start_indices_batching_dims"
        ),
    ),
    (
        "get-tuple-element",
        "index",
    ),
    (
        "infeed",
        "infeed_config",
    ),
    (
        "iota",
        "iota_dimension",
    ),
    (
        "map reduce",
        "dimensions to_apply",
    ),
    (
        "outfeed",
        "outfeed_config outfeed_shape",
    ),
    (
        "pad",
        "padding",
    ),
    (
        "ragged-all-to-all",
        "channel_id dimensions replica_groups",
    ),
    (
        "ragged-dot",
        (
            "lhs_batch_dims lhs_contracting_dims lhs_ragged_dims operand_precision"
            " rhs_batch_dims rhs_contracting_dims rhs_group_dims"
        ),
    ),
    (
        "recv recv-done send send-done",
        "channel_id is_host_transfer",
    ),
    (
        "reduce-precision",
        "exponent_bits mantissa_bits",
    ),
    (
        "reduce-scatter",
        (
            "channel_id constrain_layout dimensions mode replica_groups to_apply"
            " use_global_device_ids"
        ),
    ),
    (
        "reduce-window",
        "to_apply window",
    ),
    (
        "reshape",
        "inferred_dimension",
    ),
    (
        "rng",
        "distribution",
    ),
    (
        "rng-bit-generator",
        "algorithm",
    ),
    (
        "rng-get-and-update-state",
        "delta",
    ),
    (
        "scaled-dot",
        (
            "algorithm lhs_batch_dims lhs_contracting_dims operand_precision"
            " rhs_batch_dims rhs_contracting_dims"
        ),
    ),
    (
        "scan",
        "dimensions is_associative is_reverse num_carries to_apply",
    ),
    (
        "scatter",
        (
            "index_vector_dim indices_are_sorted input_batching_dims inserted_window_dims"
            " scatter_dims_to_operand_dims scatter_indices_batching_dims to_apply"
            " unique_indices update_window_dims"
        ),
    ),
    (
        "select-and-scatter",
        "scatter select window",
    ),
    (
        "shuffle",
        "dimensions mode shifts",
    ),
    (
        "slice",
        "slice",
    ),
    (
        "sort",
        "dimensions is_stable to_apply",
    ),
    (
        "topk",
        "is_stable k largest",
    ),
    (
        "triangular-solve",
        "left_side lower transpose_a unit_diagonal",
    ),
    (
        "while",
        "body condition",
    ),
)


ANY_INSTRUCTION_ATTRIBUTES = frozenset(_ANY_INSTRUCTION.split())


OPCODE_ATTRIBUTES: dict[str, frozenset[str]] = {
    op: ANY_INSTRUCTION_ATTRIBUTES | frozenset(extra.split())
    for ops, extra in _OPCODE_ATTRIBUTE_ROWS
    for op in ops.split()
}

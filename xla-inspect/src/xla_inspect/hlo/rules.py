"""Per-opcode facts the instruction and call checks read (a data table): which opcodes call
computations, which build their shape from their operands, which attributes each requires.
"""

from __future__ import annotations

from xla_inspect.hlo.model import CALL_ATTRIBUTES
from xla_inspect.hlo.opcodes import ANY_INSTRUCTION_ATTRIBUTES, ASYNC_OPCODES

# Opcodes whose attributes may name computations (model.CALL_ATTRIBUTES): only these are
# checked for references to computations the module does not define.
CALLERS = frozenset(
    {
        "fusion",
        "call",
        "while",
        "conditional",
        "reduce",
        "reduce-window",
        "map",
        "sort",
        "scatter",
        "select-and-scatter",
        "all-reduce",
        "all-reduce-start",
        "reduce-scatter",
        "custom-call",
        "async-start",
        "async-update",
        "async-done",
        "collective-reduce",
        "scan",
        "all-reduce-done",
        "all-gather-start",
    }
)


# call attributes, and those whose value is a list of computations
CALL_KEYS = frozenset(CALL_ATTRIBUTES)


CALL_LISTS = frozenset({"branch_computations", "called_computations"})


# Opcodes XLA cannot wrap in an async op (`parameter-start`: its parser crashes on them)
NOT_WRAPPED = frozenset({"parameter", "constant", "async-start", "async-update", "async-done"})


THREAD = frozenset({"async_execution_thread"})


ASYNC = frozenset(ASYNC_OPCODES.values())


ANY_OR_THREAD = ANY_INSTRUCTION_ATTRIBUTES | THREAD


# opcodes whose dimensions= (when given) names one dimension
ONE_DIMENSION = frozenset(
    {
        "all-gather",
        "all-gather-start",
        "reduce-scatter",
        "all-to-all",
        "ragged-all-to-all",
        "sort",
        "get-dimension-size",
        "set-dimension-size",
        "scan",
    }
)


# Opcodes whose instructions XLA's parser checks against their operands' shapes while it builds
# them (check_built); they are recorded with the callers, so the per-line path gains no test.
BUILT = frozenset(
    {
        "tuple",
        "reshape",
        "recv",
        "infeed",
        "conditional",
        "all-reduce",
        "all-reduce-start",
        "reduce-scatter",
        "dynamic-reshape",
        "custom-call",
        "dot",
        "convolution",
        "reduce",
        "reduce-window",
        "concatenate",
        "dynamic-slice",
        "dynamic-update-slice",
        "send-done",
        "recv-done",
        "broadcast",
        "partition-id",
        "replica-id",
        "scatter",
        "outfeed",
        *ONE_DIMENSION,
    }
)


# those of them whose check reads their operands
LOOKS_AT_OPERANDS = frozenset(
    {
        "reshape",
        "dynamic-reshape",
        "conditional",
        "custom-call",
        "dynamic-slice",
        "dynamic-update-slice",
        "send-done",
        "recv-done",
        "broadcast",
    }
)


# Attributes XLA's parser requires ('attribute X is expected but not seen'), read off jaxlib
# 0.12's parser by taking each attribute out of real instructions (tests/xla_inspect/test_oracle
# checks every entry against the jaxlib in use)
REQUIRED = {
    opcode: frozenset(names.split())
    for opcodes, names in (
        # (broadcast requires dimensions only of a non-scalar operand: left out)
        ("all-gather all-gather-start concatenate transpose reverse", "dimensions"),
        ("get-dimension-size set-dimension-size", "dimensions"),
        ("all-reduce all-reduce-start call map reduce-window", "to_apply"),
        ("async-start", "calls"),
        ("rng-bit-generator", "algorithm"),
        ("domain", "domain"),
        ("rng-get-and-update-state", "delta"),
        ("shuffle", "dimensions mode"),
        ("scan", "dimensions num_carries to_apply"),
        ("reduce reduce-scatter sort", "dimensions to_apply"),
        ("collective-permute collective-permute-start", "source_target_pairs"),
        ("compare", "direction"),
        ("conditional", "branch_computations"),
        ("convolution", "dim_labels"),
        ("custom-call", "custom_call_target"),
        ("dynamic-slice", "dynamic_slice_sizes"),
        ("fft", "fft_length fft_type"),
        ("fusion", "calls kind"),
        ("gather", "collapsed_slice_dims index_vector_dim offset_dims slice_sizes start_index_map"),
        ("get-tuple-element", "index"),
        ("iota", "iota_dimension"),
        ("pad", "padding"),
        (
            "scatter",
            "index_vector_dim inserted_window_dims scatter_dims_to_operand_dims to_apply"
            " update_window_dims",
        ),
        ("slice", "slice"),
        ("topk", "k"),
        ("while", "body condition"),
        ("reduce-precision", "exponent_bits mantissa_bits"),
        ("select-and-scatter", "select scatter"),
        ("rng", "distribution"),
        ("batch-norm-inference batch-norm-training batch-norm-grad", "epsilon feature_index"),
    )
    for opcode in opcodes.split()
}


# Attributes that stand in for a required one only together: a conditional names its
# branch_computations, or true_computation and false_computation, and with one of the two XLA's
# parser expects the other ('attribute false_computation is expected but not seen')
REQUIRED_TOGETHER = {"conditional": frozenset({"true_computation", "false_computation"})}


# opcodes whose parentheses hold a payload (a parameter number, a literal), not operands
PAYLOAD_OPCODES = frozenset({"parameter", "constant"})

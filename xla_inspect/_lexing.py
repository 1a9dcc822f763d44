"""Lexical helpers for the HLO reader: brackets, quoted strings, top-level splitting, shapes.

Everything here works on one logical line (an instruction, possibly joined from several source
lines). Quoted strings never span source lines; brackets inside them do not count.
"""

from __future__ import annotations

import re
from collections.abc import Callable

# token ::= string | '"' (unterminated) | bracket
_BRACKET_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|"|[()\[\]{}]')
# split_token ::= string | bracket | ','
_SPLIT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|[()\[\]{},]')
_OPEN_OF = {")": "(", "]": "[", "}": "{"}
_CLOSE_OF = {"(": ")", "[": "]", "{": "}"}
COMMENT = re.compile(r"/\*.*?\*/")

# dtype       ::= XLA's primitive type names: pred s4 s32 u8 f16 bf16 f8e4m3fn c64 token ...
# array_shape ::= dtype '[' dims ']' layout?     dims may hold '<=N' and '?'
# layout      ::= '{' minor_to_major (':' tiling and memory-space parts)? '}'
DTYPE = (
    r"(?:pred|[su](?:1|2|4|8|16|32|64)|f(?:16|32|64)|bf16|c(?:64|128)"
    r"|f8e[0-9a-z]+|f[46]e[0-9a-z]+|token|opaque)"
)
_DIM = r"(?:(?:<=)?[0-9]+|\?)"
DIMS = r"(?:" + _DIM + r"(?:," + _DIM + r")*)?"
LAYOUT = r"\{(?:[0-9]+(?:,[0-9]+)*)?(?::[^{}\s]*)?\}"
ARRAY_SHAPE_PATTERN = DTYPE + r"\[" + DIMS + r"\](?:" + LAYOUT + r")?"
# flat_tuple_shape ::= '(' (array_shape (', ' ('/*index=N*/')? array_shape)*)? ')'
FLAT_TUPLE_SHAPE_PATTERN = (
    r"\((?:"
    + ARRAY_SHAPE_PATTERN
    + r"(?:, (?:/\*index=[0-9]+\*/)?"
    + ARRAY_SHAPE_PATTERN
    + r")*)?\)"
)
ARRAY_SHAPE = re.compile(ARRAY_SHAPE_PATTERN)


class BracketError(Exception):
    """A closing bracket or quote that does not match; `expected` says what would have."""

    def __init__(self, expected: str) -> None:
        super().__init__(expected)
        self.expected = expected


def scan_brackets(line: str, stack: list[str]) -> None:
    """Push the closers that `line`'s open brackets (outside quoted strings) await on `stack`,
    and pop them as they come, in place.

    Raises BracketError on a mismatched closer or a string left open at the end of the line.
    """
    for match in _BRACKET_TOKEN.finditer(line):
        token = match.group()
        if token in _CLOSE_OF:
            stack.append(_CLOSE_OF[token])
        elif token in _OPEN_OF:
            if not stack:
                raise BracketError(f"no '{token}' without a matching '{_OPEN_OF[token]}'")
            closer = stack.pop()
            if token != closer:
                raise BracketError(f"'{closer}' to close '{_OPEN_OF[closer]}' before '{token}'")
        elif token == '"':
            raise BracketError("'\"' to close the string on the same line")


def match_close(text: str, start: int) -> int:
    """Index of the bracket closing the one at `text[start]`, or -1 when it is never closed."""
    depth = 0
    for match in _BRACKET_TOKEN.finditer(text, start):
        token = match.group()
        if token in _CLOSE_OF:
            depth += 1
        elif token in _OPEN_OF:
            depth -= 1
            if depth == 0:
                return match.start()
    return -1


def split_top_level(text: str) -> list[str]:
    """Split on commas outside brackets and quoted strings. Lenient: never raises."""
    if '"' not in text and "{" not in text and "(" not in text and "[" not in text:
        return text.split(",")
    pieces: list[str] = []
    depth = 0
    begin = 0
    for match in _SPLIT_TOKEN.finditer(text):
        token = match.group()
        if token == ",":
            if depth == 0:
                pieces.append(text[begin : match.start()])
                begin = match.end()
        elif token in _CLOSE_OF:
            depth += 1
        elif token in _OPEN_OF:
            depth = max(depth - 1, 0)
    pieces.append(text[begin:])
    return pieces


def split_attributes(text: str) -> tuple[tuple[str, str], ...]:
    """`k1=v1, k2={...}` -> ((k1, v1), (k2, '{...}')). A piece without '=' maps to ''."""
    if not text.strip():
        return ()
    pairs: list[tuple[str, str]] = []
    for piece in split_top_level(text):
        key, _, value = piece.partition("=")
        if key.strip() == "device_ids" and pairs and pairs[-1][0] == "replica_groups":
            # XLA before jax 0.11 prints a mesh's device order inside the replica groups:
            # `replica_groups=mesh['a'=2,'b'=4], device_ids=([2,4]T(1,0)) {'b'}` is one value.
            pairs[-1] = ("replica_groups", f"{pairs[-1][1]}, {piece.strip()}")
            continue
        pairs.append((key.strip(), value.strip()))
    return tuple(pairs)


def is_shape(text: str) -> bool:
    """Whether `text` is an array shape or a (nested) tuple of shapes, comments allowed."""
    if ARRAY_SHAPE.fullmatch(text):
        return True
    if not text.startswith("("):
        return False
    # tuple_shape ::= '(' (shape (',' shape)*)? ')'  -- checked with a flat state machine
    flat = ARRAY_SHAPE.sub("a", COMMENT.sub("", text)).replace(" ", "")
    depth = 0
    previous = ","
    for char in flat:
        if char == "(":
            if previous not in ",(":
                return False
            depth += 1
        elif char == ")":
            if previous == "," or depth == 0:
                return False
            depth -= 1
        elif char == ",":
            if previous not in "a)":
                return False
        elif char != "a" or previous not in ",(":
            return False
        previous = char
    return depth == 0 and previous in "a)"


def operand_names(text: str) -> list[str] | None:
    """Operand names from an operand list that may carry shapes and comments; None if empty."""
    names = []
    for piece in split_top_level(COMMENT.sub("", text)):
        words = piece.split()
        if not words:
            return None
        names.append(words[-1].removeprefix("%"))
    return names


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


def is_opcode(name: str) -> bool:
    """An XLA opcode, or `<op>-start`/`-update`/`-done` (an async op wrapping `<op>`)."""
    if name in OPCODE_ARITY:
        return True
    for suffix in ("-start", "-update", "-done"):
        if name.endswith(suffix) and name[: -len(suffix)] in OPCODE_ARITY:
            return True
    return False


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

# Value syntax of typed attributes, as XLA's parser reads them: name -> (what it takes, a
# pattern of the whole value). An opcode checks those of its attributes that appear here,
# except where it reads the name with another type (_OTHER_TYPE).
_BRACED_INTS = r"\{[ \t]*(?:-?[0-9]+(?:[ \t]*,[ \t]*-?[0-9]+)*)?[ \t]*\}"
_INT = r"-?[0-9]+"
_BOOL = r"true|false"
_INT_LISTS = (
    "dimensions lhs_contracting_dims rhs_contracting_dims lhs_batch_dims rhs_batch_dims"
    " lhs_ragged_dims rhs_group_dims offset_dims collapsed_slice_dims start_index_map"
    " operand_batching_dims start_indices_batching_dims update_window_dims"
    " inserted_window_dims scatter_dims_to_operand_dims input_batching_dims"
    " scatter_indices_batching_dims dynamic_slice_sizes fft_length"
)
_INTS = "index iota_dimension feature_index index_vector_dim channel_id exponent_bits mantissa_bits"
_BOOLS = (
    "is_stable indices_are_sorted unique_indices constrain_layout use_global_device_ids"
    " is_host_transfer"
)
ATTRIBUTE_SYNTAX: dict[str, tuple[str, re.Pattern[str]]] = {
    **{
        name: ("a braced list of integers like {0,1}", re.compile(_BRACED_INTS))
        for name in _INT_LISTS.split()
    },
    **{name: ("an integer", re.compile(_INT)) for name in _INTS.split()},
    **{name: ("true or false", re.compile(_BOOL)) for name in _BOOLS.split()},
    "kind": (
        "a fusion kind: kLoop, kInput, kOutput or kCustom",
        re.compile("kLoop|kInput|kOutput|kCustom"),
    ),
    "direction": (
        "a comparison direction: EQ, NE, GE, GT, LE or LT",
        re.compile("EQ|NE|GE|GT|LE|LT"),
    ),
}
# opcodes that read one of those names with another syntax (not checked there)
OTHER_TYPE = {
    "shuffle": {"dimensions"},
    "scan": {"dimensions"},
    "ragged-all-to-all": {"dimensions"},
}


def _bad_value_check(names: list[str]) -> Callable[[str], bool]:
    """A cheap test of an attribute list: False when each of `names` it holds (first
    occurrence) is a top-level attribute whose value has its syntax; True when one may not be
    (a hit may also be text nested in another value: the exact check decides)."""
    checks = [(name + "=", ATTRIBUTE_SYNTAX[name][1].match) for name in names]

    def suspect(tail: str) -> bool:
        for key, match in checks:
            at = tail.find(key)
            if at < 0:
                continue
            if at and tail[at - 1] not in ", ":
                return True
            value = match(tail, at + len(key))
            if value is None:
                return True
            end = value.end()
            if end < len(tail) and tail[end] != ",":
                return True
        return False

    return suspect


#: opcode -> `_bad_value_check` of its typed attributes, for opcodes that have some
BAD_ATTRIBUTE_VALUE: dict[str, Callable[[str], bool]] = {
    opcode: _bad_value_check(names)
    for opcode, allowed in OPCODE_ATTRIBUTES.items()
    if (
        names := sorted(
            n for n in allowed if n in ATTRIBUTE_SYNTAX and n not in OTHER_TYPE.get(opcode, ())
        )
    )
}

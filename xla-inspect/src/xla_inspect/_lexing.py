"""Lexical helpers for the HLO reader: brackets, quoted strings, top-level splitting, shapes.

Everything here works on one logical line (an instruction, possibly joined from several source
lines). Quoted strings never span source lines; brackets inside them do not count.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable

# token ::= string | '"' (unterminated) | bracket
_BRACKET_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"|"|[()\[\]{}]')
# split_token ::= string | bracket | ','
_SPLIT_TOKEN = re.compile(r'"(?:[^"\\]|\\.)*"?|\'(?:[^\'\\]|\\.)*\'?|[()\[\]{},]')
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
_DIM = r"(?:(?:<=)?-?[0-9]+|\?)"  # (XLA's lexer reads '-0'; _shape_problem bounds them)
DIMS = r"(?:" + _DIM + r"(?:," + _DIM + r")*)?"
LAYOUT = r"\{(?:-?[0-9]+(?:,-?[0-9]+)*)?(?::[^{}\s]*)?\}"
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
    if (
        '"' not in text
        and "{" not in text
        and "(" not in text
        and "[" not in text
        and "'" not in text
    ):
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

# Value syntax of typed attributes, as XLA's parser reads them (hlo_parser.cc with the tokens of
# hlo_lexer.cc; test_oracle checks every rule against the jaxlib in use): name -> (what it takes,
# its syntax). A syntax is a pattern of the whole value, possibly a _Checked one (whose match also
# has to pass the counts and ranges XLA checks while it reads the value). An opcode checks those
# of its attributes that appear here, except where it reads the name with another type
# (OTHER_TYPE). Whitespace may stand between any two tokens of a value, as XLA's lexer skips it.


class _Checked:
    """A pattern whose match counts only when `valid` holds for the text it matched (the part
    of re.Pattern the attribute checks use: match and fullmatch)."""

    __slots__ = ("_pattern", "_valid")

    def __init__(self, pattern: str, valid: Callable[[str], bool], flags: int = 0) -> None:
        self._pattern = re.compile(pattern, flags)
        self._valid = valid

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        found = self._pattern.match(text, pos)
        return found if found is not None and self._valid(found.group()) else None

    def fullmatch(self, text: str) -> re.Match[str] | None:
        found = self._pattern.fullmatch(text)
        return found if found is not None and self._valid(text) else None


# XLA's lexer reads an integer token into [-2^63, 2^64-1] (2^63 and up wrap around to negative
# int64s) and refuses one outside; a long run of digits is rare, so only those are converted
# (a pad `0_N` or a DxD `1xN` holds one after a '_' or an 'x')
_LONG_INT = re.compile(r"(?<![A-Za-wyz0-9.])-?[0-9]{19,}+(?![0-9.eE])")
_INT64 = (-(2**63), 2**63 - 1)
_LEXER_INT = (-(2**63), 2**64 - 1)


def ints_fit(text: str, bounds: tuple[int, int] = _LEXER_INT) -> bool:
    """Each integer token in `text` (outside its strings) within `bounds`."""
    found = _LONG_INT.search(text)
    if found is None:
        return True
    if '"' in text or "'" in text:
        text = re.sub(_QUOTED, '""', text)
    low, high = bounds
    return all(low <= int(n) <= high for n in _LONG_INT.findall(text))


def metadata_int_ok(field: str, text: str) -> bool:
    """An integer metadata field's value as XLA takes it: an int32 once read as an int64
    (2^63 to 2^64-1 wrap around, so 2^64-1 is -1); profile_type's each a ProfileType (0-3)
    once cast to a 32-bit int."""
    if field == "profile_type":  # each cast to a 32-bit int: its low 32 bits
        numbers = [int(n) for n in text.strip("{} \t").split(",") if n.strip()]
        return all(ints_fit(str(n)) and (n & 0xFFFFFFFF) <= 3 for n in numbers)
    value = int(text)
    if not _LEXER_INT[0] <= value <= _LEXER_INT[1]:
        return False
    return -(2**31) <= (value - 2**64 if value >= 2**63 else value) < 2**31


_METADATA_INT = re.compile(
    r"(?<![\w.])(source_line|source_end_line|source_column|source_end_column|stack_frame_id"
    r"|profile_type)=\s*(\{[^{}]*\}|-?[0-9]+)"
)


def _metadata_ints_ok(text: str) -> bool:
    """The integer metadata fields in `text` (a sharding's metadata) each `metadata_int_ok`."""
    if '"' in text or "'" in text:
        text = re.sub(_QUOTED, '""', text)
    return all(metadata_int_ok(field, value) for field, value in _METADATA_INT.findall(text))


_INT = r"-?[0-9]+"
_INT_LIST = rf"{_INT}(?:\s*,\s*{_INT})*+"
_BRACED_INTS = rf"\{{\s*(?:{_INT_LIST})?\s*\}}"
_BRACED_INT_LISTS = rf"\{{\s*(?:{_BRACED_INTS}(?:\s*,\s*{_BRACED_INTS})*+)?\s*\}}"
_PAIR = rf"\{{\s*{_INT}\s*,\s*{_INT}\s*\}}"
_BOOL = r"true|false"
# slice range ::= '[' start ':' limit (':' stride)? ']'
_RANGE = rf"\[\s*{_INT}\s*:\s*{_INT}(?:\s*:\s*{_INT})?\s*\]"
# a word ends where XLA's identifiers do: [a-zA-Z_][a-zA-Z0-9_.-]*
_END_OF_WORD = r"(?![\w.\-])"
_STRING = r'"(?:[^"\\]|\\.)*+"'


def _braced(depth: int) -> str:
    """A pattern of '{...}' holding strings and braces nested up to `depth` deep."""
    quoted = rf"{_STRING}|'(?:[^'\\]|\\.)*+'"  # (a '}' in either kind of string: not one)
    pattern = rf"\{{(?:[^{{}}\"']|{quoted})*+\}}"
    for _ in range(depth - 1):
        pattern = rf"\{{(?:[^{{}}\"']|{quoted}|{pattern})*+\}}"
    return pattern


def _ints(text: str) -> list[int]:
    return [int(n) for n in text.split(",")]


def _product(numbers: list[int]) -> int:
    result = 1
    for n in numbers:
        result *= n
    return result


# window ::= '{' (name '=' value)* '}', each sub-attribute once, no commas; size/stride/dilations/
# reversal take N or NxNx.., pad takes L_HxL_H..; each has as many dimensions as size
_DXD = r"(?:[0-9]++(?:x[0-9]++)++|-?[0-9]++)"
_WINDOW_PAD = r"-?[0-9]++_-?[0-9]++(?:x-?[0-9]++_-?[0-9]++)*+"
_WINDOW = (
    rf"\{{\s*(?:(?:(?:size|stride|lhs_dilate|rhs_dilate|rhs_reversal)=\s*{_DXD}"
    rf"|pad=\s*{_WINDOW_PAD})\s*)*+\}}"
)
_WINDOW_PART = re.compile(r"([a-z_]+)=\s*([0-9x_\-]+)")


def _window_ok(text: str) -> bool:
    dims: dict[str, int] = {}
    for name, value in _WINDOW_PART.findall(text):
        # a pad and an NxN.. are read as int64s (a lone N is an integer token)
        if name in dims or (("_" in value or "x" in value) and not ints_fit(value, _INT64)):
            return False
        dims[name] = value.count("x") + 1
    size = dims.pop("size", 0)
    return all(n == size for n in dims.values())


# dim_labels ::= lhs '_' kernel '->' output; each part names its dimensions once: b/f (i/o in the
# kernel), '?', and the spatial dimensions 0..N-1, N the same in all three parts
_DIM_LABELS = r"[0-9bf?]{2,}+_[0-9io?]{2,}+->[0-9bf?]{2,}+"


def _dim_labels_ok(text: str) -> bool:
    lhs, _, rest = text.partition("_")
    kernel, _, output = rest.partition("->")
    spatial = set()
    for part, letters in ((lhs, "bf"), (kernel, "io"), (output, "bf")):
        named = part.replace("?", "")
        if len(set(named)) != len(named):
            return False
        digits = [int(c) for c in named if c not in letters]
        if any(d >= len(digits) for d in digits):
            return False
        spatial.add(len(digits))
    return len(spatial) == 1


# iota device list ::= '[' dims ']' '<=' '[' reshape ']' ('T(' permutation ')')?, T(...) only
# (and then required) when reshape has several dimensions, each entry of it in [0, len(reshape));
# the reshape and the dims hold as many devices
_IOTA = (
    rf"\[\s*({_INT_LIST})\s*\]\s*<=\s*\[\s*({_INT_LIST})\s*\]"
    rf"(?:\s*T\s*\(\s*({_INT_LIST})\s*\))?"
)
_IOTA_PARTS = re.compile(_IOTA)


def _iota_ok(dims: str, reshape: str, transpose: str | None, full_permutation: bool) -> bool:
    reshaped = _ints(reshape)
    if (len(reshaped) == 1) != (transpose is None):
        return False
    if transpose is not None:
        permutation = _ints(transpose)
        if any(not 0 <= p < len(reshaped) for p in permutation):
            return False
        if full_permutation and len(permutation) != len(reshaped):
            return False
    return _product(_ints(dims)) == _product(reshaped)


# replica_groups ::= '{' ('{' ints '}' (',' '{' ints '}')*)? '}' | iota device list of two dims
#                  | mesh[...] (', device_ids=(...)')? '{' axes '}'  (XLA before jax 0.11)
_MESH_GROUPS = (
    r"mesh\s*\[[^\[\]]*\](?:\s*,\s*device_ids=\s*\((?:[^()]|\([^()]*\))*+\))?\s*\{[^{}]*\}"
)


def _replica_groups_ok(text: str) -> bool:
    if text[0] == "m":
        return _mesh_groups_ok(text)
    if text[0] != "[":
        return True
    dims, reshape, transpose = _IOTA_PARTS.fullmatch(text).groups()  # pyright: ignore[reportOptionalMemberAccess]
    return len(_ints(dims)) == 2 and _iota_ok(dims, reshape, transpose, full_permutation=False)


# sharding ::= '{' single '}' | '{' ('{' single '}' (',' '{' single '}')*)? '}'  (a tuple)
# single   ::= (keyword | 'device=' int | 'devices=' '[' dims ']' (iota | ints)
#               | 'last_tile_dims={' types '}' | 'metadata=' {...} | ('shard_as'|'shard_like') int)*
#            | named sharding (mesh[...] ...: not checked)
# metadata ::= '{' ','? (field ','?)* '}' (a ',' first only before a field), each field a name
# XLA knows with a value of its type (as in an instruction's own metadata; a sharding carries
# one too)
_METADATA_FIELD = (
    r"(?:(?:op_type|op_name|source_file|deduplicated_name|scheduling_name|metadata_payload)"
    rf"=\s*(?:{_STRING}|'(?:[^'\\]|\\.)*+')"
    r"|(?:source_line|source_end_line|source_column|source_end_column|stack_frame_id)"
    rf"=\s*{_INT}{_END_OF_WORD}"
    rf"|profile_type=\s*{_BRACED_INTS})"
)
_METADATA = rf"\{{\s*(?:,?\s*{_METADATA_FIELD}(?:\s*,?\s*{_METADATA_FIELD})*+)?\s*\}}"

_SHARDING_TOKEN = re.compile(
    r"\s*(?:"
    rf"(maximal|replicated|manual|unknown|unreduced|last_tile_dim_replicate){_END_OF_WORD}"
    rf"|device=\s*({_INT})"
    rf"|devices=\s*\[\s*({_INT_LIST})\s*\]\s*(?:<=\s*\[\s*({_INT_LIST})\s*\]"
    rf"(?:\s*T\s*\(\s*({_INT_LIST})\s*\))?|({_INT_LIST}))"
    r"|(last_tile_dims)=\s*\{\s*(?:(?:maximal|replicated|manual|unreduced)"
    rf"(?:\s*,\s*(?:maximal|replicated|manual|unreduced))*+{_END_OF_WORD})?\s*\}}"
    rf"|metadata=\s*{_METADATA}"
    rf"|(?:shard_as|shard_like){_END_OF_WORD}\s*{_INT}"
    r")\s*"
)


_NAMED_SHARDING = re.compile(r"\s*(?:maximal_)?mesh\s*\[")
# a mesh and what refers to its axes: mesh['a'=2,'b'=4] (axes named by quoted strings), an axis
# as written where a sharding or replica groups name it: 'a' or 'a':(pre)size
_QUOTED_NAME = r"(?:\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*')"
_MESH = re.compile(
    rf"\s*mesh\s*\[\s*((?:{_QUOTED_NAME}\s*=\s*[0-9]+(?:\s*,\s*{_QUOTED_NAME}\s*=\s*[0-9]+)*+)?)"
    r"\s*\](?:\s*,\s*device_ids=\s*\((?:[^()]|\([^()]*\))*+\))?\s*"
)
_MESH_AXIS = re.compile(rf"({_QUOTED_NAME})\s*=\s*([0-9]+)")
_AXIS_REF = re.compile(rf"\s*({_QUOTED_NAME})(\s*:\s*\(\s*[0-9]+\s*\)\s*[0-9]+)?\s*|\s*\?\s*")
_MAXIMAL_MESH = re.compile(r"\s*maximal_mesh\s*\[\s*device_id=\s*[0-9]+\s*\]\s*")
_SHARDED_AS = re.compile(r"\s*,\s*(replicated|unreduced|manual)(?![\w.\-])\s*(=)?\s*")
_SHARDING_METADATA = re.compile(rf"\s*,\s*metadata=\s*{_METADATA}\s*")


def _axis_names(text: str) -> list[str]:
    """The axis names of a mesh's `'a'=2,'b'=4` list, without their quotes."""
    return [name[1:-1] for name, _ in _MESH_AXIS.findall(text)]


def _axes_ok(text: str, pos: int, axes: list[str], used: set[str]) -> int:
    """The offset after a braced list of axes of the mesh (`{'a', 'b':(1)2, ?}`) at `pos`,
    each an axis of `axes` not used before (`used` gains them), or -1 when it is not one."""
    if not text.startswith("{", pos):
        return -1
    pos += 1
    if text.startswith("}", skip := len(text) - len(text[pos:].lstrip())):
        return skip + 1
    while True:
        ref = _AXIS_REF.match(text, pos)
        if ref is None:
            return -1
        if ref[1] is not None:
            name = ref[1][1:-1]
            written = name + "".join((ref[2] or "").split())  # a sub-axis: 'a':(1)2
            if name not in axes or written in used:
                return -1
            used.add(written)
        pos = ref.end()
        if text.startswith(",", pos):
            pos += 1
        elif text.startswith("}", pos):
            return pos + 1
        else:
            return -1


def _named_sharding_ok(body: str) -> bool:
    """The inside of a named sharding as XLA reads it: `maximal_mesh[device_id=N]`, or a mesh,
    then the axes each dimension is sharded over (`[{'a'}, {}]`), then `replicated`,
    `unreduced` or `manual`, alone or with the axes (`replicated={'b'}`) (one of the two at
    least), then its metadata; every axis named is one of the mesh's, and none twice."""
    maximal = _MAXIMAL_MESH.match(body)
    if maximal is not None:
        end = maximal.end()
        metadata = _SHARDING_METADATA.match(body, end)
        return (metadata.end() if metadata is not None else end) == len(body)
    mesh = _MESH.match(body)
    if mesh is None:
        return False
    axes, used = _axis_names(mesh[1]), set[str]()
    if len(set(axes)) != len(axes):
        return False
    pos = mesh.end()
    if body.startswith(",", pos) and body[pos + 1 :].lstrip().startswith("["):
        sharded = True
        pos = body.index("[", pos) + 1
        while not body.startswith("]", pos := len(body) - len(body[pos:].lstrip())):
            pos = _axes_ok(body, pos, axes, used)
            if pos < 0:
                return False
            pos = len(body) - len(body[pos:].lstrip())
            if body.startswith(",", pos):
                pos += 1
            elif not body.startswith("]", pos):
                return False
        pos += 1
    else:
        sharded = False
    while pos < len(body):
        kind = _SHARDED_AS.match(body, pos)
        if kind is None:
            metadata = _SHARDING_METADATA.match(body, pos)
            return sharded and metadata is not None and metadata.end() == len(body)
        sharded = True
        pos = kind.end()
        if kind[2] is not None:
            pos = _axes_ok(body, pos, axes, used)
            if pos < 0:
                return False
    return sharded


def _mesh_groups_ok(text: str) -> bool:
    """`replica_groups=mesh[...] {axes}`: each axis one of the mesh's, none twice."""
    mesh = _MESH.match(text)
    if mesh is None:
        return False
    axes = _axis_names(mesh[1])
    end = _axes_ok(text, mesh.end(), axes, set())
    return len(set(axes)) == len(axes) and end == len(text)


def _single_sharding_ok(body: str) -> bool:
    """The inside of one '{...}' sharding, as ParseSingleSharding reads and checks it."""
    if _NAMED_SHARDING.match(body) is not None:
        return _named_sharding_ok(body)
    keywords: set[str] = set()
    devices: list[int] = []
    dims: list[int] = []
    iota: tuple[str, str, str | None] | None = None
    subgroups = 0  # the types last_tile_dims lists
    pos = 0
    while pos < len(body):
        token = _SHARDING_TOKEN.match(body, pos)
        if token is None or token.end() == pos:
            return False
        pos = token.end()
        keyword, device, tile, reshape, transpose, listed, tile_dims = token.groups()
        if keyword is not None or tile_dims is not None:
            keywords.add(keyword or tile_dims)
            if tile_dims is not None:
                types = token.group().partition("{")[2]
                subgroups = types.count(",") + 1 if types.strip(" \t\r\n}") else 0
        elif device is not None:
            devices = [int(device)]
        elif tile is not None:
            dims += _ints(tile)
            if reshape is not None:
                iota = (tile, reshape, transpose)
            else:
                devices += _ints(listed)
    if "replicated" in keywords:
        return not devices
    if "maximal" in keywords:
        return len(devices) == 1
    if keywords & {"manual", "unknown", "unreduced"}:
        return not devices
    if not dims or {"last_tile_dim_replicate", "last_tile_dims"} <= keywords:
        return False
    if subgroups > len(dims):  # (XLA fails: it sizes the data's dimensions by the difference)
        return False
    if iota is not None:
        return not devices and _iota_ok(*iota, full_permutation=True)
    return len(devices) > 1 and len(devices) == _product(dims)


@functools.lru_cache(maxsize=1024)
def _sharding_ok(text: str) -> bool:
    if "metadata=" in text and not _metadata_ints_ok(text):
        return False
    if not strings_ok(text):
        return False
    body = text[1:-1].strip()
    if not body:
        return True  # an empty tuple
    if not body.startswith("{"):
        return _single_sharding_ok(body)
    for piece in split_top_level(body):
        element = piece.strip()
        if not (element.startswith("{") and element.endswith("}")):
            return False
        if not _single_sharding_ok(element[1:-1]):
            return False
    return True


def _float_ok(text: str) -> bool:
    """Within float's range (XLA reads a double and rejects one a float cannot hold)."""
    return text.lstrip("-") == "nan" or abs(float(text)) <= 3.4028234663852886e38


# string ::= '"' ... '"' | "'" ... "'", its escapes C escapes (as XLA unescapes them)
_QUOTED = rf"{_STRING}|'(?:[^'\\]|\\.)*+'"
_ESCAPE = re.compile(r"\\([0-7]{1,3}|x[0-9a-fA-F]*|u[0-9a-fA-F]{0,4}|U[0-9a-fA-F]{0,8}|.)")


def _escapes_ok(text: str) -> bool:
    for escape in _ESCAPE.findall(text, 1, len(text) - 1):
        kind, digits = escape[0], escape[1:]
        if kind in "01234567":
            ok = int(escape, 8) <= 0o377
        elif kind == "x":
            ok = digits != "" and int(digits, 16) <= 0xFF
        elif kind in "uU":  # a code point, no surrogate
            ok = len(digits) == (4 if kind == "u" else 8) and (
                (point := int(digits, 16)) <= 0x10FFFF and not 0xD800 <= point <= 0xDFFF
            )
        else:
            ok = kind in "abfnrtv\\'\"?"
        if not ok:
            return False
    return True


_QUOTED_STRING = re.compile(_QUOTED)


def strings_ok(text: str) -> bool:
    """Each quoted string in `text` has only escapes XLA's lexer undoes (it undoes those of
    every string token: a JSON dict is one token, so its strings are not read)."""
    return "\\" not in text or all(_escapes_ok(q) for q in _QUOTED_STRING.findall(text))


_FRONTEND_STRING = re.compile(rf"(?:^|[{{,])\s*[A-Za-z_][\w.\-]*+=\s*({_QUOTED})")


def _frontend_strings_ok(text: str) -> bool:
    """The quoted values of frontend attributes (not the JSON dicts) `strings_ok`."""
    return "\\" not in text or all(_escapes_ok(q) for q in _FRONTEND_STRING.findall(text))


# name ::= [A-Za-z_][A-Za-z0-9_.-]* directly followed by '=' (XLA's attribute-name token)
_NAME_EQ = r"[A-Za-z_][\w.\-]*+="
_BRACE_OR_QUOTE = re.compile(r'[{}"]')
_DOUBLE_QUOTED = re.compile(_STRING)


def _json_end(text: str, pos: int) -> int:
    """The offset after a JSON dict at `pos` as XLA's lexer takes one: braces that balance (as
    deep as they go), double-quoted strings (the rest is not read); -1 when there is none."""
    if not text.startswith("{", pos):
        return -1
    depth = 0
    while (found := _BRACE_OR_QUOTE.search(text, pos)) is not None:
        pos = found.start()
        char = text[pos]
        if char == '"':
            string = _DOUBLE_QUOTED.match(text, pos)
            if string is None:
                return -1
            pos = string.end()
            continue
        depth += 1 if char == "{" else -1
        pos += 1
        if not depth:
            return pos
    return -1


_FRONTEND_NAME = re.compile(rf"\s*{_NAME_EQ}\s*")
_SPACE = re.compile(r"\s*")


def _frontend_end(text: str, pos: int) -> int:
    """The offset after frontend attributes at `pos`, -1 when there are none:
    frontend_attributes ::= '{' (name '=' (string | json_dict) (',' name '=' ...)*)? '}'."""
    if not text.startswith("{", pos):
        return -1
    pos = _SPACE.match(text, pos + 1).end()  # pyright: ignore[reportOptionalMemberAccess]
    if text.startswith("}", pos):
        return pos + 1
    while True:
        name = _FRONTEND_NAME.match(text, pos)
        if name is None:
            return -1
        pos = name.end()
        if text.startswith("{", pos):
            pos = _json_end(text, pos)
            if pos < 0:
                return -1
        else:
            string = _QUOTED_STRING.match(text, pos)
            if string is None:
                return -1
            pos = string.end()
        pos = _SPACE.match(text, pos).end()  # pyright: ignore[reportOptionalMemberAccess]
        if text.startswith("}", pos):
            return pos + 1
        if not text.startswith(",", pos):
            return -1
        pos += 1


def _config_end(text: str, pos: int) -> int:
    """The offset after a backend_config at `pos` (a quoted string or a JSON dict), or -1."""
    if text.startswith("{", pos):
        return _json_end(text, pos)
    string = _QUOTED_STRING.match(text, pos)
    return -1 if string is None else string.end()


_ANYTHING = re.compile(r"(?s).*")


class _Scanned:
    """A value read by a function (`scan(text, pos)`: the offset after it, or -1) where a
    pattern cannot say it (braces nested as deep as they go), then checked by `valid`; the
    part of re.Pattern the attribute checks use, as _Checked."""

    __slots__ = ("_scan", "_valid")

    def __init__(self, scan: Callable[[str, int], int], valid: Callable[[str], bool]) -> None:
        self._scan = scan
        self._valid = valid

    def match(self, text: str, pos: int = 0) -> re.Match[str] | None:
        end = self._scan(text, pos)
        if end < 0 or not self._valid(text[pos:end]):
            return None
        return _ANYTHING.match(text, pos, end)

    def fullmatch(self, text: str) -> re.Match[str] | None:
        found = self.match(text)
        return found if found is not None and found.end() == len(text) else None


# a number token: XLA's lexer reads '1.5', '1e3' and '.5' as decimals, '-2' as an integer
_WHOLE = r"-?[0-9]++(?![0-9.]|[eE][+-]?[0-9])"
_NUMBER = r"-?(?:[0-9]++(?:\.[0-9]*+)?|\.[0-9]++)(?:[eE][+-]?[0-9]++)?"
# statistics ::= '{' (name '=' int (',' name '=' number)*)? '}' (the first is the index shown)
_STATISTICS = rf"\{{\s*(?:{_NAME_EQ}\s*{_WHOLE}(?:\s*,\s*{_NAME_EQ}\s*{_NUMBER})*+)?\s*\}}"
_BOOL_WORD = rf"(?:true|false){_END_OF_WORD}"
# result_accuracy ::= '{' ('mode=' mode | 'tolerance={' (tol '=' number (',' ...)*)? '}') '}'
_TOLERANCE = rf"(?:atol|rtol|ulps)=\s*(?:{_NUMBER}|-?inf{_END_OF_WORD})"
_TOLERANCE_VALUE = re.compile(r"(atol|rtol|ulps)=\s*([^\s,{}]+)")


def _tolerances_ok(text: str) -> bool:
    """No tolerance XLA refuses (it aborts the process on one): atol and rtol not negative and
    not NaN; ulps, read as a double and cast to an int64, not negative (so below 2^63)."""
    for name, number in _TOLERANCE_VALUE.findall(text):
        value = float(number)
        if value != value or (value <= -1 if name == "ulps" else value < 0):
            return False
        if name == "ulps" and value >= 2.0**63:
            return False
    return True


_RESULT_ACCURACY = (
    rf"\{{\s*(?:mode=\s*(?i:default|highest){_END_OF_WORD}"
    rf"|tolerance=\s*\{{\s*(?:{_TOLERANCE}(?:\s*,\s*{_TOLERANCE})*+)?\s*\}})\s*\}}"
)

# an enumeration value as XLA's parser first reads it: an identifier token, so no keyword and no
# element type name (which word names a value is checked when the instruction is built)
_ENUM_WORD = (
    r"(?!(?:true|false|inf|nan|HloModule|ENTRY|ROOT|FileNames|FunctionNames|FileLocations"
    r"|StackFrames|maximal|replicated|manual|last_tile_dim_replicate|shard_as|shard_like"
    rf"|unknown|unreduced|{DTYPE}){_END_OF_WORD})[A-Za-z_][\w.\-]*+"
)

# control-predecessors ::= '{' name (',' name)* '}'  (at least one)
_INSTRUCTION_NAME = r"%?[A-Za-z_][\w.\-]*+"
_CONTROL_PREDECESSORS = rf"\{{\s*{_INSTRUCTION_NAME}(?:\s*,\s*{_INSTRUCTION_NAME})*+\s*\}}"
# origin ::= '{' '[synthetic_call]' '}' | '{' tree '}', tree: arrays '{' string shape_index? '}'
# (or '{}', an empty leaf) in parentheses and commas (a tuple tree)
_ORIGINAL_ARRAY = rf"\{{\s*(?:(?:{_QUOTED})(?:\s*\{{[^{{}}]*+\}})?)?\s*\}}"
_ORIGIN = rf"\{{\s*(?:\[\s*synthetic_call\s*\]|(?:[(),\s]|{_ORIGINAL_ARRAY})*+)\s*\}}"
# domain ::= '{' kind="sharding" ',' entry=sharding ',' exit=sharding '}' (any order, each
# once; XLA's parser knows no other kind)
_DOMAIN_PART = r"kind=\s*(?:\"sharding\"|'sharding')|" + rf"(?:entry|exit)=\s*{_braced(4)}"
_DOMAIN = rf"\{{\s*(?:{_DOMAIN_PART})(?:\s*,\s*(?:{_DOMAIN_PART}))*+\s*\}}"
_DOMAIN_NAMES = re.compile(r"(?:[{,]\s*)(kind|entry|exit)=")


_DOMAIN_SHARDING = re.compile(rf"(?:[{{,]\s*)(?:entry|exit)=\s*({_braced(4)})")


def _domain_ok(text: str) -> bool:
    """kind, entry and exit each once; entry and exit each a sharding XLA reads."""
    names = _DOMAIN_NAMES.findall(text)
    return sorted(names) == ["entry", "exit", "kind"] and all(
        map(_sharding_ok, _DOMAIN_SHARDING.findall(text))
    )


# output_to_operand_aliasing ::= '{' (entry (',' entry)* ','?)? '}',
# entry ::= shape_index ':' '(' int ',' shape_index ')', shape_index ::= '{' (ints ','?)? '}'
_SHAPE_INDEX = rf"\{{\s*(?:{_INT_LIST}(?:\s*,)?)?\s*\}}"
_ALIASING = rf"{_SHAPE_INDEX}\s*:\s*\(\s*{_INT}\s*,\s*{_SHAPE_INDEX}\s*\)"


def _enum(words: str, ignore_case: bool = False) -> re.Pattern[str]:
    flags = re.IGNORECASE if ignore_case else 0
    return re.compile(f"(?:{'|'.join(words.split())}){_END_OF_WORD}", flags)


def _fits_int64(text: str) -> bool:
    """Whether XLA's lexer reads integer `text`: -2^63 to 2^64-1 (2^63 on wrapped)."""
    return len(text) < 19 or -(2**63) <= int(text) < 2**64


_INT_LISTS = (
    "dimensions lhs_contracting_dims rhs_contracting_dims lhs_batch_dims rhs_batch_dims"
    " lhs_ragged_dims rhs_group_dims offset_dims collapsed_slice_dims start_index_map"
    " operand_batching_dims start_indices_batching_dims update_window_dims"
    " inserted_window_dims scatter_dims_to_operand_dims input_batching_dims"
    " scatter_indices_batching_dims dynamic_slice_sizes fft_length slice_sizes"
)
_INTS = (
    "index iota_dimension feature_index index_vector_dim channel_id exponent_bits mantissa_bits"
    " feature_group_count batch_group_count k inferred_dimension cross_program_prefetch_index"
    " delta num_carries"
)
_BOOLS = (
    "is_stable indices_are_sorted unique_indices constrain_layout use_global_device_ids"
    " is_host_transfer largest lower left_side unit_diagonal is_composite"
    " custom_call_has_side_effect has_dynamic_root is_reverse is_associative"
)
ValueSyntax = re.Pattern[str] | _Checked | _Scanned


def _in_range(syntax: re.Pattern[str] | _Checked) -> _Checked:
    """`syntax`, its integer tokens also within the lexer's range."""
    if isinstance(syntax, _Checked):
        valid = syntax._valid  # pyright: ignore[reportPrivateUsage]
        pattern = syntax._pattern  # pyright: ignore[reportPrivateUsage]
        return _Checked(pattern.pattern, lambda t: ints_fit(t) and valid(t), pattern.flags)
    return _Checked(syntax.pattern, ints_fit, syntax.flags)


ATTRIBUTE_SYNTAX: dict[str, tuple[str, ValueSyntax]] = {
    **{
        name: ("a braced list of integers like {0,1}", re.compile(_BRACED_INTS))
        for name in _INT_LISTS.split()
    },
    **{name: ("an integer", _Checked(_INT, _fits_int64)) for name in _INTS.split()},
    **{name: ("true or false", re.compile(_BOOL)) for name in _BOOLS.split()},
    "kind": (
        "a fusion kind: kLoop, kInput, kOutput or kCustom",
        re.compile("kLoop|kInput|kOutput|kCustom"),
    ),
    "direction": (
        "a comparison direction: EQ, NE, GE, GT, LE or LT",
        re.compile("EQ|NE|GE|GT|LE|LT"),
    ),
    "epsilon": (
        "a number like 0.001",
        _Checked(
            rf"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|nan){_END_OF_WORD}",
            _float_ok,
        ),
    ),
    "window": (
        "a window like {size=3x3 stride=2x2 pad=0_1x0_1} (sub-attributes size, stride, pad,"
        " lhs_dilate, rhs_dilate, rhs_reversal, each once, as many dimensions as size,"
        " separated by spaces)",
        _Checked(_WINDOW, _window_ok),
    ),
    "dim_labels": (
        "dimension labels like b01f_01io->b01f (b/f, i/o and the spatial dimensions 0..N-1,"
        " each once, N the same in all three parts)",
        _Checked(_DIM_LABELS, _dim_labels_ok),
    ),
    "replica_groups": (
        "replica groups like {{0,1},{2,3}}, {} or [2,2]<=[4] ([2,2]<=[2,2]T(1,0) when the"
        " reshape has several dimensions, as many devices on both sides) or mesh['a'=2,'b'=2]"
        " {'a'} (each axis named once, one of the mesh's)",
        _Checked(rf"{_BRACED_INT_LISTS}|{_IOTA}|{_MESH_GROUPS}", _replica_groups_ok),
    ),
    "source_target_pairs": (
        "pairs like {{0,1},{1,0}}",
        re.compile(rf"\{{\s*(?:{_PAIR}(?:\s*,\s*{_PAIR})*+)?\s*\}}"),
    ),
    "sharding": (
        "a sharding like {replicated}, {maximal device=0}, {devices=[2,1]0,1},"
        " {devices=[2,2]<=[4]} (with last_tile_dim_replicate, last_tile_dims={...},"
        " metadata={...}, shard_as/shard_like N), {mesh['a'=2], [{'a'}, {}]} (each axis"
        " named once, one of the mesh's) or a tuple {{...}, {...}}",
        _Checked(_braced(4), _sharding_ok),
    ),
    "padding": (
        "a padding config like 0_0x1_1 or 0_0_1 (low_high or low_high_interior per dimension)",
        _Checked(
            r"-?[0-9]++_-?[0-9]++(?:_[0-9]++)?+(?:x-?[0-9]++_-?[0-9]++(?:_[0-9]++)?+)*+",
            lambda text: ints_fit(text, _INT64),  # read as int64s
        ),
    ),
    "slice": (
        "slice ranges like {[0:4], [1:8:2]}",
        re.compile(rf"\{{\s*(?:{_RANGE}(?:\s*,\s*{_RANGE})*+)?\s*\}}"),
    ),
    "operand_precision": (
        "a braced list of precisions like {default,highest} (DEFAULT, HIGH, HIGHEST)",
        re.compile(
            rf"\{{\s*(?:(?:highest|high|default){_END_OF_WORD}"
            rf"(?:\s*,\s*(?:highest|high|default){_END_OF_WORD})*+)?\s*\}}",
            re.IGNORECASE,
        ),
    ),
    "fft_type": ("an FFT type: FFT, IFFT, RFFT or IRFFT", _enum("FFT IFFT RFFT IRFFT")),
    "type": (
        "a comparison type: FLOAT, TOTALORDER, SIGNED or UNSIGNED",
        _enum("FLOAT TOTALORDER SIGNED UNSIGNED"),
    ),
    "convolution_kind": (
        "a convolution kind: fprop, wgrad, dgrad or unset",
        _enum("fprop wgrad dgrad unset"),
    ),
    "mode": (
        "a collective group mode: cross_replica, cross_partition,"
        " cross_replica_and_partition or flattened_id",
        _enum("cross_replica_and_partition cross_replica cross_partition flattened_id"),
    ),
    "api_version": (
        "a custom-call API version: API_VERSION_ORIGINAL, API_VERSION_STATUS_RETURNING,"
        " API_VERSION_STATUS_RETURNING_UNIFIED or API_VERSION_TYPED_FFI (XLA reads"
        " API_VERSION_UNSPECIFIED, then refuses to build the custom-call)",
        _enum(
            "API_VERSION_STATUS_RETURNING_UNIFIED API_VERSION_STATUS_RETURNING"
            " API_VERSION_ORIGINAL API_VERSION_TYPED_FFI",
            ignore_case=True,
        ),
    ),
    "schedule": (
        "a custom-call schedule: SCHEDULE_NONE, SCHEDULE_LATEST or SCHEDULE_EARLIEST",
        _enum("SCHEDULE_NONE SCHEDULE_LATEST SCHEDULE_EARLIEST", ignore_case=True),
    ),
    "distribution": (
        "a random distribution: rng_uniform or rng_normal",
        _enum("rng_uniform rng_normal rng_invalid", ignore_case=True),
    ),
    "algorithm": (
        "a dot algorithm like dot_bf16_bf16_f32 or dot_f32_f32_f32",
        _enum(
            "unset dot_any_f8_any_f8_f32 dot_any_f8_any_f8_f32_fast_accum dot_f16_f16_f16"
            " dot_f16_f16_f32 dot_bf16_bf16_bf16 dot_bf16_bf16_f32 dot_bf16_bf16_f32_x3"
            " dot_bf16_bf16_f32_x6 dot_bf16_bf16_f32_x9 dot_tf32_tf32_f32 dot_tf32_tf32_f32_x3"
            " dot_f32_f32_f32 dot_f64_f64_f64",
            ignore_case=True,
        ),
    ),
    **{
        name: ('a quoted string like "name"', _Checked(_QUOTED, _escapes_ok))
        for name in (
            "custom_call_target",
            "infeed_config",
            "outfeed_config",
            "async_execution_thread",
        )
    },
    "output_to_operand_aliasing": (
        "output/operand aliases like {{}: (0, {}), {1}: (1, {0})}",
        re.compile(rf"\{{\s*(?:{_ALIASING}(?:\s*,\s*{_ALIASING})*+(?:\s*,)?)?\s*\}}"),
    ),
    "frontend_attributes": (
        'frontend attributes like {key="value", k2={"json":1}} (names directly followed by'
        " '=', each value a quoted string or a JSON dict, separated by ',')",
        _Scanned(_frontend_end, _frontend_strings_ok),
    ),
    "backend_config": (
        'a quoted string (its escapes C escapes) or a JSON dict like {"key":1}',
        _Scanned(_config_end, lambda text: text[0] == "{" or _escapes_ok(text)),
    ),
    "statistics": (
        "statistics like {visualizing_index=1, stat=0.5} (an integer first, then numbers)",
        re.compile(_STATISTICS),
    ),
    "parameter_replication": (
        "a braced list of true/false like {true,false}",
        re.compile(rf"\{{\s*(?:{_BOOL_WORD}(?:\s*,\s*{_BOOL_WORD})*+)?\s*\}}"),
    ),
    "result_accuracy": (
        "a result accuracy like {mode=highest} or {tolerance={atol=0,rtol=0,ulps=1}} (no"
        " negative or NaN tolerance, ulps below 2^63)",
        _Checked(_RESULT_ACCURACY, _tolerances_ok),
    ),
    # (XLA aborts the process on any other word)
    "transpose_a": (
        "a transpose kind: NO_TRANSPOSE, TRANSPOSE or ADJOINT",
        _enum("NO_TRANSPOSE TRANSPOSE ADJOINT"),
    ),
    "order": ("a comparison order: TOTAL or PARTIAL", _enum("TOTAL PARTIAL")),
    # sparsity_config ::= '{' (('lhs' | 'rhs') '=' '{' ... '}')* '}', no commas (the inside of
    # each tensor's config is not checked)
    "sparsity_config": (
        "a sparsity config like {lhs={...} rhs={...}} (lhs and rhs separated by spaces)",
        re.compile(r"\{\s*(?:(?:lhs|rhs)=\s*\{[^{}]*+\}\s*)*+\}"),
    ),
    "control-predecessors": (
        "a braced list of instruction names like {add.1, %mul}",
        re.compile(_CONTROL_PREDECESSORS),
    ),
    "origin": (
        'an original value like {{"name"}}, {({"a"}, {"b" {1}})} or {[synthetic_call]}',
        _Checked(_ORIGIN, strings_ok),
    ),
    "domain": (
        'a domain like {kind="sharding", entry={maximal device=0}, exit={replicated}} (kind'
        ' "sharding", entry and exit, each once)',
        _Checked(_DOMAIN, _domain_ok),
    ),
    "padding_type": (
        "a padding type: PADDING_VALID or PADDING_SAME",
        _enum("PADDING_VALID PADDING_SAME PADDING_INVALID"),
    ),
}
# integer tokens within the lexer's range, in every value that holds some
for _name in (
    *_INT_LISTS.split(),
    *_INTS.split(),
    *"window replica_groups source_target_pairs sharding slice output_to_operand_aliasing"
    " statistics result_accuracy".split(),
):
    _description, _syntax = ATTRIBUTE_SYNTAX[_name]
    assert not isinstance(_syntax, _Scanned)
    ATTRIBUTE_SYNTAX[_name] = (_description, _in_range(_syntax))


# opcodes that read one of those names with another syntax: name -> that syntax, or None where
# the reader does not check it
def _nested_groups(depth: int) -> str:
    """Text without ',' at its top level, '(...)' and '{...}' groups nested `depth` deep."""
    inner = r"[^{}()]*+"
    for _ in range(depth):
        inner = rf"(?:[^{{}}()]|\{{{inner}\}}|\({inner}\))*+"
    return rf"(?:\[[^\]]*+\]|[^,{{}}()\[]|\{{{inner}\}}|\({inner}\))++"


# shape ::= array shape, its layout when '{' and a number or ':' follow (a blank between them
# does not end the shape), or a tuple shape in parentheses
_LITERAL_SHAPE = re.compile(
    r"\s*+([a-z][a-z0-9]*+\s*+\[[^\]]*+\](?:\s*+\{(?=\s*+[0-9:\-])[^{}]*+\})?"
    r"|\((?:[^()]|\((?:[^()]|\([^()]*+\))*+\))*+\))"
)


def _custom_call_literal_ok(text: str) -> bool:
    """custom-call's `literal=shape literal`: the shape one XLA takes, then a literal of it, read
    as a constant's is (_literal.literal_problem)."""
    from xla_inspect._literal import literal_problem  # (it imports this module)
    from xla_inspect.parse import _shape_problem, _squeezed

    shape = _LITERAL_SHAPE.match(text)
    if shape is None:
        return False
    written = _squeezed(shape.group(1))
    rest = text[shape.end() :].strip()
    if "{" in written:  # minor_to_major: a permutation of the dimensions (XLA aborts on others)
        dims, _, layout = written.partition("{")
        rank = dims.count(",") + 1 if dims[-2:] != "[]" else 0
        order = layout.partition(":")[0].rstrip("}")
        numbers = [n for n in order.split(",") if n]
        if not all(n.lstrip("-").isdigit() for n in numbers):
            return False
        if sorted(map(int, numbers)) != list(range(rank)):
            return False
    return bool(rest) and _shape_problem(written) is None and literal_problem(rest, written) is None


OTHER_TYPE: dict[str, dict[str, tuple[str, ValueSyntax] | None]] = {
    "custom-call": {
        "literal": (
            "a shape and a literal of it, like s32[] 1 or f32[2]{0} {1, 2} (a '{' right after"
            " an array shape is its layout)",
            _Checked(_nested_groups(6), _custom_call_literal_ok),
        )
    },
    "shuffle": {"dimensions": None, "mode": ("a shuffle mode: rotate", _enum("rotate"))},
    "scan": {"dimensions": None},
    "ragged-all-to-all": {"dimensions": None},
    **{
        opcode: {
            "slice_sizes": (
                "a braced list of integer lists like {{1},{2}}",
                _in_range(re.compile(_BRACED_INT_LISTS)),
            )
        }
        for opcode in ("collective-permute", "collective-permute-start")
    },
    "rng-bit-generator": {
        "algorithm": (
            "a random algorithm: rng_default, rng_three_fry or rng_philox",
            _enum("rng_default rng_three_fry rng_philox", ignore_case=True),
        )
    },
}


def value_syntax(opcode: str, name: str) -> tuple[str, ValueSyntax] | None:
    """What `opcode`'s attribute `name` takes and its syntax, or None when it is not checked."""
    other = OTHER_TYPE.get(opcode, {})
    return other[name] if name in other else ATTRIBUTE_SYNTAX.get(name)


def _bad_value_check(names: list[tuple[str, ValueSyntax]]) -> Callable[[str], bool]:
    """A cheap test of an attribute list: False when each of `names` it holds (first
    occurrence) is a top-level attribute whose value has its syntax; True when one may not be
    (a hit may also be text nested in another value: the exact check decides)."""
    checks = [(name + "=", syntax.match) for name, syntax in names]

    def suspect(tail: str) -> bool:
        for key, match in checks:
            if key not in tail:  # the common case, and `in` costs half of `find`
                continue
            at = tail.find(key)
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
    opcode: _bad_value_check(checked)
    for opcode, allowed in OPCODE_ATTRIBUTES.items()
    if (
        checked := [
            (name, syntax[1])
            for name in sorted(allowed)
            if (syntax := value_syntax(opcode, name)) is not None
        ]
    )
}


# -- literal values: what XLA's parser checks of each element of a constant -------------------

# the largest finite value of the types XLA checks a literal's numbers against, and the
# smallest magnitude that rounds to infinity in them (a value between the two rounds down)
_FLOAT_MAX = {"f16": 65504.0, "bf16": 3.3895313892515355e38, "f32": 3.4028234663852886e38}
_FLOAT_ROUNDS_TO_INF = {"f16": 65520.0, "bf16": 3.3961775292304957e38, "f32": 3.4028235677973366e38}
# NaN payload bits per type; types not listed take no payload
_NAN_PAYLOAD_MASK = {
    "f16": 0x3FF,
    "bf16": 0x7F,
    "f32": 0x7FFFFF,
    "f64": 0xFFFFFFFFFFFFF,
    "f8e5m2": 0x3,
    "f8e4m3": 0x7,
    "f8e3m4": 0xF,
}
# the type of a complex type's parts
_PARTS_TYPE = {"c64": "f32", "c128": "f64"}
_INTEGER_TYPE = re.compile(r"([su])(1|2|4|8|16|32|64)").fullmatch
# element ::= '(' number ',' number ')' (complex) | number | true | false; numbers as the
# lexer reads them: [-+]?digits, decimals with '.' or an exponent, inf, nan with a payload
_ELEMENT_TOKEN = re.compile(
    r"\s*+(?:([(),])|(true|false)|(-?)(?:inf|nan(?:\(0x([0-9a-fA-F]++)\))?)|(-?[0-9]++)(?![.eE0-9])"
    r"|(-?(?:[0-9]++\.?[0-9]*+|\.[0-9]++)(?:[eE][+-]?[0-9]++)?)|([{}.]|\S))"
)


def _number_problem(text: str, dtype: str, part: str = "") -> str | None:
    """Why the number `text` is no value of `dtype` (a float or complex type), or None."""
    value = float(text)
    if value in (float("inf"), float("-inf")):
        return f"a number a double holds, not {text}"
    if dtype == "c64" and abs(value) > _FLOAT_MAX["f32"]:
        return f"parts c64 holds (at most {_FLOAT_MAX['f32']:g} in magnitude), not {part}{text}"
    limit = _FLOAT_ROUNDS_TO_INF.get(dtype)
    if limit is not None and abs(value) >= limit:
        return f"a value {dtype} holds (at most {_FLOAT_MAX[dtype]:g} in magnitude), not {text}"
    if (
        dtype[1] in "468"
        and dtype[0] == "f"
        and value == value
        and not _small_float_holds(dtype, value)
    ):
        return f"a value {dtype} holds (it rounds to no finite {dtype}), not {text}"
    return None


def _small_float_holds(dtype: str, value: float) -> bool:
    """Whether `value` rounds to a finite number of the 4/6/8-bit float type `dtype`
    (f8e4m3fn -> ml_dtypes' float8_e4m3fn; jax depends on ml_dtypes)."""
    import ml_dtypes
    import numpy as np

    kind = getattr(ml_dtypes, f"float{dtype[1]}_{dtype[2:]}", None)
    if kind is None:
        return True
    with np.errstate(over="ignore", invalid="ignore"):
        return bool(np.isfinite(np.array(value, dtype=np.float64).astype(kind)))


def literal_value_problem(literal: str, dtype: str) -> str | None:
    """Why an element of the constant literal `literal` (comments taken out) is no value of
    the element type `dtype`, as XLA's parser checks while it reads it, or None: integer types
    take integers within their range (pred any integer, true or false), float types numbers
    that do not round to infinity and NaN payloads their significand holds, complex types
    '(re, im)' pairs."""
    if dtype in ("token", "opaque"):
        return f"no literal for a {dtype} shape (XLA's parser aborts)"
    integer = _INTEGER_TYPE(dtype)
    complex_type = dtype in ("c64", "c128")
    is_pred = dtype == "pred"
    pair = 0  # position inside a '(re, im)' pair: 0 outside, 1 real part, 2 imaginary part
    pos, size = 0, len(literal)
    while pos < size:
        token = _ELEMENT_TOKEN.match(literal, pos)
        if token is None:
            break
        pos = token.end()
        paren, word, payload, whole, decimal, other = token.group(1, 2, 4, 5, 6, 7)
        if paren is not None:
            if paren == "(":
                if not complex_type:
                    return "'(' only around the parts of a complex number"
                pair = 1
            elif paren == "," and pair == 1:
                pair = 2
            elif paren == ")":
                pair = 0
            continue
        if other is not None:
            if other == "+":
                return "a number without '+' (XLA's lexer reads no '+' sign)"
            continue
        if complex_type and pair == 0:
            return f"a complex value as (real, imaginary) for {dtype}"
        part = ("real part " if pair == 1 else "imaginary part ") if pair else ""
        if word is not None:
            if not is_pred:
                return f"a number for {dtype}, not {word}"
        elif whole is not None:
            number = int(whole)
            if not -(2**63) <= number < 2**64:
                return f"an integer of at most 64 bits, not {whole}"
            if number >= 2**63:  # XLA reads it into an int64: it wraps around to a negative
                number -= 2**64
                whole = str(number)
            if integer is not None:
                bits = int(integer[2])
                low, high = (-(2 ** (bits - 1)), 2 ** (bits - 1) - 1)
                if integer[1] == "u":
                    low, high = 0, 2**bits - 1
                if bits < 64 and not low <= number <= high:
                    return f"a value of {dtype} ({low} to {high}), not {whole}"
            elif not is_pred and (problem := _number_problem(whole, dtype, part)) is not None:
                return problem
        elif integer is not None or is_pred:
            return f"an integer for {dtype}, not {token.group().strip()}"
        elif decimal is not None:
            if (problem := _number_problem(decimal, dtype, part)) is not None:
                return problem
        elif payload is not None:
            # (XLA checks the payload of a complex value's real part only; any is lexed up to
            # a double's)
            mask = _NAN_PAYLOAD_MASK.get(_PARTS_TYPE.get(dtype, dtype) if pair < 2 else "f64", 0)
            if not 0 < int(payload, 16) <= mask:
                return f"a NaN payload {dtype} holds (1 to {mask:#x}), not 0x{payload}"
    return None

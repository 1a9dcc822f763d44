"""The value grammar of instruction attributes, as a table (a data table): each attribute
name -> (what it expects, its syntax), the per-opcode exceptions (OTHER_TYPE), and the quick
screen (BAD_ATTRIBUTE_VALUE) that says when an attribute list needs the full check. To add an
attribute rule, add its row here (and its name to the opcode's row in opcodes).
"""

from __future__ import annotations

import re
from collections.abc import Callable

from xla_inspect.hlo.literals import literal_problem
from xla_inspect.hlo.opcodes import OPCODE_ATTRIBUTES
from xla_inspect.hlo.shapes import shape_problem, squeezed
from xla_inspect.hlo.shardings import MESH_GROUPS, replica_groups_ok, sharding_ok
from xla_inspect.hlo.strings import (
    Scanned,
    config_end,
    escapes_ok,
    frontend_end,
    frontend_strings_ok,
    strings_ok,
)
from xla_inspect.hlo.value_forms import (
    ALIASING,
    BOOL_WORD,
    BOOLS,
    CONTROL_PREDECESSORS,
    DOMAIN,
    INT_LISTS,
    INTS,
    ORIGIN,
    RESULT_ACCURACY,
    STATISTICS,
    ValueSyntax,
    domain_ok,
    enum,
    fits_int64,
    float_ok,
    in_range,
    tolerances_ok,
)
from xla_inspect.hlo.values import (
    BOOL,
    BRACED_INT_LISTS,
    BRACED_INTS,
    DIM_LABELS,
    END_OF_WORD,
    INT,
    INT64,
    IOTA,
    PAIR,
    QUOTED,
    RANGE,
    WINDOW,
    Checked,
    braced,
    dim_labels_ok,
    ints_fit,
    window_ok,
)

# Value syntax of typed attributes, as XLA's parser reads them (hlo_parser.cc with the tokens of
# hlo_lexer.cc; test_oracle checks every rule against the jaxlib in use): name -> (what it takes,
# its syntax). A syntax is a pattern of the whole value, possibly a Checked one (whose match also
# has to pass the counts and ranges XLA checks while it reads the value). An opcode checks those
# of its attributes that appear here, except where it reads the name with another type
# (OTHER_TYPE). Whitespace may stand between any two tokens of a value, as XLA's lexer skips it.
ATTRIBUTE_SYNTAX: dict[str, tuple[str, ValueSyntax]] = {
    **{
        name: ("a braced list of integers like {0,1}", re.compile(BRACED_INTS))
        for name in INT_LISTS.split()
    },
    **{name: ("an integer", Checked(INT, fits_int64)) for name in INTS.split()},
    **{name: ("true or false", re.compile(BOOL)) for name in BOOLS.split()},
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
        Checked(
            rf"-?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|nan){END_OF_WORD}",
            float_ok,
        ),
    ),
    "window": (
        "a window like {size=3x3 stride=2x2 pad=0_1x0_1} (sub-attributes size, stride, pad,"
        " lhs_dilate, rhs_dilate, rhs_reversal, each once, as many dimensions as size,"
        " separated by spaces)",
        Checked(WINDOW, window_ok),
    ),
    "dim_labels": (
        "dimension labels like b01f_01io->b01f (b/f, i/o and the spatial dimensions 0..N-1,"
        " each once, N the same in all three parts)",
        Checked(DIM_LABELS, dim_labels_ok),
    ),
    "replica_groups": (
        "replica groups like {{0,1},{2,3}}, {} or [2,2]<=[4] ([2,2]<=[2,2]T(1,0) when the"
        " reshape has several dimensions, as many devices on both sides) or mesh['a'=2,'b'=2]"
        " {'a'} (each axis named once, one of the mesh's)",
        Checked(rf"{BRACED_INT_LISTS}|{IOTA}|{MESH_GROUPS}", replica_groups_ok),
    ),
    "source_target_pairs": (
        "pairs like {{0,1},{1,0}}",
        re.compile(rf"\{{\s*(?:{PAIR}(?:\s*,\s*{PAIR})*+)?\s*\}}"),
    ),
    "sharding": (
        "a sharding like {replicated}, {maximal device=0}, {devices=[2,1]0,1},"
        " {devices=[2,2]<=[4]} (with last_tile_dim_replicate, last_tile_dims={...},"
        " metadata={...}, shard_as/shard_like N), {mesh['a'=2], [{'a'}, {}]} (each axis"
        " named once, one of the mesh's), {single_device[device_id=0]} or a tuple {{...}, {...}}",
        Checked(braced(4), sharding_ok),
    ),
    "padding": (
        "a padding config like 0_0x1_1 or 0_0_1 (low_high or low_high_interior per dimension)",
        Checked(
            r"-?[0-9]++_-?[0-9]++(?:_[0-9]++)?+(?:x-?[0-9]++_-?[0-9]++(?:_[0-9]++)?+)*+",
            lambda text: ints_fit(text, INT64),  # read as int64s
        ),
    ),
    "slice": (
        "slice ranges like {[0:4], [1:8:2]}",
        re.compile(rf"\{{\s*(?:{RANGE}(?:\s*,\s*{RANGE})*+)?\s*\}}"),
    ),
    "operand_precision": (
        "a braced list of precisions like {default,highest} (DEFAULT, HIGH, HIGHEST)",
        re.compile(
            rf"\{{\s*(?:(?:highest|high|default){END_OF_WORD}"
            rf"(?:\s*,\s*(?:highest|high|default){END_OF_WORD})*+)?\s*\}}",
            re.IGNORECASE,
        ),
    ),
    "fft_type": ("an FFT type: FFT, IFFT, RFFT or IRFFT", enum("FFT IFFT RFFT IRFFT")),
    "type": (
        "a comparison type: FLOAT, TOTALORDER, SIGNED or UNSIGNED",
        enum("FLOAT TOTALORDER SIGNED UNSIGNED"),
    ),
    "convolution_kind": (
        "a convolution kind: fprop, wgrad, dgrad or unset",
        enum("fprop wgrad dgrad unset"),
    ),
    "mode": (
        "a collective group mode: cross_replica, cross_partition,"
        " cross_replica_and_partition or flattened_id",
        enum("cross_replica_and_partition cross_replica cross_partition flattened_id"),
    ),
    "api_version": (
        "a custom-call API version: API_VERSION_ORIGINAL, API_VERSION_STATUS_RETURNING,"
        " API_VERSION_STATUS_RETURNING_UNIFIED or API_VERSION_TYPED_FFI (XLA reads"
        " API_VERSION_UNSPECIFIED, then refuses to build the custom-call)",
        enum(
            "API_VERSION_STATUS_RETURNING_UNIFIED API_VERSION_STATUS_RETURNING"
            " API_VERSION_ORIGINAL API_VERSION_TYPED_FFI",
            ignore_case=True,
        ),
    ),
    "schedule": (
        "a custom-call schedule: SCHEDULE_NONE, SCHEDULE_LATEST or SCHEDULE_EARLIEST",
        enum("SCHEDULE_NONE SCHEDULE_LATEST SCHEDULE_EARLIEST", ignore_case=True),
    ),
    "distribution": (
        "a random distribution: rng_uniform or rng_normal",
        enum("rng_uniform rng_normal rng_invalid", ignore_case=True),
    ),
    "algorithm": (
        "a dot algorithm like dot_bf16_bf16_f32 or dot_f32_f32_f32",
        enum(
            "unset dot_any_f8_any_f8_f32 dot_any_f8_any_f8_f32_fast_accum dot_f16_f16_f16"
            " dot_f16_f16_f32 dot_bf16_bf16_bf16 dot_bf16_bf16_f32 dot_bf16_bf16_f32_x3"
            " dot_bf16_bf16_f32_x6 dot_bf16_bf16_f32_x9 dot_tf32_tf32_f32 dot_tf32_tf32_f32_x3"
            " dot_f32_f32_f32 dot_f64_f64_f64",
            ignore_case=True,
        ),
    ),
    **{
        name: ('a quoted string like "name"', Checked(QUOTED, escapes_ok))
        for name in (
            "custom_call_target",
            "infeed_config",
            "outfeed_config",
            "async_execution_thread",
        )
    },
    "output_to_operand_aliasing": (
        "output/operand aliases like {{}: (0, {}), {1}: (1, {0})}",
        re.compile(rf"\{{\s*(?:{ALIASING}(?:\s*,\s*{ALIASING})*+(?:\s*,)?)?\s*\}}"),
    ),
    "frontend_attributes": (
        'frontend attributes like {key="value", k2={"json":1}} (names directly followed by'
        " '=', each value a quoted string or a JSON dict, separated by ',')",
        Scanned(frontend_end, frontend_strings_ok),
    ),
    "backend_config": (
        'a quoted string (its escapes C escapes) or a JSON dict like {"key":1}',
        Scanned(config_end, lambda text: text[0] == "{" or escapes_ok(text)),
    ),
    "statistics": (
        "statistics like {visualizing_index=1, stat=0.5} (an integer first, then numbers)",
        re.compile(STATISTICS),
    ),
    "parameter_replication": (
        "a braced list of true/false like {true,false}",
        re.compile(rf"\{{\s*(?:{BOOL_WORD}(?:\s*,\s*{BOOL_WORD})*+)?\s*\}}"),
    ),
    "result_accuracy": (
        "a result accuracy like {mode=highest} or {tolerance={atol=0,rtol=0,ulps=1}} (no"
        " negative or NaN tolerance, ulps below 2^63)",
        Checked(RESULT_ACCURACY, tolerances_ok),
    ),
    # (XLA aborts the process on any other word)
    "transpose_a": (
        "a transpose kind: NO_TRANSPOSE, TRANSPOSE or ADJOINT",
        enum("NO_TRANSPOSE TRANSPOSE ADJOINT"),
    ),
    "order": ("a comparison order: TOTAL or PARTIAL", enum("TOTAL PARTIAL")),
    # sparsity_config ::= '{' (('lhs' | 'rhs') '=' '{' ... '}')* '}', no commas (the inside of
    # each tensor's config is not checked)
    "sparsity_config": (
        "a sparsity config like {lhs={...} rhs={...}} (lhs and rhs separated by spaces)",
        re.compile(r"\{\s*(?:(?:lhs|rhs)=\s*\{[^{}]*+\}\s*)*+\}"),
    ),
    "control-predecessors": (
        "a braced list of instruction names like {add.1, %mul}",
        re.compile(CONTROL_PREDECESSORS),
    ),
    "origin": (
        'an original value like {{"name"}}, {({"a"}, {"b" {1}})} or {[synthetic_call]}',
        Checked(ORIGIN, strings_ok),
    ),
    "domain": (
        'a domain like {kind="sharding", entry={maximal device=0}, exit={replicated}} (kind'
        ' "sharding", entry and exit, each once)',
        Checked(DOMAIN, domain_ok),
    ),
    "padding_type": (
        "a padding type: PADDING_VALID or PADDING_SAME",
        enum("PADDING_VALID PADDING_SAME PADDING_INVALID"),
    ),
}


# integer tokens within the lexer's range, in every value that holds some
for _name in (
    *INT_LISTS.split(),
    *INTS.split(),
    *"window replica_groups source_target_pairs sharding slice output_to_operand_aliasing"
    " statistics result_accuracy".split(),
):
    _description, _syntax = ATTRIBUTE_SYNTAX[_name]
    assert not isinstance(_syntax, Scanned)
    ATTRIBUTE_SYNTAX[_name] = (_description, in_range(_syntax))


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
    as a constant's is (literals.literal_problem)."""
    shape = _LITERAL_SHAPE.match(text)
    if shape is None:
        return False
    written = squeezed(shape.group(1))
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
    return bool(rest) and shape_problem(written) is None and literal_problem(rest, written) is None


OTHER_TYPE: dict[str, dict[str, tuple[str, ValueSyntax] | None]] = {
    "custom-call": {
        "literal": (
            "a shape and a literal of it, like s32[] 1 or f32[2]{0} {1, 2} (a '{' right after"
            " an array shape is its layout)",
            Checked(_nested_groups(6), _custom_call_literal_ok),
        )
    },
    "shuffle": {"dimensions": None, "mode": ("a shuffle mode: rotate", enum("rotate"))},
    "scan": {"dimensions": None},
    "ragged-all-to-all": {"dimensions": None},
    **{
        opcode: {
            "slice_sizes": (
                "a braced list of integer lists like {{1},{2}}",
                in_range(re.compile(BRACED_INT_LISTS)),
            )
        }
        for opcode in ("collective-permute", "collective-permute-start")
    },
    "rng-bit-generator": {
        "algorithm": (
            "a random algorithm: rng_default, rng_three_fry or rng_philox",
            enum("rng_default rng_three_fry rng_philox", ignore_case=True),
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

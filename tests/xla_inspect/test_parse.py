"""parse_hlo on hand-written fixtures, real XLA output and malformed text."""

from __future__ import annotations

import gc
from pathlib import Path

import pytest

from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.model import HloInstruction, Shape
from xla_inspect.parse import parse_hlo

HERE = Path(__file__).parent
CORPUS_FILES = sorted(HERE.glob("corpus/*.hlo"))


def read_corpus(name: str) -> str:
    return (HERE / "corpus" / name).read_text()


def test_short_form_structure(hlo_short_text: str) -> None:
    module = parse_hlo(hlo_short_text)
    assert module.name == "jit_f"
    assert module.attributes["entry_computation_layout"].startswith("{(f32[8,16]{1,0}")
    assert [c.name for c in module.computations] == ["region_0.1", "main.2"]
    assert module.entry is module["main.2"] and module.entry.is_entry
    dot = module.entry["dot.1"]
    assert dot == HloInstruction(
        "dot.1",
        "dot",
        "f32[8,4]{1,0}",
        ("x.1", "w.1"),
        "lhs_contracting_dims={1}, rhs_contracting_dims={0}",
        False,
        None,
        13,
    )
    assert dot.attributes == {"lhs_contracting_dims": "{1}", "rhs_contracting_dims": "{0}"}
    assert module.entry.root.name == "tanh.1" and module.entry.root.is_root
    assert module.entry["x.1"].payload == "0" and module.entry["%x.1"] is module.entry["x.1"]
    assert module.entry.instruction("nope") is None
    with pytest.raises(KeyError):
        module.entry["nope"]
    assert module.entry.calls == ("region_0.1",)
    assert "region_0.1" in module and "%main.2" in module and "nope" not in module
    assert dot.shape_info.dims == (8, 4) and len(module.entry) == 6


def test_optimized_module_skips_frame_tables_and_keeps_metadata() -> None:
    module = parse_hlo(read_corpus("transformer_grad.opt.hlo"))
    assert module.attributes["is_scheduled"] == "true"
    names = {c.name for c in module.computations}
    assert not names & {"FileNames", "FunctionNames", "FileLocations", "StackFrames"}
    fusion = next(i for i in module.entry if i.opcode == "fusion")
    assert fusion.attribute("metadata", "").startswith('{op_name="jit(')
    assert fusion.attribute("kind") in {"kLoop", "kCustom"}
    assert all(i.name[0] != "%" and all(o[0] != "%" for o in i.operands) for i in module.entry)


def test_wrapped_instruction_is_joined(hlo_features_text: str) -> None:
    entry = parse_hlo(hlo_features_text).entry
    fusion = entry["fusion"]
    assert fusion.operands == ("arg",)
    assert fusion.line_no == 43
    assert fusion.attributes["calls"] == "%fused_exp"
    assert fusion.attributes["backend_config"] == '{"outer":{"inner":[1,2,{"deep":"]"}]}}'
    assert entry["c"].payload == "{ { 1, 2 }, { 3, 4 } }"


def test_grammar_corners(hlo_features_text: str) -> None:
    module = parse_hlo(hlo_features_text)
    entry = module.entry
    assert module.attributes["frontend_attributes"] == '{note="a, b {c}"}'
    assert entry["arg"].shape == "f32[8,128]{1,0:T(8,128)}"
    assert entry["arg"].attributes["metadata"] == (
        '{op_name="x \\"quoted\\" (y" source_file="a.py"}'
    )
    assert entry.root.shape == "(f32[8,128]{1,0}, /*index=1*/s32[])"
    assert entry.root.operands == ("pad", "idx")
    assert module["add"].root.operands == ("x", "y")
    assert entry["cond"].called_computations == ("true_branch", "false_branch")
    assert entry["sas"].called_computations == ("ge", "add")
    assert entry["win"].attributes["window"] == "{size=2x2 stride=2x2}"
    assert entry["ars"].attributes["replica_groups"] == "{{0}}"
    assert [i.opcode for i in entry][-10:-4] == [
        "all-reduce-start",
        "all-reduce-done",
        "collective-permute-start",
        "collective-permute-done",
        "async-start",
        "async-done",
    ]
    assert module["async_body"].root.name == "abs"


def test_root_defaults_to_last_instruction(hlo_features_text: str) -> None:
    fused = parse_hlo(hlo_features_text)["fused_exp"]
    assert fused.root.name == "sum2" and fused.root.is_root
    assert sum(i.is_root for i in fused) == 1


def test_compact_hand_written_spacing() -> None:
    module = parse_hlo(
        "HloModule m\nf {\n  ROOT q = f32[] parameter(0)\n}\n"
        "ENTRY e {\n  p = f32[]   parameter(0)\n"
        '  ROOT a = f32[] call(p),to_apply=%f,\n    metadata={op_name="("}\n}\n'
    )
    root = module.entry.root
    assert root.operands == ("p",) and root.called_computations == ("f",)
    assert root.attributes == {"to_apply": "%f", "metadata": '{op_name="("}'}
    assert module.entry["p"].payload == "0"


@pytest.mark.parametrize(
    "operands",
    [
        "p,, q",
        ",p, q",
        "p, q,",
        "f32[2,2]{0,1}%p, q",
        "f32[2, 2] p, q",
        "f32[<=2,2] p, q",
        "f32[2,2]\n p, /* c */ q",
        "\n p\n ,\n ,q",
    ],
)
def test_operand_spellings_xla_reads(operands: str) -> None:
    """Empty operands are skipped; a shape before an operand is compared with the operand's,
    its layout and dynamic bounds aside (each spelling is one XLA's parser accepts)."""
    text = (
        "HloModule m\nENTRY e {\n  p = f32[2,2]{1,0} parameter(0)\n"
        f"  q = f32[2,2]{{0,1}} parameter(1)\n  ROOT a = f32[2,2]{{1,0}} add({operands})\n}}\n"
    )
    assert parse_hlo(text).entry.root.operands == ("p", "q")


def test_garbage_collector_state_is_restored() -> None:
    gc.disable()
    try:
        parse_hlo(GOOD)
        assert not gc.isenabled()
    finally:
        gc.enable()
    parse_hlo(GOOD)
    assert gc.isenabled()


def test_entry_defaults_to_last_computation() -> None:
    module = parse_hlo(
        "HloModule m\nc {\n  ROOT p = f32[] parameter(0)\n}\n"
        "d {\n  ROOT q = f32[] parameter(0)\n}\n"
    )
    assert module.entry.name == "d" and not module.entry.is_entry


def test_header_is_optional_and_windows_line_endings_work() -> None:
    module = parse_hlo("ENTRY e {\r\n  ROOT p = f32[2] parameter(0)\r\n}\r\n")
    assert module.name == "" and module.entry.root.shape == "f32[2]"


@pytest.mark.parametrize(
    ("text", "dtype", "dims", "dynamic", "layout", "order"),
    [
        ("f32[8,16]{1,0}", "f32", (8, 16), (False, False), "{1,0}", (1, 0)),
        ("bf16[2]{0:T(128)(2,1)S(1)}", "bf16", (2,), (False,), "{0:T(128)(2,1)S(1)}", (0,)),
        ("s32[<=4,?]", "s32", (4, None), (True, True), None, None),
        ("pred[]", "pred", (), (), None, None),
    ],
)
def test_array_shapes(
    text: str, dtype: str, dims: tuple, dynamic: tuple, layout: str | None, order: tuple | None
) -> None:
    shape = Shape(text)
    assert (shape.dtype, shape.dims, shape.dynamic_dims) == (dtype, dims, dynamic)
    assert (shape.layout, shape.minor_to_major, shape.is_tuple) == (layout, order, False)


def test_tuple_shape() -> None:
    shape = Shape("((f32[2]{0}, /*index=1*/s32[]), c64[3,3]{0,1})")
    assert shape.is_tuple and shape.dtype is None and shape.dims == ()
    assert [e.text for e in shape.elements] == ["(f32[2]{0}, s32[])", "c64[3,3]{0,1}"]
    assert shape.elements[0].elements[1].dtype == "s32"


@pytest.mark.parametrize("path", CORPUS_FILES, ids=lambda p: p.name)
def test_every_corpus_module_parses(path) -> None:
    module = parse_hlo(path.read_text())
    assert module.entry in module.computations
    assert all(len(c.instructions) > 0 for c in module.computations)


GOOD = "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT a = f32[2] add(p, p)\n}\n"


@pytest.mark.parametrize(
    ("text", "line_no", "expected"),
    [
        ("", 1, "at least one computation"),
        ("HloModule m\n", 2, "at least one computation"),
        ("HloModule m\nENTRY e {\n", 3, "'}' to close computation 'e'"),
        (GOOD.replace("add(p, p)", "add(p, p"), 4, "')' to close this '(' (before '}' at 5:1)"),
        (GOOD.replace("add(p, p)\n}", "add(p, p"), 4, "'(' (before the end of the text)"),
        (GOOD.replace("add(p, p)", "add(p, p))"), 4, "',' before attributes after the operand"),
        (GOOD.replace("add(p, p)", "add(p, p), m={a=(1}"), 4, "')' to close this '(' (before '}'"),
        (GOOD.replace("add(p, p)", 'add(p, p), m="x'), 4, "'\"' to close the string"),
        (GOOD.replace("ROOT a", "p"), 4, "a new instruction name, not 'p'"),
        (
            GOOD.replace("  p = f32[2] parameter(0)\n", "  ROOT p = f32[2] parameter(0)\n"),
            4,
            "one ROOT in computation 'e'",
        ),
        (GOOD.replace("add(p, p)", "add(p, q)"), 4, "operand 'q' defined earlier"),
        (GOOD.replace("add(p, p)", "add(p p)"), 4, "an operand as 'name' or 'shape name'"),
        (GOOD.replace("add(p, p)", "add(f32 f32[2] p, p)"), 4, "'name' or 'shape name'"),
        (GOOD.replace("add(p, p)", "add(f32[3] p, p)"), 4, "the shape of operand 'p', f32[2]"),
        (GOOD.replace("add(p, p)", "add(s32[2] p, p)"), 4, "the shape of operand 'p', f32[2]"),
        (GOOD.replace("add(p, p)", "add(a, p)"), 4, "operand 'a' defined earlier"),
        (GOOD.replace("f32[2] parameter", "f32[2 parameter"), 3, "',' or ']' in the dimensions"),
        (GOOD.replace("f32[2] parameter", "float[2] parameter"), 3, "a shape like"),
        (GOOD.replace("parameter(0)", "parameter(x)"), 3, "a parameter number"),
        (GOOD.replace("a = f32[2] add", "a f32[2] add"), 4, "'=' after the instruction name 'a'"),
        (GOOD.replace("a = f32[2] add", "a=f32[2] add"), 4, "'a=' without a space"),
        (GOOD.replace("f32[2] add(p, p)", "(f32[2], ) add(p, p)"), 4, "a shape like"),
        (GOOD.replace("add(p, p)", "add(p, p) kind=kLoop"), 4, "',' before attributes"),
        (GOOD.replace("}\n", "} x\n"), 5, "a computation header"),
        (GOOD.replace("}\n", "}, x\n"), 5, "'}' or '}, execution_thread="),
        (
            GOOD + GOOD.replace("HloModule m\n", "").replace("e {", "f {"),
            6,
            "one ENTRY (already 'e')",
        ),
        (GOOD + "e {\n  ROOT z = f32[] parameter(0)\n}\n", 6, "a new computation name, not 'e'"),
        (GOOD + "HloModule n\n", 6, "one 'HloModule' header"),
        ("HloModule m, x\nENTRY e {\n  ROOT p = f32[] parameter(0)\n}", 1, "module attributes"),
        (
            "HloModule m\nENTRY e (p: f32[]) -> f32[]\n  ROOT p = f32[] parameter(0)\n}",
            3,
            "a computation header",
        ),
        ("HloModule m\nENTRY e {\n}\n", 3, "at least one instruction in 'e'"),
        (GOOD.replace("add(p, p)", "call(p), to_apply=nope"), 4, "a computation named 'nope'"),
        (
            GOOD.replace(
                "add(p, p)", 'custom-call(p), custom_call_target="f", called_computations={e, gone}'
            ),
            4,
            "a computation named 'gone'",
        ),
        (GOOD.replace("add(p, p)", "transpose(p)"), 4, "'transpose' requires: dimensions="),
        (
            GOOD.replace(
                "ROOT a = f32[2] add(p, p)",
                "t = f32[2] transpose(p), dimensions={0}\n  ROOT a = f32[2] transpose(t)",
            ),
            5,
            "'transpose' requires: dimensions=",
        ),
        # parameter numbers with a gap: XLA's parser aborts the process (a CHECK), so no oracle
        (
            GOOD.replace("add(p, p)", "add(p, q)").replace(
                "ROOT a", "q = f32[2] parameter(2)\n  ROOT a"
            ),
            4,
            "parameter numbers 0 to 1 in 'e' (2 parameters), not 2",
        ),
        # a form feed inside a multi-line attribute value: XLA's lexer skips only ' \t\r\n'
        (GOOD.replace("add(p, p)", 'add(p, p), metadata={op_name="x"\n \f y}'), 5, "a value"),
    ],
)
def test_malformed_text_raises_parse_error(text: str, line_no: int, expected: str) -> None:
    with pytest.raises(HloParseError) as info:
        parse_hlo(text)
    assert (info.value.line_no, expected in info.value.expected) == (line_no, True), info.value


def test_parse_error_message_is_one_line_with_truncated_text() -> None:
    line = "  ROOT a = f32[2] add(p, x)" + ", x=1" * 100
    with pytest.raises(HloParseError) as info:
        parse_hlo(GOOD.replace("  ROOT a = f32[2] add(p, p)", line))
    message = str(info.value)
    assert isinstance(info.value, InspectError)
    assert message.startswith("line 4: expected ")
    # the line is cut to 120 characters, whatever was expected
    shown_at_most = (
        len("line 4: expected ") + len(info.value.expected) + len(" (at 4:NN), got: ") + 120
    )
    assert "\n" not in message and message.endswith("...") and len(message) <= shown_at_most


def test_tuple_element_operands_of_loop_bodies():
    # XLA 0.12 dumps print loop-carried tuple elements as '%arg_tuple.1#1' (seen in
    # cpu_after_optimizations.txt of a fori_loop).
    text = """HloModule m
%body (arg_tuple.1: (s32[], f32[3])) -> f32[3] {
  %arg_tuple.1 = (s32[], f32[3]{0}) parameter(0)
  ROOT %neg = f32[3]{0} negate(%arg_tuple.1#1)
}
ENTRY %main (p: (s32[], f32[3])) -> f32[3] {
  %p = (s32[], f32[3]{0}) parameter(0)
  ROOT %c = f32[3]{0} call(%p), to_apply=%body
}
"""
    body = parse_hlo(text)["body"]
    assert body.root.operands == ("arg_tuple.1#1",)
    # XLA's parser turns 'name#N' into a get-tuple-element; so does this reader
    element = body["arg_tuple.1#1"]
    assert (element.opcode, element.shape, element.operands, element.attribute("index")) == (
        "get-tuple-element",
        "f32[3]{0}",
        ("arg_tuple.1",),
        "1",
    )
    assert [i.name for i in body] == ["arg_tuple.1", "arg_tuple.1#1", "neg"]
    with pytest.raises(HloParseError, match="'arg_tuple.1#N' with N an element of its shape"):
        parse_hlo(text.replace("negate(%arg_tuple.1#1)", "negate(%arg_tuple.1#2)"))
    with pytest.raises(HloParseError, match="operand 'missing#1'"):
        parse_hlo(text.replace("negate(%arg_tuple.1#1)", "negate(%missing#1)"))


def test_malformed_layout_is_a_parse_error():
    # found by test_fuzz: '{,32,1,0}' used to parse and then break Shape.minor_to_major
    with pytest.raises(HloParseError) as raised:
        parse_hlo("HloModule m\nENTRY e {\n  ROOT p = f32[2,3]{,1,0} parameter(0)\n}\n")
    assert raised.value.line_no == 3


@pytest.mark.parametrize(
    "text",
    [
        GOOD + "FileNames x\n",  # found by a longer fuzz run: the table keyword looped forever
        "FileNames 1\n" + GOOD,
        GOOD.replace("HloModule m\n", "HloModule m\nStackFrames {\n"),
    ],
)
def test_frame_table_keywords_in_odd_places_terminate(text: str) -> None:
    import signal

    def too_slow(*_: object) -> None:
        raise TimeoutError("parse_hlo did not finish in 5 s")

    previous = signal.signal(signal.SIGALRM, too_slow)
    signal.alarm(5)
    try:
        parse_hlo(text)
    except HloParseError:
        pass
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


# TPU and GPU modules (recorded for phase 12 from deviceless compiles)
SAMPLE_FILES = sorted((HERE.parent.parent / "katas" / "phase12" / "recorded").glob("*.hlo"))


@pytest.mark.parametrize("path", CORPUS_FILES + SAMPLE_FILES, ids=lambda p: p.name)
def test_attribute_lookup_agrees_with_the_split_attribute_list(path) -> None:
    """`attribute(key)` takes a shortcut for a top-level key named once; it must give what
    splitting the whole list gives, for every key present and for keys absent or nested."""
    module = parse_hlo(path.read_text())
    nested = ("op_name", "source_line", "kind", "calls", "absent")
    for computation in module.computations:
        for instruction in computation.instructions:
            attributes = instruction.attributes
            for key in (*attributes, *nested):
                assert instruction.attribute(key) == attributes.get(key), (instruction.name, key)


@pytest.mark.parametrize(
    ("text", "key", "value"),
    [
        ('kind=kLoop, metadata={op_name="kind=kOutput"}', "kind", "kLoop"),
        ('metadata={op_name="a, kind=x"}, kind=kInput', "kind", "kInput"),
        ('frontend_attributes={kind="a"}, kind=kLoop', "kind", "kLoop"),
        ("kind=kLoop, kind=kInput", "kind", "kInput"),
        ("dimensions={0,1}, to_apply=%add", "dimensions", "{0,1}"),
        ("fusion_kind=kLoop", "kind", None),
    ],
)
def test_attribute_lookup_of_nested_and_repeated_names(text: str, key: str, value) -> None:
    instruction = HloInstruction("x", "fusion", "f32[]", (), text, True, None, 1)
    assert instruction.attribute(key) == instruction.attributes.get(key) == value


def test_peak_memory_stays_under_four_times_the_text() -> None:
    """The reader never holds a second copy of the text (a list of its lines)."""
    import tracemalloc

    text = read_corpus("transformer_grad.opt.hlo")
    gc.collect()
    tracemalloc.start()
    try:
        parse_hlo(text)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 4 * len(text.encode())

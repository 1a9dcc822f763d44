"""The reader agrees with XLA's parser (jaxlib._hlo, see test_oracle.py) on frame tables (their
order and rows) and on async ops: the sugar (`abs-start`), the generic form, and how XLA links
a chain."""

from __future__ import annotations

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from kata_harness import versions
from xla_inspect.errors import HloParseError
from xla_inspect.parse import parse_hlo

from .xla_verdicts import (
    our_verdict,
    xla_verdict,
)

_hlo = pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
if not hasattr(_hlo, "hlo_module_from_text"):
    pytest.skip(
        "jaxlib._hlo.hlo_module_from_text is absent in this jaxlib", allow_module_level=True
    )


# -- frame tables: their order and their rows ----------------------------------------------------

_LOCATION = "1 {file_name_id=1 function_name_id=1 line=4 end_line=4 column=2 end_column=9}"
_FRAME = "1 {file_location_id=1 parent_frame_id=0}"
_TABLE_ROWS = {
    "FileNames": ['1 "model.py"', "1 model.py", '1 "a" "b"', "1 'model.py'", '1\n"model.py"'],
    "FunctionNames": ['1 "forward"', "1 {x=1}"],
    "FileLocations": [
        _LOCATION,
        _LOCATION.replace(" column=2", ""),
        _LOCATION.replace(" ", ", ").replace("1,", "1", 1),
        _LOCATION.replace("line=4 ", "line=x ", 1),
        _LOCATION.replace("}", " foo=1}"),
        _LOCATION.replace(" line=4", "\n     line=4"),
        _LOCATION.replace("1 {", "1\n {", 1),
    ],
    "StackFrames": [
        _FRAME,
        "1 {file_location_id=1}",
        "1 {file_location_id=1 parent_frame_id=0 3}",
        "1 {file_location_id=1 parens_frame_id=0}",
        "1 {file_location_id=1 parent_frame_id=0 file_location_id=1}",
        "1{ parent_frame_id=0 , file_location_id=1 }",
    ],
}


@st.composite
def frame_tables(draw: st.DrawFn) -> str:
    """A module whose frame tables are drawn: each of the four with one of its rows (some
    malformed), now and then one left out, the tables indented or not."""
    indent = draw(st.sampled_from(["", "  "]))
    lines = ["HloModule m"]
    for table, rows in _TABLE_ROWS.items():
        if draw(st.integers(0, 5)) == 0:
            continue
        lines += [table, draw(st.sampled_from(rows))]
    lines += ["ENTRY e {", "  ROOT p = f32[] parameter(0), metadata={stack_frame_id=1}", "}"]
    return "".join(indent + line + "\n" for line in "\n".join(lines).split("\n"))


@settings(max_examples=80, deadline=None, derandomize=True)
@given(frame_tables())
def test_frame_tables_match_xla(text: str) -> None:
    assert our_verdict(text) == xla_verdict(text)


# -- async ops: sugar (`abs-start`) and the generic form, and how XLA links a chain -------------

_ASYNC_MODULE = """HloModule m
%sum (a: f32[], b: f32[]) -> f32[] {
  a = f32[] parameter(0)
  b = f32[] parameter(1)
  ROOT s = f32[] add(a, b)
}
%neg (w: f32[4]) -> f32[4] {
  w = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(w)
}
%abs (w: f32[4]) -> f32[4] {
  w = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} abs(w)
}
ENTRY e {
  p = f32[4]{0} parameter(0)
  q = f32[4]{0} parameter(1)
  t = ((f32[4]{0}), f32[4]{0}, s32[]) parameter(2)
BODY
}
"""
_S1 = "((f32[4]{0}), f32[4]{0}, s32[])"
_S2 = "((f32[4]{0}, f32[4]{0}), f32[4]{0}, s32[])"
# each body, as XLA's parser (jaxlib 0.12) reads it: a chain of async ops in many spellings
ASYNC_BODIES = {
    "sugar": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "sugar with updates": (
        "st = <S2> add-start(p, q)\nua = <S2> add-update(st)\nub = <S2> add-update(ua)\n"
        "ROOT d = f32[4]{0} add-done(ub)"
    ),
    # XLA builds the wrapped op from the start's shape, not its operands
    "operands not read": "st = <S1> add-start()\nROOT d = f32[4]{0} add-done(st)",
    "more operand shapes than taken": "st = <S2> abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "two elements": "st = ((f32[4]{0}), f32[4]{0}) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "start as ROOT": "ROOT st = <S1> abs-start(p)",
    "done twice": (
        "st = <S1> abs-start(p)\nd = f32[4]{0} abs-done(st)\nROOT e = f32[4]{0} abs-done(st)"
    ),
    "collective": (
        "st = ((f32[4]{0}), f32[2]{0}, s32[]) reduce-scatter-start(p), dimensions={0}, "
        "to_apply=%sum, replica_groups={}\nROOT d = f32[2]{0} reduce-scatter-done(st)"
    ),
    "custom-call": (
        'st = <S1> custom-call-start(p, q), custom_call_target="x"\n'
        "ROOT d = f32[4]{0} custom-call-done(st)"
    ),
    "tuple": "st = ((), (), s32[]) tuple-start()\nROOT d = () tuple-done(st)",
    "tuple of another arity": (
        "st = ((f32[4]{0}, f32[4]{0}), (f32[4]{0}), s32[]) tuple-start(p, q)\n"
        "ROOT d = (f32[4]{0}) tuple-done(st)"
    ),
    "threads": (
        'st = <S1> abs-start(p), async_execution_thread="x"\n'
        'ua = <S1> abs-update(st)\nROOT d = f32[4]{0} abs-done(ua), async_execution_thread="x"'
    ),
    "metadata": (
        'st = <S1> abs-start(p), metadata={op_name="a"}\n'
        'ROOT d = f32[4]{0} abs-done(st), metadata={op_name="b"}'
    ),
    "generic": "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st)",
    "generic, calls on all": (
        "st = <S1> async-start(p), calls=%neg\nua = <S1> async-update(st), calls=%neg\n"
        "ROOT d = f32[4]{0} async-done(ua), calls=%neg"
    ),
    "generic then sugar": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} negate-done(st)"
    ),
    "sugar then generic": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} async-done(st)",
    "one computation, two starts": (
        "st = <S1> async-start(p), calls=%neg\nd = f32[4]{0} async-done(st)\n"
        "sb = <S1> async-start(d), calls=%neg\nROOT db = f32[4]{0} async-done(sb)"
    ),
    "done of a parameter": "ROOT d = f32[4]{0} abs-done(p)",
    "update of a parameter": "ua = <S1> abs-update(p)\nROOT d = f32[4]{0} abs-done(ua)",
    "done of a tuple parameter": "ROOT d = f32[4]{0} negate-done(t), calls=%neg",
    "done of a native start": (
        "st = (f32[4]{0}, f32[8]{0}) all-gather-start(p), dimensions={0}, replica_groups={}\n"
        "ROOT d = f32[8]{0} async-done(st)"
    ),
    "a second operand": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(p, st)",
    "an array start": "st = f32[4]{0} abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "operands not a tuple": (
        "st = (f32[4]{0}, f32[4]{0}, s32[]) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)"
    ),
    "one element": "st = ((f32[4]{0})) abs-start(p)\nROOT d = f32[4]{0} abs-done(st)",
    "an array update": (
        "st = <S1> abs-start(p)\nua = f32[4]{0} abs-update(st)\nROOT d = f32[4]{0} abs-done(ua)"
    ),
    "generic array start": (
        "st = f32[4]{0} async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st)"
    ),
    "another wrapped op done": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} negate-done(st)",
    "another wrapped op update": (
        "st = <S1> abs-start(p)\nua = <S1> negate-update(st)\nROOT d = f32[4]{0} abs-done(ua)"
    ),
    "sugar done of another computation": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} abs-done(st)"
    ),
    "done of a done": (
        "st = <S1> abs-start(p)\nd = f32[4]{0} abs-done(st)\nROOT e = f32[4]{0} abs-done(d)"
    ),
    "update of a done": (
        "st = <S1> async-start(p), calls=%neg\nd = <S1> async-done(st)\n"
        "ROOT ua = <S1> async-update(d)"
    ),
    "done without operand": "ROOT d = f32[4]{0} abs-done()",
    "calls on sugar": "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st), calls=%abs",
    "another calls": (
        "st = <S1> async-start(p), calls=%neg\nROOT d = f32[4]{0} async-done(st), calls=%abs"
    ),
    "no calls": "st = <S1> async-start(p)\nROOT d = f32[4]{0} async-done(st)",
    "another thread": (
        'st = <S1> abs-start(p), async_execution_thread="x"\n'
        'ROOT d = f32[4]{0} abs-done(st), async_execution_thread="y"'
    ),
    "another thread than main": (
        "st = <S1> async-start(p), calls=%neg\n"
        'ua = <S1> async-update(st), async_execution_thread="y"\nROOT d = f32[4]{0} async-done(ua)'
    ),
    "an attribute of the wrapped op on done": (
        "st = <S1> abs-start(p)\nROOT d = f32[4]{0} abs-done(st), dimensions={0}"
    ),
    "called by another op too": (
        "st = <S1> async-start(p), calls=%neg\nd = f32[4]{0} async-done(st)\n"
        "ROOT c = f32[4]{0} call(d), to_apply=%neg"
    ),
    "called by an op before": (
        "f = f32[4]{0} fusion(p), kind=kLoop, calls=%neg\n"
        "st = <S1> async-start(f), calls=%neg\nROOT d = f32[4]{0} async-done(st)"
    ),
    "a start of an op with async opcodes": (
        "tk = token[] after-all()\nst = <S1> send-start(p, tk), channel_id=1\n"
        "ROOT d = f32[4]{0} send-done(st)"
    ),
    "an update of a native start": (
        "st = (f32[4]{0}, f32[8]{0}) all-gather-start(p), dimensions={0}, replica_groups={}\n"
        "ua = (f32[4]{0}, f32[8]{0}) all-gather-update(st)\nROOT d = f32[8]{0} all-gather-done(ua)"
    ),
}


def _async_module(body: str) -> str:
    """The module with `body` (<S1>, <S2>: start shapes of one and two operands) in its entry."""
    body = body.replace("<S1>", _S1).replace("<S2>", _S2)
    return _ASYNC_MODULE.replace("BODY\n", "".join(f"  {line}\n" for line in body.splitlines()))


@versions.requires_jax("xla-attribute-table")
@pytest.mark.parametrize("body", list(ASYNC_BODIES.values()), ids=list(ASYNC_BODIES))
def test_async_ops_match_xla(body: str) -> None:
    """Accepted or rejected as XLA does; when accepted, a sugar op counts as XLA holds it (an
    async-start calling a computation of parameters and the wrapped op), not as written."""
    text = _async_module(body)
    assert our_verdict(text) == xla_verdict(text)


_ASYNC_WRAPPED = ["abs", "negate", "add", "select", "clamp", "tuple", "iota"]


@st.composite
def async_chain(draw: st.DrawFn) -> str:
    """A start (sugar of one of _ASYNC_WRAPPED with an operand tuple of 0-4 shapes, or generic),
    0-2 updates and 0-2 dones, each sugar of any of them or generic, with or without a
    thread, each continuing the op before it or another."""
    wrapped = draw(st.sampled_from(_ASYNC_WRAPPED))
    count = draw(st.integers(0, 4))
    operands = "(" + ", ".join(["f32[4]{0}"] * count) + ")"
    shape = f"({operands}, f32[4]{{0}}, s32[])"
    threads = st.sampled_from(
        ["", ', async_execution_thread="main"', ', async_execution_thread="x"']
    )
    attribute = ", iota_dimension=0" if wrapped == "iota" else ""
    if draw(st.booleans()):
        lines = [f"a0 = {shape} {wrapped}-start(p){attribute}{draw(threads)}"]
    else:
        lines = [f"a0 = {shape} async-start(p), calls=%{draw(st.sampled_from(['neg', 'abs']))}"]
    names = ["a0"]
    for kind in ["update"] * draw(st.integers(0, 2)) + ["done"] * draw(st.integers(0, 2)):
        spelled = draw(st.sampled_from([*_ASYNC_WRAPPED[:3], "async"]))
        result = shape if kind == "update" or draw(st.booleans()) else "f32[4]{0}"
        operand = draw(st.sampled_from(names[-2:]))
        name = f"a{len(names)}"
        lines.append(f"{name} = {result} {spelled}-{kind}({operand}){draw(threads)}")
        names.append(name)
    return "\n".join(lines)


@versions.requires_jax("xla-attribute-table")
@settings(max_examples=80, deadline=None, derandomize=True)
@given(async_chain())
def test_async_chains_match_xla(body: str) -> None:
    text = _async_module(body)
    assert our_verdict(text) == xla_verdict(text)


# XLA's parser (jaxlib 0.12) crashes the process on these (a failed CHECK or worse): the reader
# rejects them, one line each
XLA_CANNOT_BUILD = {
    "an attribute the wrapped op does not take": "st = <S1> abs-start(p), dimensions={0}",
    "calls on sugar start": "st = <S1> abs-start(p), calls=%abs",
    "a required attribute missing": (
        "st = ((f32[4]{0}), f32[2]{0}, s32[]) reduce-scatter-start(p), dimensions={0}, "
        "replica_groups={}"
    ),
    "no custom_call_target": "st = <S1> custom-call-start(p)",
    "a thread not a string": "st = <S1> abs-start(p), async_execution_thread=x",
    "parameter": "st = <S1> parameter-start(p)",
    "constant": "st = ((), f32[], s32[]) constant-start()",
    "async-start": "st = <S1> async-start-start(p)",
    "a reshape of another size": "st = ((f32[4]{0}), f32[5]{0}, s32[]) reshape-start(p)",
    "a partition-id not u32[]": "st = ((), f32[4]{0}, s32[]) partition-id-start()",
    "a replica-id not u32[]": "r = f32[4]{0} replica-id()",
}


@pytest.mark.parametrize("line", list(XLA_CANNOT_BUILD.values()), ids=list(XLA_CANNOT_BUILD))
def test_async_sugar_xla_cannot_build_is_rejected(line: str) -> None:
    with pytest.raises(HloParseError) as ours:
        parse_hlo(_async_module("ROOT " + line))
    assert ours.value.line_no == _ASYNC_MODULE.count("\n", 0, _ASYNC_MODULE.index("BODY")) + 1
    assert "\n" not in str(ours.value)


def test_async_sugar_is_held_as_xla_holds_it() -> None:
    """`X-start` is an async-start calling a new computation `async_wrapped` whose ROOT is X
    with the start's attributes, and the update and done call it too."""
    module = parse_hlo(_async_module(ASYNC_BODIES["collective"]))
    start, done = module.entry["st"], module.entry["d"]
    assert (start.opcode, done.opcode) == ("async-start", "async-done")
    assert start.called_computations == done.called_computations == ("async_wrapped",)
    wrapped = module["async_wrapped"]
    assert [i.opcode for i in wrapped] == ["parameter", "reduce-scatter"]
    assert wrapped.root.attribute("to_apply") == "%sum"
    assert wrapped.root.shape == "f32[2]{0}"

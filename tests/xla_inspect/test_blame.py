"""blame: which pass created, removed or absorbed one instruction, from real per-pass dumps.

One compile of a program built so that XLA must fold a transpose into a dot, fuse an elementwise
chain, fold a constant sort and copy a parameter that is also an output. The instruction names
are read from the dump files with `parse_hlo`; each answer is checked against the timeline's
opcode deltas, the dumped file after the blamed pass, or NumPy.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from xla_inspect.blame import Blame, BlameError, blame
from xla_inspect.capture import Capture, capture
from xla_inspect.cli import main
from xla_inspect.model import HloInstruction, HloModule
from xla_inspect.parse import parse_hlo
from xla_inspect.passes import PassStep, first_pass_adding, first_pass_removing, pass_timeline

_TABLE = np.array([3.0, 1.0, 2.0, 0.5], np.float32)


def _program(x, w, v):
    table = jnp.sort(jnp.asarray(_TABLE))
    y = jnp.tanh(x @ w.T) * 2.0 + 1.0
    h = x
    for _ in range(2):  # two layers alike: the same opcode, shape and op_name
        h = jnp.sin(h @ v)
    return y, x, table, h


@pytest.fixture(scope="module")
def xi_blame_capture(tmp_path_factory: pytest.TempPathFactory) -> Capture:
    shapes = ((4, 8), (6, 8), (8, 8))
    args = tuple(jax.ShapeDtypeStruct(shape, jnp.float32) for shape in shapes)
    dump = tmp_path_factory.mktemp("blame")
    return capture(_program, *args, dump_dir=dump, dump_passes=True)


@pytest.fixture(scope="module")
def xi_blame_timeline(xi_blame_capture: Capture) -> list[PassStep]:
    assert xi_blame_capture.dump_dir is not None
    return pass_timeline(xi_blame_capture.dump_dir, xi_blame_capture.dump_module)


def _blame(cap: Capture, name: str) -> Blame:
    assert cap.dump_dir is not None
    return blame(cap.dump_dir, name, cap.dump_module)


def _first_module(cap: Capture) -> HloModule:
    assert cap.dump_dir is not None
    return parse_hlo((cap.dump_dir / f"{cap.dump_module}.before_optimizations.txt").read_text())


def _last_module(cap: Capture, timeline: list[PassStep]) -> HloModule:
    return parse_hlo(timeline[-1].path.read_text())


def _only(module: HloModule, opcode: str) -> HloInstruction:
    (found,) = [i for c in module for i in c if i.opcode == opcode]
    return found


def _by_name(module: HloModule) -> dict[str, HloInstruction]:
    return {i.name: i for c in module for i in c}


def _step(timeline: list[PassStep], seq: int) -> PassStep:
    (step,) = [s for s in timeline if s.seq == seq]
    return step


def test_transpose_folded_into_the_dot(xi_blame_capture, xi_blame_timeline) -> None:
    transpose = _only(_first_module(xi_blame_capture), "transpose")
    result = _blame(xi_blame_capture, transpose.name)
    assert (result.side, result.opcode, result.final_name) == ("unoptimized", "transpose", None)
    removed = result.events[-1]
    assert removed.kind == "removed"
    expected = first_pass_removing(xi_blame_timeline, "transpose")
    assert expected is not None
    assert (removed.seq, removed.pass_name) == (expected.seq, expected.pass_name)
    # in the file after that pass a dot reads the transpose's operand directly
    after = parse_hlo(expected.path.read_text())
    assert removed.after == transpose.operands
    assert any(i.opcode == "dot" and transpose.operands[0] in i.operands for i in after.entry)


def test_elementwise_chain_absorbed_into_a_fusion(xi_blame_capture, xi_blame_timeline) -> None:
    tanh = _only(_first_module(xi_blame_capture), "tanh")
    result = _blame(xi_blame_capture, tanh.name)
    absorbed = [e for e in result.events if e.kind == "absorbed"]
    assert absorbed, result.events
    assert _step(xi_blame_timeline, absorbed[0].seq).opcode_deltas.get("fusion", 0) > 0
    last = _last_module(xi_blame_capture, xi_blame_timeline)
    assert result.final_fusion is not None and result.final_name is not None
    fusion = _by_name(last)[result.final_fusion]
    assert fusion.opcode == "fusion"
    (called,) = fusion.called_computations
    assert last[called][result.final_name].opcode == "tanh"
    # and backwards: the fusion was created from the chain's instructions
    made = _blame(xi_blame_capture, fusion.name)
    assert made.side == "optimized" and made.start_name is None
    assert made.events[0].kind == "created"
    first = _first_module(xi_blame_capture)
    chain = {
        i.name
        for i in first.entry
        if i.opcode in ("tanh", "multiply", "add") and i.shape.startswith("f32[4,6]")
    }
    assert chain <= set(made.events[0].before)


def test_constant_sort_folded(xi_blame_capture, xi_blame_timeline) -> None:
    sort = _only(_first_module(xi_blame_capture), "sort")
    result = _blame(xi_blame_capture, sort.name)
    removed = result.events[-1]
    assert removed.kind == "removed"
    expected = first_pass_removing(xi_blame_timeline, "sort")
    assert expected is not None and removed.seq == expected.seq
    (replacement,) = removed.after
    folded = _by_name(parse_hlo(expected.path.read_text()))[replacement]
    assert folded.opcode == "constant"
    values = [float(v) for v in re.findall(r"[-\d.e]+", folded.payload or "")]
    np.testing.assert_array_equal(values, np.sort(_TABLE))
    # the folded constant, read from the optimized module, names the pass and the sort
    assert replacement in _by_name(_last_module(xi_blame_capture, xi_blame_timeline))
    made = _blame(xi_blame_capture, replacement)
    created = made.events[0]
    assert (created.kind, created.seq) == ("created", expected.seq)
    assert made.origin_recorded and created.before == removed.before
    assert (
        _by_name(parse_hlo(_prior_file(xi_blame_timeline, expected)))[removed.before[0]].opcode
        == "sort"
    )


def _prior_file(timeline: list[PassStep], step: PassStep) -> str:
    """The text just before `step`: the previous changed file (the before_optimizations file when
    `step` is the first change)."""
    index = timeline.index(step)
    if index:
        return timeline[index - 1].path.read_text()
    module = step.path.name.split(".")[:2]
    return step.path.with_name(".".join(module) + ".before_optimizations.txt").read_text()


def test_repeated_layers_are_told_apart(xi_blame_capture, xi_blame_timeline) -> None:
    first, second = [i for i in _first_module(xi_blame_capture).entry if i.opcode == "sine"]
    assert first.name in _by_name(_first_module(xi_blame_capture))[second.operands[0]].operands
    fusions = [_blame(xi_blame_capture, s.name).final_fusion for s in (first, second)]
    assert None not in fusions and fusions[0] != fusions[1]
    # the second layer's fusion is computed from the first layer's, in the optimized module
    entry = _by_name(_last_module(xi_blame_capture, xi_blame_timeline))
    assert fusions[1] is not None
    todo, upstream = list(entry[fusions[1]].operands), set()
    while todo:
        name = todo.pop()
        if name in entry and name not in upstream:
            upstream.add(name)
            todo.extend(entry[name].operands)
    assert fusions[0] in upstream


def test_copy_added_has_no_recorded_origin(xi_blame_capture, xi_blame_timeline) -> None:
    last = _last_module(xi_blame_capture, xi_blame_timeline)
    x = next(i for i in last.entry if i.opcode == "parameter" and i.payload == "0")
    (copy,) = [i for i in last.entry if i.opcode == "copy" and i.operands == (x.name,)]
    result = _blame(xi_blame_capture, copy.name)
    created = result.events[0]
    expected = first_pass_adding(xi_blame_timeline, "copy")
    assert expected is not None
    assert (created.kind, created.seq, created.pass_name) == (
        "created",
        expected.seq,
        expected.pass_name,
    )
    assert not result.origin_recorded and created.before == ()
    assert x.name in result.context


def test_parameter_kept_from_the_start(xi_blame_capture, xi_blame_timeline) -> None:
    first = _first_module(xi_blame_capture)
    x = next(i for i in first.entry if i.opcode == "parameter" and i.payload == "0")
    result = _blame(xi_blame_capture, x.name)
    assert (result.side, result.start_name, result.final_name) == ("optimized", x.name, x.name)


def test_cli_text_json_and_errors(xi_blame_capture, capsys, tmp_path: Path) -> None:
    tanh = _only(_first_module(xi_blame_capture), "tanh")
    dump = str(xi_blame_capture.dump_dir)
    module = ["--module", xi_blame_capture.dump_module]
    assert main(["blame", dump, tanh.name, *module]) == 0
    text = capsys.readouterr().out
    assert text.startswith(f"{tanh.name}: tanh f32[4,6]")
    assert "absorbed by #" in text and "in the optimized module as " in text
    assert main(["blame", dump, f"%{tanh.name}", *module, "--json"]) == 0
    data = json.loads(capsys.readouterr().out)
    assert data["name"] == tanh.name and data["side"] == "unoptimized"
    assert {e["kind"] for e in data["events"]} >= {"absorbed"}
    assert main(["blame", dump, tanh.name + "x", *module]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"close names: {tanh.name}" in err
    assert main(["blame", str(tmp_path), "anything"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "--passes --out DIR" in err


HLO = """\
HloModule jit_f

ENTRY %main (p: f32[4]) -> f32[4] {{
  %p = f32[4]{{0}} parameter(0), metadata={{op_name="p"}}
{body}
}}
"""


def _dump(directory: Path, *bodies: str) -> None:
    (directory / "module_0001.jit_f.before_optimizations.txt").write_text(
        HLO.format(body=bodies[0])
    )
    for seq, body in enumerate(bodies[1:]):
        name = f"module_0001.jit_f.{seq:04d}.pipe.after_pass{seq}.before_next.txt"
        (directory / name).write_text(HLO.format(body=body))


def test_renamed_instruction_is_followed_by_op_name_opcode_and_shape(tmp_path: Path) -> None:
    neg = '  %{} = f32[4]{{0}} negate(%p), metadata={{op_name="jit(f)/{}"}}\n'
    root = "  ROOT %r = f32[4]{{0}} abs(%{})"
    _dump(
        tmp_path,
        neg.format("neg.1", "neg") + root.format("neg.1"),
        neg.format("neg.7", "neg") + root.format("neg.7"),
        neg.format("neg.9", "other") + root.format("neg.9"),
    )
    result = blame(tmp_path, "neg.1")
    assert [(e.kind, e.pass_name, e.before, e.after) for e in result.events] == [
        ("renamed", "pass0", ("neg.1",), ("neg.7",)),
        ("removed", "pass1", ("neg.7",), ("neg.9",)),
    ]
    made = blame(tmp_path, "neg.9")
    assert [(e.kind, e.pass_name, e.before) for e in made.events] == [
        ("created", "pass1", ("neg.7",))
    ]
    kept = blame(tmp_path, "r")
    assert [(e.kind, e.before, e.after) for e in kept.events] == [
        ("rewired", ("neg.1",), ("neg.7",)),
        ("rewired", ("neg.7",), ("neg.9",)),
    ]
    assert kept.start_name == "r"


def test_instruction_without_op_name_is_followed_through_its_user(tmp_path: Path) -> None:
    body = "  %c.{} = f32[4]{{0}} constant({{1, 2, 3, 4}})\n" + (
        '  ROOT %add.{} = f32[4]{{0}} add(%p, %c.{}), metadata={{op_name="jit(f)/add"}}'
    )
    _dump(tmp_path, body.format(1, 1, 1), body.format(5, 6, 5))
    result = blame(tmp_path, "c.1")
    assert [(e.kind, e.after) for e in result.events] == [("renamed", ("c.5",))]
    assert result.final_name == "c.5"


def test_unknown_name_raises_with_close_names(tmp_path: Path) -> None:
    body = "  ROOT %n = f32[4]{0} negate(%p)"
    _dump(tmp_path, body, body.replace("negate", "abs"))
    with pytest.raises(BlameError, match="close names: p$"):
        blame(tmp_path, "pp")

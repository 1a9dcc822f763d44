"""xla_inspect.profile_memory against XLA's own figures. With the profile group, on shapes and
dtypes drawn per seed: the heap XProf's memory viewer reports agrees with
`compiled.memory_analysis()`, and every buffer live at the peak is an instruction of the
optimized module with the size of its shape. Without the group, one message naming it."""

from __future__ import annotations

import inspect
import json
import random
import re
import sys
from typing import Any

import numpy as np
import pytest

from xla_inspect.cli import main
from xla_inspect.profile import ProfileError
from xla_inspect.profile_memory import (
    INSTALL,
    XprofMissingError,
    capture_memory,
    memory_view,
    xprof_missing,
)
from xla_inspect.profile_query import instruction_info

needs_xprof = pytest.mark.skipif(xprof_missing() is not None, reason=f"needs: {INSTALL}")

SMALL = 16384  # XProf lumps buffers under 16 KiB into one row
_SHAPE = re.compile(r"^(\w+)\[([\d,]*)\]")
_ITEMSIZE = {"f32": 4, "bf16": 2, "f16": 2, "s32": 4, "u32": 4, "pred": 1, "s8": 1, "u8": 1}


def train_step(params, x, y):
    import jax
    import jax.numpy as jnp

    def loss(p):
        hidden = jnp.tanh(x @ p["w1"])
        return jnp.mean((hidden @ p["w2"] - y) ** 2)

    grads = jax.grad(loss)(params)
    return jax.tree.map(lambda p, g: p - 0.1 * g, params, grads)


def scanned(x, w):
    import jax
    import jax.numpy as jnp

    def body(carry, _):
        return jnp.sin(carry @ w) + carry, carry.sum(axis=0)

    return jax.lax.scan(body, x, None, length=3)


def chain(x, w):
    import jax.numpy as jnp

    for _ in range(3):
        x = jnp.cos(x @ w) * x
    return x.sum(axis=1), x


def _draw(program: str, seed: int) -> tuple:
    """A program and arguments of shapes and dtype drawn for `seed`: dimensions from 96 to 320,
    so the weights are over 16 KiB and the memory viewer names them."""
    import jax.numpy as jnp

    rng = random.Random(f"{program}-{seed}")
    dtype = rng.choice([np.float32, jnp.bfloat16])
    b, d, h, o = (rng.randrange(96, 321) for _ in range(4))
    data = np.random.default_rng(seed)

    def array(*shape: int):
        return data.normal(size=shape).astype(dtype)

    if program == "train_step":
        return train_step, ({"w1": array(d, h), "w2": array(h, o)}, array(b, d), array(b, o))
    return {"scanned": scanned, "chain": chain}[program], (array(b, d), array(d, d))


PROGRAMS = ("train_step", "scanned", "chain")


def _bytes(shape: str) -> int:
    match = _SHAPE.match(shape)
    assert match, shape
    dims = [int(v) for v in match[2].split(",") if v]
    return _ITEMSIZE[match[1]] * int(np.prod(dims, dtype=np.int64))


def _constant_bytes(text: str) -> int:
    """The bytes of the constants XLA allocates a buffer for: those of the ENTRY and of while
    bodies and conditions, not those inside fusions or reducers (they become code)."""
    inlined = set(re.findall(r"fusion\(.*?calls=%?([\w.\-]+)", text))
    inlined |= set(re.findall(r"to_apply=%?([\w.\-]+)", text))
    total = 0
    for block in re.split(r"\n(?=(?:ENTRY )?%)", text)[1:]:
        name = re.match(r"(?:ENTRY )?%([\w.\-]+)", block)
        if name and name[1] not in inlined:
            found = re.findall(r"= (\w+\[[\d,]*\])\S* constant\(", block)
            total += sum(_bytes(shape) for shape in found)
    return total


def _compiled(program: str, seed: int) -> tuple[Any, tuple, Any]:
    import jax

    fn, args = _draw(program, seed)
    jitted = jax.jit(fn)
    return jitted, args, jitted.lower(*args).compile()


@needs_xprof
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("program", PROGRAMS)
def test_peak_heap_agrees_with_memory_analysis(program, seed):
    jitted, args, compiled = _compiled(program, seed)
    analysis = compiled.memory_analysis()
    view = capture_memory(jitted, *args)
    kept = analysis.argument_size_in_bytes + analysis.output_size_in_bytes
    expected = kept + analysis.temp_size_in_bytes
    # Every allocation: arguments + temporaries + outputs, and the constants that have a buffer
    # (memory_analysis leaves them out). Exact on every program measured.
    assert view.allocated_bytes == expected + _constant_bytes(compiled.as_text())
    # The peak of live bytes: arguments and outputs live throughout, and the temporaries' one
    # allocation has gaps between its buffers, so the peak is at most that much below. Measured
    # with these drawings (seeds 3-32; 90 programs on jax 0.12.0.1, 60 on 0.10.2): 0 to 8.5 %
    # of the temporaries below arguments + temporaries + outputs (bf16 train steps the most);
    # the allocation total was exact on all 150. Asserted: within 25 % of the temporaries.
    assert kept <= view.peak_bytes <= view.allocated_bytes
    assert expected - view.peak_bytes <= 0.25 * analysis.temp_size_in_bytes


@needs_xprof
@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("program", PROGRAMS)
def test_every_buffer_at_the_peak_is_an_instruction_of_the_optimized_module(program, seed):
    jitted, args, compiled = _compiled(program, seed)
    view = capture_memory(jitted, *args)
    info = instruction_info(compiled.as_text())
    named = [b for b in view.buffers if b.instruction is not None]
    assert named, "the drawn weights are over 16 KiB: the viewer names some buffers"
    for buffer in named:
        assert buffer.instruction in info, buffer
        assert (buffer.opcode, buffer.kind) == (
            info[buffer.instruction].opcode,
            info[buffer.instruction].kind,
        )
        if not buffer.shape.startswith("("):
            assert buffer.size_bytes == _bytes(buffer.shape) >= SMALL
    assert sum(b.size_bytes for b in view.buffers) == view.peak_bytes
    assert sum(b.size_bytes for b in view.buffers if b.instruction is None) == view.small_bytes
    sizes = [b.size_bytes for b in named]
    assert sizes == sorted(sizes, reverse=True)
    assert view.top(2) == tuple(named[:2])
    # parameters live throughout, so every one over 16 KiB is live at the peak
    entry = compiled.as_text().split("\nENTRY ", 1)[1]
    large = {
        name
        for name, shape in re.findall(r"%([\w.\-]+) = (\w+\[[\d,]*\])\S* parameter\(", entry)
        if _bytes(shape) >= SMALL
    }
    assert {b.instruction for b in named if b.opcode == "parameter"} == large


def _trace_two_programs(where):
    """Run `chain` at two shapes (two programs both named jit_chain) under a trace into
    `where`; return the trace file and the two compiled executables."""
    import jax

    compiled = []
    for seed in (0, 1):
        _fn, args, one = _compiled("chain", seed)
        one(*args)
        compiled.append((one, args))
    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    with jax.profiler.trace(str(where), profiler_options=options):
        for one, args in compiled:
            jax.block_until_ready(one(*args))
    return next(where.rglob("*.xplane.pb")), [c for c, _ in compiled]


@needs_xprof
def test_a_trace_file_names_the_programs_that_ran(tmp_path, capfd):
    xplane, compiled = _trace_two_programs(tmp_path)
    before = sorted(tmp_path.rglob("*"))
    with pytest.raises(ProfileError, match="several modules ran") as several:
        memory_view(xplane)
    names = re.findall(r"jit_chain\(\d+\)", str(several.value))
    assert len(set(names)) == 2
    with pytest.raises(ProfileError, match="no module 'jit_other' ran"):
        memory_view(xplane, module="jit_other")
    expected = {
        c.memory_analysis().argument_size_in_bytes
        + c.memory_analysis().temp_size_in_bytes
        + c.memory_analysis().output_size_in_bytes
        + _constant_bytes(c.as_text())
        for c in compiled
    }
    views = [memory_view(xplane, module=name) for name in sorted(set(names))]
    assert {v.allocated_bytes for v in views} == expected and len(expected) == 2
    for view in views:  # joined to the module XProf keeps in the trace
        assert all(b.opcode for b in view.buffers if b.instruction is not None)
    assert sorted(tmp_path.rglob("*")) == before, "nothing is written beside the trace"
    assert "E0000" not in capfd.readouterr().err


@needs_xprof
def test_bad_traces_are_refused(tmp_path):
    with pytest.raises(ProfileError, match="no such trace file"):
        memory_view(tmp_path / "missing.xplane.pb")
    junk = tmp_path / "junk.xplane.pb"
    junk.write_bytes(bytes(range(256)) * 8)
    with pytest.raises(ProfileError, match="not a trace jax.profiler.trace wrote"):
        memory_view(junk)
    empty = tmp_path / "empty.xplane.pb"
    empty.write_bytes(b"")
    with pytest.raises(ProfileError, match="no XLA program ran"):
        memory_view(empty)
    xplane, _ = _trace_two_programs(tmp_path / "run")
    with pytest.raises(ProfileError, match="several modules ran") as several:
        memory_view(xplane)
    name = re.findall(r"jit_chain\(\d+\)", str(several.value))[0]
    other = _compiled("train_step", 0)[2].as_text()
    with pytest.raises(ProfileError, match="not in the given optimized module"):
        memory_view(xplane, module=name, hlo_text=other)


def test_without_xprof_one_message_names_the_group(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "xprof", None)
    monkeypatch.setitem(sys.modules, "xprof.convert.raw_to_tool_data", None)
    missing = xprof_missing()
    assert missing is not None and "uv sync --group profile" in missing
    trace = tmp_path / "vm.xplane.pb"
    trace.write_bytes(b"")
    with pytest.raises(XprofMissingError, match="uv sync --group profile"):
        memory_view(trace)
    with pytest.raises(XprofMissingError, match="uv sync --group profile"):
        capture_memory(chain, np.ones((2, 2), np.float32), np.ones((2, 2), np.float32))
    model = tmp_path / "model.py"
    model.write_text(inspect.getsource(chain))
    args = ["--arg", "f32[4,8]", "--arg", "f32[8,8]"]
    assert main(["profile", f"{model}:chain", *args, "--memory"]) == 2
    assert main(["profile", str(trace), "--memory"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 2
    assert all(e.startswith("xla-inspect: error: ") and INSTALL in e for e in errors)


@needs_xprof
def test_memory_verb(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(inspect.getsource(chain))
    args = ["--arg", "f32[128,160]", "--arg", "f32[160,160]"]
    assert main(["profile", f"{model}:chain", *args, "--memory", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["module"].startswith("jit_chain(")
    assert sum(b["size_bytes"] for b in report["buffers"]) == report["peak_bytes"]
    assert main(["profile", f"{model}:chain", *args, "--memory", "--top", "2"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert re.match(r"jit_chain\(\d+\): peak heap [\d,]+ B", lines[0])
    assert len([line for line in lines[2:] if "(buffers under 16 KiB" not in line]) == 2
    xplane, _ = _trace_two_programs(tmp_path / "run")
    assert main(["profile", str(xplane), "--memory"]) == 2
    assert main(["profile", str(xplane)]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert "several modules ran" in errors[0] and "with --memory" in errors[1]

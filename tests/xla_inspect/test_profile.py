"""xla_inspect.profile and profile_query against the profiler's own output: live captures of
small programs (steps, nesting, compiles, the join to the module), the normalizing rules, the
JSON form, and the `profile` verb. No duration is asserted; shares only add up."""

from __future__ import annotations

import inspect
import json
from collections import Counter
from pathlib import Path

import numpy as np
import pytest

from xla_inspect.cli import main
from xla_inspect.parse import parse_hlo
from xla_inspect.profile import (
    Profile,
    ProfileError,
    TraceEvent,
    capture_profile,
    load_profile,
    normalize_module_name,
    normalize_thread,
)
from xla_inspect.profile_query import (
    compile_events,
    instruction_info,
    op_runs,
    shares,
    steps,
    time_by,
)

PLUMBING = {"parameter", "constant", "bitcast", "get-tuple-element", "tuple"}
TRIPS = 3


def mlp(x, w1, w2):
    import jax.numpy as jnp

    hidden = jnp.tanh(x @ w1)  # the first matmul's line
    return jnp.mean((hidden @ w2) ** 2)


def scanned(x, w):
    import jax
    import jax.numpy as jnp

    def body(c, _):
        return jnp.sin(c @ w) + 1.0, None

    return jax.lax.scan(body, x, None, length=TRIPS)[0]


def _args(*shapes: tuple[int, ...]) -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.normal(size=s).astype(np.float32) for s in shapes]


@pytest.fixture(scope="module")
def xi_warm() -> Profile:
    return capture_profile(mlp, *_args((16, 24), (24, 32), (32, 8)), steps=3)


@pytest.fixture(scope="module")
def xi_cold() -> Profile:
    return capture_profile(scanned, *_args((12, 12), (12, 12)), steps=2, cold=True)


def test_steps_hold_each_working_entry_instruction_once(xi_warm):
    found = steps(xi_warm)
    assert [s.number for s in found] == [0, 1, 2]
    working = Counter(i.name for i in parse_hlo(xi_warm.hlo_text).entry if i.opcode not in PLUMBING)
    for step in found:
        assert Counter(r.instruction for r in step.runs) == working
        assert all(r.depth == 0 and r.parent is None for r in step.runs)
        assert step.compiles == ()


def test_events_are_normalized(xi_warm):
    threads = {e.thread for e in xi_warm.events}
    assert "python" in threads and any(t.split(":")[0] == "execute" for t in threads)
    assert not any("/" in t for t in threads)
    modules = {e.arg("hlo_module") for e in xi_warm.events if e.hlo_op is not None}
    assert modules == {xi_warm.module} == {parse_hlo(xi_warm.hlo_text).name}
    assert not any(key.startswith("_") for e in xi_warm.events for key, _ in e.args)
    assert min(e.start_ns for e in xi_warm.events) == 0


def test_a_warm_capture_holds_no_compile(xi_warm):
    assert compile_events(xi_warm) == []


def test_a_cold_capture_compiles_in_step_zero_only(xi_cold):
    first, second = steps(xi_cold)
    whole = [e for e in first.compiles if e.name == "backend_compile_and_load"]
    assert len(whole) == 1
    assert second.compiles == ()


def test_while_bodies_nest_in_the_while(xi_cold):
    module = parse_hlo(xi_cold.hlo_text)
    whiles = [i for i in module.entry if i.opcode == "while"]
    assert len(whiles) == 1
    loop = whiles[0]
    body = module[loop.attribute("body", "").lstrip("%")]
    working = {i.name for i in body if i.opcode not in PLUMBING}
    for step in steps(xi_cold):
        nested = [r for r in step.runs if r.parent == loop.name]
        assert {r.instruction for r in nested} == working
        assert Counter(r.instruction for r in nested) == Counter({name: TRIPS for name in working})
        assert all(r.depth == 1 for r in nested)
        (outer,) = [r for r in step.runs if r.instruction == loop.name]
        assert outer.self_ns == max(0, outer.duration_ns - sum(r.duration_ns for r in nested))


def test_every_event_joins_its_instruction(xi_warm, xi_cold):
    for profile in (xi_warm, xi_cold):
        info = instruction_info(profile.hlo_text)
        assert all(r.instruction in info for r in op_runs(profile))


def test_the_join_gives_kind_op_name_and_source(xi_warm):
    info = instruction_info(xi_warm.hlo_text)
    lines, first = inspect.getsourcelines(mlp)
    matmul = first + next(i for i, line in enumerate(lines) if "first matmul" in line)
    ran = {r.instruction for r in op_runs(xi_warm)}
    sources = {info[name].source for name in ran}
    assert f"{Path(__file__).name}:{matmul}" in sources
    assert {info[name].label for name in ran} <= {"kLoop", "kCustom", "dot", "copy"}
    assert all(info[name].op_name.startswith("jit(mlp)/") for name in ran)


def test_shares_add_up(xi_warm, xi_cold):
    for profile in (xi_warm, xi_cold):
        for key in ("instruction", "kind", "scope", "source", "op_name"):
            found = shares(time_by(profile, key))
            assert found and abs(sum(found.values()) - 1.0) < 1e-9


def test_json_round_trip_and_trimming(xi_cold, tmp_path):
    kept = xi_cold.trimmed(["backend_compile_and_load", "FusionCompiler::Compile"])
    assert {e.thread.split(":")[0] for e in kept.events} <= {"execute", "python", "codegen"}
    assert [s.number for s in steps(kept)] == [0, 1]
    path = tmp_path / "profile.json"
    path.write_text(kept.to_json())
    again = load_profile(path)
    assert again.events == kept.events
    assert (again.hlo_text, again.module, again.step_name) == (
        kept.hlo_text,
        kept.module,
        kept.step_name,
    )


@pytest.mark.parametrize(
    ("raw", "kept"),
    [
        ("tf_XLAExecute/-6447718732675565163", "execute"),
        ("tf_XLAPjRtCpuClient/123", "execute"),
        ("tf_PjRtCompilerThread/9", "compiler"),
        ("tf_xla-cpu-codegen/3509425007168379007", "codegen"),
        ("python", "python"),
        ("pytest", "python"),
        ("xla-inspect", "python"),
        ("tf_SomethingElse/77", "tf_SomethingElse"),
    ],
)
def test_thread_rule(raw, kept):
    assert normalize_thread(raw) == kept


def test_module_rule():
    assert normalize_module_name("jit_train_step(28)") == "jit_train_step"
    assert normalize_module_name("jit_f") == "jit_f"


@pytest.mark.parametrize(
    "text", ["", "[]", '{"format": "other"}', '{"format": "xla-inspect-profile/1", "events": [{}]}']
)
def test_bad_profiles_are_refused(text):
    with pytest.raises(ProfileError):
        load_profile(text)


def test_bad_step_count_is_refused():
    with pytest.raises(ProfileError, match="at least 1"):
        capture_profile(mlp, *_args((2, 2), (2, 2), (2, 2)), steps=0)


def test_trace_event_reads_its_args():
    event = TraceEvent("dot.1", "execute", 5, 10, (("hlo_module", "jit_f"), ("hlo_op", "dot.1")))
    assert (event.hlo_op, event.end_ns, event.arg("missing")) == ("dot.1", 15, None)
    assert TraceEvent.from_dict(event.to_dict()) == event


def test_profile_verb(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(inspect.getsource(mlp))
    args = ["--arg", "f32[8,16]", "--arg", "f32[16,32]", "--arg", "f32[32,4]"]
    assert main(["profile", f"{model}:mlp", *args, "--steps", "2", "--json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert report["steps"] == 2 and report["module"] == "jit_mlp"
    for group in ("by_kind", "by_scope", "by_source"):
        assert abs(sum(report[group].values()) - 1.0) < 1e-9
    assert main(["profile", f"{model}:mlp", *args, "--steps", "2"]) == 0
    text = capsys.readouterr().out
    assert "share of instruction time by fusion kind:" in text and "top instructions:" in text


def test_profile_verb_refuses_bad_input(tmp_path, capsys):
    model = tmp_path / "model.py"
    model.write_text(inspect.getsource(mlp))
    assert main(["profile", f"{model}:missing", "--steps", "2"]) == 2
    assert main(["profile", f"{model}:mlp", "--arg", "f32[8,16]", "--steps", "2"]) == 2
    assert main(["profile", f"{model}:mlp", "--steps", "0"]) == 2
    errors = capsys.readouterr().err.splitlines()
    assert len(errors) == 3 and all(line.startswith("xla-inspect: error: ") for line in errors)

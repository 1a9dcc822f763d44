"""A task whose answer is literals read off earlier work (phase 4's named_passes: pass names
from dumps the learner made beforehand) is sealed like a prediction. Red-team probe
r10_read_tests_dump answered it at call time from the per-pass dumps the tests had just written
to the temp directory: that read is refused, and so is a memo of what the file's other functions
were handed by the tests (the culprits pass_that_changed found in the tests' own dumps)."""

from __future__ import annotations

import textwrap

import pytest

from kata_harness import curriculum, guard, loading


def _kata_file(tmp_path, monkeypatch, name: str, source: str):
    """``source`` written as a learner's file (the hooks treat it as kata code)."""
    path = (tmp_path / f"{name}.py").resolve()
    path.write_text(textwrap.dedent(source))
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    return path


def _phase4_module(tmp_path, monkeypatch, name: str, source: str):
    path = _kata_file(tmp_path, monkeypatch, name, source)
    phase = curriculum.phase(4)
    module = loading.load_file(path, f"_sealed_literals_{name}", label="phase4", scan=True)
    return loading._with_sealed_predictions(module, phase, path, "phase4")


def test_named_passes_may_not_read_a_dump_the_tests_left(tmp_path, monkeypatch):
    dumps = tmp_path / "passes0"
    dumps.mkdir()
    (dumps / "module_0001.jit_quarter.0003.simplification.after_algsimp.before_dce.txt").write_text(
        "HloModule jit_quarter\n"
    )
    source = f"""
        import os

        def named_passes() -> dict[str, str]:
            for name in os.listdir({str(dumps)!r}):
                return {{"divide": name.split("after_")[1].split(".")[0]}}
            return {{}}
    """
    module = _phase4_module(tmp_path, monkeypatch, "reads_dump", source)
    with pytest.raises(pytest.fail.Exception, match=r"named_passes\) read a file \("):
        module.named_passes()


def test_named_passes_gets_nothing_pass_that_changed_kept(tmp_path, monkeypatch):
    source = """
        _CULPRITS = {}

        def pass_that_changed(timeline, opcode):
            for (_, before), (name, after) in zip(timeline, timeline[1:]):
                if before.get(opcode, 0) != after.get(opcode, 0):
                    _CULPRITS[opcode] = name
                    return name
            return None

        def named_passes() -> dict[str, str]:
            return dict(_CULPRITS)
    """
    module = _phase4_module(tmp_path, monkeypatch, "kept", source)
    timeline = [("start", {"divide": 1}), ("algsimp", {"multiply": 1})]
    assert module.pass_that_changed(timeline, "divide") == "algsimp"
    assert module.named_passes() == {}

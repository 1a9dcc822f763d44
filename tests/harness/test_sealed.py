"""Predictions are sealed off from what kata code measured elsewhere (kata_harness.sealed): a
predict answer that reads a file (a memo of what the compiler said in an earlier run) fails the
test, even when it catches the refusal; a learner's file that reads a file while it loads is
refused; and a learner's predict tasks are answered by a second copy of the file, so what a read
task (which may compile) stored in the module the tests call never reaches a prediction."""

from __future__ import annotations

import textwrap

import pytest

from kata_harness import curriculum, guard, loading, predict
from kata_harness.curriculum import Task

TASK = Task(phase=0, number=1, function="predict_flops", title="t", hints=(), kind="predict")


def _kata_file(tmp_path, monkeypatch, name: str, source: str):
    """``source`` written as a learner's file (the hooks treat it as kata code)."""
    path = (tmp_path / f"{name}.py").resolve()
    path.write_text(textwrap.dedent(source))
    monkeypatch.setattr(guard, "is_kata_file", lambda filename: filename == str(path))
    return path


@pytest.mark.parametrize(
    "answer",
    [
        "def predict_flops(n):\n    return int(open(MEMO).read())\n",
        "def predict_flops(n):\n"
        "    try:\n"
        "        return int(open(MEMO).read())\n"
        "    except Exception:\n"
        "        return 0\n",
        "import os\ndef predict_flops(n):\n    return len(os.listdir(os.path.dirname(MEMO)))\n",
    ],
    ids=["reads", "catches the refusal", "lists a folder"],
)
def test_a_prediction_that_reads_a_file_fails(tmp_path, monkeypatch, answer):
    memo = tmp_path / "memo.txt"
    memo.write_text("128")
    path = _kata_file(tmp_path, monkeypatch, "memo_answer", f"MEMO = {str(memo)!r}\n" + answer)
    module = loading.load_file(path, "_sealed_memo_answer", label="phase0", scan=True)
    predict.refuse_in(module, [TASK], loading._compiled_at_load[module.__name__])
    with pytest.raises(pytest.fail.Exception, match=r"predict_flops\) read a file \("):
        module.predict_flops(8)


def test_a_file_that_reads_a_file_while_it_loads_is_refused(tmp_path, monkeypatch):
    memo = tmp_path / "memo.txt"
    memo.write_text("128")
    source = f"""
        import json
        try:
            with open({str(memo)!r}) as handle:
                KEPT = json.load(handle)
        except Exception:
            KEPT = 0

        def predict_flops(n):
            return KEPT
    """
    path = _kata_file(tmp_path, monkeypatch, "memo_at_load", source)
    with pytest.raises(loading.KataRefused, match="reads a file while it loads"):
        loading.load_file(path, "_sealed_memo_at_load", label="phase0", scan=True)


def test_imports_are_not_reads(tmp_path, monkeypatch):
    source = """
        import json
        import textwrap as _shaped  # imported here, its module file is opened by the importer

        def predict_flops(n):
            import colorsys  # imported inside the answer: still not kata code reading
            return 2 * n * n + len(json.dumps([])) - 2 + 0 * len(colorsys.__name__)
    """
    path = _kata_file(tmp_path, monkeypatch, "imports", source)
    module = loading.load_file(path, "_sealed_imports", label="phase0", scan=True)
    predict.refuse_in(module, [TASK], loading._compiled_at_load[module.__name__])
    assert module.predict_flops(4) == 32


def test_predictions_are_answered_by_a_copy_no_read_task_touched(tmp_path, monkeypatch):
    """A read task that stores what it measured in the module cannot hand it to a prediction,
    whatever order the tests run in."""
    source = """
        _MEASURED = {}

        def fusion_count(compiled) -> int:
            _MEASURED["bytes"] = 460  # what a compile in a read task would have said
            return 7

        def predict_alias_bytes(features: int, hidden: int, out: int, optimizer: str) -> int:
            return _MEASURED.get("bytes", 0)
    """
    path = _kata_file(tmp_path, monkeypatch, "stored", source)
    phase = curriculum.phase(10)
    module = loading.load_file(path, "_sealed_stored", label="phase10", scan=True)
    module = loading._with_sealed_predictions(module, phase, path, "phase10")
    assert module.fusion_count(None) == 7
    assert module.predict_alias_bytes(3, 6, 2, "adam") == 0
    assert module._MEASURED == {"bytes": 460}

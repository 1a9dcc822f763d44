"""XLA's parser is asked in a helper process: a parser that aborts, exits or hangs on a text
gives that text a verdict, the texts after it still get theirs, and the test process lives on.

A fake parser stands in for jaxlib's (which aborts only on some versions and texts): it calls
os.abort() on "abort", os._exit(3) on "exit", sleeps on "hang", raises on "reject", and gives
back plain data ({"seen": text}) on the rest, as the real one's describer does.
"""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from kata_harness import oracles
from kata_harness.xla_child import ParserProcess

FAKE = """
import os, time

def parse(text):
    with open(os.path.join(os.path.dirname(__file__), "calls.log"), "a") as log:
        log.write(text + "\\n")
    if text.startswith("abort"):
        os.abort()
    if text.startswith("exit"):
        os._exit(3)
    if text.startswith("hang"):
        time.sleep(600)
    if text.startswith("reject"):
        raise ValueError("fake parser: no " + text)
    return {"seen": text}
"""


@pytest.fixture
def fake(tmp_path, monkeypatch) -> Iterator[ParserProcess]:
    (tmp_path / "fake_xla_parser.py").write_text(FAKE)
    monkeypatch.syspath_prepend(str(tmp_path))
    parser = ParserProcess("fake_xla_parser:parse", timeout=3)
    yield parser
    parser.close()


def test_an_abort_is_a_verdict_and_the_rest_still_get_theirs(fake: ParserProcess) -> None:
    texts = ["ok 1", "abort 1", "reject 1", "ok 2", "exit 1", "ok 3", "abort 2"]
    kinds = [v.kind for v in fake.verdicts(texts)]
    assert kinds == [
        "accepted",
        "aborted",
        "rejected",
        "accepted",
        "aborted",
        "accepted",
        "aborted",
    ]
    verdicts = fake.verdicts(texts)
    assert verdicts[1].message == "the parser ended its process (signal 6)"
    assert verdicts[2].message == "fake parser: no reject 1"
    assert verdicts[4].message == "the parser ended its process (exit 3)"
    assert verdicts[5].facts == {"seen": "ok 3"} and verdicts[1].facts is None


# The helper's time limit (3 s here) runs out before "hang" gets its verdict: a battery, so the
# default run does not wait it out (CI runs the batteries once).
@pytest.mark.battery
def test_a_hang_times_out_and_the_rest_still_get_theirs(fake: ParserProcess) -> None:
    texts = ["ok 1", "hang 1", "abort 1", "ok 2"]
    assert [v.kind for v in fake.verdicts(texts)] == [
        "accepted",
        "timed out",
        "aborted",
        "accepted",
    ]
    assert fake.verdict("ok 2").facts == {"seen": "ok 2"}


def test_a_batch_cut_short_leaves_no_answers_for_the_next(fake: ParserProcess, monkeypatch) -> None:
    """A test's time limit can stop the parent mid-batch: the helper then still has answers to
    write (and, while it writes them, reads nothing). The next batch must get its own answers
    and never wait on that helper."""
    calls = 0
    answer = ParserProcess._answer

    def cut_short(self: ParserProcess, process):
        nonlocal calls
        calls += 1
        if calls == 2:
            raise KeyboardInterrupt  # as pytest-timeout's signal does, in the middle
        return answer(self, process)

    big = "x" * 200_000  # more than a pipe holds, so a helper still answering would block
    monkeypatch.setattr(ParserProcess, "_answer", cut_short)
    with pytest.raises(KeyboardInterrupt):
        fake.verdicts([f"ok {n} {big}" for n in range(4)])
    monkeypatch.setattr(ParserProcess, "_answer", answer)
    texts = [f"reject {big}", f"ok 9 {big}"]
    assert [v.kind for v in fake.verdicts(texts)] == ["rejected", "accepted"]
    assert fake.verdict(texts[1]).facts == {"seen": texts[1]}


def test_verdicts_are_remembered_per_text(fake: ParserProcess, tmp_path) -> None:
    assert fake.verdict("abort once").kind == "aborted"
    assert [v.kind for v in fake.verdicts(["abort once", "ok", "ok"])] == [
        "aborted",
        *["accepted"] * 2,
    ]
    assert (tmp_path / "calls.log").read_text().splitlines() == ["abort once", "ok"]


def test_xla_module_raises_a_verdict_on_an_abort(fake: ParserProcess, monkeypatch) -> None:
    monkeypatch.setattr(oracles, "XLA_PARSER", fake)
    with pytest.raises(oracles.XlaAborted, match="aborted on this text"):
        oracles.xla_module("abort in a module")
    assert not oracles.xla_accepts("abort in a module")
    assert not oracles.xla_accepts("reject this")
    assert oracles.xla_accepts("ok")


def test_xla_itself_judges_through_the_helper() -> None:
    pytest.importorskip("jaxlib._hlo", reason="jaxlib's private HLO bindings are absent")
    text = "HloModule m\nENTRY e {\n  p = f32[2] parameter(0)\n  ROOT n = f32[2] negate(p)\n}\n"
    assert oracles.xla_verdict(text).kind == "accepted"
    assert oracles.xla_verdict(text.replace("negate(p)", "negate(q)")).kind == "rejected"
    with pytest.raises(oracles.XlaRejected, match="q"):
        oracles.xla_module(text.replace("negate(p)", "negate(q)"))
    module = oracles.xla_module(text)  # plain data from the helper, no parser object here
    (entry,) = module.computations
    assert [(i.name, i.opcode) for i in entry.instructions] == [
        ("p", "kParameter"),
        ("n", "kNegate"),
    ]
    assert "negate(f32[2]{0} %p)" in module.long_text and "negate(%p)" in module.text


# A parser library that installs a failure handler as it loads (XLA does) which hangs on the
# abort instead of ending the process: the worker sets the default action back after loading it.
HANGING_HANDLER = """
import ctypes, os, signal, time

# a C-level handler, as XLA's is (a Python-level one would only run once abort() had returned)
_handler = ctypes.CFUNCTYPE(None, ctypes.c_int)(lambda number: time.sleep(600))
ctypes.CDLL(None).signal(signal.SIGABRT, _handler)

def parse(text):
    if text.startswith("abort"):
        os.abort()
    return {"seen": text}
"""


def test_an_abort_is_a_verdict_whatever_handler_the_parser_installed(tmp_path, monkeypatch) -> None:
    (tmp_path / "hanging_handler_parser.py").write_text(HANGING_HANDLER)
    monkeypatch.syspath_prepend(str(tmp_path))
    parser = ParserProcess("hanging_handler_parser:parse", timeout=20)
    try:
        verdicts = parser.verdicts(["ok 1", "abort 1", "ok 2"])
    finally:
        parser.close()
    assert [v.kind for v in verdicts] == ["accepted", "aborted", "accepted"]
    assert verdicts[1].message == "the parser ended its process (signal 6)"

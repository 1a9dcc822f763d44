"""XLA's parser asked where an abort is a verdict, not the end of the test worker.

jaxlib's HLO parser does not always raise on bad text: some versions hit a CHECK and abort the
whole process (jaxlib 0.11.2 on a `dot` with one operand), and jaxlib 0.10.2 has crashed
re-reading in the test process a text its helper had already judged; under pytest-xdist that
kills the worker and leaves the run waiting. So no text reaches the parser in the test process:
one helper process per test process answers a batch of texts one verdict at a time, with
what the parser made of an accepted text as plain data (kata_harness.xla_describe), so no
comparison needs the parser's objects in the test process. The helper itself never parses: it
forks a worker that imports the parser and parses, and when a text kills the worker, that text's
verdict is "aborted" and a new worker, forked in milliseconds, takes the rest (the helper does not
import the parser before it forks, so a worker never inherits the parser's threads). When no
answer comes within the time limit, the helper and its worker are killed and the verdict is "timed
out"; if the helper itself dies, a new one takes the rest of the batch. Verdicts are remembered
per text: the parser's answer on one text does not change within a run.
"""

from __future__ import annotations

import atexit
import json
import os
import select
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from typing import Any

KINDS = ("accepted", "rejected", "aborted", "timed out")
PARSER = "kata_harness.xla_describe:describe"
CASE_TIMEOUT = 120.0  # seconds per text; XLA parses a module in milliseconds

# The helper: reads one JSON line per batch of texts and answers one JSON line
# [kind, message, facts] per text as soon as it has it, so an abort on one text still leaves
# the answers before it.
_HELPER = r"""
import importlib, json, os, sys
os.dup2(os.open(os.devnull, os.O_WRONLY), 2)  # XLA logs its CHECK failures on stderr

def work(inbox, outbox):
    module, _, name = sys.argv[1].partition(":")
    parse = getattr(importlib.import_module(module), name)
    # An abort ends the worker at once: no core file, and not through the failure handler XLA
    # installs as it loads, which symbolizes the stack and can itself crash or hang there (a
    # batch then waited CASE_TIMEOUT for a verdict the abort had already given).
    import resource, signal
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    for number in (signal.SIGABRT, signal.SIGSEGV, signal.SIGBUS, signal.SIGILL, signal.SIGFPE):
        signal.signal(number, signal.SIG_DFL)
    for line in inbox:
        try:
            answer = ["accepted", "", parse(json.loads(line))]
        except Exception as exc:
            answer = ["rejected", str(exc), None]
        outbox.write(json.dumps(answer) + "\n")
        outbox.flush()

def fork_worker():
    down, up = os.pipe(), os.pipe()
    pid = os.fork()
    if pid == 0:
        os.close(down[1]); os.close(up[0])
        quiet = os.open(os.devnull, os.O_RDWR)
        os.dup2(quiet, 0); os.dup2(quiet, 1)  # the helper's own pipes stay the helper's
        work(os.fdopen(down[0]), os.fdopen(up[1], "w"))
        os._exit(0)
    os.close(down[0]); os.close(up[1])
    return pid, os.fdopen(down[1], "w"), os.fdopen(up[0])

def ask(worker, text):
    pid, inbox, outbox = worker
    try:
        inbox.write(json.dumps(text) + "\n")
        inbox.flush()
    except BrokenPipeError:
        pass
    return outbox.readline()

worker = None
for line in sys.stdin:
    for text in json.loads(line):
        worker = worker or fork_worker()
        answer = ask(worker, text)
        if not answer:
            status = os.waitpid(worker[0], 0)[1]
            worker[1].close(); worker[2].close(); worker = None
            if os.WIFSIGNALED(status):
                how = "signal %d" % os.WTERMSIG(status)
            else:
                how = "exit %d" % os.WEXITSTATUS(status)
            answer = json.dumps(["aborted", "the parser ended its process (%s)" % how, None]) + "\n"
        sys.stdout.write(answer)
        sys.stdout.flush()
"""


def _kill(process: subprocess.Popen[bytes]) -> None:
    """Kill the helper and its worker (the helper leads its own process group)."""
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait()


@dataclass(frozen=True, slots=True)
class Verdict:
    """What the parser made of one text: ``kind`` one of KINDS; ``message`` the parser's error
    for "rejected", what happened for "aborted" and "timed out", empty for "accepted"; ``facts``
    what the parser function returned for an accepted text (JSON data), else None."""

    kind: str
    message: str = ""
    facts: Any = None


class ParserProcess:
    """A helper process running ``parser`` ("module:function", a function of the text that
    raises on what it rejects and returns JSON data on what it accepts), started on first use
    and again after a text killed it."""

    def __init__(self, parser: str = PARSER, timeout: float = CASE_TIMEOUT) -> None:
        self.parser = parser
        self.timeout = timeout
        self._process: subprocess.Popen[bytes] | None = None
        self._buffer = b""
        self._known: dict[str, Verdict] = {}
        atexit.register(self.close)

    def _started(self) -> subprocess.Popen[bytes]:
        if self._process is None:
            self._process = subprocess.Popen(
                [sys.executable, "-c", _HELPER, self.parser],
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.DEVNULL,
                start_new_session=True,  # its worker is killed with it (_kill)
                env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
            )
        return self._process

    def _line(self, process: subprocess.Popen[bytes]) -> bytes | None:
        """The helper's next line; b"" when it ended, None when it said nothing in time."""
        assert process.stdout is not None
        fd = process.stdout.fileno()
        deadline = time.monotonic() + self.timeout
        while b"\n" not in self._buffer:
            left = deadline - time.monotonic()
            if left <= 0 or not select.select([fd], [], [], left)[0]:
                return None
            chunk = os.read(fd, 1 << 16)
            if not chunk:
                return b""
            self._buffer += chunk
        line, _, self._buffer = self._buffer.partition(b"\n")
        return line

    def _answer(self, process: subprocess.Popen[bytes]) -> Verdict:
        """The helper's next answer, or what stopped it from giving one."""
        line = self._line(process)
        if line:
            kind, message, facts = json.loads(line)
            return Verdict(kind, message, facts)
        self._process, self._buffer = None, b""
        if line is None:
            _kill(process)
            return Verdict("timed out", f"no verdict within {self.timeout:.0f} s")
        code = process.wait()
        how = f"signal {-code}" if code < 0 else f"exit {code}"
        return Verdict("aborted", f"the parser ended its process ({how})")

    def _ask(self, texts: list[str]) -> list[Verdict]:
        answers: list[Verdict] = []
        try:
            while len(answers) < len(texts):
                process = self._started()
                assert process.stdin is not None
                process.stdin.write(json.dumps(texts[len(answers) :]).encode() + b"\n")
                process.stdin.flush()
                while len(answers) < len(texts):
                    answers.append(self._answer(process))
                    if self._process is None:  # it died on that text: a new one takes the rest
                        break
        except BaseException:
            # interrupted mid-batch (a test's time limit, ^C): the helper's answers still to come
            # would be read as the next batch's, and while it writes them it reads nothing, so
            # the next batch's write would wait forever: it goes, a new one takes the next batch
            self._discard()
            raise
        return answers

    def _discard(self) -> None:
        process, self._process, self._buffer = self._process, None, b""
        if process is not None:
            _kill(process)

    def verdicts(self, texts: list[str]) -> list[Verdict]:
        """The parser's verdict on each text, in order."""
        new = [t for t in dict.fromkeys(texts) if t not in self._known]
        if new:
            self._known.update(zip(new, self._ask(new), strict=True))
        return [self._known[t] for t in texts]

    def verdict(self, text: str) -> Verdict:
        return self.verdicts([text])[0]

    def close(self) -> None:
        process, self._process, self._buffer = self._process, None, b""
        if process is not None:
            assert process.stdin is not None
            process.stdin.close()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                _kill(process)


XLA_PARSER = ParserProcess()

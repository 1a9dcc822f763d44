"""XLA's parser asked where an abort is a verdict, not the end of the test worker.

jaxlib's HLO parser does not always raise on bad text: some versions hit a CHECK and abort the
whole process (jaxlib 0.11.2 on a `dot` with one operand), and jaxlib 0.10.2 has crashed
re-reading in the test process a text its helper had already judged; under pytest-xdist that
kills the worker and leaves the run waiting. So no text reaches the parser in the test process:
one helper process per test process imports only the parser (no JAX client) and answers a batch
of texts one verdict at a time, with what the parser made of an accepted text as plain data
(kata_harness.xla_describe), so no comparison needs the parser's objects in the test process.
When the helper dies on a text, that text's verdict is "aborted" and a new helper takes the rest
of the batch; when it gives no answer within the time limit, it is killed and the verdict is
"timed out". Verdicts are remembered per text: the parser's answer on one text does not change
within a run.
"""

from __future__ import annotations

import atexit
import json
import os
import select
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
module, _, name = sys.argv[1].partition(":")
parse = getattr(importlib.import_module(module), name)
for line in sys.stdin:
    for text in json.loads(line):
        try:
            answer = ["accepted", "", parse(text)]
        except Exception as exc:
            answer = ["rejected", str(exc), None]
        sys.stdout.write(json.dumps(answer) + "\n")
        sys.stdout.flush()
"""


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
            process.kill()
            process.wait()
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
            process.kill()
            process.wait()

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
                process.kill()
                process.wait()


XLA_PARSER = ParserProcess()

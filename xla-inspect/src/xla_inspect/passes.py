"""A timeline of XLA's optimization passes, read from a per-pass dump directory.

`capture(..., dump_dir=d, dump_passes=True)` makes XLA write one file per pass:
`module_<id>.<name>.<seq>.<pipeline>.after_<pass>.before_<next>.txt` (the `before_` part is
missing for some pipelines, e.g. copy-insertion). `pass_timeline` reads them in sequence order
and keeps the passes that changed the module, with opcode count deltas, so that questions like
"which pass removed my transpose?" have an answer: `first_pass_removing(timeline, "transpose")`.

Not guaranteed: XLA decides which passes run and how they are named; pipelines and pass names
change between versions and platforms. A pass "changed" the module when the normalized text
(see `normalize_hlo`) differs from the previous file; opcode deltas count instructions in every
computation, so an op moved into a fusion is not a removal. Every file is read with `parse_hlo`;
one it cannot read raises DumpError naming the file.
"""

from __future__ import annotations

import re
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any

from xla_inspect.errors import HloParseError, InspectError
from xla_inspect.normalize import normalize_hlo
from xla_inspect.parse import parse_hlo
from xla_inspect.query import opcode_counts

__all__ = [
    "DumpError",
    "PassFile",
    "PassStep",
    "first_pass_adding",
    "first_pass_removing",
    "pass_files",
    "pass_timeline",
]

# module_0002.jit_f.0007.simplification.after_algsimp.before_simplify-sorts.txt
_PASS_FILE = re.compile(
    r"module_(?P<id>\d+)\.(?P<module>.+?)\.(?P<seq>\d{4,})\.(?P<pipeline>[^.]+)"
    r"\.after_(?P<pass>.+?)(?:\.before_(?P<next>.+))?\.txt"
)


class DumpError(InspectError):
    """A dump directory that is missing, empty of per-pass files, ambiguous, or holding a
    per-pass file that `parse_hlo` cannot read."""


@dataclass(frozen=True)
class PassFile:
    """One per-pass dump file, its name taken apart."""

    path: Path
    module_id: str
    module: str
    seq: int
    pipeline: str
    pass_name: str
    next_pass: str | None

    @property
    def module_key(self) -> str:
        """`module_<id>.<name>`: the prefix shared by every file of one compilation."""
        return f"module_{self.module_id}.{self.module}"


@dataclass(frozen=True)
class PassStep:
    """A pass that changed the module: instruction totals and opcode deltas across it."""

    seq: int
    pipeline: str
    pass_name: str
    instructions_before: int
    instructions_after: int
    opcode_deltas: Mapping[str, int]
    path: Path

    def to_dict(self) -> dict[str, Any]:
        return {
            "seq": self.seq,
            "pipeline": self.pipeline,
            "pass": self.pass_name,
            "instructions_before": self.instructions_before,
            "instructions_after": self.instructions_after,
            "opcode_deltas": dict(self.opcode_deltas),
            "file": self.path.name,
        }


def pass_files(dump_dir: str | Path, module: str | int | None = None) -> list[PassFile]:
    """The per-pass files of one module in `dump_dir`, in sequence order.

    `module` selects the module when the directory holds several: its name (`jit_f`), its
    prefix (`module_0002.jit_f`) or its id (`2` or `"0002"`).
    """
    directory = Path(dump_dir)
    if not directory.is_dir():
        raise DumpError(f"{directory}: not a directory")
    files = [
        PassFile(
            path,
            match["id"],
            match["module"],
            int(match["seq"]),
            match["pipeline"],
            match["pass"],
            match["next"],
        )
        for path in directory.iterdir()
        if (match := _PASS_FILE.fullmatch(path.name))
    ]
    if not files:
        raise DumpError(
            f"{directory}: no per-pass dump files; capture with dump_passes=True "
            '(compiler option "xla_dump_hlo_pass_re": ".*"), or run '
            "`xla-inspect capture FILE.py:FN --arg SPEC --passes --out DIR`"
        )
    keys = sorted({f.module_key for f in files})
    chosen = [k for k in keys if module is None or _matches(k, module)]
    if len(chosen) != 1:
        what = "several modules" if chosen else f"no module matching {module!r}"
        raise DumpError(f"{directory}: {what}; choose one of: {', '.join(keys)}")
    return sorted((f for f in files if f.module_key == chosen[0]), key=lambda f: f.seq)


def _matches(key: str, module: str | int) -> bool:
    module_id, _, name = key.removeprefix("module_").partition(".")
    wanted = str(module)
    return wanted in (key, name) or (wanted.isdigit() and int(wanted) == int(module_id))


def _state(path: Path, text: str) -> tuple[str, Counter[str]]:
    try:
        counts = opcode_counts(parse_hlo(text))
    except HloParseError as exc:
        raise DumpError(f"{path.name}: not readable HLO ({exc}); is the dump complete?") from exc
    return normalize_hlo(text), counts


def pass_timeline(dump_dir: str | Path, module: str | int | None = None) -> list[PassStep]:
    """The passes that changed the module, in sequence order (see the module docstring).

    The starting point is the module's `before_optimizations.txt` dump when present, else its
    first per-pass file.
    """
    files = pass_files(dump_dir, module)
    start = files[0].path.with_name(f"{files[0].module_key}.before_optimizations.txt")
    if not start.is_file():
        start, files = files[0].path, files[1:]
    previous_text = start.read_text()
    previous, previous_counts = _state(start, previous_text)
    steps: list[PassStep] = []
    for file in files:
        text = file.path.read_text()
        if text == previous_text:
            continue
        normal, counts = _state(file.path, text)
        if normal != previous:
            deltas = Counter(counts)
            deltas.subtract(previous_counts)
            steps.append(
                PassStep(
                    seq=file.seq,
                    pipeline=file.pipeline,
                    pass_name=file.pass_name,
                    instructions_before=previous_counts.total(),
                    instructions_after=counts.total(),
                    opcode_deltas=MappingProxyType(
                        {op: n for op, n in sorted(deltas.items()) if n}
                    ),
                    path=file.path,
                )
            )
        previous_text, previous, previous_counts = text, normal, counts
    return steps


def first_pass_removing(timeline: Sequence[PassStep], opcode: str) -> PassStep | None:
    """The first pass after which fewer `opcode` instructions exist, or None."""
    return next((s for s in timeline if s.opcode_deltas.get(opcode, 0) < 0), None)


def first_pass_adding(timeline: Sequence[PassStep], opcode: str) -> PassStep | None:
    """The first pass after which more `opcode` instructions exist, or None."""
    return next((s for s in timeline if s.opcode_deltas.get(opcode, 0) > 0), None)

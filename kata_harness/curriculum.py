"""The curriculum: phases and their tasks, read from each phase folder's ``tasks.toml``.

A task is one function of a phase's kata file. Its identity is ``phaseN.taskM``; its pytest mark
is ``phaseN_taskM``. Hints are tiered: level 1 asks questions, later levels point further, none
gives the answer.

A task's ``kind`` says what the learner does: ``read`` a fact from the IR (the default),
``predict`` a fact from the program alone before the compiler confirms it, or ``decide``: change a
program or choose a setting until a budget read from the compiler holds. A phase may declare
``needs = "tpu"`` (a uv dependency group): its live tests skip, naming the install command, when
the group is not installed.

``KATAS_ROOT`` points the harness at another checkout of the course (the hostile-code tests run a
broken copy this way); :func:`course_at` does the same inside one process (the CLI's tests run a
small fixture course). Other modules read the folders as ``curriculum.ROOT`` etc. at call time.
"""

from __future__ import annotations

import os
import sys
import tomllib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from functools import cache
from pathlib import Path

ROOT = Path(os.environ.get("KATAS_ROOT") or Path(__file__).resolve().parent.parent).resolve()
KATAS_DIR = ROOT / "katas"
REFERENCE_DIR = ROOT / "reference"
DECOYS_DIR = ROOT / "decoys"
HARNESS_DIR = Path(__file__).resolve().parent
KATA_FILE = "kata.py"
PROGRAMS_FILE = "programs.py"
# JAX CPU devices for the tests and `katas show` (phase 9 shards over 8 of them).
CPU_DEVICES = 8
KINDS = ("read", "predict", "decide")
# Optimized HLO recorded from TPU/GPU compiles, per phase (see kata_harness.targets).
RECORDED_DIR = "recorded"


@dataclass(frozen=True, slots=True)
class Task:
    phase: int
    number: int
    function: str
    title: str
    hints: tuple[str, ...]
    kind: str = "read"
    allow: tuple[str, ...] = ()  # what a predict task may call (e.g. "eval_shape")
    refuse: tuple[str, ...] = ()  # more a predict task may not call ("jax.device_put")

    @property
    def id(self) -> str:
        return f"phase{self.phase}.task{self.number}"

    @property
    def mark(self) -> str:
        return f"phase{self.phase}_task{self.number}"

    @property
    def hint_command(self) -> str:
        return f"uv run katas hint phase{self.phase}.{self.number}"


@dataclass(frozen=True, slots=True)
class Phase:
    number: int
    title: str
    tasks: tuple[Task, ...]
    needs: str | None = None

    @property
    def name(self) -> str:
        return f"phase{self.number}"

    @property
    def install_command(self) -> str | None:
        """What installs the dependency group this phase's live tests need, if any."""
        return f"uv sync --group {self.needs}" if self.needs else None

    @property
    def kata_path(self) -> Path:
        return KATAS_DIR / self.name / KATA_FILE

    @property
    def programs_path(self) -> Path:
        """The programs its tests compile, and what `katas show` compiles per task."""
        return KATAS_DIR / self.name / PROGRAMS_FILE

    @property
    def reference_path(self) -> Path:
        return REFERENCE_DIR / self.name / KATA_FILE

    @property
    def decoys_path(self) -> Path:
        return DECOYS_DIR / f"{self.name}.py"

    @property
    def redteam_paths(self) -> list[Path]:
        """The red teams' wrong answers (written from the contract, never the tests): the first
        round's ``phaseN.py``, then later rounds' ``phaseN_roundM.py``."""
        folder = DECOYS_DIR / "redteam"
        return [p for p in [folder / f"{self.name}.py"] if p.is_file()] + sorted(
            folder.glob(f"{self.name}_round*.py")
        )

    @property
    def probes_dir(self) -> Path:
        """The red team's probes: whole kata files that try to get around the harness."""
        return DECOYS_DIR / "redteam" / f"{self.name}_probes"

    def task(self, function: str) -> Task:
        for task in self.tasks:
            if task.function == function:
                return task
        raise KeyError(f"{self.name} has no task for function {function!r}")


def _read_phase(folder: Path) -> Phase:
    number = int(folder.name.removeprefix("phase"))
    path = folder / "tasks.toml"
    data = tomllib.loads(path.read_text(encoding="utf-8"))
    tasks = tuple(
        Task(
            phase=number,
            number=index,
            function=entry["function"],
            title=entry["title"],
            hints=tuple(entry.get("hints", ())),
            kind=entry.get("kind", "read"),
            allow=tuple(entry.get("allow", ())),
            refuse=tuple(entry.get("refuse", ())),
        )
        for index, entry in enumerate(data["task"], start=1)
    )
    for task in tasks:
        if task.kind not in KINDS:
            raise ValueError(
                f"{path}: task {task.function!r} has kind {task.kind!r}, not one of {KINDS}"
            )
    return Phase(number=number, title=data["title"], tasks=tasks, needs=data.get("needs"))


@cache
def phases() -> tuple[Phase, ...]:
    """Every phase with a ``tasks.toml``, in order."""
    folders = [p for p in KATAS_DIR.glob("phase*") if (p / "tasks.toml").is_file()]
    found = sorted((_read_phase(p) for p in folders), key=lambda ph: ph.number)
    return tuple(found)


def phase(number: int) -> Phase:
    for candidate in phases():
        if candidate.number == number:
            return candidate
    raise KeyError(f"there is no phase{number}")


def phase_of_path(path: Path) -> Phase | None:
    """The phase whose folder (under katas/) holds ``path``, if any."""
    head = _folder_in_katas(str(path), KATAS_DIR)
    if not head.startswith("phase") or not head.removeprefix("phase").isdigit():
        return None
    try:
        return phase(int(head.removeprefix("phase")))
    except KeyError:
        return None


@cache
def _folder_in_katas(path: str, katas_dir: Path) -> str:
    """The first folder of ``path`` under ``katas_dir`` ("" when outside it); asked for every
    report of every test, so resolved once per path."""
    try:
        relative = Path(path).resolve().relative_to(katas_dir)
    except ValueError:
        return ""
    return relative.parts[0] if relative.parts else ""


def _set_root(root: Path) -> None:
    global ROOT, KATAS_DIR, REFERENCE_DIR, DECOYS_DIR
    ROOT = root.resolve()
    KATAS_DIR, REFERENCE_DIR, DECOYS_DIR = ROOT / "katas", ROOT / "reference", ROOT / "decoys"
    phases.cache_clear()
    for name in [n for n in sys.modules if n == "katas" or n.startswith("katas.")]:
        del sys.modules[name]  # the `katas` package and the programs of the previous course


@contextmanager
def course_at(root: Path) -> Iterator[Path]:
    """Point the harness and the CLI at the course under ``root`` until the block ends, in this
    process and in the processes it starts (``KATAS_ROOT``: pytest-xdist's workers)."""
    previous, variable = ROOT, os.environ.get("KATAS_ROOT")
    _set_root(root)
    os.environ["KATAS_ROOT"] = str(ROOT)
    try:
        yield ROOT
    finally:
        _set_root(previous)
        if variable is None:
            os.environ.pop("KATAS_ROOT", None)
        else:
            os.environ["KATAS_ROOT"] = variable

"""The learner's progress, kept in `.katas/state.json` so it survives restarts.

Layout (version 2)::

    {"version": 2,
     "phases": {"phase1": {"key": "<sha256>",
                           "tasks": {"init_params": {"outcome": ..., "message": ...}}}},
     "hints": {"phase1.mlp_forward": 1},
     "started": {"phase": "phase11", "at": 1764340000.0}}

Tasks are keyed by their function name, never by position: reordering `tasks.toml` keeps every
hint level with its task. Hints taken under version 1 (keyed `phase1.task2`) are carried over by
the task order of the moment they are read. `started` is the phase of the last
`katas start phaseN` and when it was said (absent until then; see `status.working_phase`).

A phase's cached outcomes are reused only while its key matches: the key hashes the phase's
kata file, its test files, `programs.py`, any other module beside them and `tasks.toml`, plus
the harness, `xla_inspect`, the CLI's runner (which turns reports into outcomes) and the jax
version (anything that can change a test's outcome). `KATAS_STATE_DIR` moves the folder (tests
use it).
"""

from __future__ import annotations

import fcntl
import hashlib
import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from importlib import metadata
from pathlib import Path

from kata_harness import curriculum
from kata_harness.curriculum import RECORDED_DIR, Phase, Task
from xla_inspect.targets import group_missing

VERSION = 2
OUTCOMES = ("passed", "failed", "skipped", "not run")


def state_dir() -> Path:
    override = os.environ.get("KATAS_STATE_DIR")
    return Path(override) if override else curriculum.ROOT / ".katas"


@dataclass(frozen=True, slots=True)
class TaskOutcome:
    """`outcome` is one of OUTCOMES; `message` is one line (empty when passed); `details` the
    failure in full when it is an assertion; `traceback` the kata's traceback when the kata
    raised (shown on request: `katas run --full`, `t` in watch)."""

    outcome: str
    message: str = ""
    details: str = ""
    traceback: str = ""

    @property
    def done(self) -> bool:
        """Only a pass: a task whose every test skipped was never checked."""
        return self.outcome == "passed"


@dataclass(slots=True)
class PhaseOutcome:
    key: str
    tasks: dict[str, TaskOutcome] = field(default_factory=dict)  # by function name

    def task(self, task: Task) -> TaskOutcome:
        return self.tasks.get(task.function, TaskOutcome("not run", "no test of this task ran"))


def _hash_files(digest, paths: list[Path]) -> None:
    for path in sorted(paths):
        digest.update(str(path.relative_to(curriculum.ROOT)).encode())
        digest.update(path.read_bytes() if path.is_file() else b"<missing>")


def _salt() -> bytes:
    digest = hashlib.sha256()
    root = curriculum.ROOT
    shared = [
        root / "conftest.py",
        root / "katas_cli" / "runner.py",
        *root.glob("kata_harness/**/*.py"),
        *root.glob("xla-inspect/src/xla_inspect/**/*.py"),
    ]
    _hash_files(digest, [p for p in shared if p.is_file()])
    try:
        digest.update(metadata.version("jax").encode())
    except metadata.PackageNotFoundError:
        pass
    return digest.digest()


def phase_key(phase: Phase, salt: bytes | None = None) -> str:
    """Hash of everything a phase's outcome depends on (see the module docstring)."""
    digest = hashlib.sha256(salt if salt is not None else _salt())
    folder = phase.kata_path.parent
    # the tests, the programs and the modules they share (the kata itself is hashed above)
    tests = [p for p in folder.glob("*.py") if p != phase.kata_path]
    recorded = sorted(folder.glob(f"{RECORDED_DIR}/*.hlo"))
    _hash_files(digest, [phase.kata_path, folder / "tasks.toml", *tests, *recorded])
    if phase.needs:  # installing the group makes its skipped tests run
        digest.update(f"{phase.needs}: {group_missing(phase.needs)}".encode())
    return digest.hexdigest()


def phase_keys(phases: tuple[Phase, ...] | list[Phase]) -> dict[str, str]:
    salt = _salt()
    return {p.name: phase_key(p, salt) for p in phases}


def hint_key(task: Task) -> str:
    return f"phase{task.phase}.{task.function}"


def _hints_by_function(hints: dict[str, int]) -> dict[str, int]:
    """Version 1 kept hint levels under `phaseN.taskM`; map them to today's functions."""
    moved = {}
    for key, level in hints.items():
        name, _, number = key.partition(".task")
        try:
            phase = curriculum.phase(int(name.removeprefix("phase")))
            moved[hint_key(phase.tasks[int(number) - 1])] = level
        except (ValueError, KeyError, IndexError):
            continue
    return moved


class State:
    """Load with :meth:`load`; change it with :meth:`update`, which reads the file again under a
    lock, applies the change and writes it atomically, so several `katas` processes (watch in one
    terminal, hint in another) never overwrite each other's progress with a stale copy."""

    def __init__(
        self,
        phases: dict[str, PhaseOutcome],
        hints: dict[str, int],
        started: tuple[str, float] | None = None,
    ) -> None:
        self.phases = phases
        self.hints = hints
        self.started = started  # (phase name, time.time()) of the last `katas start`

    @classmethod
    def path(cls) -> Path:
        return state_dir() / "state.json"

    @classmethod
    def load(cls) -> State:
        try:
            data = json.loads(cls.path().read_text(encoding="utf-8"))
        except (FileNotFoundError, json.JSONDecodeError):
            return cls({}, {})
        hints = {k: int(v) for k, v in data.get("hints", {}).items()}
        if data.get("version") != VERSION:
            return cls({}, _hints_by_function(hints))
        started = data.get("started")
        if isinstance(started, dict):
            started = (str(started.get("phase")), float(started.get("at", 0.0)))
        phases = {
            name: PhaseOutcome(
                entry["key"], {k: TaskOutcome(**v) for k, v in entry["tasks"].items()}
            )
            for name, entry in data.get("phases", {}).items()
        }
        return cls(phases, hints, started if isinstance(started, tuple) else None)

    def update(self, change: Callable[[State], None]) -> None:
        """Apply ``change`` to the state as it is on disk now, save it, and adopt the result."""
        lock_path = self.path().with_suffix(".lock")
        lock_path.parent.mkdir(parents=True, exist_ok=True)
        with open(lock_path, "w") as lock:
            fcntl.flock(lock, fcntl.LOCK_EX)
            current = State.load()
            change(current)
            current.save()
        self.phases, self.hints, self.started = current.phases, current.hints, current.started

    def save(self) -> None:
        """Overwrite the file with this copy (atomically); changes go through :meth:`update`."""
        path = self.path()
        path.parent.mkdir(parents=True, exist_ok=True)
        data = {
            "version": VERSION,
            "phases": {
                name: {"key": p.key, "tasks": {f: asdict(t) for f, t in p.tasks.items()}}
                for name, p in sorted(self.phases.items())
            },
            "hints": dict(sorted(self.hints.items())),
        }
        if self.started is not None:
            data["started"] = {"phase": self.started[0], "at": self.started[1]}
        temporary = path.with_suffix(f".{os.getpid()}.tmp")
        temporary.write_text(json.dumps(data, indent=1) + "\n", encoding="utf-8")
        temporary.replace(path)

    def fresh(self, name: str, key: str) -> PhaseOutcome | None:
        cached = self.phases.get(name)
        return cached if cached is not None and cached.key == key else None

"""Capture a profile of a JAX function with JAX's own profiler and keep it as a small model.

`capture_profile(fn, *args, steps=N)` compiles `fn` once, runs it `steps` times, each call inside
a `jax.profiler.StepTraceAnnotation(step_name, step_num=i)`, under `jax.profiler.trace` with the
Python tracer off, and returns a `Profile`: every host-plane event of the trace (normalized, see
below) and the optimized HLO text of the executable that ran. With `cold=True` JAX's caches are
cleared first and the compile happens inside step 0, so the trace shows it.
`xla_inspect.profile_query` joins the events to that module's instructions.

What a `TraceEvent` is: one complete event of the trace's host plane (on CPU, where XLA runs), with
its thread, start and duration in nanoseconds from the first event of the capture, and its args.
Events of one thread nest by time; XLA marks each executed HLO instruction with an event named
after it and the args `hlo_op`, `hlo_module`, `program_id`, `run_id`.

Normalized away (named rules, applied while reading): the thread's numeric id suffix and its
JAX-version-specific name (`THREAD_NAMES`); a `(N)` program-id suffix on `hlo_module` (it counts
the jits compiled before); args whose key starts with `_` (profiler internals). Durations are kept
as measured: they are *not* reproducible (a shared machine swings them several times over), so
compare shares and ranks, never raw durations.

What is not guaranteed: event names other than the HLO instruction events and the step events
are XLA and JAX internals (`backend_compile_and_load`, `FusionCompiler::Compile`...) and change
between versions; the `end: <op>` markers are sub-microsecond bookkeeping, not work.
"""

from __future__ import annotations

import json
import re
import tempfile
import warnings
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from xla_inspect.errors import InspectError

__all__ = [
    "THREAD_NAMES",
    "Profile",
    "ProfileError",
    "TraceEvent",
    "capture_profile",
    "load_profile",
    "normalize_module_name",
    "normalize_thread",
    "trace_events",
]

#: Thread names by what runs there, the same on every supported JAX: the raw name (its
#: `/<id>` suffix cut) -> the name kept. `tf_XLAExecute` (0.11, 0.12) and `tf_XLAPjRtCpuClient`
#: (0.10) run the executable's thunks; `tf_PjRtCompilerThread` (0.10) and the Python thread
#: (0.11, 0.12) run XLA's passes; `tf_xla-cpu-codegen` compiles fusion kernels.
THREAD_NAMES: Mapping[str, str] = {
    "python": "python",
    "tf_XLAExecute": "execute",
    "tf_XLAPjRtCpuClient": "execute",
    "tf_PjRtCompilerThread": "compiler",
    "tf_xla-cpu-codegen": "codegen",
}
_PROGRAM_SUFFIX = re.compile(r"\(\d+\)$")
_FORMAT = "xla-inspect-profile/1"


class ProfileError(InspectError):
    """A profile could not be captured or read; the message says what to do."""


def normalize_thread(name: str) -> str:
    """Rule `thread`: cut the `/<id>` suffix (an OS thread id) and map the JAX-version-specific
    name through THREAD_NAMES. A name with neither suffix nor `tf_` prefix is a Python thread,
    which the profiler names as the OS does: after the process (`python`, `pytest`,
    `xla-inspect`), so it becomes `python`. Any other thread keeps its name without the suffix."""
    base = name.split("/", 1)[0]
    if base in THREAD_NAMES:
        return THREAD_NAMES[base]
    if "/" not in name and not name.startswith("tf_"):
        return "python"
    return base


def normalize_module_name(name: str) -> str:
    """Rule `module`: cut a trailing `(N)` program-id suffix (`jit_step(28)` -> `jit_step`); N
    counts the programs compiled before in the process, so it differs from run to run."""
    return _PROGRAM_SUFFIX.sub("", name)


@dataclass(frozen=True, slots=True)
class TraceEvent:
    """One complete event of the host plane. Times in ns from the capture's first event."""

    name: str
    thread: str
    start_ns: int
    duration_ns: int
    args: tuple[tuple[str, str | int | float], ...] = ()

    @property
    def end_ns(self) -> int:
        return self.start_ns + self.duration_ns

    def arg(self, key: str) -> str | int | float | None:
        """The value of arg `key`, or None."""
        for name, value in self.args:
            if name == key:
                return value
        return None

    @property
    def hlo_op(self) -> str | None:
        """The HLO instruction this event executed (its `hlo_op` arg), or None."""
        value = self.arg("hlo_op")
        return value if isinstance(value, str) else None

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "thread": self.thread,
            "start_ns": self.start_ns,
            "duration_ns": self.duration_ns,
            "args": dict(self.args),
        }

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> TraceEvent:
        try:
            return cls(
                str(data["name"]),
                str(data["thread"]),
                int(data["start_ns"]),
                int(data["duration_ns"]),
                tuple(sorted((str(k), v) for k, v in dict(data.get("args", {})).items())),
            )
        except (KeyError, TypeError, ValueError) as exc:
            raise ProfileError(f"not a trace event: {dict(data)!r} ({exc})") from exc


@dataclass(frozen=True, eq=False)
class Profile:
    """The events of one capture and the optimized HLO of the executable that ran.

    `events` are sorted by (thread, start, longest first), so an event's children follow it.
    `module` is the HLO module name (`jit_<fn>`); `step_name` the name of the step events;
    `about` whatever its writer says about it (a recording names the program and the versions).
    """

    events: tuple[TraceEvent, ...]
    hlo_text: str
    module: str
    step_name: str = "train"
    about: str = ""  # free text kept with the profile: what and with which versions

    def to_json(self) -> str:
        return json.dumps(
            {
                "format": _FORMAT,
                "about": self.about,
                "module": self.module,
                "step_name": self.step_name,
                "hlo_text": self.hlo_text,
                "events": [e.to_dict() for e in self.events],
            },
            indent=0,
            sort_keys=True,
        )

    def trimmed(self, keep: Sequence[str] = ()) -> Profile:
        """Only the events a reader of steps, instructions and compiles needs: events on the
        `execute` thread, step events, `PjitFunction(...)` calls, and events named in `keep`
        (e.g. `backend_compile_and_load`, `FusionCompiler::Compile`)."""
        wanted = set(keep)
        events = tuple(
            e
            for e in self.events
            if e.thread.split(":")[0] == "execute"
            or e.name == self.step_name
            or e.name.startswith("PjitFunction(")
            or e.name in wanted
        )
        return Profile(events, self.hlo_text, self.module, self.step_name, self.about)


def load_profile(source: str | Path) -> Profile:
    """A `Profile` from the JSON `Profile.to_json` wrote (a path or the text itself)."""
    text = Path(source).read_text() if isinstance(source, Path) else source
    try:
        data = json.loads(text)
    except json.JSONDecodeError as exc:
        raise ProfileError(f"not a profile JSON ({exc}); write one with Profile.to_json") from exc
    if not isinstance(data, dict) or data.get("format") != _FORMAT:
        raise ProfileError(f"not a profile: expected format {_FORMAT!r}")
    events = tuple(TraceEvent.from_dict(e) for e in data["events"])
    return Profile(
        events,
        str(data["hlo_text"]),
        str(data["module"]),
        str(data["step_name"]),
        str(data.get("about", "")),
    )


def _value(value: Any) -> str | int | float:
    if isinstance(value, (int, float, str)) and not isinstance(value, bool):
        return value
    return str(value)


def _number_threads(raw: Sequence[tuple[str, str, int, int, object]]) -> dict[str, str]:
    """Rule `thread numbering`: raw thread name -> normalized name; when several threads share a
    normalized name (two `tf_XLAExecute/<id>` threads), the one whose first event starts first
    keeps it and the others get `:1`, `:2`... in the order of their first events."""
    first: dict[str, int] = {}
    for _name, thread, start, _duration, _args in raw:
        first[thread] = min(start, first.get(thread, start))
    numbered: dict[str, str] = {}
    taken: dict[str, int] = {}
    for thread in sorted(first, key=lambda t: (first[t], t)):
        base = normalize_thread(thread)
        count = taken.get(base, 0)
        numbered[thread] = base if count == 0 else f"{base}:{count}"
        taken[base] = count + 1
    return numbered


def _read_profile_data(data: Any) -> list[TraceEvent]:
    """TraceEvents from a `jax.profiler.ProfileData`: the host plane, normalized."""
    raw: list[tuple[str, str, int, int, tuple[tuple[str, str | int | float], ...]]] = []
    with warnings.catch_warnings():
        # iterating event stats warns "builtin type event_stats has no __module__" on 3.12
        warnings.simplefilter("ignore", DeprecationWarning)
        for plane in data.planes:
            if plane.name != "/host:CPU":
                continue
            for line in plane.lines:
                thread = line.name
                for event in line.events:
                    args = []
                    for key, value in event.stats:
                        if key.startswith("_"):
                            continue
                        if key == "hlo_module" and isinstance(value, str):
                            value = normalize_module_name(value)
                        args.append((key, _value(value)))
                    start = round(event.start_ns)
                    raw.append(
                        (event.name, thread, start, round(event.duration_ns), tuple(sorted(args)))
                    )
    if not raw:
        raise ProfileError("the trace holds no host events: was anything run inside it?")
    origin = min(r[2] for r in raw)
    threads = _number_threads(raw)
    events = [TraceEvent(n, threads[t], s - origin, d, a) for n, t, s, d, a in raw]
    events.sort(key=lambda e: (e.thread, e.start_ns, -e.duration_ns, e.name))
    return events


@contextmanager
def _trace(options: Any) -> Iterator[list[Any]]:
    """Run the block under jax.profiler.trace; yield a list that then holds the ProfileData.

    Measured on JAX 0.12: `trace(None)` yields a session whose `profile_data` holds the trace in
    memory, and nothing is written. JAX 0.10 yields no session, and its `trace(None)` writes
    into a directory named `None` under the working directory; so before 0.12 the trace goes to
    a temporary directory and is read back from its `.xplane.pb`.
    """
    import jax

    holder: list[Any] = []
    if _jax_at_least(0, 12):
        with jax.profiler.trace(None, profiler_options=options) as session:
            yield holder
        if session is None or getattr(session, "profile_data", None) is None:
            raise ProfileError("jax.profiler.trace(None) kept no profile data")
        holder.append(session.profile_data)
        return
    with tempfile.TemporaryDirectory(prefix="xla-inspect-profile-") as tmp:
        with jax.profiler.trace(tmp, profiler_options=options):
            yield holder
        found = sorted(Path(tmp).rglob("*.xplane.pb"))
        if not found:
            raise ProfileError("jax.profiler.trace wrote no .xplane.pb: is the profiler usable?")
        holder.append(jax.profiler.ProfileData.from_file(str(found[-1])))


def _jax_at_least(major: int, minor: int) -> bool:
    import jax

    parts = re.findall(r"\d+", jax.__version__)[:2]
    return tuple(int(p) for p in parts) >= (major, minor)


def _options() -> Any:
    import jax

    options = jax.profiler.ProfileOptions()
    options.python_tracer_level = 0
    return options


def trace_events(body: Callable[[], object]) -> list[TraceEvent]:
    """Run `body()` under jax.profiler.trace (Python tracer off) and return the host events it
    left, normalized. Use it for loops `capture_profile` does not write for you."""
    with _trace(_options()) as holder:
        body()
    return _read_profile_data(holder[0])


def capture_profile(
    fn: Any,
    /,
    *args: Any,
    steps: int = 3,
    cold: bool = False,
    step_name: str = "train",
    compiler_options: Mapping[str, Any] | None = None,
) -> Profile:
    """Profile `steps` calls of `jax.jit(fn)(*args)` (arrays, not ShapeDtypeStructs).

    Warm (the default): compiled and run once before the trace, so the trace holds only
    execution. Cold: JAX's in-memory caches are cleared, the persistent cache is off, and step 0
    holds the lower and compile as well as the first run. `fn` may already be jitted.
    """
    import jax

    from xla_inspect.capture import persistent_cache_off

    if steps < 1:
        raise ProfileError(f"steps must be at least 1, got {steps}")
    jitted = fn if hasattr(fn, "lower") else jax.jit(fn)

    def build() -> Any:
        try:
            return jitted.lower(*args).compile(compiler_options=dict(compiler_options or {}))
        except Exception as exc:  # JAX raises many kinds; one readable message
            raise ProfileError(f"cannot compile the function to profile: {exc}") from exc

    compiled = None
    with persistent_cache_off(cold):
        if cold:
            jax.clear_caches()
        else:
            compiled = build()
            jax.block_until_ready(compiled(*args))
        with _trace(_options()) as holder:
            for i in range(steps):
                with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
                    if compiled is None:
                        compiled = build()
                    jax.block_until_ready(compiled(*args))
    assert compiled is not None
    text = compiled.as_text()
    module = text.split(None, 2)[1].rstrip(",") if text.startswith("HloModule") else "?"
    return Profile(tuple(_read_profile_data(holder[0])), text, module, step_name)

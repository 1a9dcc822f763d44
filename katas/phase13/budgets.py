"""The checks phase 13's test files share: a failure that names every budget missed in one
line, the check that no work hides outside the module (host callbacks, custom-calls, host
transfers; read from the text, as a callback's attributes need not parse), the check that no
loop hides its trips from cost_analysis, the comparison of a changed program's results with the
original's, and the sizes messages print."""

import re

import jax
import numpy as np
import pytest


def frozen(tree):
    """A host copy of a pytree of arrays that nothing can write to: what a cached expected
    result returns, so no test (or answer) can change what the next variant is checked against."""

    def freeze(leaf) -> np.ndarray:
        array = np.array(leaf)  # a copy, never a view of a device buffer
        array.setflags(write=False)
        return array

    return jax.tree.map(freeze, tree)


def mb(n: float) -> str:
    return f"{n / 1e6:.2f} MB"


def kb(n: float) -> str:
    return f"{n / 1e3:.1f} KB"


# instructions whose work the module's figures cannot see: a host callback (a custom-call into the
# Python runtime), any other custom-call, or data sent to / read from the host
HOST_WORK = re.compile(r"\s(custom-call|send|recv|infeed|outfeed)(-start|-done)?\(")
TARGET = re.compile(r'custom_call_target="([^"]*)"')


def within_budgets(*results: bool | str) -> None:
    """Fail in one line naming every budget missed, each with its figure and its budget, as
    every other phase's failure is one line (the test's source is not the lesson). Each result
    is True for a budget met, or the line that says how it was missed."""
    __tracebackhide__ = True
    missed = [result for result in results if result is not True]
    if missed:
        pytest.fail("; ".join(str(line) for line in missed), pytrace=False)


def check_no_hidden_work(text: str, what: str) -> None:
    """Fail on the first instruction of the HLO text that runs work outside the module (read
    from the text: a callback's attributes need not parse)."""
    hidden = next((line for line in text.splitlines() if HOST_WORK.search(line)), None)
    if hidden is None:
        return
    found, target = HOST_WORK.search(hidden), TARGET.search(hidden)
    assert found is None, (
        f"{what}: {found.group(1)} {hidden.split('=', 1)[0].strip()}"
        f"{f' to {target.group(1)}' if target else ''}: the figures count only the module's "
        "own instructions, so the work must stay in them (no host callbacks, custom-calls or "
        "host transfers)"
    )


def check_counted_once(module, what: str) -> None:
    """Fail on a loop: cost_analysis counts a while's body once, whatever its trips, so the
    figures of a module with a loop are not what it does."""
    loop = next((i.name for c in module for i in c if i.opcode == "while"), None)
    assert loop is None, (
        f"{what} runs a loop, the while {loop}: cost_analysis counts a loop's body once, however "
        "many trips it runs, so the module's figures would not be the step's; write it without "
        "a loop"
    )


def close(got, want, what: str, rtol: float, atol: float) -> None:
    got_leaves, want_leaves = jax.tree.leaves(got), jax.tree.leaves(want)
    assert len(got_leaves) == len(want_leaves), (
        f"{what}: {len(got_leaves)} arrays, the original gives {len(want_leaves)}"
    )
    for index, (g, w) in enumerate(zip(got_leaves, want_leaves, strict=True)):
        g, w = np.asarray(g), np.asarray(w)
        assert g.shape == w.shape and g.dtype == w.dtype, (
            f"{what}: array {index} is {g.dtype}{list(g.shape)}, the original's "
            f"{w.dtype}{list(w.shape)}"
        )
        error = float(np.max(np.abs(g.astype(np.float64) - w)))
        assert np.allclose(g, w, rtol=rtol, atol=atol), (
            f"{what}: array {index} differs from the original's by up to {error:.3g}"
        )

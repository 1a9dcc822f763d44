"""Phase 12 tests, collectives in flight read from the schedule and nothing else: a collective's
`is_sync` flag (in its collective_backend_config) drawn afresh on every start and every plain
collective, and windows in which another collective's own steps run (an async-update of a
reduce-scatter printed while an all-gather is in flight: the update is work in flight for the
gather, a step of its own only for the reduce-scatter).

The modules are the recordings and hand-written ones of test_phase12_overlap, with the flags
drawn by the ``fresh`` seed and every done printed as late as its users allow
(texts.dones_delayed), each also renamed; expected values from XLA's own schedule
(kata_harness.oracles.gpu_hlo), which reads no flag.
"""

import random
import re

import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import gpu_hlo as oracle
from kata_harness.oracles import xla_accepts
from katas.phase12 import texts as module_texts

_FIVE = ("all-gather", "all-reduce", "reduce-scatter", "collective-permute", "all-to-all")
_OPCODE = re.compile(r"^\s*(?:ROOT )?%[\w.-]+ = .*? ([\w-]+)\(")
_FLAG = re.compile(r'"is_sync":(?:true|false)')


def _read(fn, text: str, what: str):
    """fn(text); a crash on a module XLA parses is a wrong answer (NotImplementedError passes)."""
    try:
        return fn(text)
    except NotImplementedError:
        raise
    except Exception as error:  # noqa: BLE001  (any exception: the module is valid)
        crash = f"{type(error).__name__}: {str(error)[:160]}"
    pytest.fail(f"{what}: raised {crash} on a module XLA parses", pytrace=False)


def _differing(got: dict, want: dict) -> list[str]:
    """The keys whose values differ (not the values: a failure must not hand out the answer)."""
    return sorted(str(k) for k in set(got) | set(want) if got.get(k) != want.get(k))


def _flagged(text: str, rng: random.Random) -> tuple[str, int]:
    """``text`` with every collective's and async start's is_sync flag drawn: true on each
    start (what the flag says of a synchronous collective), true or false on each plain
    collective; a start or collective without a collective_backend_config gets one. Returns the
    text and how many starts now say is_sync:true."""
    lines, starts = text.split("\n"), 0
    for at, line in enumerate(lines):
        found = _OPCODE.match(line)
        op = found[1] if found else ""
        start = op.endswith("-start")
        if not (start or op in _FIVE):
            continue
        flag = '"is_sync":true' if start or rng.random() < 0.5 else '"is_sync":false'
        if _FLAG.search(line):
            lines[at] = _FLAG.sub(flag, line)
        elif "backend_config=" not in line:
            lines[at] = f'{line}, backend_config={{"collective_backend_config":{{{flag}}}}}'
        else:
            continue
        starts += start
    return "\n".join(lines), starts


_FLAGGED = ("matmul_2x2_a100", "nested_collectives", "async_collectives", "async_chains")


@pytest.mark.task("collective_overlap")
def test_collective_overlap_reads_the_schedule_not_the_is_sync_flag(kata, fresh):
    """Every async start marked "is_sync":true, plain collectives marked either way (drawn):
    the flag is configuration, the printed schedule is what runs. A start is keyed with what is
    printed between it and its done; a plain collective maps to [] whatever its flag says."""
    for name in _FLAGGED:
        plain = module_texts.text(name)
        text, starts = _flagged(plain, fresh)
        assert starts and xla_accepts(text), f"{name}: XLA refuses its flags drawn"
        expected = oracle.overlaps(text, generic=True)
        assert expected == oracle.overlaps(plain, generic=True), f"{name}: XLA reads a flag"
        assert any(expected.values()), f"{name}: nothing in flight"
        renamed = metamorphic.renamed(text, random.Random(fresh.random()))
        assert renamed is not None, f"XLA refuses {name} flagged and renamed"
        forms = [(text, expected), (renamed.text, module_texts.renamed_keys(renamed, expected))]
        for form, (case, want) in zip(("flagged", "flagged, renamed"), forms, strict=True):
            got = _read(kata.collective_overlap, case, f"{name} {form}")
            assert isinstance(got, dict), f"{name} {form}: got {type(got).__name__}"
            with check:
                assert got == want, (
                    f"{name} {form} ({fresh.where()}): {_differing(got, want)} "
                    "differ (a start marked is_sync is still a start: its list is what is "
                    "printed between it and its done)"
                )


@pytest.mark.task("collective_overlap")
def test_collective_overlap_another_collective_s_steps_are_work_in_flight(kata, fresh):
    """handwritten.ASYNC_CHAINS with every done as late as its users allow: the all-gather is
    in flight over the reduce-scatter's last async-update and its done. Only a collective's own
    updates leave its list; another's are listed (async-update, as every async op in flight)."""
    variant = module_texts.dones_delayed("async_chains")
    expected = oracle.overlaps(variant.text, generic=True)
    steps = [k for k, ops in expected.items() if "async-update" in ops]
    assert steps, f"no collective has another's update in flight: {expected}"
    renamed = metamorphic.renamed(variant.text, random.Random(fresh.random()))
    assert renamed is not None, "XLA refuses async_chains delayed and renamed"
    cases = [
        ("dones delayed", variant.text, expected),
        ("dones delayed, renamed", renamed.text, module_texts.renamed_keys(renamed, expected)),
    ]
    for what, text, want in cases:
        got = _read(kata.collective_overlap, text, what)
        assert isinstance(got, dict), f"{what}: got {type(got).__name__}"
        with check:
            assert got == want, (
                f"{what} ({fresh.where()}): {_differing(got, want)} differ "
                "(the updates a collective's done is reached through are its own steps; another "
                "collective's update printed in its window runs while it is in flight)"
            )

"""Phase 4 tests, tasks 9-11 (pass_timeline, pass_that_changed, named_passes): the per-pass dump.

Pass names are never written here: the true answer is read from a per-pass dump made in this run
(xla_inspect.passes reads it; kata_harness.oracles.rewrites), or built into a timeline the test
constructs.
"""

import os
import zlib
from collections import Counter
from pathlib import Path

import jax
import numpy as np
import pytest
from pytest_check import check

from kata_harness import metamorphic
from kata_harness.oracles import rewrites as oracle
from katas.phase4.programs import DUMPED
from xla_inspect import passes


def _require_cpu(fact: str) -> None:
    if jax.default_backend() != "cpu":
        pytest.skip(f"CPU-only fact: {fact}")


@pytest.fixture(scope="session")
def dumps(tmp_path_factory):
    """Per-pass dumps of the test-owned programs, made once per session."""
    return oracle.pass_dumps(tmp_path_factory.mktemp("passes"), DUMPED)


# --- tasks 9-11: the per-pass dump -----------------------------------------------------------


def _timeline(kata, dump_dir) -> list:
    timeline = kata.pass_timeline(str(dump_dir))
    assert isinstance(timeline, list), f"expected a list, got {type(timeline).__name__}"
    for entry in timeline:
        assert isinstance(entry, tuple) and len(entry) == 2, f"not (name, counts): {entry!r:.60}"
    return timeline


# The per-pass pipelines of these programs differ where it matters (a dot, a fusion, CSE and a
# loop with a conditional, tuple-shaped instructions and a dotted module name); the other dumps
# repeat them, so the timeline tests read three (each dump is 25 to 40 files to parse).
TIMELINE_DUMPS = ("transpose", "fusion", "loop")


@pytest.mark.task("pass_timeline")
def test_timeline_matches_the_dump(kata, dumps):
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        names = [name for name, _ in timeline]
        with check:
            assert names == [name for name, _ in dump["files"]], f"{key}: pass names {names}"
        with check:
            assert [dict(c) for _, c in timeline] == [dict(c) for _, c in dump["files"]], (
                f"{key}: opcode counts differ from the files'"
            )


@pytest.mark.task("pass_timeline")
def test_timeline_runs_from_unoptimized_to_optimized(kata, dumps):
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        with check:
            assert timeline and timeline[0][1] == dump["before"], (
                f"{key}: first entry is not the module XLA started from"
            )
        with check:
            assert timeline and timeline[-1][1] == dump["after"], (
                f"{key}: last entry is not the optimized module"
            )


@pytest.mark.task("pass_timeline")
def test_timeline_shows_each_change_where_the_dump_does(kata, dumps):
    """Every change xla_inspect's timeline reports (it skips files that changed nothing) is
    between the same two neighbours of the kata's timeline."""
    for key in TIMELINE_DUMPS:
        dump = dumps[key]
        timeline = _timeline(kata, dump["dir"])
        changes = [
            name
            for (_, before), (name, after) in zip(timeline, timeline[1:], strict=False)
            if Counter(before) != Counter(after)
        ]
        expected = [step.pass_name for step in dump["steps"] if step.opcode_deltas]
        with check:
            assert changes == expected, f"{key}: opcode counts change after {changes}, {expected}"


def _variant_dump(source: Path, target: Path, fresh) -> tuple[list[str], list[int]]:
    """A copy of the dump in `target` whose per-pass files hold a metamorphic variant of their
    module (every computation and instruction relabelled, computations reordered where XLA
    accepts another order), seeded by the file name, under the name XLA would give it in a
    longer compile: sequence numbers moved to run across 9999 to 10000 (XLA pads them to four
    digits, no more); other files copied as they are. The files are written in an order drawn
    from `fresh`, and their modification times set in another drawn order, never the sequence
    (a dump copied or written out of order: only the numbers order the passes). Returns the
    variant kinds written and the per-pass files' sequence numbers, oldest mtime first."""
    target.mkdir()
    files = passes.pass_files(source)
    first = 10_000 - len(files) // 2
    renamed = {f.path.name: _renumbered(f, first + index) for index, f in enumerate(files)}
    kinds: list[str] = []
    texts: dict[str, bytes] = {}
    for path in sorted(source.iterdir()):
        if path.name not in renamed:
            texts[path.name] = path.read_bytes()
            continue
        found = list(metamorphic.variants(path.read_text(), seed=zlib.crc32(path.name.encode())))
        assert found, f"{path.name}: no metamorphic variant XLA accepts"
        texts[renamed[path.name]] = found[-1].text.encode()
        kinds.append(found[-1].kind)
    written = list(texts)
    fresh.shuffle(written)
    for name in written:
        (target / name).write_bytes(texts[name])
    in_sequence = list(range(len(files)))
    by_mtime = fresh.sample(in_sequence, len(in_sequence))
    if by_mtime == in_sequence:  # a drawn order that happens to be the sequence: turn it round
        by_mtime.reverse()
    start = os.stat(target).st_mtime_ns
    for position, index in enumerate(by_mtime):
        stamp = start + position * 1_000_000_000  # a second apart: no two files tie
        os.utime(target / renamed[files[index].path.name], ns=(stamp, stamp))
    return kinds, [first + index for index in by_mtime]


def _renumbered(file: passes.PassFile, seq: int) -> str:
    """The file's name with another sequence number, printed as XLA prints it (%04d)."""
    prefix = f"{file.module_key}.{file.seq:04d}."
    assert file.path.name.startswith(prefix), f"{file.path.name}: not {prefix}..."
    return f"{file.module_key}.{seq:04d}.{file.path.name.removeprefix(prefix)}"


@pytest.mark.task("pass_timeline")
def test_timeline_holds_under_renaming_and_reordering(kata, dumps, tmp_path, fresh):
    """The same dump with every file's module relabelled (%n17, %c3) and reordered, its
    sequence numbers running past 9999, and its files written and modified in a drawn order:
    the pass names come from the file names, the order from the numbers (not the times) and the
    counts from the opcodes, so nothing changes."""
    for key in ("fusion", "loop"):  # a reduction and its fusion; a loop, tuples, a dotted name
        dump = dumps[key]
        kinds, by_mtime = _variant_dump(dump["dir"], tmp_path / key, fresh)
        timeline = _timeline(kata, tmp_path / key)
        expected = [(name, dict(counts)) for name, counts in dump["files"]]
        got = [(name, dict(counts)) for name, counts in timeline]
        what = (
            f"{key} (each file {sorted(set(kinds))}, seeded by its file name; modification "
            f"times in the drawn order of sequence numbers {_shortened(by_mtime)}, "
            f"{fresh.where()})"
        )
        with check:
            assert [n for n, _ in got] == [n for n, _ in expected], (
                f"{what}: pass names {_shortened([n for n, _ in got])}, expected them in "
                "sequence-number order"
            )
        for index, ((name, counts), (_, want)) in enumerate(zip(got, expected, strict=False)):
            if counts != want:
                with check:
                    assert counts == want, (
                        f"{what}: entry {index} ({name}): counts {counts}, expected {want}"
                    )
                break


def _shortened(items: list, shown: int = 6) -> str:
    """The first and last few of `items`, for a failure message."""
    if len(items) <= 2 * shown:
        return str(items)
    head, tail = ", ".join(map(str, items[:shown])), ", ".join(map(str, items[-shown:]))
    return f"[{head}, ... {tail}] ({len(items)} files)"


# A constructed timeline, its opcode, and the answer by construction.
def _entry(name, **counts):
    return name, Counter({op: _parsed(count) for op, count in counts.items()})


def _parsed(count: int) -> int:
    """The count as reading a file makes it: an int object of its own. Equal counts of separate
    files are equal, not the same object (CPython shares only the ints -5 to 256)."""
    return int(str(count))


CONSTRUCTED = {
    "first pair, a removal": (
        [
            _entry("start", add=3, multiply=1),
            _entry("cse", add=2, multiply=1),
            _entry("algsimp", add=2),
        ],
        "add",
        "cse",
    ),
    "appears from nothing": (
        [
            _entry("start", sine=1),
            _entry("algsimp", sine=1, constant=2),
            _entry("dce", sine=1, constant=1),
            _entry("fusion", sine=1, constant=1, fusion=1),
            _entry("fusion-wrapper", fusion=2),
        ],
        "fusion",
        "fusion",
    ),
    "changes and changes back": (
        [
            _entry("start", copy=0, add=1),
            _entry("layout", add=1, copy=2),
            _entry("copy-insertion", add=1, copy=1),
            _entry("simplify", add=1),
        ],
        "copy",
        "layout",
    ),
    "others change, it never does": (
        [
            _entry("start", dot=1, transpose=1),
            _entry("transpose-folding", dot=1),
            _entry("fusion", dot=1, fusion=1),
        ],
        "dot",
        None,
    ),
    "absent everywhere": ([_entry("start", add=1), _entry("cse", add=1, fusion=1)], "while", None),
    "one entry": ([_entry("start", add=2)], "add", None),
    "empty": ([], "add", None),
    "an explicit zero is a missing opcode": (
        [
            _entry("start", add=0, multiply=1),
            _entry("algsimp", multiply=1),
            _entry("cse", add=0, multiply=2),
            _entry("dce", multiply=2),
        ],
        "add",
        None,
    ),
    "from an explicit zero": (
        [_entry("start", multiply=1), _entry("dce", add=0), _entry("algsimp", add=1)],
        "add",
        "algsimp",
    ),
    "opcodes whose names hold another's": (
        [
            _entry("start", reduce=1, **{"all-reduce": 2, "reduce-window": 1}),
            _entry("all-reduce-combiner", reduce=1, **{"all-reduce": 1, "reduce-window": 1}),
            _entry("simplify", reduce=1, **{"reduce-scatter": 1}),
            _entry("fusion", reduce=2, **{"reduce-scatter": 1}),
        ],
        "reduce",
        "fusion",
    ),
    "counts past 256, equal but parsed apart": (
        [
            _entry("start", add=300, multiply=1),
            _entry("cse", add=300, multiply=2),
            _entry("algsimp", add=299, multiply=2),
        ],
        "add",
        "algsimp",
    ),
    "a large count that stays": (
        [_entry("start", add=4096), _entry("dce", add=4096, fusion=1)],
        "add",
        None,
    ),
    "a repeated pass name": (
        [
            _entry("pipeline-start", tanh=1, add=2),
            _entry("algsimp", tanh=1, add=1),
            _entry("pipeline-start", tanh=1, add=1),
            _entry("simplify", tanh=0, add=1),
        ],
        "tanh",
        "simplify",
    ),
}


def _random_cases(fresh, count=6):
    """Random timelines drawn afresh each run: the answer is the index where the opcode's count
    is set to move. Opcodes whose names hold the asked one's move at random, and a count of 0 is
    written out or left out at random. Every other case counts in the hundreds to thousands (a
    module of a real model holds that many adds), each count an int of its own as a parser
    makes it."""
    rng = np.random.default_rng(fresh.randrange(2**32))
    pool = ["pipeline-start", "algsimp", "cse", "dce", "fusion", "layout-assignment", "simplify"]
    others = ("add", "multiply", "all-reduce", "reduce-window", "reduce-scatter")
    cases = {}
    for case in range(count):
        low, high = (0, 4) if case % 2 == 0 else (257, 100_000)
        length = int(rng.integers(3, 10))
        change = int(rng.integers(1, length))
        names = [str(n) for n in rng.choice(pool, size=length)]
        level = int(rng.integers(low, high))
        timeline = []
        for index, name in enumerate(names):
            counts = Counter({op: _parsed(int(rng.integers(0, 4))) for op in others})
            if index == change:
                level += int(rng.choice([-1, 1])) if level else 1
            elif index > change:
                level = int(rng.integers(low, high))
            if level or rng.random() < 0.5:
                counts["reduce"] = _parsed(level)
            timeline.append((name, counts))
        cases[f"random {case} ({fresh.where()})"] = (timeline, "reduce", names[change])
    return cases


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_on_constructed_timelines(kata, fresh):
    for what, (timeline, opcode, expected) in {**CONSTRUCTED, **_random_cases(fresh)}.items():
        got = kata.pass_that_changed(timeline, opcode)
        seen = [(name, counts.get(opcode, 0)) for name, counts in timeline]
        with check:
            assert got == expected and type(got) is type(expected), (
                f"{what}: {opcode} first changes after {expected!r}, got {got!r} "
                f"(its counts: {seen})"
            )


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_names_the_culprit(kata, dumps):
    for key, dump in dumps.items():
        _, _, opcode, finder = DUMPED[key]
        truth = oracle.culprit(dump, opcode, finder)
        assert truth in {name for name, _ in dump["files"]}, f"{key}: no pass changes {opcode}"
        got = kata.pass_that_changed(dump["files"], opcode)
        with check:
            assert got == truth, f"{key}: {opcode} changed by {truth!r} (per the dump), got {got!r}"


@pytest.mark.task("pass_that_changed")
def test_pass_that_changed_is_none_for_untouched_ops(kata, dumps):
    for key, opcode in (("transpose", "dot"), ("refused", "subtract"), ("fusion", "reduce")):
        deltas = [s.pass_name for s in dumps[key]["steps"] if s.opcode_deltas.get(opcode)]
        assert not deltas, f"{key}: the dump shows {deltas} changing {opcode}"
        got = kata.pass_that_changed(dumps[key]["files"], opcode)
        with check:
            assert got is None, f"{key}: no pass changes {opcode}, got {got!r}"


@pytest.mark.task("named_passes")
def test_named_passes_match_the_dump(kata, dumps):
    _require_cpu("the pass pipeline and pass names are the CPU compiler's")
    answers = kata.named_passes()
    assert isinstance(answers, dict), f"expected a dict, got {type(answers).__name__}"
    for key in ("transpose", "fusion", "add", "divide"):
        _, _, opcode, finder = DUMPED[key]
        truth = oracle.culprit(dumps[key], opcode, finder)
        with check:
            assert answers.get(key) == truth, (
                f"{key}: the dump says {truth!r}, got {answers.get(key)!r}"
            )

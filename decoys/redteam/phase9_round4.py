"""Red-team wrong answers for phase 9, written from the contract only.

Round 4: `predict_collectives(case)` on the rewritten contract (case: a ShardedOp). Each answer
below is a full rule set that is right on the twelve cases of the README/PREDICT_BANK (x f32[16,8]
on a 1-D mesh {'x': 8}) and on the README's 2-D examples where it can be, and wrong on one trap
the case type allows. Every `why` names a case compiled outside the answers (with
collective_programs.compiled) and what the compiler really inserted.
"""

from __future__ import annotations

from collections import Counter

from kata_harness.decoys import wrong


def _rt4_names(entry) -> tuple:
    """The mesh axes one PartitionSpec entry names (() for None)."""
    if entry is None:
        return ()
    return tuple(entry) if isinstance(entry, tuple) else (entry,)


def _rt4_dims(spec, only_x: bool = False) -> list[tuple]:
    """The axes splitting dimension 0 and 1 of a 2-D array placed with `spec`."""
    entries = tuple(spec) if spec is not None else ()
    entries = entries + (None,) * (2 - len(entries))
    dims = [_rt4_names(e) for e in entries[:2]]
    if only_x:  # a learner who tests "is it split over 'x'" as the earlier tasks did
        dims = [tuple(n for n in d if n == "x") for d in dims]
    return dims


def _rt4_predict(
    case,
    *,
    gather_first: bool = False,
    reduce_every_split_dim: bool = False,
    reverse_any_split: bool = False,
    gather_input_dims: bool = False,
    allreduce_replicates: bool = False,
    only_x: bool = False,
    reverse_after_gather: bool = False,
    gather_both_addends: bool = False,
) -> dict[str, int]:
    """Per dimension: what one device holds of x, what its slice of the result needs; each flag
    is one believable mistake."""
    counts: Counter = Counter()
    x = _rt4_dims(case.specs[0], only_x)
    split = [bool(d) for d in x]
    out = None if case.out is None else _rt4_dims(case.out, only_x)
    replicated = out is not None and not any(out)
    op = case.op

    if gather_first and replicated:
        # "the result is wanted everywhere: gather every sharded argument, then run it locally"
        for spec in case.specs:
            counts["all-gather"] += sum(bool(d) for d in _rt4_dims(spec, only_x))
        return {k: v for k, v in counts.items() if v}

    def gathers(result_split: list[bool]) -> None:
        if replicated:
            counts["all-gather"] += sum(split) if gather_input_dims else sum(result_split)

    if op == "sum":
        counts["all-reduce"] += sum(split)
    elif op in ("sum0", "sum1"):
        k = int(op[-1])
        if split[k]:
            counts["all-reduce"] += sum(split) if reduce_every_split_dim else 1
        gathers([split[1 - k]])
    elif op in ("softmax0", "softmax1"):
        k = int(op[-1])
        if split[k]:
            counts["all-reduce"] += 2 * (sum(split) if reduce_every_split_dim else 1)
        gathers(split)
    elif op == "transpose":
        gathers(split)
    elif op in ("reverse0", "reverse1"):
        k = int(op[-1])
        if reverse_after_gather and replicated:
            gathers(split)  # "gather first, then reverse the whole array locally"
        else:
            if any(split) if reverse_any_split else split[k]:
                counts["collective-permute"] += 1
            gathers(split)
    elif op == "matmul":
        if split[1]:
            counts["all-reduce"] += 1
        gathers([split[0]])
    elif op in ("scale", "add"):
        moved = False
        if op == "add":
            moved = _rt4_dims(case.specs[1], only_x) != x
        if out is not None and not replicated and out != x:
            moved = True
        if moved and gather_both_addends and op == "add" and replicated:
            # "both addends end up whole everywhere: gather x and gather y, add locally"
            y = _rt4_dims(case.specs[1], only_x)
            counts["all-gather"] += sum(split) + sum(bool(d) for d in y)
            return {k: v for k, v in counts.items() if v}
        if moved:
            counts["all-to-all"] += 1
        gathers(split)
    if allreduce_replicates and counts["all-reduce"]:
        counts["all-gather"] = 0  # "after an all-reduce every device holds the same values"
    return {k: v for k, v in counts.items() if v}


@wrong(
    "predict_collectives",
    why="a replicated result is not 'gather every argument, then compute locally': the "
    "partitioner reduces partial results and gathers only what the result still has split; "
    "wrong on sum of f32[16,8], mesh {'x': 8}, x P('x', None), out P() (compiler: 1 all-reduce; "
    "this: 1 all-gather) and on x @ w, x P(None, 'x'), w P('x', None), out P() (1 all-reduce; "
    "this: 2 all-gathers)",
)
def rt4_gather_first_when_replicated(case) -> dict[str, int]:
    return _rt4_predict(case, gather_first=True)


@wrong(
    "predict_collectives",
    why="a reduction costs one all-reduce per split dimension it REDUCES, not per split "
    "dimension of x (right for x.sum(), where both are reduced); wrong on sum0 of bf16[16,8], "
    "mesh {'x': 2, 'y': 4}, x P('x', 'y'), out None (compiler: 1 all-reduce; this: 2) and "
    "softmax0 with x P('x', 'y') (2 all-reduces; this: 4)",
)
def rt4_reduce_every_split_dim(case) -> dict[str, int]:
    return _rt4_predict(case, reduce_every_split_dim=True)


@wrong(
    "predict_collectives",
    why="reversing moves blocks between devices only along the reversed dimension; wrong on "
    "reverse1 of f32[16,8], mesh {'x': 8}, x P('x', None), out None (compiler: {}; this: 1 "
    "collective-permute) and reverse0 with x P(None, 'x')",
)
def rt4_reverse_permutes_any_split(case) -> dict[str, int]:
    return _rt4_predict(case, reverse_any_split=True)


@wrong(
    "predict_collectives",
    why="a replicated result needs one all-gather per dimension of the RESULT still split, not "
    "per split dimension of x: a reduced dimension comes out of the all-reduce whole; wrong "
    "on sum0 of f32[16,8], mesh {'x': 8}, x P('x', None), out P() (compiler: 1 all-reduce; "
    "this: 1 all-reduce + 1 all-gather) and x @ w with x P(None, 'x'), out P()",
)
def rt4_gathers_per_input_split(case) -> dict[str, int]:
    return _rt4_predict(case, gather_input_dims=True)


@wrong(
    "predict_collectives",
    why="an all-reduce replicates only the reduced values (softmax's max and sum, sum0's "
    "column sums), x's other splits must still be gathered for a replicated result; wrong on "
    "softmax0 of f32[16,8], mesh {'x': 8}, x P('x', None), out P() (compiler: 2 all-reduces + "
    "1 all-gather; this: 2 all-reduces) and sum0 with x P('x', 'y') on {'x': 2, 'y': 4}, out P()",
)
def rt4_allreduce_makes_replicated(case) -> dict[str, int]:
    return _rt4_predict(case, allreduce_replicates=True)


@wrong(
    "predict_collectives",
    why="the case's mesh has any axis names ((name, size), ...), a split is any named axis, "
    "not only 'x'; wrong on sum of f32[16,8] on mesh {'data': 8}, x P('data', None) (compiler: "
    "1 all-reduce; this: {}) and sum with x P('model', 'rows') on {'model': 2, 'rows': 4} (2 "
    "all-reduces; this: {})",
)
def rt4_only_axis_x_splits(case) -> dict[str, int]:
    return _rt4_predict(case, only_x=True)


@wrong(
    "predict_collectives",
    why="with a replicated result the partitioner still reverses the blocks before it gathers "
    "them (it does not gather first and reverse locally); wrong on reverse0 of f32[16,8], mesh "
    "{'x': 8}, x P('x', None), out P() (compiler: 1 collective-permute + 1 all-gather; this: 1 "
    "all-gather)",
)
def rt4_reverse_after_gather(case) -> dict[str, int]:
    return _rt4_predict(case, reverse_after_gather=True)


@wrong(
    "predict_collectives",
    why="with y's split moved to the other dimension the partitioner first moves y to x's "
    "placement (all-to-all) and gathers the one sum, it does not gather x and y separately; "
    "wrong on add of f32[16,8], mesh {'x': 8}, x P('x', None), y P(None, 'x'), out P() "
    "(compiler: 1 all-to-all + 1 all-gather; this: 2 all-gathers)",
)
def rt4_add_moved_gathers_both(case) -> dict[str, int]:
    return _rt4_predict(case, gather_both_addends=True)

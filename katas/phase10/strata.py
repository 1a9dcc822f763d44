"""Stratified draws for phase 10's two predict tasks: one drawn case per situation the contract
distinguishes, every run, whatever the seed.

predict_alias_bytes tells the three optimizers apart (sgd keeps nothing between steps, momentum a
trace per parameter, adam a step count and two moments); predict_step_flops tells the two layers'
products apart (no gradient flows into the data x, one flows into the hidden layer), and which of
them an answer gets wrong shows only where that layer's products weigh: with the first layer's
products dominating (features >= 4 x out) or the second's (out >= 4 x features); an answer that
keeps only the layer that dominates shows where neither does (out <= features <= 2 x out, each
layer at least 40% of the products). Both also draw
a case whose count passes 2**31 (the step is compiled from shapes alone, nothing allocated), and
the aliased bytes one where hidden == out (b1 and b2 are two leaves of one shape). Each situation
is a stratum; only the sizes inside it are drawn.
"""

from __future__ import annotations

import random

# ---- predict_alias_bytes: (features, hidden, out, optimizer), with the batch the step is built on


def alias_strata(rng: random.Random) -> dict[str, tuple[int, int, int, str, int]]:
    """(features, hidden, out, optimizer, batch) per optimizer; the three sizes drawn distinct
    from 1 to 128 (so that an answer taking one for another differs), one of them 1 in one case
    drawn among the three; the batch (not donated, so it changes nothing) from 1 to 16. Then,
    with a drawn optimizer, hidden == out (2 to 128)."""
    optimizers = {
        "sgd: the params only": "sgd",
        "momentum: a trace per parameter": "momentum",
        "adam: a step count and two moments per parameter": "adam",
    }
    with_one = rng.choice(list(optimizers))
    cases = {}
    for situation, optimizer in optimizers.items():
        sizes = rng.sample(range(2, 129), 3)
        if situation == with_one:
            sizes[rng.randrange(3)] = 1
        features, hidden, out = sizes
        cases[situation] = (features, hidden, out, optimizer, rng.randint(1, 16))
    features, width = rng.sample(range(2, 129), 2)
    cases["hidden == out: two leaves of one shape"] = (
        features,
        width,
        width,
        rng.choice(sorted(optimizers.values())),
        rng.randint(1, 16),
    )
    return cases


def alias_past_2_31(rng: random.Random) -> tuple[int, int, int, str, int]:
    """adam with features and hidden from 13,500 to 14,100: just past 2**31 bytes (a case of its
    own: an answer that builds arrays of these sizes allocates gigabytes)."""
    return rng.randint(13_500, 14_100), rng.randint(13_500, 14_100), rng.randint(1, 128), "adam", 4


# ---- predict_step_flops: (features, hidden, out, batch) of a momentum step ----------------------


def flops_strata(rng: random.Random) -> dict[str, tuple[int, int, int, int]]:
    """(features, hidden, out, batch) per layer whose products dominate: features >= 4 x out
    (out 1 to 16), or out >= 4 x features (features 1 to 12); the larger of the two from 48 to
    256, hidden 32 to 256 and the batch 48 to 128, where the elementwise work stays within 6% of
    the products (measured), so the 10% the tests accept is the products' count's to lose. Then
    both layers alike: out 48 to 128 and features out to 2 x out (the first layer's 4*b*f*h
    against the second's 6*b*h*o: each at least 40% of the products; hidden and batch as above,
    elementwise work within 6% as well). Then one over 2**31 flops: features 32,768 to 65,536,
    hidden 192 to 256, out 1 to 16 and the batch 128 to 192 (at least 3.2e9 flops)."""
    cases = {}
    for situation in ("first", "second"):
        small = rng.randint(1, 16 if situation == "first" else 12)
        large = rng.randint(max(48, 4 * small), 256)
        hidden, batch = rng.randint(32, 256), rng.randint(48, 128)
        if situation == "first":
            key = "the first layer's products dominate (features >= 4 x out)"
            cases[key] = (large, hidden, small, batch)
        else:
            key = "the second layer's products dominate (out >= 4 x features)"
            cases[key] = (small, hidden, large, batch)
    out = rng.randint(48, 128)
    cases["both layers' products weigh (out <= features <= 2 x out)"] = (
        rng.randint(out, 2 * out),
        rng.randint(32, 256),
        out,
        rng.randint(48, 128),
    )
    cases["over 2**31 flops (the first layer's products dominate)"] = (
        rng.randint(32_768, 65_536),
        rng.randint(192, 256),
        rng.randint(1, 16),
        rng.randint(128, 192),
    )
    return cases

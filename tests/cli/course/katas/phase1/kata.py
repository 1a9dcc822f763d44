def double(x: int) -> int:
    # TODO
    raise NotImplementedError("phase1 task 1: double")


def total(xs: list[int]) -> int:
    # TODO
    raise NotImplementedError("phase1 task 2: total")


def evens(xs: list[int]) -> list[int]:
    # TODO
    raise NotImplementedError("phase1 task 3: evens")


def last(xs: list[int]) -> int:
    # TODO
    raise NotImplementedError("phase1 task 4: last")

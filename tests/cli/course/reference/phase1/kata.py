def double(x: int) -> int:
    return 2 * x


def total(xs: list[int]) -> int:
    return sum(xs)


def evens(xs: list[int]) -> list[int]:
    return [x for x in xs if x % 2 == 0]


def last(xs: list[int]) -> int:
    return xs[-1]

def shout(text: str) -> str:
    # TODO
    raise NotImplementedError("phase2 task 1: shout")


def word_count(text: str) -> int:
    # TODO
    raise NotImplementedError("phase2 task 2: word_count")


def initials(text: str) -> str:
    # TODO
    raise NotImplementedError("phase2 task 3: initials")

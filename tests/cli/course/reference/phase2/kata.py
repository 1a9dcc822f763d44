def shout(text: str) -> str:
    return text.upper()


def word_count(text: str) -> int:
    return len(text.split())


def initials(text: str) -> str:
    return "".join(word[0] for word in text.split())

"""Words that agree with their counts, for every message, hint, card and command line of the package."""

from __future__ import annotations

from typing import Optional

_VOWELS = "aeiou"


def plural_noun(noun: str, n: object = 2) -> str:
    """``noun`` in the number that agrees with ``n``: ``file`` for 1, ``files`` otherwise.

    Regular English endings (``entry`` -> ``entries``, ``class`` -> ``classes``); a noun whose
    last word is in upper case takes a bare ``s`` (``DV`` -> ``DVs``).
    """
    if n == 1:
        return noun
    word = noun.rsplit(" ", 1)[-1]
    if word.isupper():
        return noun + "s"
    if word.endswith("y") and len(word) > 1 and word[-2].lower() not in _VOWELS:
        return noun[:-1] + "ies"
    if word.endswith(("s", "x", "z", "ch", "sh")):
        return noun + "es"
    return noun + "s"


def middle(text: str, limit: int = 300) -> str:
    """``text`` at most ``limit`` characters, its middle cut out (a path keeps its file name): for values read
    from a file that go into a message, which a damaged file can make megabytes long."""
    if len(text) <= limit:
        return text
    keep = limit - 1
    return text[:keep - keep // 2] + "…" + text[len(text) - keep // 2:]


def are(n: object) -> str:
    """The verb that agrees with a count: ``is`` for 1, ``are`` otherwise."""
    return "is" if n == 1 else "are"


def plural(n: object, noun: str, many: Optional[str] = None, sep: str = ",") -> str:
    """``n`` and ``noun`` agreeing: ``1 file``, ``2 files``, ``12,345 rows``; ``many`` for an irregular plural.

    ``sep`` groups thousands (``","``, the package's style; ``""`` for none).  A count that
    is not a number (``None``, ``?``) is written as it is, with the plural.
    """
    if isinstance(n, bool) or not isinstance(n, (int, float)) and not hasattr(n, "__index__"):
        return f"{n} {many or plural_noun(noun)}"
    if isinstance(n, float) and not n.is_integer():
        count = f"{n:{sep}}"
    else:
        count = f"{int(n):{sep}d}" if sep else f"{int(n)}"
    word = noun if n == 1 else (many or plural_noun(noun))
    return f"{count} {word}"

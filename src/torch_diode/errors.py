"""The errors that mean "the input is wrong", as opposed to a bug in torch-diode.

The ``diode`` command prints a :class:`UserError` (and a model file's ``ModelFormatError`` and an
``OSError`` about a file) as one line naming the file, field or option, and exits 2; anything else
is a bug and keeps its traceback.
"""

from __future__ import annotations


class UserError(ValueError):
    """Bad input: a file, a field in it, an option or a setting (a ValueError, as before)."""


class OptionError(UserError):
    """A command-line option (or an argument of the function behind it) is out of its range."""

    def __init__(self, option: str, message: str):
        self.option = option
        super().__init__(f"{option}: {message}")


# the longest error line the command prints (the rest is cut, marked with "...")
MAX_LINE = 500


def one_line(text: str, limit: int = MAX_LINE) -> str:
    """``text`` as one line: runs of whitespace (newlines included) as one space, other control
    characters escaped (``\\x1b``), cut to ``limit`` characters."""
    words = " ".join(text.split())
    escaped = "".join(c if c.isprintable() else c.encode("unicode_escape").decode("ascii") for c in words)
    return escaped if len(escaped) <= limit else escaped[: limit - 3] + "..."


__all__ = ["MAX_LINE", "OptionError", "UserError", "one_line"]

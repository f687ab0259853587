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


__all__ = ["OptionError", "UserError"]

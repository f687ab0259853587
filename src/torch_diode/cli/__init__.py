"""The ``diode`` command line: thin subcommand modules (:mod:`.dataset`, :mod:`.collect`,
:mod:`.model`, :mod:`.rebuild`) that parse options and call the library.

One error discipline: bad input (a :class:`~torch_diode.errors.UserError`, a model file's
``ModelFormatError``, an ``OSError`` about a file) prints one line naming the file, field or option
and exits 2; ``--debug`` or ``TORCH_DIODE_DEBUG=1`` adds the traceback. Anything else is a bug and
keeps its traceback. Ctrl-C exits 130; every file is written atomically, so none is left
half-written.

The toolkit's global options are accepted before the subcommand, as the seeds wrote them
(``diode --format msgpack --seed 42 collect ...``): each goes to the subcommand's option of the
same name.
"""

from __future__ import annotations

import argparse
import logging
import os
import sys
import traceback
from collections.abc import Sequence

from .common import Parser

logger = logging.getLogger(__name__)

# Options given before the subcommand that belong to it (they take one value).
GLOBAL_SUBCOMMAND_OPTIONS = ("--format", "--seed")


def build_parser() -> argparse.ArgumentParser:
    from .collect import add_collection_commands
    from .dataset import add_dataset_commands
    from .model import add_model_commands
    from .rebuild import add_rebuild_command
    from .remeasure import add_remeasure_command
    from .sample import add_sample_command

    parser = Parser(prog="diode", description="torch-diode: learned GEMM kernel selection for torch.compile.")
    parser.add_argument("-v", "--verbose", action="store_true", help="log at DEBUG level")
    parser.add_argument(
        "--debug", action="store_true", help="show the traceback of an input error too (also TORCH_DIODE_DEBUG=1)"
    )
    # moved behind the subcommand by hoist_global_options; here for --help
    parser.add_argument(
        "--format",
        metavar="FMT",
        dest="global_format",
        help="the subcommand's --format (collect, collect-shapeset, create-validation, remeasure)",
    )
    parser.add_argument("--seed", metavar="N", dest="global_seed", help="the subcommand's --seed")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND")
    add_dataset_commands(sub)
    add_collection_commands(sub)
    add_remeasure_command(sub)
    add_model_commands(sub)
    add_rebuild_command(sub)
    add_sample_command(sub)
    return parser


def _subcommand(parser: argparse.ArgumentParser, words: list[str]) -> tuple[argparse.ArgumentParser, int] | None:
    """The (sub)subcommand's parser that ``words`` start with, and how many words name it."""
    current, used = parser, 0
    while used < len(words) and current._subparsers is not None:
        choices = current._subparsers._group_actions[0].choices
        if words[used] not in choices:
            break
        current, used = choices[words[used]], used + 1
    return (current, used) if used else None


def hoist_global_options(parser: argparse.ArgumentParser, argv: list[str]) -> list[str]:
    """``--format F --seed N`` before the subcommand moved behind its name, where the
    subcommand's own options of those names take them (an error line if it has none, or if it is
    also given after the subcommand); ``--debug`` and ``-v`` from anywhere moved to the front."""
    anywhere = [w for w in argv if w in ("--debug", "-v", "--verbose")]
    argv = [w for w in argv if w not in anywhere]
    moved: list[str] = []
    rest: list[str] = anywhere
    i = 0
    while i < len(argv) and argv[i].startswith("-"):
        word = argv[i]
        name = word.split("=", 1)[0]
        if name in GLOBAL_SUBCOMMAND_OPTIONS:
            take = 1 if "=" in word else 2
            moved.extend(argv[i : i + take])
            i += take
        else:
            rest.append(word)
            i += 1
    found = _subcommand(parser, argv[i:])
    if not moved or found is None:  # argparse reports a missing or unknown command
        return rest + moved + argv[i:]
    sub, used = found
    after = argv[i + used :]
    for name in [w.split("=", 1)[0] for w in moved]:
        if name not in GLOBAL_SUBCOMMAND_OPTIONS:
            continue  # a value
        if name not in sub._option_string_actions:
            parser.error(f"argument {name}: `{sub.prog}` has no {name} option")
        if any(w == name or w.startswith(name + "=") for w in after):
            parser.error(f"argument {name}: given both before and after `{' '.join(argv[i : i + used])}`")
    return rest + argv[i : i + used] + moved + after


def _debug(argv: Sequence[str]) -> bool:
    """--debug, or TORCH_DIODE_DEBUG set to a true word (a value that is no boolean is warned
    about and taken as off)."""
    from ..config import _env_bool

    return "--debug" in argv or _env_bool("TORCH_DIODE_DEBUG", False)


def _user_error(e: BaseException) -> bool:
    from .._C import ModelFormatError
    from ..errors import UserError

    return isinstance(e, (UserError, ModelFormatError, OSError))


def _one_line(e: BaseException) -> str:
    from ..errors import one_line

    if isinstance(e, OSError) and e.filename is not None and e.strerror:
        return one_line(f"{e.filename}: {e.strerror}")
    return one_line(str(e)) or type(e).__name__


def main(argv: Sequence[str] | None = None) -> int:
    parser = build_parser()
    argv = list(argv) if argv is not None else sys.argv[1:]
    debug = _debug(argv)
    argv = hoist_global_options(parser, argv)
    args = parser.parse_args(argv)
    args.argv = argv  # the words as given, for commands that start workers with them
    logging.basicConfig(
        level=logging.DEBUG if args.verbose else logging.INFO, format="[%(levelname)s] %(name)s: %(message)s"
    )
    try:
        return int(args.func(args) or 0)
    except KeyboardInterrupt:
        print(
            "diode: interrupted; files are written whole or not at all, a collection resumes where it stopped",
            file=sys.stderr,
        )
        return 130
    except BrokenPipeError:  # `diode dataset stats ... | head`: the reader has gone
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141
    except Exception as e:
        if not _user_error(e):
            raise
        if debug:
            traceback.print_exc()
        print(f"diode: error: {_one_line(e)}", file=sys.stderr)
        return 2


__all__ = ["build_parser", "main"]

"""How every command of the package ends: one place for the errors a user can cause. ``mkclust <tool>``
(:mod:`mkclust.repro.cli`) and ``python -m mkclust.datasets`` run their ``main(argv)`` through
:func:`run_tool` and build their parsers with :class:`Parser`, so that

- a missing or unreadable file (``OSError``), a malformed file or a configuration that cannot be run
  (``ValueError``: the configuration's own ``ConfigError``, JSON's and YAML's parse errors, a changed
  archive piece) and a bad option (:meth:`Parser.error`) each print one line on stderr,
  ``<command>: <what is wrong>``, and exit with status 2;
- output piped into a reader that closes early (``head``, a pager) ends quietly with status 0;
- Ctrl-C prints ``<command>: interrupted`` and exits with 130, as a shell does.

Anything else is a defect of the package, not of its input: its traceback is shown. ``MKCLUST_TRACEBACK=1``
shows the traceback of a user's error too. (argparse prints a usage block before its error line, and
Python a traceback for every exception: neither is one line, hence this module.)
"""

from __future__ import annotations

import argparse
import os
import sys


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are one line naming the command and where its help is."""

    def error(self, message: str):   # argparse: print usage and the message, exit 2
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def user_errors() -> tuple[type[BaseException], ...]:
    """The exception classes a user's input raises (YAML's only if YAML was read: it cannot be raised
    otherwise, and the library does not need PyYAML)."""
    yaml = sys.modules.get("yaml")
    return (OSError, ValueError) + ((yaml.YAMLError,) if yaml is not None else ())


def one_line(exc: BaseException) -> str:
    """The error as one line: a file error as ``path: reason``, any other message with its line breaks
    (YAML's context lines, a list of schema violations) joined by spaces."""
    if isinstance(exc, OSError) and exc.filename is not None and exc.strerror:
        return f"{exc.filename}: {exc.strerror}"
    return " ".join(str(exc).split()) or type(exc).__name__


def run_tool(tool_main, argv: list[str], prog: str) -> int:
    """``tool_main(argv)`` as a command's exit status, with the endings above."""
    try:
        return int(tool_main(argv) or 0)
    except BrokenPipeError:
        # Python flushes stdout again at exit: point it at /dev/null so that flush cannot fail too
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 0
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:
        if not isinstance(exc, user_errors()) or os.environ.get("MKCLUST_TRACEBACK"):
            raise
        print(f"{prog}: {one_line(exc)}", file=sys.stderr)
        return 2

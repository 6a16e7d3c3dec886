"""The command-line policy every entry point shares: ``infoflow``, ``python -m proofs``, ``python -m experiments``.

- Exit codes (``Exit``): 0 feasible, held or done; 1 infeasible or false; 2 bad input; 3 unknown; 4 a bug;
  130 interrupted (Ctrl-C); 143 terminated (SIGTERM).
- Errors: ``Parser`` turns argparse's usage-and-exit into ``BadInput``; ``answer`` turns whatever a command
  raises into one line on stderr and its exit code. The line goes through ``words.printable``, so nothing a
  hostile input holds (escape sequences, newlines) reaches the terminal as it is; a bug's traceback is shown only
  under ``--debug``.
- Numbers: an option's text is read once, by a ``Bound``, into a number the code can honour (a deadline z3 can
  hold, a count the limits allow); anything else is one line naming the value and the limit.
- Standard output: ``console`` runs a command as a console script. A reader that stops early (``| head``,
  ``| true``) stops nothing: the command ends with the code it would have had, its later output going nowhere
  (a pipeline read with ``set -o pipefail`` sees an infeasible answer as 1, never 0). A closed or full standard
  output is one line and code 2.
"""
from __future__ import annotations

import argparse
import contextlib
import enum
import itertools
import math
import os
import signal
import sys
from collections.abc import Callable
from dataclasses import dataclass
from typing import NoReturn

from infoflow_smt.deadline import on_terminate, terminated
from infoflow_smt.errors import InfoflowError, InvalidSpecError, Terminated, WitnessCheckError
from infoflow_smt.limits import MAX_DIGITS, MAX_TIMEOUT
from infoflow_smt.words import printable


class Exit(enum.IntEnum):
    """Every exit code a command returns."""

    OK = 0            # feasible, held, done
    NO = 1            # infeasible, a false claim, a failed check
    BAD_INPUT = 2     # one line on stderr naming the value and the fix
    UNKNOWN = 3       # the deadline passed first: never read as 0 or 1
    INTERNAL = 4      # a bug: one line, the traceback under --debug
    INTERRUPTED = 130
    TERMINATED = 143


class BadInput(Exception):
    """A user error: one line on stderr, exit code 2."""


class OutputFailed(Exception):
    """Standard output refused a write (a full disk, ``> /dev/full``): exit code 2."""


class Parser(argparse.ArgumentParser):
    """An argument parser whose errors are ``BadInput`` (argparse would print its usage and exit 2 itself)."""

    def error(self, message: str) -> NoReturn:
        raise BadInput(f"{message} (see `{self.prog} --help`)")


# ---- numbers ----------------------------------------------------------------------------------------------------
MAX_WHOLE = 10**MAX_DIGITS - 1    # a whole number of MAX_DIGITS digits: fits a 64-bit integer


@dataclass(frozen=True)
class Bound:
    """The numbers an option takes: whole (``int``) or real (``float``) ones from ``low`` to ``high``, ``low``
    itself excluded when ``above``; ``limit`` names the constant that sets ``high`` in a refusal. Called on an
    option's text it is an argparse ``type``; ``read`` raises ``BadInput`` instead.

    >>> SECONDS("0.5"), Bound(int, 1, 8)("8")
    (0.5, 8)
    >>> SECONDS.read("1e308")
    Traceback (most recent call last):
    ...
    infoflow_smt.command.BadInput: 1e308 is over the limit of 1000000 seconds (infoflow_smt.limits.MAX_TIMEOUT)
    """

    kind: type
    low: float
    high: float
    limit: str = ""
    above: bool = False
    unit: str = ""

    def value(self, text: str) -> int | float:
        """The number ``text`` names, or ``ValueError`` with the sentence that says why not."""
        shown = printable(text, 40)
        word = "a whole number" if self.kind is int else "a number"
        stripped = str(text).strip()
        digits = len(stripped.lstrip("+-"))
        if digits > MAX_DIGITS + 8 and stripped.lstrip("+-").isdigit():   # int() of thousands of digits is slow
            raise ValueError(f"{shown} has {digits} digits, over the limit of {MAX_DIGITS} "
                             "(infoflow_smt.limits.MAX_DIGITS)")
        try:
            if len(stripped) > MAX_DIGITS + 8:   # no bound is that long
                raise ValueError
            number = int(stripped) if self.kind is int else float(stripped)
        except ValueError:
            raise ValueError(f"{shown!r} is not {word}") from None
        unit = f" {self.unit}" if self.unit else ""
        if self.kind is float and not math.isfinite(number):
            raise ValueError(f"{shown} is not a finite number" + (f" of {self.unit}" if self.unit else ""))
        if number < self.low or (self.above and number == self.low):
            relation = "above" if self.above else "at least"
            raise ValueError(f"{shown} is not {relation} {_plain(self.low)}{unit}")
        if number > self.high:
            where = f" ({self.limit})" if self.limit else ""
            raise ValueError(f"{shown} is over the limit of {_plain(self.high)}{unit}{where}")
        return number

    def __call__(self, text: str) -> int | float:
        try:
            return self.value(text)
        except ValueError as err:
            raise argparse.ArgumentTypeError(str(err)) from None

    def read(self, text: str, option: str = "") -> int | float:
        """``value``, refusing with ``BadInput`` (naming ``option`` when given)."""
        try:
            return self.value(text)
        except ValueError as err:
            raise BadInput(f"{option} {err}" if option else str(err)) from None

    def several(self, *, increasing: bool = False, most: int = 64) -> Callable[[str], tuple]:
        """An argparse ``type`` for a comma-separated list of such numbers (at most ``most``; ``increasing``:
        each larger than the one before)."""
        def read(text: str) -> tuple:
            pieces = str(text).split(",")
            if len(pieces) > most:
                raise argparse.ArgumentTypeError(f"give at most {most} numbers, got {len(pieces)}")
            values = tuple(self(piece) for piece in pieces)
            if increasing and any(a >= b for a, b in itertools.pairwise(values)):
                raise argparse.ArgumentTypeError(f"{printable(text, 80)}: give increasing numbers, e.g. 4,16,64")
            return values
        return read


def _plain(number: float) -> str:
    if isinstance(number, int) or (float(number).is_integer() and abs(number) < 1e16):
        return str(int(number))
    return f"{number:g}"


SECONDS = Bound(float, 0, MAX_TIMEOUT, "infoflow_smt.limits.MAX_TIMEOUT", above=True, unit="seconds")
WHOLE = Bound(int, 1, MAX_WHOLE, "infoflow_smt.limits.MAX_DIGITS")   # a count with no smaller limit of its own


# ---- errors and exit codes --------------------------------------------------------------------------------------
def say(line: str) -> None:
    """One line on stderr, if there is a stderr to write to."""
    with contextlib.suppress(OSError, AttributeError, ValueError):
        print(line, file=sys.stderr, flush=True)


def answer(command: Callable[[], int], prog: str, *, debug: bool = False,
           hint: Callable[[Exception], str] = lambda err: "", interrupted: str = "") -> int:
    """``command()``'s exit code (an int), with whatever it raises turned into its one line on stderr and its
    code. ``hint`` adds the fix to a bad-input line; ``interrupted`` says what an interruption kept."""
    return int(_answer(command, prog, debug, hint, interrupted))


def _answer(command, prog: str, debug: bool, hint, interrupted: str) -> int:
    try:
        return int(command())
    except (BadInput, InvalidSpecError) as err:
        say(f"{prog}: error: {printable(err)}{hint(err)}")
        return Exit.BAD_INPUT
    except OutputFailed as err:
        say(f"{prog}: error: {printable(err)}")
        return Exit.BAD_INPUT
    except WitnessCheckError as err:   # a witness that fails its replay: a bug, never an answer
        return internal(err, prog, debug)
    except InfoflowError as err:   # the solver could not answer where an answer was required
        say(f"{prog}: {printable(err)}")
        return Exit.UNKNOWN
    except KeyboardInterrupt:   # a remembered SIGTERM may come back as one (deadline.on_terminate)
        if terminated():
            say(f"{prog}: terminated (SIGTERM){interrupted}")
            return Exit.TERMINATED
        say(f"{prog}: interrupted{interrupted}")
        return Exit.INTERRUPTED
    except Terminated:
        say(f"{prog}: terminated (SIGTERM){interrupted}")
        return Exit.TERMINATED
    except OSError as err:   # the system refused something (a full disk, a read-only folder): not a bug
        where = f": {err.filename}" if err.filename else ""
        say(f"{prog}: error: {printable(f'{err.strerror or err}{where}')}")
        return Exit.BAD_INPUT
    except Exception as err:  # noqa: BLE001 - anything else is a bug: one line, its own code
        return internal(err, prog, debug)


def internal(err: BaseException, prog: str, debug: bool) -> int:
    """A bug: one line (the traceback too under ``--debug``), exit code 4 (never 1, which means infeasible)."""
    if debug:
        import traceback
        traceback.print_exception(err, file=sys.stderr)
    say(f"{prog}: internal error (a bug in infoflow_smt, please report it; --debug shows the traceback): "
        f"{type(err).__name__}: {printable(err)}")
    return Exit.INTERNAL


# ---- the console script -----------------------------------------------------------------------------------------
class _ReaderMayLeave:
    """Standard output that outlives its reader: once the pipe is closed (EPIPE), every later write goes to
    /dev/null, so the command runs to its end and keeps its exit code. Another refusal is ``OutputFailed``."""

    def __init__(self, stream):
        self._stream = stream
        self.left = False

    def write(self, text: str) -> int:
        if not self.left:
            try:
                return self._stream.write(text)
            except BrokenPipeError:
                self._leave()
            except OSError as err:
                raise OutputFailed(f"cannot write to standard output ({err.strerror or err})") from None
        return len(text)

    def writelines(self, lines) -> None:
        for line in lines:
            self.write(line)

    def flush(self) -> None:
        if not self.left:
            try:
                self._stream.flush()
            except BrokenPipeError:
                self._leave()
            except OSError as err:
                raise OutputFailed(f"cannot write to standard output ({err.strerror or err})") from None

    def _leave(self) -> None:
        self.left = True
        with contextlib.suppress(OSError, ValueError):   # the interpreter's last flush goes nowhere too
            os.dup2(os.open(os.devnull, os.O_WRONLY), self._stream.fileno())

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def console(main: Callable[[list[str]], int], prog: str) -> NoReturn:
    """Run ``main(argv)`` as a console script and exit with its code (module docstring: closed pipes, a full
    standard output, SIGTERM)."""
    if sys.stdout is None:   # started with stdout closed: nothing can be printed
        say(f"{prog}: error: standard output is closed")
        sys.exit(Exit.BAD_INPUT)
    out = sys.stdout = _ReaderMayLeave(sys.stdout)
    with contextlib.suppress(ValueError):   # off the main thread a handler cannot be set: SIGTERM then kills
        signal.signal(signal.SIGTERM, on_terminate)
    try:
        code = main(sys.argv[1:])
        out.flush()
    except OutputFailed as err:
        say(f"{prog}: error: {err}")
        code = Exit.BAD_INPUT
    except Terminated:
        say(f"{prog}: terminated (SIGTERM)")
        code = Exit.TERMINATED
    out._leave()   # the interpreter flushes stdout again at exit: that flush goes nowhere
    if code in (Exit.INTERRUPTED, Exit.TERMINATED):   # what finished is on disk; freeing the solver's memory
        os._exit(int(code))                            # at exit would take seconds, and a signal must win in one
    sys.exit(int(code))

"""Run a command in a real pseudo-terminal of a given size, type into it (^C), and read back what an operator
would see: the raw bytes, and the screen after a small terminal emulator has applied the cursor moves and
erases that rich uses (so a progress line that was not erased shows, as it would on the screen).

For the terminal tests (tests/integration/test_terminal_*.py). POSIX only, standard library only.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import pty
import re
import select
import signal
import struct
import termios
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

_CSI = re.compile(r"\x1b\[([0-9;?]*)([A-Za-z])")
_OSC = re.compile(r"\x1b\][^\x07\x1b]*(\x07|\x1b\\)")


@dataclass(frozen=True)
class PtyRun:
    """What came out of the terminal, and how the command ended."""

    raw: str
    exit_code: int  # 128 + N when killed by signal N, as a shell says it

    @property
    def screen(self) -> list[str]:
        """The terminal's lines, the blank ones after the last text left out."""
        lines = render_screen(self.raw)
        while lines and not lines[-1]:
            lines.pop()
        return lines

    @property
    def text(self) -> str:
        """What the screen holds, trailing blanks removed."""
        return "\n".join(self.screen).rstrip("\n") + "\n"


def run_in_pty(argv: Sequence[str], *, columns: int = 80, rows: int = 50, env: Mapping[str, str] | None = None,
               until: Callable[[str], bool] | None = None, then: bytes = b"", again_every_s: float | None = None,
               timeout_s: float = 120.0) -> PtyRun:
    """Run ``argv`` with a pseudo-terminal ``columns`` x ``rows`` as its controlling terminal (stdin, stdout
    and stderr); once the output so far satisfies ``until``, type ``then`` (b"\\x03" is Ctrl-C, which the
    terminal turns into SIGINT for the command, as at a keyboard), and again every ``again_every_s`` until the
    command ends (signals of one kind that arrive together merge into one). Kills it past ``timeout_s``."""
    pid, master = pty.fork()
    if pid == 0:  # the child: a new session whose controlling terminal is the pty
        try:
            os.execvpe(argv[0], list(argv), dict(env if env is not None else os.environ))
        finally:
            os._exit(127)
    fcntl.ioctl(master, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    os.kill(pid, signal.SIGWINCH)
    chunks: list[bytes] = []
    typed = not then
    last_typed = 0.0
    deadline = time.monotonic() + timeout_s
    while True:
        if time.monotonic() > deadline:
            os.kill(pid, signal.SIGKILL)
        ready, _, _ = select.select([master], [], [], 0.05)
        if ready:
            try:
                data = os.read(master, 65536)
            except OSError:  # EIO: every copy of the terminal's other side is closed
                data = b""
            if not data:
                break
            chunks.append(data)
        if not typed and until is not None and until(b"".join(chunks).decode("utf-8", "replace")):
            os.write(master, then)
            typed, last_typed = True, time.monotonic()
        elif typed and then and again_every_s is not None and time.monotonic() - last_typed >= again_every_s:
            with contextlib.suppress(OSError):
                os.write(master, then)
            last_typed = time.monotonic()
    _, status = os.waitpid(pid, 0)
    os.close(master)
    code = os.waitstatus_to_exitcode(status)
    return PtyRun(raw=b"".join(chunks).decode("utf-8", "replace"), exit_code=code if code >= 0 else 128 - code)


def strip_escapes(text: str) -> str:
    """``text`` without its escape sequences (colours, cursor moves)."""
    return _CSI.sub("", _OSC.sub("", text))


def render_screen(raw: str) -> list[str]:
    """The lines a terminal shows after ``raw``: text, CR, LF, backspace, and the CSI sequences rich uses
    (cursor up/down/column, erase in line and display); colours and modes are ignored. Scrolled-off lines
    are kept, so the whole session reads top to bottom."""
    lines: list[list[str]] = [[]]
    row = col = 0
    position = 0
    while position < len(raw):
        char = raw[position]
        if char == "\x1b":
            match = _CSI.match(raw, position) or _OSC.match(raw, position)
            if match is None:
                position += 1
                continue
            position = match.end()
            if match.re is _OSC:
                continue
            params, final = match.group(1), match.group(2)
            n = int(params) if params.isdigit() else None
            if final == "A":
                row = max(0, row - (n or 1))
            elif final == "B":
                row += n or 1
            elif final == "G":
                col = (n or 1) - 1
            elif final == "K":
                line = lines[row] if row < len(lines) else []
                if n == 2:
                    line.clear()
                elif n == 1:
                    line[:col] = [" "] * min(col, len(line))
                else:
                    del line[col:]
            elif final == "J" and (n or 0) == 0:
                del lines[row + 1:]
                del lines[row][col:]
            while len(lines) <= row:
                lines.append([])
            continue
        position += 1
        if char == "\r":
            col = 0
        elif char == "\n":
            row += 1
            while len(lines) <= row:
                lines.append([])
        elif char == "\b":
            col = max(0, col - 1)
        elif char >= " ":
            line = lines[row]
            while len(line) < col:
                line.append(" ")
            if col < len(line):
                line[col] = char
            else:
                line.append(char)
            col += 1
    return ["".join(line).rstrip() for line in lines]


_CODE_LIKE = re.compile(r"\b[A-Z][A-Z0-9]*(?:_[A-Z0-9]*)+")


def finding_codes() -> frozenset[str]:
    """Every finding code, as docs/findings.md and docs/usage.md (``HOST_CANCELLED``) name them in backticks."""
    docs = Path(__file__).resolve().parents[1] / "docs"
    text = (docs / "findings.md").read_text() + (docs / "usage.md").read_text()
    return frozenset(re.findall(r"`([A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+|XID)`", text))


def split_codes(lines: Sequence[str]) -> list[str]:
    """The pieces of finding codes that a line break cut (``BUSY_LOW_``, ``LOG_EXPEC``): every upper-case
    word with an underscore on the screen must be a whole code."""
    codes = finding_codes()
    return [word for line in lines for word in _CODE_LIKE.findall(line) if word not in codes]

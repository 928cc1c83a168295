"""Node-supplied text made safe for a terminal: control and bidirectional-formatting characters are shown
escaped (``\\x1b``, ``\\u202e``), never sent as they are (the one escaping: :mod:`gpudiag.report.escape`). An
OSC sequence in a log line (``ESC ] 0 ; ... BEL`` sets the terminal's title) or a right-to-left override in a
GPU name would otherwise act on the operator's terminal or reorder what they read. Pure; applied where node
text enters the text formatters."""

from __future__ import annotations

import re

from rich.text import Text

from gpudiag.report.escape import safe, safe_lines

__all__ = ["safe", "safe_lines", "safe_text", "trimmed_lines"]

def safe_text(text: str = "", style: str = "") -> Text:
    """A rich ``Text`` of ``text`` made safe (and never read as rich markup)."""
    return Text(safe(text), style=style)



_TRAILING = re.compile(r"(?:[ \t]|\x1b\[[0-9;]*m)+$")
_RESET = "\x1b[0m"


def _trim(line: str) -> str:
    match = _TRAILING.search(line)
    if match is None:
        return line
    return line[:match.start()] + (_RESET if "\x1b" in match.group() else "")


def trimmed_lines(text: str) -> str:
    """``text`` with each line's trailing blanks removed, also those among closing colour codes (rich pads a
    styled cell to its width; the codes become one reset), and a newline after each line."""
    return "".join(_trim(line) + "\n" for line in text.splitlines())

"""Node-supplied text made safe for a terminal: control and bidirectional-formatting characters are shown
escaped (``\\x1b``, ``\\u202e``), never sent as they are. An OSC sequence in a log line (``ESC ] 0 ; ... BEL``
sets the terminal's title) or a right-to-left override in a GPU name would otherwise act on the operator's
terminal or reorder what they read. Pure; applied where node text enters the text formatters.
"""

from __future__ import annotations

import re

from rich.text import Text

# C0 controls and DEL, C1 controls, and the bidirectional embeddings, overrides, isolates and marks
# (Unicode TR9), line and paragraph separators: nothing a report means to send to a terminal.
_UNSAFE = [*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x061C, 0x200E, 0x200F, *range(0x202A, 0x202F),
           *range(0x2066, 0x206A), 0x2028, 0x2029, 0xFEFF]


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in _UNSAFE}
_TABLE_KEEP_LINES = {**_TABLE, ord("\n"): "\n"}


def safe(text: str) -> str:
    """``text`` with every control and bidi character escaped (one line: a newline is escaped too)."""
    return text.translate(_TABLE)


def safe_lines(text: str) -> str:
    """``text`` with every control and bidi character escaped except the newlines between its lines."""
    return text.translate(_TABLE_KEEP_LINES)


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

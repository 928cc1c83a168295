"""The one escaping of node-supplied text, for every output that shows it: control characters (ESC, BEL, so an
OSC title sequence or ``ESC[2J``), C1 controls and the bidirectional embeddings, overrides, isolates and marks
(U+202E reorders what the operator reads) and the invisible ones (U+200B) are shown escaped (``\\x1b``,
``\\u202e``), never sent as they are.
The table, ``--only-changes``, watch, the logs report and the Prometheus labels show :func:`safe` text; the
HTML escapes it again for markup (:func:`html_text`); the JSON writes those characters as ``\\uXXXX`` escapes
(:func:`json_safe`: the same string to a JSON reader, nothing raw in the file). Pure, standard library only.
"""

from __future__ import annotations

import html
import re

# C0 controls and DEL, C1 controls, and the bidirectional embeddings, overrides, isolates and marks
# (Unicode TR9), line and paragraph separators, the byte-order mark: nothing a report means to send as it is.
# And the invisible ones (soft hyphen, zero-width space, joiners, word joiner, invisible operators, the
# interlinear annotations): "gpu\u200b01" would read as gpu01 and match no grep for it.
UNSAFE = (*range(0x00, 0x20), 0x7F, *range(0x80, 0xA0), 0x00AD, 0x061C, 0x180E, *range(0x200B, 0x2010),
          *range(0x202A, 0x202F), *range(0x2060, 0x2065), *range(0x2066, 0x206A), 0x2028, 0x2029, 0xFEFF,
          *range(0xFFF9, 0xFFFC))


def _escape(code: int) -> str:
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


_TABLE = {code: _escape(code) for code in UNSAFE}
_TABLE_KEEP_LINES = {**_TABLE, ord("\n"): "\n"}
# In a JSON document the C0 controls are already escaped by the encoder; the others are written raw.
_JSON_TABLE = {code: f"\\u{code:04x}" for code in UNSAFE if code >= 0x7F}
_JSON_RAW = re.compile("[" + "".join(chr(c) for c in _JSON_TABLE) + "]")


def safe(text: str) -> str:
    """``text`` with every control and bidi character escaped (one line: a newline is escaped too)."""
    if text.isascii() and text.isprintable():  # nothing to escape: most text, 3x faster than translate
        return text
    return text.translate(_TABLE)


def safe_lines(text: str) -> str:
    """``text`` with every control and bidi character escaped except the newlines between its lines."""
    return text.translate(_TABLE_KEEP_LINES)


def html_text(text: object) -> str:
    """``text`` for an HTML page: :func:`safe`, then ``< > & " '`` as entities."""
    return html.escape(safe(str(text)), quote=True)


def json_safe(document: str) -> str:
    """A JSON document's text with DEL, the C1 controls and the bidi characters as ``\\uXXXX`` escapes: they
    occur only inside its strings, where the escape reads back as the same character."""
    return document.translate(_JSON_TABLE) if _JSON_RAW.search(document) else document

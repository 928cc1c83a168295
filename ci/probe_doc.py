"""Writes docs/probe.md, the collector's wire (its configuration and its document), from the tables that declare
it (collectors/gpudiag_node/wire.py): the page is never edited by hand.

    python3 ci/probe_doc.py          # rewrite docs/probe.md
    python3 ci/probe_doc.py --check  # exit 1 when the committed page is not what the tables make

tests/unit/node/test_wire.py checks that the committed page is current.
"""

from __future__ import annotations

import json
import sys
from pathlib import Path

from gpudiag_node.wire import CONFIG, KEPT_LINE, SCHEMA, SECTIONS

PAGE = Path(__file__).resolve().parents[1] / "docs" / "probe.md"


def _cell(value: object) -> str:
    return str(value).replace("|", "\\|")


def render() -> str:
    """The page, as the tables say it."""
    lines = [
        "# The collector's wire",
        "",
        "<!-- Made by ci/probe_doc.py from collectors/gpudiag_node/wire.py: edit the tables there, then run",
        "     `python3 ci/probe_doc.py`. tests/unit/node/test_wire.py fails while this page is stale. -->",
        "",
        "The controller sends the node one bundle (`gpudiag.collect.bundle`): the collector's modules and a",
        "configuration, as data; the node answers with one JSON document on stdout, version",
        f"`{SCHEMA}`. Both are declared once, in `collectors/gpudiag_node/wire.py`: the controller builds the",
        "configuration through `make_config` (`gpudiag.collect.remote`), the node reads it only through",
        "`read_config`, and the controller reads each section with the parser named below.",
        "",
        "## Configuration",
        "",
        "A key that is absent, or of another kind, reads as its default. *Pinned*: the `SweepOptions` field",
        "whose default this default must equal.",
        "",
        "| key | kind | default | pinned | what it asks |",
        "| --- | --- | --- | --- | --- |",
    ]
    for key in CONFIG:
        default = "none" if key.default is None else f"`{json.dumps(key.default)}`"
        floor = f" (at least {key.least:g})" if key.least is not None else ""
        lines.append(f"| `{key.name}` | {key.kind} | {default}{floor} | {key.setting or ''} | {_cell(key.doc)} |")
    lines += [
        "",
        "## The document",
        "",
        "Sections in the order a new document lists them. *Writer*: the node module (`collectors/gpudiag_node/`)",
        "that fills it; *parser*: the controller's function (`gpudiag.collect.`) that reads it; *bound*: what the",
        "controller reads of it at most (the node's answer is untrusted input: past the bound it is cut, and the",
        "host's problems say so). A section not declared here is dropped by the node, which says so in",
        "`problems`.",
        "",
        "| section | writer | parser | bound | what it holds |",
        "| --- | --- | --- | --- | --- |",
    ]
    for section in SECTIONS:
        most, unit = section.bound
        bound = f"{most:,} {unit}" if most is not None else unit
        parser = f"`{section.parser}`" if section.parser else "not read (tests)"
        lines.append(f"| `{section.name}` | `{section.writer}` | {parser} | {bound} | {_cell(section.doc)} |")
    lines += [
        "",
        "## Streaming",
        "",
        "With `stream`, the collector answers one round per line on stdin, one document per line on stdout",
        "(each with its `stream` section). A transport that keeps the collector writes the line",
        f"`{KEPT_LINE.decode()}` after the first round's: from then on the end of stdin ends the whole process",
        "group at once.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    page = render()
    if "--check" in argv:
        current = PAGE.read_text() if PAGE.exists() else ""
        if current != page:
            print(f"{PAGE.name} is stale: run python3 ci/probe_doc.py", file=sys.stderr)
            return 1
        return 0
    PAGE.write_text(page)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))

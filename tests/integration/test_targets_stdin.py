"""``... | gpudiag inventory``: hosts read from the process's stdin, in a child interpreter. Split from
tests/unit/sources/test_targets.py (the target words and files: there)."""

from __future__ import annotations

import sys
from pathlib import Path


def test_a_dash_through_the_command_line(tmp_path: Path) -> None:
    """`... | gpudiag inventory` has no targets; sweep's are read the same way: through the CLI's process stdin."""
    import subprocess

    code = ("import sys; from gpudiag.sources.inventory import hosts_from_patterns as h; "
            "print(' '.join(x.name for x in h(['-', 'extra1'])))")
    done = subprocess.run([sys.executable, "-c", code], input="gpu[01-02]\n", capture_output=True, text=True,
                          check=True, timeout=60)
    assert done.stdout.split() == ["gpu01", "gpu02", "extra1"]

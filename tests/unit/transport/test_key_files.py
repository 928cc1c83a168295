"""An identity file that cannot be read is one line in words naming it (issue 30 item 8): not Python's
``[Errno 2] No such file or directory: 'id'``."""

from __future__ import annotations

from pathlib import Path

import pytest

from gpudiag.transport.base import KeyLoadError
from gpudiag.transport.ssh import KeyRing


def test_a_missing_or_unreadable_key_is_said_in_words(tmp_path: Path) -> None:
    for path, why in ((tmp_path / "missing", "cannot read it (no such file or directory)"),
                      (tmp_path, "cannot read it (is a directory)")):
        with pytest.raises(KeyLoadError) as info:
            KeyRing().load(str(path))
        assert str(info.value) == f"identity file {path}: {why}"

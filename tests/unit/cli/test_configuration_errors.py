"""What a command catches as "the configuration is wrong" is read as the exception propagates, with no import:
a Ctrl-C in the middle of importing yaml must stay an interruption (exit 130), not become a traceback from
importing the half-made module again (tests/integration/test_signals_handshake.py, the start+ cases)."""

from __future__ import annotations

import sys

import pytest

from gpudiag.cli.common import configuration_errors


def test_the_inventory_error_counts_once_its_module_is_imported(monkeypatch: pytest.MonkeyPatch) -> None:
    from gpudiag.sources.inventory import InventoryError

    assert configuration_errors() == (InventoryError, ValueError)
    monkeypatch.delitem(sys.modules, "gpudiag.sources.inventory")  # as before anything imported it
    assert configuration_errors() == (ValueError,)
    assert "gpudiag.sources.inventory" not in sys.modules  # and asking did not import it


def test_keyboard_interrupt_is_never_a_configuration_error() -> None:
    assert not issubclass(KeyboardInterrupt, configuration_errors())

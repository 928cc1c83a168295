"""Choice options are ``str`` Enums that typer checks: a bad choice is typer's usage error, exit 3, no traceback."""

from __future__ import annotations

import pytest

from gpudiag.collect.remote import collector_call
from gpudiag.model.choices import EventLoop, HistoryFormat, Source
from gpudiag.report import OutputFormat
from gpudiag.sweep.runner import SweepOptions, collector_command


def test_the_choices_are_the_enums() -> None:
    assert [s.value for s in Source] == ["auto", "nvidia-smi"]
    assert [e.value for e in EventLoop] == ["asyncio", "uvloop"]
    assert [f.value for f in OutputFormat] == ["table", "json", "html"]
    assert [f.value for f in HistoryFormat] == ["table", "json"]
    assert SweepOptions().source is Source.AUTO


def test_collector_call_takes_the_enum_or_its_value() -> None:
    by_value = collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source="nvidia-smi")  # type: ignore[arg-type]
    by_enum = collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source=Source.NVIDIA_SMI)
    auto = collector_call(samples=1, interval_s=0.0, deadline_s=10.0)
    assert by_value == by_enum
    assert len(by_enum.stdin) < len(auto.stdin)  # nvidia-smi only: the NVML binding is not sent
    smi_only = collector_command(SweepOptions(source=Source.NVIDIA_SMI))
    assert len(smi_only.stdin) < len(collector_command(SweepOptions()).stdin)  # SweepOptions.source reaches it
    with pytest.raises(ValueError, match=r"^unknown source 'nvml' \(known: auto, nvidia-smi\)$"):
        collector_call(samples=1, interval_s=0.0, deadline_s=10.0, source="nvml")  # type: ignore[arg-type]

"""Severity: a plain Enum with the Nagios exit values, ranked only through ``rank`` / ``worst()``."""

from __future__ import annotations

import pytest

from gpudiag.model import Finding, HostReport, HostStatus, Severity, SweepReport, worst


def test_nagios_values_and_labels() -> None:
    assert [(s.label, s.nagios_exit) for s in Severity] == [("ok", 0), ("warning", 1), ("critical", 2),
                                                           ("unknown", 3)]
    assert Severity.from_label("unknown") is Severity.UNKNOWN


def test_severities_are_not_numbers() -> None:
    """An IntEnum let max() rank UNKNOWN (3) above CRITICAL (2); a plain Enum cannot be compared at all."""
    assert not isinstance(Severity.CRITICAL, int)
    with pytest.raises(TypeError):
        max([Severity.UNKNOWN, Severity.CRITICAL])  # type: ignore[type-var]
    with pytest.raises(TypeError):
        assert Severity.WARNING < Severity.CRITICAL  # type: ignore[operator]


@pytest.mark.parametrize(("severities", "expected"), [
    ((), Severity.OK),
    ((Severity.OK, Severity.UNKNOWN), Severity.UNKNOWN),  # a missing reading is never hidden behind an OK
    ((Severity.UNKNOWN, Severity.WARNING), Severity.UNKNOWN),
    ((Severity.UNKNOWN, Severity.CRITICAL), Severity.CRITICAL),
    ((Severity.CRITICAL, Severity.UNKNOWN, Severity.WARNING), Severity.CRITICAL),
])
def test_worst(severities: tuple[Severity, ...], expected: Severity) -> None:
    assert worst(severities) is expected
    assert sorted(Severity, key=lambda s: s.rank) == [Severity.OK, Severity.WARNING, Severity.UNKNOWN,
                                                      Severity.CRITICAL]


@pytest.mark.parametrize(("severities", "code"), [
    ((), 0), ((Severity.WARNING,), 1), ((Severity.UNKNOWN,), 1), ((Severity.UNKNOWN, Severity.CRITICAL), 2)])
def test_exit_codes_are_unchanged(severities: tuple[Severity, ...], code: int) -> None:
    findings = tuple(Finding(code="X", severity=s, host="h", gpu=None, summary="x") for s in severities)
    report = SweepReport(started_at="2026-01-01T00:00:00Z", duration_s=1.0,
                         hosts=(HostReport(host="h", address=None, status=HostStatus.OK, findings=findings),))
    assert report.exit_code == code

"""Each option names the setting it fills (``Setting(SweepOptions, "samples")``) and takes its default from there:
the request's defaults are written once (gpudiag.model.request), and the one generic fill (gpudiag.cli.build)
builds the whole request from the options a command takes."""

from __future__ import annotations

import dataclasses

from gpudiag.cli.options import TAKES
from gpudiag.cli.params import Given, Param, members
from gpudiag.model.request import SshRequest, SweepOptions, SweepRequest


def _params(command: str | None = None) -> dict[str, Param]:
    """Every command's options (or ``command``'s: sweep takes each as declared, no default of its own)."""
    return {p.name: p for name, takes in TAKES.items() if command in (None, name) for p in members(takes)}


def test_every_setting_names_a_field_of_its_value() -> None:
    for param in _params().values():
        if param.fills is not None:
            assert param.fills.field in {f.name for f in dataclasses.fields(param.fills.owner)}, param.name


def test_an_option_without_its_own_default_has_its_settings() -> None:
    # None: "not given" (the setting keeps its default, or the inventory's applies); a parsed option's text
    # default (--workers "1") is not the value; a list is the tuple's click form.
    checked = 0
    for param in _params("sweep").values():
        setting = param.fills
        if setting is None or param.default is None or setting.parse is not None:
            continue
        expected = list(setting.default) if isinstance(setting.default, tuple) else setting.default
        assert param.default == expected, param.name
        checked += 1
    assert checked >= 25  # the walk saw the options
    assert _params()["timeout"].default == SweepOptions().deadline_s == 30.0
    assert _params()["connect_timeout"].default == SshRequest().connect_timeout_s == 10.0


def test_the_generic_fill_builds_the_request_from_the_options_given() -> None:
    from gpudiag.cli import build

    params = members(TAKES["sweep"])
    values = {p.name: p.default for p in params} | {
        "samples": 3, "interval": 0.0, "timeout": 12.0, "log": ["/var/log/x.log"], "slurm_partition": ["gpu,debug"],
        "low_power_pct": 40.0, "workers": "2", "skip": ["xid"], "shard": "1/2", "targets": ["gpu01"],
        "flap_changes": 5}
    request = build.request(Given(values, params))
    assert (request.sweep.samples, request.sweep.interval_s, request.sweep.deadline_s) == (3, 0.0, 12.0)
    assert request.sweep.logs.paths == ("/var/log/x.log",) and request.sweep.skip == ("XID",)
    assert request.hosts.targets == ("gpu01",) and request.hosts.shard == (1, 2)
    assert request.hosts.slurm is not None and request.hosts.slurm.partitions == ("gpu", "debug")
    assert request.checks == {"low_power_pct": 40.0} and request.workers == 2
    assert request.audit is not None and request.audit.flap.changes == 5
    assert request.audit.selection == ("--shard", "1/2", "--slurm-partition", "gpu,debug")
    untouched = SweepRequest()
    assert request.ssh == untouched.ssh and request.sweep.concurrency == untouched.sweep.concurrency

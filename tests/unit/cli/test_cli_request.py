"""One typed request per command, checked before any connection; each host's log plan built once per run.

The commands run in this process (typer's runner) on this machine's ``localhost`` (no SSH, no GPU needed) or
on the demo cluster; the real planner and sweep run, wrapped only to count their calls.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from builders import gpu, host_report, sample, sweep
from plan_calls import Calls, calls_fixture, invoke  # noqa: F401 (calls_fixture: the calls fixture)

from gpudiag.checks import CheckSettings, SettingsError
from gpudiag.model import Host
from gpudiag.model.request import HostSelection, SweepRequest
from gpudiag.report import OutputFormat, ReportView, render
from gpudiag.run.request import prepare, selected_hosts
from gpudiag.sources.selection import SelectedHosts
from gpudiag.sweep.runner import SweepOptions


@pytest.mark.parametrize(("args", "message"), [
    (("sweep", "127.0.0.1", "--identity-file", "/nonexistent/id_ed25519"),
     "gpudiag: identity file /nonexistent/id_ed25519: "),
    (("sweep", "127.0.0.1", "--log", "@journal"), "gpudiag: --log @journal: '@journal': the only special source"),
    (("sweep", "127.0.0.1", "--shard", "3/2"), "gpudiag: --shard 3/2: expected I/N with 1 <= I <= N, e.g. 1/4\n"),
    (("sweep", "127.0.0.1", "-F", "/nonexistent/ssh_config"),
     "gpudiag: /nonexistent/ssh_config: no such SSH config file\n"),
    (("sweep", "--demo", "--pack", "/nonexistent/pack.yaml"), "gpudiag: --pack /nonexistent/pack.yaml: "),
    (("grep", "127.0.0.1", "-s", "no_such_signature"), "gpudiag: --signature no_such_signature: no such signature"),
    (("watch", "127.0.0.1", "-F", "/nonexistent/ssh_config"),
     "gpudiag: /nonexistent/ssh_config: no such SSH config file\n"),
    (("sweep", "127.0.0.1", "--drain-on", "critical"),
     "gpudiag: --drain-on needs the nodes from Slurm: add --slurm-partition, --slurm-job, --slurm-nodelist or "
     "--slurm-state\n"),
])
def test_a_configuration_error_is_one_line_before_any_connection(calls: Calls, args: tuple[str, ...],
                                                                  message: str) -> None:
    done = invoke(*args)
    assert (done.exit_code, done.stdout) == (3, "")
    assert done.stderr.startswith(message) and done.stderr.count("\n") == 1
    assert calls.swept == []  # nothing was asked of any host


def test_prepare_lays_the_flags_over_the_inventory_over_the_defaults() -> None:
    selected = SelectedHosts(hosts=(Host(name="localhost"),),
                             settings={"busy_utilization_pct": 80.0, "low_power_pct": 50.0})
    request = SweepRequest(sweep=SweepOptions(concurrency=1), checks={"low_power_pct": 40.0})
    settings = prepare(request, selected).options.settings
    assert settings == CheckSettings(busy_utilization_pct=80.0, low_power_pct=40.0)
    grep_like = SweepRequest(sweep=SweepOptions(concurrency=1), inventory_settings=False)
    assert prepare(grep_like, selected).options.settings == CheckSettings()
    with pytest.raises(SettingsError, match="unknown check setting 'low_power'"):
        prepare(request, SelectedHosts(hosts=(), settings={"low_power": 1.0}))


def test_select_hosts_keeps_the_first_of_a_host_given_twice(tmp_path: Path) -> None:
    inventory = tmp_path / "inventory.yaml"
    inventory.write_text("hosts:\n  gpu01: {address: 127.0.0.2}\n  gpu02: {address: 127.0.0.3}\n")
    with selected_hosts(HostSelection(targets=("gpu02", "gpu03"), inventory=inventory, port=2222,
                                      exclude=("gpu01",), local=True)) as selected:
        pass
    assert [(h.name, h.address, h.port) for h in selected.hosts] == [
        ("gpu02", "127.0.0.3", 2222), ("gpu03", None, 2222), ("localhost", None, 2222)]


def test_what_an_ansible_inventory_was_read_as_is_said_on_stderr(tmp_path: Path) -> None:
    inventory = tmp_path / "hosts.ini"
    inventory.write_text("[gpus]\ngpu[01:02] ansible_host=127.0.0.2\n")
    done = invoke("inventory", "-i", str(inventory), "--format", "json")
    assert done.exit_code == 0, done.stderr
    assert done.stderr == f"gpudiag: {inventory}: an Ansible INI inventory: 2 hosts in 1 groups\n"
    assert [(h["name"], h["address"], h["groups"]) for h in json.loads(done.stdout)["hosts"]] == [
        ("gpu01", "127.0.0.2", ["gpus"]), ("gpu02", "127.0.0.2", ["gpus"])]
    with selected_hosts(HostSelection(inventory=inventory, exclude=("gpu02",))) as selected:  # the run's own step
        pass
    assert ([h.name for h in selected.hosts], selected.read_as) == (["gpu01"], done.stderr[9:-1])


def test_the_json_report_carries_raw_samples_only_when_asked() -> None:
    import json

    samples = [sample(t_s=0.5 * k, power_w=300.0 + k) for _ in (0, 1) for k in range(3)]
    report = sweep(host_report("gpu01", gpus=[gpu(index=i, samples=samples[3 * i:3 * i + 3]) for i in (0, 1)]))
    plain = json.loads(render(report, OutputFormat.JSON))
    detailed = json.loads(render(report, OutputFormat.JSON, ReportView(samples_detail=True)))
    assert [g.get("samples") or [] for g in plain["hosts"][0]["gpus"]] == [[], []]
    assert [len(g["samples"]) for g in detailed["hosts"][0]["gpus"]] == [3, 3]

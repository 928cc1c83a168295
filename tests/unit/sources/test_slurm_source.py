"""Slurm as a host source, without Slurm: sinfo's rows parsed, and the argv each selection runs (a fake runner
that replays outputs recorded from Slurm 22.05.8 in the test fixture of tests/integration/slurm)."""

from __future__ import annotations

from collections.abc import Sequence

import pytest

from gpudiag.model import Host
from gpudiag.sources.slurm import (
    CommandResult,
    SlurmError,
    SlurmNode,
    SlurmSelection,
    hosts_for,
    parse_sinfo,
    select_nodes,
)

# sinfo -a -h -N -o '%N|%o|%T|%P|%E' with gpu02 drained by gpudiag, gpu03 drained by someone else and in two
# partitions (one row per partition), gpu04 not responding and its NodeAddr its own name.
SINFO = ("gpu01|127.0.0.2|idle|gpu*|none\n"
         "gpu02|127.0.0.3|drained|gpu*|gpudiag: ECC_UNCORRECTED gpu 1\n"
         "gpu03|127.0.0.4|drained|gpu*|rma: fan | psu\n"
         "gpu03|127.0.0.4|drained|debug|rma: fan | psu\n"
         "gpu04|gpu04|idle*|debug|Not responding\n")
NODES = (
    SlurmNode(name="gpu01", address="127.0.0.2", state="idle", reason=None, partitions=("gpu",)),
    SlurmNode(name="gpu02", address="127.0.0.3", state="drained", reason="gpudiag: ECC_UNCORRECTED gpu 1",
              partitions=("gpu",)),
    SlurmNode(name="gpu03", address="127.0.0.4", state="drained", reason="rma: fan | psu",
              partitions=("gpu", "debug")),
    SlurmNode(name="gpu04", address=None, state="idle*", reason="Not responding", partitions=("debug",)),
)


def test_parse_sinfo() -> None:
    assert parse_sinfo(SINFO) == NODES
    assert [(n.drained, n.drained_by_gpudiag) for n in NODES] == [(False, False), (True, True), (True, False),
                                                                  (False, False)]


def test_parse_sinfo_refuses_a_line_it_cannot_read() -> None:
    with pytest.raises(SlurmError, match="sinfo printed a line gpudiag cannot read: 'gpu01 idle'"):
        parse_sinfo("gpu01 idle\n")


class Replay:
    """A runner that answers each argv from a table and records what ran."""

    def __init__(self, answers: dict[tuple[str, ...], CommandResult]) -> None:
        self.answers, self.ran = answers, []  # type: ignore[var-annotated]

    def __call__(self, argv: Sequence[str]) -> CommandResult:
        self.ran.append(tuple(argv))
        return self.answers[tuple(argv)]


def ok(stdout: str) -> CommandResult:
    return CommandResult(returncode=0, stdout=stdout, stderr="")


SINFO_ARGV = ("sinfo", "-a", "-h", "-N", "-o", "%N|%o|%T|%P|%E")


def test_partition_and_state() -> None:
    run = Replay({SINFO_ARGV: ok(SINFO),
                  ("sinfo", "-a", "-h", "-N", "-o", "%N", "-t", "drain", "-n", "gpu[01-03]"): ok("gpu02\ngpu03\n")})
    chosen = select_nodes(SlurmSelection(partitions=("gpu",), states=("drain",)), run)
    assert chosen == NODES[1:3]


def test_job_and_nodelist_meet() -> None:
    run = Replay({
        ("scontrol", "show", "hostnames", "gpu[01-03]"): ok("gpu01\ngpu02\ngpu03\n"),
        ("squeue", "-h", "-j", "81723", "-o", "%N"): ok("gpu[02-04]\n"),
        ("scontrol", "show", "hostnames", "gpu[02-04]"): ok("gpu02\ngpu03\ngpu04\n"),
        SINFO_ARGV + ("-n", "gpu[02-03]"): ok("\n".join(SINFO.splitlines()[1:4]) + "\n"),
    })
    assert select_nodes(SlurmSelection(job="81723", nodelist="gpu[01-03]"), run) == NODES[1:3]


@pytest.mark.parametrize(("chosen", "answers", "message"), [
    (SlurmSelection(job="81723"), {("squeue", "-h", "-j", "81723", "-o", "%N"): ok("\n")},
     "--slurm-job 81723: the job has no nodes allocated (pending or finished)"),
    (SlurmSelection(job="$(reboot)"), {}, "--slurm-job $(reboot): expected a job id such as 81723 (or 81723_4 for "
                                          "an array task)"),
    (SlurmSelection(partitions=("nope",)), {SINFO_ARGV: ok(SINFO)},
     "--slurm-partition nope: no such partition (or it has no nodes)"),
    (SlurmSelection(nodelist="gpu[01-02],login"),
     {("scontrol", "show", "hostnames", "gpu[01-02],login"): ok("gpu01\ngpu02\nlogin\n"),
      SINFO_ARGV + ("-n", "gpu[01-02],login"): ok("\n".join(SINFO.splitlines()[:2]) + "\n")},
     "not Slurm nodes (or in no partition): login"),
    (SlurmSelection(states=("bogus",)),
     {SINFO_ARGV: ok(SINFO), ("sinfo", "-a", "-h", "-N", "-o", "%N", "-t", "bogus", "-n", "gpu[01-04]"):
      CommandResult(returncode=1, stdout="", stderr='sinfo: error: Bad state string: "bogus"\nsinfo: error: valid '
                                                    'states: unknown,down,idle\n')},
     '--slurm-state bogus: sinfo says: sinfo: error: Bad state string: "bogus"'),
])
def test_refusals_are_one_line(chosen: SlurmSelection, answers: dict[tuple[str, ...], CommandResult],
                               message: str) -> None:
    with pytest.raises(SlurmError) as excinfo:
        select_nodes(chosen, Replay(answers))
    assert str(excinfo.value) == message


def test_hosts_for_uses_nodeaddr_and_keeps_inventory_settings() -> None:
    from_inventory = Host(name="gpu02", address="10.0.0.2", user="ops", port=2222)
    hosts = hosts_for(NODES, (from_inventory,), user="root", port=22, identity_file="~/.ssh/k")
    assert hosts == (
        Host(name="gpu01", address="127.0.0.2", user="root", port=22, identity_file="~/.ssh/k", groups=("gpu",)),
        from_inventory,
        Host(name="gpu03", address="127.0.0.4", user="root", port=22, identity_file="~/.ssh/k",
             groups=("gpu", "debug")),
        Host(name="gpu04", address=None, user="root", port=22, identity_file="~/.ssh/k", groups=("debug",)),
    )

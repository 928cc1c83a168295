"""Target words: ``@group`` through ClusterShell's own group configuration, ``^file`` as pdsh reads it."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from gpudiag.sources.inventory import InventoryError, hosts_from_patterns
from gpudiag.sources.targets import TargetError, expand_target, names_from_file, resolve_target


@pytest.fixture
def groups_conf(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A ClusterShell config folder (``$CLUSTERSHELL_CFGDIR``) with two YAML group sources, as clush reads it."""
    (tmp_path / "groups.d").mkdir()
    (tmp_path / "groups.conf").write_text("[Main]\ndefault: cluster\nautodir: $CFGDIR/groups.d\n")
    (tmp_path / "groups.d" / "cluster.yaml").write_text(
        "cluster:\n  gpu: 'gpu[01-04]'\n  login: 'login[1-2]'\n  big: 'gpu[01-100]'\n"
        "rack:\n  r1: 'gpu[01-02]'\n")
    monkeypatch.setenv("CLUSTERSHELL_CFGDIR", str(tmp_path))
    return tmp_path


@pytest.mark.parametrize(("word", "names"), [
    ("@gpu", ("gpu01", "gpu02", "gpu03", "gpu04")),
    ("@rack:r1", ("gpu01", "gpu02")),
    ("@login,@rack:r1", ("login1", "login2", "gpu01", "gpu02")),
    ("gpu[1-2]", ("gpu1", "gpu2")),
])
def test_groups(groups_conf: Path, word: str, names: tuple[str, ...]) -> None:
    assert expand_target(word) == names


@pytest.mark.parametrize(("word", "message"), [
    ("@nope", "@nope: no such ClusterShell group, or it is empty (clush -b -w @nope shows it)"),
    ("@nosource:gpu", "@nosource:gpu: ClusterShell cannot resolve the group: nosource"),
    ("@big", '@big: ClusterShell cannot read the group\'s nodes: bad range: "padding length mismatch : "01-100"" '
             "(ClusterShell wants both ends of a range padded alike: gpu[01-99],gpu100)"),
    ("@gpu;reboot", "@gpu;reboot: expected @group or @source:group (letters, digits, '_', '.', '-'), got "
                    "'@gpu;reboot'"),
    ("@$(id)", "@$(id): expected @group or @source:group (letters, digits, '_', '.', '-'), got '@$(id)'"),
])
def test_group_errors_are_one_line(groups_conf: Path, word: str, message: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        expand_target(word)
    assert str(excinfo.value) == message


def test_without_clustershell_the_message_says_how_to_get_it(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "ClusterShell.NodeSet", None)  # import fails as if not installed
    with pytest.raises(TargetError) as excinfo:
        expand_target("@gpu")
    assert str(excinfo.value) == ("@gpu: @group targets need ClusterShell: pip install 'gpudiag[clustershell]' (or "
                                  "apt-get install python3-clustershell)")


def test_pdsh_host_file(tmp_path: Path) -> None:
    path = tmp_path / "hosts.txt"
    path.write_text("# rack 1\ngpu[01-03]\n\ngpu02  # again\nlogin1\n")
    assert names_from_file(str(path)) == ("gpu01", "gpu02", "gpu03", "login1")
    assert expand_target(f"^{path}") == ("gpu01", "gpu02", "gpu03", "login1")


@pytest.mark.parametrize(("text", "message"), [
    ("gpu01\ngpu[1-\n", "{path}:2: bad host pattern 'gpu[1-': '[' is never closed"),
    ("# nothing\n\n", "^{path}: the host file names no hosts"),
])
def test_pdsh_host_file_errors(tmp_path: Path, text: str, message: str) -> None:
    path = tmp_path / "hosts.txt"
    path.write_text(text)
    with pytest.raises(TargetError) as excinfo:
        expand_target(f"^{path}")
    assert str(excinfo.value) == message.format(path=path)


def test_missing_host_file(tmp_path: Path) -> None:
    with pytest.raises(TargetError, match=r"^\^.*/absent: cannot read the host file: No such file or directory$"):
        expand_target(f"^{tmp_path / 'absent'}")


def test_targets_on_the_command_line(groups_conf: Path, tmp_path: Path) -> None:
    path = tmp_path / "more.txt"
    path.write_text("login1\nspare\n")
    hosts = hosts_from_patterns(["@rack:r1", f"^{path}", "gpu[02-03]"], user="ops")
    assert [h.name for h in hosts] == ["gpu01", "gpu02", "login1", "spare", "gpu03"]
    with pytest.raises(InventoryError, match="^@nope: no such ClusterShell group"):
        hosts_from_patterns(["@nope"])


@pytest.mark.parametrize(("word", "targets"), [
    ("ops@gpu[01-02]", [("gpu01", "ops", None), ("gpu02", "ops", None)]),
    ("gpu01:2222", [("gpu01", None, 2222)]),
    ("ops@gpu01:2222", [("gpu01", "ops", 2222)]),
    ("[fe80::1]", [("fe80::1", None, None)]),
    ("[fe80::1%eth0]:22", [("fe80::1%eth0", None, 22)]),
    ("ops@[::1]:2222", [("::1", "ops", 2222)]),
    ("::1", [("::1", None, None)]),
    ("gpu[01-02]", [("gpu01", None, None), ("gpu02", None, None)]),  # brackets of a range, not an address
])
def test_words_people_type(word: str, targets: list[tuple[str, str | None, int | None]]) -> None:
    assert [(t.name, t.user, t.port) for t in resolve_target(word)] == targets


@pytest.mark.parametrize(("word", "message"), [
    ("@", "@: expected @group or @source:group (letters, digits, '_', '.', '-'), got '@'"),
    ("ops@", "bad target 'ops@': no host name"),
    ("gpu01:22x", "bad target 'gpu01:22x': the port must be 1-65535, got '22x'"),
    ("[::1]:0", "bad target '[::1]:0': the port must be 1-65535, got '0'"),
    ("[fe80::zz]", "bad target '[fe80::zz]': 'fe80::zz' is not an IPv6 address"),
    ("[::1]2222", "bad target '[::1]2222': expected [IPv6] or [IPv6]:port"),
])
def test_bad_words_are_one_line(word: str, message: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        resolve_target(word)
    assert str(excinfo.value) == message


def test_the_words_user_and_port_win_over_the_flags() -> None:
    hosts = hosts_from_patterns(["root@gpu01:2200", "gpu02", "[::1]:2222"], user="ops", port=22)
    assert [(h.name, h.target, h.user, h.port) for h in hosts] == [
        ("gpu01", "gpu01", "root", 2200), ("gpu02", "gpu02", "ops", 22), ("::1", "::1", "ops", 2222)]


def test_a_host_file_may_carry_users_and_ports(tmp_path: Path) -> None:
    path = tmp_path / "hosts.txt"
    path.write_text("ops@gpu01:2222  # a node on a forwarded port\n[::1]\n")
    assert [(t.name, t.user, t.port) for t in resolve_target(f"^{path}")] == [("gpu01", "ops", 2222),
                                                                              ("::1", None, None)]


class _Stdin(io.StringIO):
    def __init__(self, text: str, tty: bool = False) -> None:
        super().__init__(text)
        self.tty = tty

    def isatty(self) -> bool:
        return self.tty


def test_hosts_on_stdin_as_squeue_prints_them() -> None:
    # squeue -h -o %N: one line per job, each a folded Slurm list; scontrol show hostnames: one name a line.
    text = "gpu[01-03],cpu1\ngpu02 gpu[10-11]\n\nops@login1:2222\n"
    found = resolve_target("-", stdin=lambda: _Stdin(text))
    assert [(t.name, t.user, t.port) for t in found] == [
        ("gpu01", None, None), ("gpu02", None, None), ("gpu03", None, None), ("cpu1", None, None),
        ("gpu10", None, None), ("gpu11", None, None), ("login1", "ops", 2222)]


@pytest.mark.parametrize(("text", "tty", "message"), [
    ("", False, "-: stdin names no hosts"),
    ("gpu01\n", True, "-: reads host names from stdin, but stdin is a terminal (pipe them in: squeue -h -o %N | "
                      "gpudiag sweep -)"),
    ("gpu01\ngpu[1-\n", False, "-:2: bad host pattern 'gpu[1-': '[' is never closed"),
    ("^/etc/hosts\n", False, "-:1: '^/etc/hosts': a host list cannot name another one"),
])
def test_stdin_errors_are_one_line(text: str, tty: bool, message: str) -> None:
    with pytest.raises(TargetError) as excinfo:
        resolve_target("-", stdin=lambda: _Stdin(text, tty))
    assert str(excinfo.value) == message

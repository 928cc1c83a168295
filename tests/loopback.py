"""A real OpenSSH ``sshd`` on loopback that plays a cluster of simulated GPU nodes: :func:`running_cluster`.

One address per scenario (``127.0.0.2`` healthy, ``127.0.0.3`` case_study, ...); on each, ``nvidia-smi`` is
``fake_nvidia_smi`` (next to this module), which reads the address from ``SSH_CONNECTION`` and answers as that
scenario. Two addresses are special: ``no_nvidia_smi`` has no ``nvidia-smi`` on its PATH, ``no_python`` has
no ``python3`` (its PATH is a folder of links to a few POSIX tools plus the stub), so the collector's
shell fallback runs. ``extra_healthy`` more healthy nodes (127.0.1.1, 127.0.1.2, ...) serve fan-out
tests and benchmarks. The integration tests' ``sshd_cluster`` fixture (``tests/integration/conftest.py``)
and ``bench/sweep_loopback.py`` both start it through :func:`running_cluster`.

How: throwaway ed25519 host and client keys, an ``authorized_keys``, ``known_hosts`` files (one right, one
listing a different host key), one ``sshd -D -e`` per 16 addresses (OpenSSH's ``MAX_LISTEN_SOCKS``), all on
one free port. The node's environment comes from ``SetEnv`` in ``Match LocalAddress`` blocks (sshd_config(5)
allows SetEnv under Match; for each keyword the first value obtained wins, so every address is in exactly
one block and there is no global SetEnv). ``HOME`` points at an empty folder, so the tester's own
``~/.bashrc`` (which bash sources for ssh commands, and which may put pyenv's python3 first on PATH) never
runs on the simulated node.

Standard library only (plus :class:`gpudiag.model.Host`), and nothing from pytest: a missing OpenSSH raises
:class:`SshdUnavailable`, which the fixture turns into a skip.
"""

from __future__ import annotations

import contextlib
import getpass
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path

import gpudiag.demo
from gpudiag.demo.demo_logs import write_demo_logs
from gpudiag.demo.proc_table import scenario_processes, write_proc_table
from gpudiag.model import Host

# The fake nvidia-smi and its scenarios ship with gpudiag (the demo plays them too).
SIMULATE_DIR = Path(gpudiag.demo.__file__).resolve().parent
STUB = SIMULATE_DIR / "fake_nvidia_smi"
SCENARIOS_DIR = SIMULATE_DIR / "scenarios"

NO_NVIDIA_SMI = "no_nvidia_smi"  # nvidia-smi not installed
NO_PYTHON = "no_python"  # no python3 anywhere on PATH; nvidia-smi answers as "healthy"
SCENARIO_ADDRESSES: Mapping[str, str] = {
    "127.0.0.2": "healthy",
    "127.0.0.3": "case_study",
    "127.0.0.4": "bandwidth_bound",
    "127.0.0.5": "idle",
    "127.0.0.6": "power_reduced",
    "127.0.0.7": "driver_error",
    "127.0.0.8": "no_devices",
    "127.0.0.9": "hang",
    "127.0.0.10": "one_lost",
    "127.0.0.11": "old_driver",
    "127.0.0.12": "mixed",
    "127.0.0.13": "pcie_degraded",
    "127.0.0.14": "thermal",
    "127.0.0.15": "ecc",
    "127.0.0.16": NO_NVIDIA_SMI,
    "127.0.0.17": NO_PYTHON,
    "127.0.0.18": "case_study_server",
}
# Healthy nodes beyond the scenario ones, for fan-out tests and benchmarks (env overrides the default).
EXTRA_HEALTHY_HOSTS = int(os.environ.get("GPUDIAG_TEST_EXTRA_HOSTS", "50"))
# What the no-python node has on PATH besides nvidia-smi: enough for a POSIX-shell collector.
NO_PYTHON_TOOLS = (
    "sh", "bash", "dash", "env", "cat", "timeout", "sleep", "date", "hostname", "uname", "head", "tail", "tr",
    "sed", "awk", "grep", "cut", "wc", "sort", "uniq", "tee", "mktemp", "rm", "mkdir", "ls", "id", "kill",
    "printf", "echo", "test", "[", "true", "false", "expr", "od", "base64", "gzip", "nproc", "readlink",
)
LISTEN_LIMIT = 16  # OpenSSH's MAX_LISTEN_SOCKS: "Too many listen sockets" past this many ListenAddress
HANG_MAX_S = 600  # a hung stub gives up on its own after this, should a test and the teardown both miss it


class SshdUnavailable(RuntimeError):
    """OpenSSH (sshd, ssh-keygen) is not installed here."""


@dataclass(frozen=True, slots=True, kw_only=True)
class SshdCluster:
    """A running loopback cluster: where it listens and the files a client needs to reach it."""

    port: int
    scenarios: Mapping[str, str]  # address -> scenario (the extra hosts are "healthy")
    extra_addresses: tuple[str, ...]
    known_hosts: Path  # "[127.0.0.2]:PORT ssh-ed25519 ..." for every address
    wrong_key_known_hosts: Path  # the same addresses with a different host key
    client_key: Path
    user: str
    state_dir: Path  # the stub's call counters and hang-<address>.pid files
    logs: tuple[Path, ...]  # sshd's own logs, one per sshd
    # The listening sshd processes, one per 16 addresses. Each reaps the sessions it served, so the
    # cutime/cstime of /proc/<pid>/stat add up the server side's CPU (benchmarks read them).
    sshd_pids: tuple[int, ...] = ()

    def address_of(self, scenario: str) -> str:
        """The address that plays ``scenario`` (the first one, for "healthy")."""
        for address, name in self.scenarios.items():
            if name == scenario:
                return address
        raise KeyError(f"no host plays {scenario!r}; there are {sorted(set(self.scenarios.values()))}")

    def host(self, address: str, name: str | None = None) -> Host:
        """A gpudiag ``Host`` for one address, with this cluster's port, key and known_hosts."""
        return Host(
            name=name or self.scenarios[address],
            address=address,
            user=self.user,
            port=self.port,
            identity_file=str(self.client_key),
            known_hosts=str(self.known_hosts),
        )

    def hosts(self, *scenarios: str) -> tuple[Host, ...]:
        """One ``Host`` per scenario name, named after it: ``hosts("healthy", "case_study")``."""
        return tuple(self.host(self.address_of(s), s) for s in scenarios)

    def extra_hosts(self, count: int | None = None) -> tuple[Host, ...]:
        """The first ``count`` (default: all) extra healthy hosts, named ``healthy-001``, ..."""
        chosen = self.extra_addresses[: len(self.extra_addresses) if count is None else count]
        return tuple(self.host(a, f"healthy-{i:03d}") for i, a in enumerate(chosen, start=1))

    def hang_pid_file(self, scenario_or_address: str = "hang") -> Path:
        """Where the hung stub on that node writes its pid."""
        address = scenario_or_address if scenario_or_address in self.scenarios else self.address_of(
            scenario_or_address)
        return self.state_dir / f"hang-{address}.pid"

    def hung_stub_ended(self, scenario_or_address: str = "hang", *, wait_s: float = 5.0) -> bool:
        """Whether the stub that hung on that node has ended (within ``wait_s``)."""
        return process_ended(int(self.hang_pid_file(scenario_or_address).read_text()), wait_s=wait_s)

    def session_pids(self) -> set[int]:
        """The live processes of this cluster's SSH sessions (shells, collectors, nvidia-smi, `timeout`): each
        has the node's HOME in its environment (sshd's SetEnv), which nothing else on this machine has."""
        marker = f"HOME={self.state_dir.parent / 'home'}".encode()
        found = set()
        for entry in os.listdir("/proc"):
            if not entry.isdigit():
                continue
            try:
                environ = Path(f"/proc/{entry}/environ").read_bytes()  # a zombie's reads empty
            except OSError:
                continue
            if marker in environ.split(b"\0"):
                found.add(int(entry))
        return found

    def sessions_left(self, before: set[int], *, wait_s: float) -> set[int]:
        """The session processes started since ``before`` (:meth:`session_pids`) still running after up to
        ``wait_s``."""
        deadline = time.monotonic() + wait_s
        while True:
            left = self.session_pids() - before
            if not left or time.monotonic() >= deadline:
                return left
            time.sleep(0.05)

    def inventory_defaults(self) -> str:
        """An inventory's ``defaults:`` block (YAML) that reaches this cluster: user, port, key, known_hosts."""
        return (f"defaults:\n  user: {self.user}\n  port: {self.port}\n  identity_file: {self.client_key}\n"
                f"  known_hosts: {self.known_hosts}\n")

    def ssh_argv(self, address: str, command: str, *, known_hosts: Path | None = None) -> list[str]:
        """A plain OpenSSH client command line to run ``command`` on ``address``, host key checked."""
        return [
            "ssh", "-F", "/dev/null", "-i", str(self.client_key), "-p", str(self.port),
            "-o", "IdentitiesOnly=yes", "-o", "BatchMode=yes", "-o", "StrictHostKeyChecking=yes",
            "-o", f"UserKnownHostsFile={known_hosts or self.known_hosts}", "-o", "GlobalKnownHostsFile=/dev/null",
            "-o", "LogLevel=ERROR", "-o", "ConnectTimeout=10", f"{self.user}@{address}", command,
        ]


def process_ended(pid: int, *, wait_s: float = 5.0) -> bool:
    """Whether process ``pid`` (a simulated node's process: the node is this machine) has ended within
    ``wait_s``. A zombie counts as ended: once its parent is gone it waits for PID 1 to reap it, which some
    container inits do lazily."""
    deadline = time.monotonic() + wait_s
    while True:
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            return True
        if state in ("Z", "X"):
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def interrupt(proc: subprocess.Popen[bytes], wait_s: float = 15.0) -> None:
    """Ctrl-C, as an operator stops a long-running gpudiag (killed if it has not ended after ``wait_s``)."""
    proc.send_signal(signal.SIGINT)
    try:
        proc.wait(timeout=wait_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


def commands_of(pids: set[int], most: int = 5) -> str:
    """The command lines of (the first ``most`` of) ``pids``, for a test's failure message."""
    lines = []
    for pid in sorted(pids)[:most]:
        with contextlib.suppress(OSError):
            lines.append(Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()[:120])
    return "; ".join(lines)


def extra_address(i: int) -> str:
    """The ``i``-th (from 0) extra host: 127.0.1.1 ... 127.0.1.254, then 127.0.2.1 ..."""
    return f"127.0.{1 + i // 254}.{1 + i % 254}"


def _keygen(path: Path) -> str:
    subprocess.run(["ssh-keygen", "-q", "-t", "ed25519", "-N", "", "-C", path.name, "-f", str(path)],
                   check=True, stdin=subprocess.DEVNULL)
    kind, blob, *_ = path.with_suffix(".pub").read_text().split()
    return f"{kind} {blob}"


def _install_stub(target: Path, interpreter: str) -> None:
    # An absolute interpreter, so the stub runs on the node without python3 on PATH; -I -S: no user site,
    # no site-packages (it needs the standard library only), and a faster start for fan-out runs.
    lines = STUB.read_text().splitlines(keepends=True)
    target.write_text(f"#!{interpreter} -IS\n" + "".join(lines[1:]))
    target.chmod(0o755)


def _link_farm(folder: Path, sources: list[Path], names: tuple[str, ...] | None, skip: str) -> None:
    folder.mkdir()
    for source_dir in sources:
        if not source_dir.is_dir():
            continue
        for entry in sorted(source_dir.iterdir()):
            wanted = names is None or entry.name in names
            if wanted and entry.name != skip and not os.path.lexists(folder / entry.name):
                (folder / entry.name).symlink_to(entry)


def _free_port(addresses: list[str]) -> int:
    """A port that every address can bind right now (sshd binds them a moment later)."""
    for _ in range(50):
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = int(probe.getsockname()[1])
        try:
            for address in addresses:
                with socket.socket(socket.AF_INET6 if ":" in address else socket.AF_INET) as s:  # ::1 too
                    s.bind((address, port))
        except OSError:
            continue
        return port
    raise RuntimeError("no port free on all loopback addresses")


def _node_env(path: str, home: Path, call_ms: float, proc_root: Path | None = None) -> str:
    delay = f" GPUDIAG_FAKE_CALL_MS={call_ms:g}" if call_ms > 0 else ""
    # The scenario's processes (its fake /proc): only the stub nodes read anything but the real /proc.
    procs = f" GPUDIAG_PROC_ROOT={proc_root}" if proc_root is not None else ""
    return f"SetEnv PATH={path} HOME={home} GPUDIAG_FAKE_HANG_MAX_S={HANG_MAX_S}{delay}{procs}"


def install_fake_bin(bin_dir: Path, scenarios: Mapping[str, str], state_dir: Path,
                     extra_scenarios: Mapping[str, Mapping[str, object]] | None = None) -> Path:
    """A folder for a simulated node's PATH: ``nvidia-smi`` (the stub, on this interpreter), its scenarios and
    ``hosts.json`` (``scenarios``: address -> scenario; "*" the default). ``extra_scenarios``: scenarios of the
    test's own (name -> the scenario's JSON), beside the package's. Returns the stub's path."""
    bin_dir.mkdir()
    _install_stub(bin_dir / "nvidia-smi", sys.executable)
    if extra_scenarios:
        folder = bin_dir / "scenarios"
        folder.mkdir()
        for path in SCENARIOS_DIR.glob("*.json"):
            (folder / path.name).symlink_to(path)
        for name, scenario in extra_scenarios.items():
            (folder / f"{name}.json").write_text(json.dumps(scenario, indent=1))
    else:
        (bin_dir / "scenarios").symlink_to(SCENARIOS_DIR)
    (bin_dir / "hosts.json").write_text(json.dumps({**scenarios, "_state_dir": str(state_dir)}, indent=1))
    return bin_dir / "nvidia-smi"


def _sshd_config(work: Path, n: int, port: int, addresses: list[str], envs: Mapping[str, str],
                 keys: Mapping[str, Path], penalties: bool, max_startups: str = "1000") -> Path:
    lines = [f"Port {port}", *(f"ListenAddress {a}" for a in addresses),
             f"HostKey {keys['host']}", f"PidFile {work / f'sshd-{n}.pid'}",
             f"AuthorizedKeysFile {keys['authorized']}", "UsePAM no", "StrictModes no",
             "PasswordAuthentication no", "KbdInteractiveAuthentication no",
             "PermitRootLogin prohibit-password", f"MaxStartups {max_startups}", "MaxSessions 100", "UseDNS no",
             "PrintMotd no", "PrintLastLog no", "LogLevel INFO"]
    if penalties:  # OpenSSH >= 9.8 would otherwise lock out 127.0.0.1 after the wrong-host-key tests
        lines.append("PerSourcePenalties no")
    for address in addresses:
        lines += [f"Match LocalAddress {address}", "    " + envs[address]]
    path = work / f"sshd-{n}.conf"
    path.write_text("\n".join(lines) + "\n")
    return path


def _wait_listening(proc: subprocess.Popen[bytes], addresses: list[str], port: int, log: Path) -> None:
    deadline = time.monotonic() + 15
    pending = list(addresses)
    while pending:
        if proc.poll() is not None:
            raise RuntimeError(f"sshd exited {proc.returncode}: {log.read_text()[-2000:]}")
        try:
            with socket.create_connection((pending[0], port), timeout=0.5) as s:
                if s.recv(8).startswith(b"SSH-"):
                    pending.pop(0)
                    continue
        except OSError:
            pass
        if time.monotonic() > deadline:
            raise RuntimeError(f"sshd not answering on {pending[0]}:{port}: {log.read_text()[-2000:]}")
        time.sleep(0.05)


def _end_hung_stubs(state_dir: Path, stub_paths: tuple[Path, ...]) -> None:
    """Kill what the hang scenario left, if a test did not: only processes running our stub."""
    for pid_file in state_dir.glob("hang-*.pid"):
        with contextlib.suppress(OSError, ValueError):
            pid = int(pid_file.read_text())
            cmdline = Path(f"/proc/{pid}/cmdline").read_bytes().decode(errors="replace")
            if any(str(p) in cmdline for p in stub_paths):
                os.kill(pid, signal.SIGTERM)


@contextlib.contextmanager
def running_cluster(work: Path, *, extra_healthy: int = EXTRA_HEALTHY_HOSTS,
                    scenarios: Mapping[str, str] = SCENARIO_ADDRESSES, call_ms: float = 0.0,
                    max_startups: str = "1000",
                    extra_scenarios: Mapping[str, Mapping[str, object]] | None = None,
                    env: Mapping[str, str] | None = None) -> Iterator[SshdCluster]:
    """Start the cluster in the empty folder ``work``; stop it (and any hung stub) on exit. ``call_ms``:
    how long each nvidia-smi call lasts at least (``GPUDIAG_FAKE_CALL_MS``; 0, the default: no delay).
    ``max_startups``: each sshd's ``MaxStartups`` (the default lets a benchmark's fan-out through; the pacing
    test sets a low one, as a bastion might have). ``extra_scenarios``: the test's own scenarios (name -> JSON);
    their ``processes`` are real processes of this machine, read from the real ``/proc``. ``env``: address ->
    more of its node's environment, "NAME=value NAME2=value2" (the --active tests give a node a stand-in
    libcuda.so.1 through LD_LIBRARY_PATH)."""
    sshd = shutil.which("sshd") or next((p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
                                         if os.access(p, os.X_OK)), None)
    missing = [name for name, path in (("sshd", sshd), ("ssh-keygen", shutil.which("ssh-keygen")),
                                        ("ssh", shutil.which("ssh"))) if path is None]
    if missing or sshd is None:
        raise SshdUnavailable(f"OpenSSH not installed ({', '.join(missing)} missing): "
                              "apt-get install openssh-server openssh-client")
    if os.geteuid() == 0:  # sshd refuses to start as root without its privilege separation folder
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)

    extras = tuple(extra_address(i) for i in range(extra_healthy))
    all_scenarios = {**scenarios, **dict.fromkeys(extras, "healthy")}
    addresses = list(all_scenarios)
    state_dir, home, node = work / "state", work / "home", work / "node"
    for folder in (state_dir, home, node):
        folder.mkdir()
    keys = {"host": work / "host_key", "client": work / "client_key", "wrong": work / "wrong_host_key",
            "authorized": work / "authorized_keys"}
    host_key, client_pub, wrong_key = (_keygen(keys[k]) for k in ("host", "client", "wrong"))
    keys["authorized"].write_text(client_pub + "\n")
    keys["authorized"].chmod(0o600)

    # The node's three PATHs: stub first; no nvidia-smi; no python3.
    bin_dir = node / "bin"
    stub_hosts = {a: ("healthy" if s in (NO_PYTHON, NO_NVIDIA_SMI) else s) for a, s in all_scenarios.items()}
    install_fake_bin(bin_dir, stub_hosts, state_dir, extra_scenarios)
    system = [Path("/usr/local/bin"), Path("/usr/bin"), Path("/bin")]
    _link_farm(node / "no_smi", system, None, skip="nvidia-smi")
    _link_farm(node / "no_python", system, NO_PYTHON_TOOLS, skip="nvidia-smi")
    (node / "no_python" / "nvidia-smi").symlink_to(bin_dir / "nvidia-smi")
    # A scenario with "processes" (the case study's SGLang server) gets a process table whose server writes
    # its log to a file: the node finds that log by itself, through the process's stdout.
    write_demo_logs(node)
    proc_roots = {a: write_proc_table(node / "proc" / a, procs, node) for a in addresses
                  for procs in [scenario_processes(stub_hosts[a])] if procs}
    envs = {a: _node_env(f"{bin_dir}:/usr/bin:/bin", home, call_ms, proc_roots.get(a)) for a in addresses}
    envs.update({a: _node_env(str(node / "no_smi"), home, call_ms) for a, s in scenarios.items()
                 if s == NO_NVIDIA_SMI})
    envs.update({a: _node_env(str(node / "no_python"), home, call_ms) for a, s in scenarios.items()
                 if s == NO_PYTHON})
    envs.update({a: f"{envs[a]} {extra}" for a, extra in (env or {}).items()})

    probe = _sshd_config(work, 0, 2222, addresses[:1], envs, keys, penalties=True)
    check = subprocess.run([sshd, "-t", "-f", str(probe)], capture_output=True, text=True)
    penalties = "PerSourcePenalties" not in check.stderr

    procs: list[subprocess.Popen[bytes]] = []
    logs: list[Path] = []
    try:
        for attempt in range(3):
            port = _free_port(addresses)
            groups = [addresses[i:i + LISTEN_LIMIT] for i in range(0, len(addresses), LISTEN_LIMIT)]
            logs = [work / f"sshd-{n}.log" for n in range(len(groups))]
            try:
                for n, group in enumerate(groups):
                    config = _sshd_config(work, n, port, group, envs, keys, penalties, max_startups)
                    with logs[n].open("ab") as log:
                        procs.append(subprocess.Popen([sshd, "-D", "-e", "-f", str(config)],
                                                      stdin=subprocess.DEVNULL, stdout=log, stderr=log))
                    _wait_listening(procs[-1], group, port, logs[n])
                break
            except RuntimeError:
                _stop(procs)
                procs.clear()
                if attempt == 2:
                    raise
        (work / "known_hosts").write_text("".join(f"[{a}]:{port} {host_key}\n" for a in addresses))
        (work / "wrong_known_hosts").write_text("".join(f"[{a}]:{port} {wrong_key}\n" for a in addresses))
        yield SshdCluster(
            port=port, scenarios=all_scenarios, extra_addresses=extras, known_hosts=work / "known_hosts",
            wrong_key_known_hosts=work / "wrong_known_hosts", client_key=keys["client"],
            user=getpass.getuser(), state_dir=state_dir, logs=tuple(logs),
            sshd_pids=tuple(p.pid for p in procs),
        )
    finally:
        _stop(procs)
        _end_hung_stubs(state_dir, (bin_dir / "nvidia-smi",))


def _stop(procs: list[subprocess.Popen[bytes]]) -> None:
    for proc in procs:
        if proc.poll() is None:
            proc.terminate()
    for proc in procs:
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()


def _fleet_env(bin_dir: Path, home: Path, call_ms: float) -> str:
    """The nodes' environment; the gateways of a ClusterShell tree run on the same nodes and need this machine's
    ssh (found on PATH here: the device machine's OpenSSH is unpacked in a private folder, with its libraries)."""
    ssh_dir = Path(shutil.which("ssh") or "/usr/bin/ssh").parent
    line = _node_env(f"{bin_dir}:{ssh_dir}:/usr/bin:/bin", home, call_ms)
    libraries = os.environ.get("LD_LIBRARY_PATH")
    return f"{line} LD_LIBRARY_PATH={libraries}" if libraries else line


@contextlib.contextmanager
def running_fleet(work: Path, addresses: list[str], *, call_ms: float = 0.0) -> Iterator[SshdCluster]:
    """A fleet of healthy simulated nodes that starts in seconds at any size: ONE ``sshd`` listening on the
    wildcard address serves every loopback address of ``addresses`` (127.0.0.0/8 all reaches ``lo``), where
    :func:`running_cluster` starts one per 16 addresses with a ``Match`` block each (minutes at 10,000). The
    stub answers as ``healthy`` everywhere (it still tells the nodes apart by the address in
    ``SSH_CONNECTION``). For benchmarks (``bench/fleet_tree.py``); the port is a free one, the sshd listens on
    it on every interface of this machine while it runs."""
    sshd = shutil.which("sshd") or next((p for p in ("/usr/sbin/sshd", "/usr/local/sbin/sshd")
                                         if os.access(p, os.X_OK)), None)
    if sshd is None or shutil.which("ssh-keygen") is None:
        raise SshdUnavailable("OpenSSH not installed: apt-get install openssh-server openssh-client")
    if os.geteuid() == 0:
        os.makedirs("/run/sshd", mode=0o755, exist_ok=True)
    state_dir, home, node = work / "state", work / "home", work / "node"
    for folder in (state_dir, home, node):
        folder.mkdir()
    keys = {"host": work / "host_key", "client": work / "client_key", "authorized": work / "authorized_keys"}
    host_key, client_pub = _keygen(keys["host"]), _keygen(keys["client"])
    keys["authorized"].write_text(client_pub + "\n")
    keys["authorized"].chmod(0o600)
    bin_dir = node / "bin"
    install_fake_bin(bin_dir, {"*": "healthy"}, state_dir)
    with socket.socket() as probe:
        probe.bind(("0.0.0.0", 0))
        port = int(probe.getsockname()[1])
    config = work / "sshd-fleet.conf"
    config.write_text("\n".join([
        f"Port {port}", "ListenAddress 0.0.0.0", f"HostKey {keys['host']}", f"PidFile {work / 'sshd-fleet.pid'}",
        f"AuthorizedKeysFile {keys['authorized']}", "UsePAM no", "StrictModes no", "PasswordAuthentication no",
        "KbdInteractiveAuthentication no", "PermitRootLogin prohibit-password", "MaxStartups 4000",
        "MaxSessions 100", "UseDNS no", "PrintMotd no", "PrintLastLog no", "LogLevel ERROR",
        _fleet_env(bin_dir, home, call_ms)]) + "\n")
    log = work / "sshd-fleet.log"
    with log.open("ab") as out:
        proc = subprocess.Popen([sshd, "-D", "-e", "-f", str(config)], stdin=subprocess.DEVNULL, stdout=out,
                                stderr=out)
    try:
        _wait_listening(proc, addresses[:1], port, log)
        (work / "known_hosts").write_text(f"[127.*]:{port} {host_key}\n")  # a pattern: one line for them all
        yield SshdCluster(port=port, scenarios=dict.fromkeys(addresses, "healthy"), extra_addresses=tuple(addresses),
                          known_hosts=work / "known_hosts", wrong_key_known_hosts=work / "known_hosts",
                          client_key=keys["client"], user=getpass.getuser(), state_dir=state_dir, logs=(log,),
                          sshd_pids=(proc.pid,))
    finally:
        _stop([proc])

"""gpudiag's node-side collector: runs ON the GPU node, standard library only, prints one JSON document.

The controller sends this file over the SSH channel, bundled with its helpers (``gpudiag.collect.bundle``:
the table of readings, the NVML reader, ...), so nothing is installed on the node. It does every piece of
collection in one process, one round trip; this module is the round, each job in a module of its own:

* the configuration and the document's sections: ``wire.py`` (both declared there, docs/probe.md);
* the readings of the table (``readings.py``) through NVML where the bundled binding loads (``nvml.py``),
  else nvidia-smi (``smi.py``: its fields, the sampling window, the CUDA version);
* beside the window: the GPUs' processes (``processes.py``), DCGM, the node's context, the log scan in a
  child process (``logfork.py``), NCCL's RAS;
* one round per line on stdin for a streaming collector (``stream.py``).

The document carries raw text; the controller parses it (``gpudiag.collect.parse``), so the parser can be unit
tested on recorded output and this script stays small.
"""

# Only what every run needs is imported here: argparse, ctypes and re where they are used, threads through
# proc.Thread (not the threading module), JSON through jsoncodec (not the json package, which imports re). The
# collector starts once per node per sweep, and its start-up is most of its own cost.
import gc
import sys
import time

from . import jsoncodec, links, proc, wire
from .proc import in_thread
from .rows import number, rows_read


def collect_nvml(doc, samples, interval_s, watcher=None, topology_if=None, shutdown=True):
    """Read the GPUs through NVML into ``doc``; False (and the reason in the document) when NVML cannot
    be used here, so the caller falls back to nvidia-smi."""
    try:
        import ctypes
        ctypes.CDLL("libnvidia-ml.so.1")  # fail fast, before compiling the 300 KB binding for nothing
    except OSError as exc:
        doc["nvml_unavailable"] = "NVMLError_LibraryNotFound: NVML Shared Library Not Found (%s)" % exc
        return False
    try:
        import pynvml  # the bundle carries it; a node's own copy is not needed

        from . import nvml as nvml_reader
    except ImportError as exc:
        doc["nvml_unavailable"] = "the NVML binding did not travel with the collector (%s)" % exc
        return False
    except Exception as exc:  # a broken binding on the node must not stop the collection
        doc["nvml_unavailable"] = "%s: %s" % (type(exc).__name__, exc)
        return False
    try:
        doc["nvml"] = nvml_reader.collect(pynvml, samples, interval_s, watcher, topology_if, shutdown)
        doc["processes_from"] = "nvml"
    except nvml_reader.NvmlUnavailable as exc:
        doc["nvml_unavailable"] = str(exc)
        return False
    doc["source"] = "nvml"
    doc["cuda_version"] = doc["nvml"].get("cuda_version")
    doc["cuda_version_from"] = "nvml" if doc["cuda_version"] else None
    return True


def _nvml_bounded(doc, samples, interval_s, bound_s, watcher=None, topology_if=None, shutdown=True):
    """:func:`collect_nvml` in a thread, given the sampling window and ``bound_s`` more: NVML calls cannot be
    killed, and one into a wedged driver never returns. Past that, the call is recorded as hung and False
    sends the caller to nvidia-smi, whose calls are bounded one by one. The thread fills a document of its own,
    merged only when it finishes in time, so a late answer cannot change what is being written."""
    own = {"problems": []}
    done = []
    started = time.monotonic()
    thread = in_thread(own, lambda: done.append(collect_nvml(own, samples, interval_s, watcher, topology_if,
                                                             shutdown)))
    thread.join(samples * interval_s + bound_s)
    if thread.is_alive():
        proc.HUNG.append({"call": "NVML", "after_s": round(time.monotonic() - started, 1)})
        doc["nvml_unavailable"] = "NVML did not answer in %.0f s" % (time.monotonic() - started)
        return False
    doc["problems"].extend(own.pop("problems"))
    doc.update(own)
    return bool(done and done[0])


def _start_dcgm(doc, samples, interval_s, timeout_s):
    """Read DCGM's profiling fields in a thread, over the same window as the GPU samples."""
    if proc.find_tool("dcgmi") is None:  # the common case: no module to load, no thread to start
        doc["dcgm"] = {"available": False, "why": "dcgmi is not installed"}
        return None
    try:
        from . import dcgm
    except ImportError:
        return None  # running alone, not from a bundle
    def run():
        doc["dcgm"] = dcgm.collect(samples, interval_s, timeout_s)

    return proc.Thread(run).start()


def collect_context(doc, call_timeout_s, with_topology=True):
    """The node's GPU topology and virtualization (collectors/gpudiag_node/context.py) into ``doc["context"]``."""
    try:
        from . import context as node_context
        smi_path = _smi().find_nvidia_smi() if with_topology else None  # only topo -m needs it
        doc["context"] = node_context.collect(smi_path, call_timeout_s, with_topology)
    except Exception as exc:  # context enriches the verdict; its failure must not cost the readings
        doc["problems"].append("node context: %s: %s" % (type(exc).__name__, exc))


def _smi():
    from . import smi  # the nvidia-smi path: a node that reads NVML never imports it
    return smi


def _logfork():
    from . import logfork  # only a node asked for logs pays for it
    return logfork


def _processes_module():
    from . import processes
    return processes


class _Watcher(object):
    """processes.Watcher, imported only when a GPU has processes: an idle node pays nothing for it."""

    def __init__(self, doc, nccl_ras=True):
        self.doc = doc
        self.watcher = None
        self.t0 = None
        self.nccl_ras = nccl_ras
        self.ras = None  # (thread, result list, when it started)

    def start(self, per_gpu):
        try:
            self.watcher = _processes_module().Watcher()
            self.watcher.start(per_gpu)
            self.t0 = self.watcher.t0
        except Exception as exc:  # who is on the GPU enriches the verdict; it must not cost the readings
            self.doc["problems"].append("processes: %s: %s" % (type(exc).__name__, exc))
        if self.nccl_ras and per_gpu:
            self._start_ras(per_gpu)

    def _start_ras(self, per_gpu):
        """Ask the node's NCCL job (if any) for its RAS status, beside the sampling window: one connection per
        node, whatever the number of processes (collectors/gpudiag_node/nccl_ras.py)."""
        pids = []
        for index in sorted(per_gpu):
            for p in per_gpu[index]:
                if p.get("pid") not in pids:
                    pids.append(p.get("pid"))
        from . import nccl_ras
        found = []
        ras_thread = in_thread(self.doc, lambda: found.append(
            nccl_ras.collect(pids, _processes_module().proc_root())))
        self.ras = (ras_thread, found, time.monotonic(), nccl_ras.DEADLINE_S)

    def finish(self):
        return self.watcher.finish()

    def finish_ras(self):
        """The RAS answer, waited for at most its own deadline (and a half second) from when it started."""
        if self.ras is None:
            return None
        ras_thread, found, started, deadline_s = self.ras
        ras_thread.join(max(0.0, started + deadline_s + 0.5 - time.monotonic()))
        return found[0] if found else {"asked": True, "error": "no answer within the deadline"}


def looks_starved(doc, busy_pct, low_power_pct):
    """Whether any sample of any GPU read busy (>= busy_pct) at a low share (<= low_power_pct) of its enforced
    power limit: the controller's BUSY_LOW_POWER thresholds, sent as ``topology_if``; the node has none."""
    for row in rows_read(doc):
        util, power = number(row.get("utilization_pct")), number(row.get("power_w"))
        limit = number(row.get("enforced_power_limit_w"))
        if util is not None and power is not None and limit and util >= busy_pct \
                and 100.0 * power / limit <= low_power_pct:
            return True
    return False


def _gate(config):
    """The topology gate's thresholds (busy_pct, low_power_pct) as the controller sent them, or None: without
    both, the topology is read whenever the context is."""
    gate = config["topology_if"] if config["context"] else None
    thresholds = tuple(number((gate or {}).get(name)) for name in ("busy_pct", "low_power_pct"))
    return None if None in thresholds else thresholds


def collect_round(config, kept, last=False):
    """One document for the collection ``config`` (``wire.read_config``) asks for. ``kept``: what a streaming
    collector keeps from one round to the next (the node's context and, once a GPU looked starved, its
    topology: neither changes between refreshes); an empty dict for a single collection. ``last``: the process
    ends right after this round (the bundle's one-shot collector): NVML is left to its exit."""
    started = time.monotonic()
    doc = wire.new_document()
    del proc.HUNG[:]  # a streaming collector's previous round said its own
    # First, while this process has no other thread: the log scan forks (see logfork.start_logs).
    logs = _logfork().start_logs(doc, config["logs"], config["call_timeout_s"]) if config["logs"] else None
    gate = _gate(config)
    extras = _start_extras(doc, config, kept, gate)  # beside the sampling window, which is mostly waiting
    _read_gpus(doc, config, _nvml_topology_gate(kept, gate), shutdown=not last)
    for thread in extras:
        if thread is not None:
            thread.join()
    if logs is not None:
        _logfork().finish_logs(doc, config["logs"], logs)
    _discover_logs(doc, config, started)
    if config["active"]:  # issue 31: the test of the idle GPUs, last (it needs the window's verdict)
        from . import active
        doc["active"] = active.run(config["active"], doc, rows_read(doc), started)
    if proc.HUNG:  # each call that outlived its bound and was killed: which one, after how long
        doc["hung"] = list(proc.HUNG)
    if isinstance(doc.get("context"), dict):
        kept.setdefault("context", dict(doc["context"]))
        if gate is not None:
            _gated_topology(doc, config, kept, gate)
    return doc


def _start_extras(doc, config, kept, gate):
    """The threads that run beside the window: DCGM, and the node's context (kept from an earlier round)."""
    extras = []
    if config["dcgm"]:
        extras.append(_start_dcgm(doc, config["samples"], config["interval_s"], config["call_timeout_s"]))
    # The topology and the hypervisor explain a starved GPU; where "topology_if" gives the thresholds, they
    # are read (nvidia-smi topo -m, systemd-detect-virt) only when some GPU read busy at low power.
    if config["context"] and "context" in kept:
        doc["context"] = dict(kept["context"])
    elif config["context"]:
        extras.append(in_thread(doc, lambda: collect_context(doc, config["call_timeout_s"],
                                                             with_topology=gate is None)))
    return extras


def _nvml_topology_gate(kept, gate):
    """For the NVML reader: whether to read the GPU pairs' links through NVML before it lets go of the GPUs
    (the rows it read looked starved, and no earlier round of this collector read them), or None."""
    if gate is None:
        return None
    return lambda out: "starved" not in kept and looks_starved({"source": "nvml", "nvml": out}, gate[0], gate[1])


def _read_gpus(doc, config, nvml_topology_if=None, shutdown=True):
    """The GPUs' samples (NVML, else nvidia-smi), their processes and NCCL's RAS answer, into ``doc``."""
    samples, interval_s, call_timeout_s = config["samples"], config["interval_s"], config["call_timeout_s"]
    if not config["gpus"]:
        doc["nvidia_smi"] = {"path": None, "status": "skipped"}
        return
    watcher = _Watcher(doc, config["nccl_ras"]) if config["processes"] else None
    fabric_manager = links.fabric_manager()
    if fabric_manager is not None:
        doc["fabric_manager"] = fabric_manager
    if config["source"] == "nvidia-smi" or not _nvml_bounded(doc, samples, interval_s, call_timeout_s, watcher,
                                                             nvml_topology_if, shutdown):
        _smi().collect(samples, interval_s, call_timeout_s, doc, watcher)
    if watcher is not None and watcher.t0 is not None:
        doc["processes"] = watcher.finish()
    ras = watcher.finish_ras() if watcher is not None else None
    if ras is not None:
        doc["nccl_ras"] = ras


def _discover_logs(doc, config, started):
    """The servers' logs, found through the GPUs' processes (or, for a log search that reads no GPU, by
    command line), scanned in what is left of the logs' share of the deadline."""
    discover = config["discover_logs"]
    if discover and isinstance(doc.get("processes"), dict):
        _logfork().scan_server_logs(doc, discover, config["call_timeout_s"], started)
    elif discover and not config["gpus"]:
        servers = _processes_module().servers_running(discover.get("servers"))
        _logfork().scan_server_logs(doc, discover, config["call_timeout_s"], started, processes=servers)


def _gated_topology(doc, config, kept, gate):
    """The topology and the hypervisor, read (once per streaming collector) when some GPU looked starved."""
    if not looks_starved(doc, gate[0], gate[1]):
        doc["context"]["topology_skipped"] = "no GPU read busy at low power"
        return
    if "starved" not in kept:
        from . import context as node_context
        # NVML's pairs where the NVML reader could name them all (topology.py), else nvidia-smi topo -m
        nvml = doc.get("nvml") if doc.get("source") == "nvml" and isinstance(doc.get("nvml"), dict) else {}
        topology = nvml.pop("topology", None) or node_context.topology(_smi().find_nvidia_smi(),
                                                                       config["call_timeout_s"])
        kept["starved"] = {"topology": topology, "virt": node_context.detect_virt(config["call_timeout_s"])}
    doc["context"].update(kept["starved"])


def _emit(doc):
    sys.stdout.write(jsoncodec.dumps(wire.finish(doc)))
    sys.stdout.write("\n")
    sys.stdout.flush()


def main_with_config(raw, leaves=False):
    """Run the collection the controller's configuration ``raw`` asks for (read through ``wire.read_config``:
    its keys are declared in ``wire.CONFIG``, docs/probe.md) and print the document; a streaming collector
    (``stream``) answers one round per line on stdin (``stream.py``). ``leaves``: the caller ends the process
    once this returns, with no cleanup (the bundle: os._exit)."""
    config = wire.read_config(raw)
    if not config["stream"]:
        _emit(collect_round(config, {}, last=leaves))
        return 0
    from . import stream

    gc.enable()  # the bundle turned it off for a one-shot run; a process that stays must collect its cycles
    return stream.serve(config, collect_round, _emit)


def main(argv=None):
    import argparse

    default = {key.name: key.default for key in wire.CONFIG}
    parser = argparse.ArgumentParser(prog="gpudiag-probe")
    parser.add_argument("--samples", type=int, default=default["samples"])
    parser.add_argument("--interval", type=float, default=default["interval_s"])
    parser.add_argument("--call-timeout", type=float, default=default["call_timeout_s"])
    parser.add_argument("--source", choices=("auto", "nvidia-smi"), default=default["source"])
    args = parser.parse_args(argv)
    return main_with_config({"samples": args.samples, "interval_s": args.interval,
                             "call_timeout_s": args.call_timeout, "source": args.source})


if __name__ == "__main__":
    # Alone (``python3 -m gpudiag_node.probe``) the configuration comes as arguments; in the bundle
    # (gpudiag.collect.bundle) it travels as data and the bundle calls main_with_config itself.
    sys.exit(main())

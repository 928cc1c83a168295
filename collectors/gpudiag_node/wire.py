"""The wire between the controller and the collector, declared once: what the controller asks (``CONFIG``) and
what the node answers (``SECTIONS``, in one ``gpudiag.probe/2`` document).

Standard library only, Python 3.6+: shared the way ``readings.py`` is. The node reads its configuration only
through :func:`read_config` (every key of ``CONFIG``, typed, its default when absent or of the wrong type) and
starts and closes its document through :func:`new_document` and :func:`finish`; the controller builds the
configuration through :func:`make_config` (``gpudiag.collect.remote``) and parses the document by ``SECTIONS``
(``gpudiag.collect.parse``). ``docs/probe.md`` is made from these tables (``python3 ci/probe_doc.py``).

Adding a configuration key is one ``Key`` here and the controller's argument that fills it; adding a section
is one ``Section`` here, its collector on the node and its parser in ``gpudiag.collect``.
"""

SCHEMA = "gpudiag.probe/2"  # 2: NVML rows keyed by the readings' names (readings.py)

# The line a transport that keeps a streaming collector writes after the first round's (gpudiag.collect.remote
# sends it): from then on the end of stdin means that the channel closed, and the process group ends at once.
KEPT_LINE = b"kept"


class Key(object):
    """One configuration key: ``kind`` is ``int``, ``float``, ``bool``, ``str``, ``list`` or ``dict``;
    ``default`` what the node uses when the key is absent (None: "not asked"); ``least`` a floor for numbers;
    ``setting``: the controller's ``SweepOptions`` field whose default this one must equal (a test pins them)."""

    __slots__ = ("name", "kind", "default", "least", "setting", "doc")

    def __init__(self, name, kind, default, doc, least=None, setting=None):
        self.name, self.kind, self.default, self.least = name, kind, default, least
        self.setting, self.doc = setting, doc


# What the controller may ask. The defaults are what a default sweep sends (tests/unit/node/test_wire.py).
CONFIG = (
    Key("samples", "int", 5, "readings of the GPUs taken over the window", least=1, setting="samples"),
    Key("interval_s", "float", 0.5, "seconds between two samples", least=0.0, setting="interval_s"),
    Key("call_timeout_s", "float", 13.8, "seconds one call on the node (an nvidia-smi, NVML past the window) may "
        "take before it is killed and reported as hung: half of what the deadline leaves beside the window"),
    Key("source", "str", "auto", "auto: NVML where it loads, else nvidia-smi; nvidia-smi: never NVML",
        setting="source"),
    Key("gpus", "bool", True, "read the GPUs (false: a log search)", setting="gpus"),
    Key("processes", "bool", True, "list the GPUs' processes (and GPM, read only for GPUs with processes)"),
    Key("nccl_ras", "bool", True, "ask the node's NCCL job (if any) for its RAS status"),
    Key("dcgm", "bool", True, "read DCGM's profiling fields where dcgmi is installed"),
    Key("context", "bool", True, "read the GPU topology and whether the node is a VM", setting="context"),
    Key("topology_if", "dict", None, "the controller's thresholds {busy_pct, low_power_pct}: read the topology only "
        "when some GPU read busy at a low share of its power limit (None: always, when context is asked)"),
    Key("logs", "list", None, "log sources to scan (gpudiag.logs.plan: LogPlan.node_config())"),
    Key("discover_logs", "dict", None, "find the servers' logs through their processes: {servers, source}"),
    Key("stream", "bool", False, "stay, and answer one round per line on stdin (gpudiag watch)",
        setting="stream"),
    Key("round_deadline_s", "float", 30.0, "a streaming round running past this ends the process group (exit 124)",
        least=1.0, setting="deadline_s"),
    Key("idle_s", "float", None, "a streaming collector asked nothing for this long leaves (None: 3 round "
        "deadlines and a minute)", least=1.0, setting="idle_s"),
    Key("active", "dict", None, "the active test of the idle GPUs (active.py): {budget_s, deadline_s}, its budget "
        "and the collector's deadline (None: not run)"),
)
BY_KEY = {key.name: key for key in CONFIG}

_KINDS = {"int": (int,), "float": (int, float), "bool": (bool,), "str": (str,), "list": (list,), "dict": (dict,)}


def _of_kind(key, value):
    return isinstance(value, _KINDS[key.kind]) and (key.kind == "bool" or not isinstance(value, bool))


def _typed(key, value):
    """``value`` as ``key`` reads it, or its default when it is not of the key's kind."""
    if value is None or not _of_kind(key, value):
        return key.default
    if key.kind == "float":
        value = float(value)
    if key.least is not None and value < key.least:
        value = type(value)(key.least)
    return value


def read_config(raw):
    """The node's view of the controller's configuration: every key of ``CONFIG``, typed, and nothing else."""
    raw = raw if isinstance(raw, dict) else {}
    return {key.name: _typed(key, raw.get(key.name)) for key in CONFIG}


def make_config(**values):
    # type: (**object) -> dict[str, object]
    """The controller's side: the configuration to send, every key of ``CONFIG`` (its default where ``values``
    has none). A key that is not declared, or a value not of its kind, is a ValueError: the node would read it
    as its default."""
    config = {key.name: key.default for key in CONFIG}
    for name, value in values.items():
        key = BY_KEY.get(name)
        if key is None:
            raise ValueError("%r is not a collector configuration key (collectors/gpudiag_node/wire.py)" % name)
        if value is not None and not _of_kind(key, value):
            raise ValueError("%s=%r is not a %s" % (name, value, key.kind))
        config[name] = value
    return config


class Section(object):
    """One part of the document: ``writer`` the node module that fills it, ``parser`` the controller's function
    that reads it (``module:function`` under ``gpudiag.collect``), ``bound`` what the controller reads of it at
    most (a number and what it counts), ``start`` its value in a new document (absent from it when None)."""

    __slots__ = ("name", "writer", "parser", "bound", "doc", "start")

    def __init__(self, name, writer, parser, bound, doc, start=None):
        self.name, self.writer, self.parser, self.bound = name, writer, parser, bound
        self.doc, self.start = doc, start


# Every section a document may hold, in the order a new one lists them. The bounds are the controller's
# (the node's answer is untrusted input): it reads no more than this of a section, and says what it cut.
SECTIONS = (
    Section("schema", "wire", "parse:load_document", (1, "exact value"), "the document's version: " + SCHEMA,
            SCHEMA),
    Section("collector", "probe", "parse:parse_probe", (40, "characters"), "python (probe.py) or sh (probe.sh)",
            "python"),
    Section("source", "probe", "parse:parse_probe", (1, "word"), "what read the GPUs: nvml or nvidia-smi",
            "nvidia-smi"),
    Section("host", "wire", "parse:parse_probe", (256, "characters each"), "{hostname, kernel}: uname's", {}),
    Section("nvidia_smi", "smi", "parse:parse_probe", (256, "characters each"),
            "{path, status (missing, skipped), help_exit}", "null"),
    Section("fields", "smi", "parse:parse_probe", (None, "one pair per spelling of a reading"),
            "[reading, --query-gpu name] for each column of the first call's CSV", []),
    Section("later_fields", "smi", "parse:parse_probe", (None, "one pair per spelling of a reading"),
            "the columns of the window's later calls (the readings read once left out)"),
    Section("samples", "smi", "parse:parse_probe", (600, "samples"),
            "[{t_s, exit, stdout, stderr}]: each nvidia-smi --query-gpu call of the window, raw", []),
    Section("cuda_version", "smi", "parse:parse_probe", (256, "characters"), "the driver's CUDA version", "null"),
    Section("cuda_version_from", "smi", "parse:parse_probe", (256, "characters"),
            "libcuda, driver branch, nvidia-smi or nvml", "null"),
    Section("problems", "probe", "parse:parse_probe", (16, "sentences"),
            "what went wrong on the node, one sentence each (500 characters read)", []),
    Section("nvml", "nvml", "parse:parse_probe", (64, "GPUs"),
            "{driver_version, cuda_version, gpus, samples, energy, gpm}: the NVML reader's rows"),
    Section("nvml_unavailable", "probe", "parse:parse_probe", (500, "characters"),
            "why NVML was not used (the GPUs were then read through nvidia-smi)"),
    Section("processes_from", "probe", "parse_processes:parse_processes", (1, "word"),
            "what listed the GPUs' processes: nvml or nvidia-smi"),
    Section("processes", "processes", "parse_processes:parse_processes", (256, "(GPU, process) rows"),
            "who is on each GPU and what it does (and GPM's per-process figures)"),
    Section("nccl_ras", "nccl_ras", "parse_nccl_ras:parse_nccl_ras", (512 * 1024, "characters"),
            "the node's NCCL job's RAS answer"),
    Section("dcgm", "dcgm", "parse:with_dcgm", (None, "the readings of the GPUs read"),
            "{available, why, stdout}: dcgmi dmon's profiling"),
    Section("context", "context", "parse_logs:parse_context", (64, "GPUs of the matrix"),
            "{topology, topology_skipped, virt, dmi, hypervisor_flag}: the GPU pairs' links (nvidia-smi topo -m's "
            "{exit, stdout, stderr}, or NVML's {pairs: [[a, b, name]], gpus, from}) and the VM's marks"),
    Section("logs", "logfork", "parse_logs:parse_logs", (32, "sources"), "each log source scanned, its matches"),
    Section("hung", "proc", "parse:parse_hung", (20, "calls"), "[{call, after_s}]: each call killed at its bound"),
    Section("fabric_manager", "links", "parse_links:with_links", (256, "characters each"),
            "NVSwitch systems: the fabric manager's state"),
    Section("nvlink_smi", "links", "parse_links:with_links", (200000, "characters"),
            "nvidia-smi nvlink's answers, where NVML did not read the links"),
    Section("active", "active", "parse_active:parse_active", (64, "GPUs"),
            "{budget_s, elapsed_s, error, gpus}: the active test of the idle GPUs (--active): each GPU's state, "
            "figures or why not"),
    Section("stream", "stream", None, (1, "object"), "{round, pid}: a streaming collector's round"),
)
BY_SECTION = {section.name: section for section in SECTIONS}


def new_document():
    """A document with the sections every document starts with (``start``), in the table's order."""
    import os

    uname = os.uname()  # nodename is what gethostname(2) returns on Linux
    doc = {}
    for section in SECTIONS:
        if section.start is not None:
            doc[section.name] = None if section.start == "null" else _fresh(section.start)
    doc["host"] = {"hostname": uname.nodename, "kernel": uname.release}
    return doc


def _fresh(value):
    return list(value) if isinstance(value, list) else dict(value) if isinstance(value, dict) else value


def finish(doc):
    """The document as it leaves the node: a section that is not declared is dropped, and said in its problems
    (a new section is one row of ``SECTIONS``: the controller knows no other)."""
    extra = sorted(name for name in doc if name not in BY_SECTION)
    for name in extra:
        del doc[name]
        doc.setdefault("problems", []).append("undeclared section %r dropped (collectors/gpudiag_node/wire.py)"
                                              % name)
    return doc

"""The GPU rows a document holds, read one way on both sides: the node (its topology gate, the processes'
uuids, the NVLink fabric test) and the controller (``gpudiag.collect.parse`` splits nvidia-smi's CSV with
:func:`cells`). Standard library only, Python 3.6+."""


def cells(line):
    # type: (str) -> list[str] | None
    """One line of ``nvidia-smi --format=csv`` → its cells, stripped; None when it is not a CSV line (a quoted
    field past the csv module's limit). nvidia-smi quotes nothing, so a plain split is the common case, and
    the csv module (an import on the node) reads only a line with a quote in it."""
    if '"' not in line:
        return [cell.strip() for cell in line.split(",")]
    import csv

    try:
        return [cell.strip() for cell in next(csv.reader([line], skipinitialspace=True))]
    except (csv.Error, StopIteration):
        return None


def number(value):
    """A cell or an NVML value as a float, or None."""
    try:
        return float(value)
    except (TypeError, ValueError):
        return None


def rows_read(doc):
    """Every GPU row read, as {logical name: value}, from either path (NVML rows, or nvidia-smi CSV)."""
    if doc.get("source") == "nvml":
        nvml = doc.get("nvml") or {}
        static = {g.get("index"): g for g in nvml.get("gpus", [])}
        for sample in nvml.get("samples", []):
            for row in sample.get("rows", []):
                merged = dict(static.get(row.get("index"), {}))
                merged.update(row)
                yield merged
        return
    names = [logical for logical, _ in doc.get("fields", [])]
    later = [logical for logical, _ in doc.get("later_fields", [])] or names
    for i, sample in enumerate(doc.get("samples", [])):
        for line in sample.get("stdout", "").splitlines():
            row = cells(line)
            if row is not None and len(row) == len(names if i == 0 else later):
                yield dict(zip(names if i == 0 else later, row))

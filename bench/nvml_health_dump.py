"""Every NVML reading the health-breadth issue (20) asks for, raw, from the python3 that has nvidia-ml-py.

    python3 bench/nvml_health_dump.py [SECTION ...] > nvml_health.json

SECTION: memory, fields, nvlink, fabric, config, reasons, processes (default: all, each in a child process, so
a binding call that crashes the interpreter, as the fabric call did once, loses only its own section).

Per device: remapped rows, retired pages and their pending status, ECC mode and the volatile and aggregate
counts, memory temperature, the driver's recovery action, every NVLink's state and error counters (twice,
1 s apart), the fabric info, persistence, compute and MIG modes, VBIOS and InfoROM versions, the clock event
reasons (current and supported). Each call's result or its error, so a missing API is recorded, not fatal.
"""

import json
import sys
import time

import pynvml as nv


def attempt(fn, *args):
    try:
        value = fn(*args)
    except Exception as exc:  # record what failed, go on
        return {"error": f"{type(exc).__name__}: {exc}"}
    return plain(value)


def plain(value):
    if isinstance(value, bytes):
        return value.decode("utf-8", "replace")
    if isinstance(value, (list, tuple)):
        return [plain(v) for v in value]
    if hasattr(value, "_fields_"):
        return {name: plain(getattr(value, name)) for name, *_ in value._fields_}
    if isinstance(value, (int, float, str)) or value is None:
        return value
    return repr(value)


def const(name):
    return getattr(nv, name, None)


def field(handle, name):
    fid = const(name)
    if fid is None:
        return {"error": f"binding has no {name}"}
    try:
        (v,) = nv.nvmlDeviceGetFieldValues(handle, [fid])
    except Exception as exc:
        return {"error": f"{type(exc).__name__}: {exc}"}
    return {"nvmlReturn": v.nvmlReturn, "valueType": v.valueType, "value": plain(v.value)}


def links(handle):
    out = []
    for link in range(getattr(nv, "NVML_NVLINK_MAX_LINKS", 18)):
        entry = {"link": link, "state": attempt(nv.nvmlDeviceGetNvLinkState, handle, link)}
        if isinstance(entry["state"], dict) and "error" in entry["state"] and link > 0:
            out.append(entry)
            continue
        for counter in ("NVML_NVLINK_ERROR_DL_REPLAY", "NVML_NVLINK_ERROR_DL_RECOVERY", "NVML_NVLINK_ERROR_DL_CRC_FLIT",
                        "NVML_NVLINK_ERROR_DL_CRC_DATA", "NVML_NVLINK_ERROR_DL_ECC_DATA"):
            if const(counter) is not None:
                entry[counter] = attempt(nv.nvmlDeviceGetNvLinkErrorCounter, handle, link, const(counter))
        entry["remote_pci"] = attempt(nv.nvmlDeviceGetNvLinkRemotePciInfo, handle, link)
        entry["version"] = attempt(nv.nvmlDeviceGetNvLinkVersion, handle, link)
        out.append(entry)
    return out


def fabric(handle):
    out = {"v1": attempt(nv.nvmlDeviceGetGpuFabricInfo, handle) if hasattr(nv, "nvmlDeviceGetGpuFabricInfo") else None}
    if hasattr(nv, "nvmlDeviceGetGpuFabricInfoV"):
        try:
            info = nv.c_nvmlGpuFabricInfo_v2_t() if hasattr(nv, "c_nvmlGpuFabricInfo_v2_t") else None
            if info is not None:
                info.version = getattr(nv, "nvmlGpuFabricInfo_v2", 0)
                nv.nvmlDeviceGetGpuFabricInfoV(handle, info)
                out["v2"] = plain(info)
        except Exception as exc:
            out["v2"] = {"error": f"{type(exc).__name__}: {exc}"}
    return out


def memory(h):
    d = {"remapped_rows": attempt(nv.nvmlDeviceGetRemappedRows, h)}
    for cause in ("NVML_PAGE_RETIREMENT_CAUSE_MULTIPLE_SINGLE_BIT_ECC_ERRORS",
                  "NVML_PAGE_RETIREMENT_CAUSE_DOUBLE_BIT_ECC_ERROR"):
        d["retired_pages_" + cause] = attempt(nv.nvmlDeviceGetRetiredPages, h, const(cause))
    d["retired_pages_pending"] = attempt(nv.nvmlDeviceGetRetiredPagesPendingStatus, h)
    d["ecc_mode"] = attempt(nv.nvmlDeviceGetEccMode, h)
    for kind in ("NVML_MEMORY_ERROR_TYPE_CORRECTED", "NVML_MEMORY_ERROR_TYPE_UNCORRECTED"):
        for counter in ("NVML_VOLATILE_ECC", "NVML_AGGREGATE_ECC"):
            d[f"ecc_{kind}_{counter}"] = attempt(nv.nvmlDeviceGetTotalEccErrors, h, const(kind), const(counter))
    return d


def fields(h):
    d = {}
    for name in ("NVML_FI_DEV_MEMORY_TEMP", "NVML_FI_DEV_GET_GPU_RECOVERY_ACTION", "NVML_FI_DEV_NVLINK_LINK_COUNT",
                 "NVML_FI_DEV_ECC_CURRENT", "NVML_FI_DEV_ECC_PENDING", "NVML_FI_DEV_REMAPPED_COR",
                 "NVML_FI_DEV_REMAPPED_UNC", "NVML_FI_DEV_REMAPPED_PENDING", "NVML_FI_DEV_REMAPPED_FAILURE",
                 "NVML_FI_DEV_RETIRED_SBE", "NVML_FI_DEV_RETIRED_DBE", "NVML_FI_DEV_RETIRED_PENDING",
                 "NVML_FI_DEV_NVLINK_CRC_FLIT_ERROR_COUNT_TOTAL", "NVML_FI_DEV_NVLINK_REPLAY_ERROR_COUNT_TOTAL",
                 "NVML_FI_DEV_NVLINK_RECOVERY_ERROR_COUNT_TOTAL", "NVML_FI_DEV_PERSISTENCE_MODE",
                 "NVML_FI_DEV_POWER_INSTANT"):
        d[name] = field(h, name)
    d["temperature_memory_threshold"] = attempt(nv.nvmlDeviceGetTemperatureThreshold, h,
                                                const("NVML_TEMPERATURE_THRESHOLD_MEM_MAX") or 5)
    return d


def nvlink(h):
    first = links(h)
    time.sleep(1)
    return {"nvlink_first": first, "nvlink_second": links(h)}


def config(h):
    d = {"name": attempt(nv.nvmlDeviceGetName, h)}
    d["persistence_mode"] = attempt(nv.nvmlDeviceGetPersistenceMode, h)
    d["compute_mode"] = attempt(nv.nvmlDeviceGetComputeMode, h)
    d["mig_mode"] = attempt(nv.nvmlDeviceGetMigMode, h)
    d["vbios"] = attempt(nv.nvmlDeviceGetVbiosVersion, h)
    d["inforom_image"] = attempt(nv.nvmlDeviceGetInforomImageVersion, h)
    for obj in ("NVML_INFOROM_OEM", "NVML_INFOROM_ECC", "NVML_INFOROM_POWER"):
        d["inforom_" + obj] = attempt(nv.nvmlDeviceGetInforomVersion, h, const(obj))
    d["board_part"] = attempt(nv.nvmlDeviceGetBoardPartNumber, h)
    for name in ("nvmlDeviceGetGspFirmwareVersion", "nvmlDeviceGetGspFirmwareMode"):
        if hasattr(nv, name):
            d[name] = attempt(getattr(nv, name), h)
    return d


def reasons(h):
    current = (getattr(nv, "nvmlDeviceGetCurrentClocksEventReasons", None)
               or nv.nvmlDeviceGetCurrentClocksThrottleReasons)
    supported = (getattr(nv, "nvmlDeviceGetSupportedClocksEventReasons", None)
                 or nv.nvmlDeviceGetSupportedClocksThrottleReasons)
    return {"clock_event_reasons": attempt(current, h), "clock_event_reasons_supported": attempt(supported, h),
            "reason_constants": {n: getattr(nv, n) for n in dir(nv)
                                 if n.startswith(("nvmlClocksEventReason", "nvmlClocksThrottleReason"))}}


def processes(h):
    return {"process_utilization": attempt(nv.nvmlDeviceGetProcessUtilization, h, 0),
            "compute_processes": attempt(nv.nvmlDeviceGetComputeRunningProcesses, h)}


SECTIONS = {"memory": memory, "fields": fields, "nvlink": nvlink, "fabric": fabric, "config": config,
            "reasons": reasons, "processes": processes}


def section(name):
    nv.nvmlInit()
    doc = {"section": name, "driver": attempt(nv.nvmlSystemGetDriverVersion),
           "nvml": attempt(nv.nvmlSystemGetNVMLVersion), "cuda": attempt(nv.nvmlSystemGetCudaDriverVersion),
           "devices": []}
    for i in range(nv.nvmlDeviceGetCount()):
        doc["devices"].append(dict(index=i, **SECTIONS[name](nv.nvmlDeviceGetHandleByIndex(i))))
    return doc


def main():
    names = sys.argv[1:]
    if len(names) == 1:
        json.dump(section(names[0]), sys.stdout, indent=1)
        return
    import subprocess
    out = {}
    for name in names or SECTIONS:
        child = subprocess.run([sys.executable, __file__, name], capture_output=True, text=True, timeout=60)
        try:
            out[name] = json.loads(child.stdout)
        except ValueError:
            out[name] = {"error": f"exit {child.returncode}", "stderr": child.stderr[-2000:]}
    json.dump(out, sys.stdout, indent=1)


if __name__ == "__main__":
    main()

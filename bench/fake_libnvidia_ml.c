/* A stand-in libnvidia-ml.so.1 for profiling the collector's Python side without a GPU (bench/, issue 22): every
   getter the NVML reader calls answers at once with an idle H200's values. FAKE_NVML_GPUS: how many GPUs
   (default 1); FAKE_NVML_PIDS: "pid,pid" compute processes on GPU 0 (default none); FAKE_NVML_UTIL: every GPU's
   utilization in percent (default 0; 100 beside the 76 W of power reads as a starved GPU); the GPUs' common
   PCIe ancestor is NVML_TOPOLOGY_NODE, and they have no NVLink.
     gcc -O2 -shared -fPIC -o /tmp/fakenvml/libnvidia-ml.so.1 bench/fake_libnvidia_ml.c
     LD_LIBRARY_PATH=/tmp/fakenvml python3 bench/collector_phases.py */
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
typedef int R;
typedef struct { int i; } dev_t_;
static dev_t_ devs[16];
static unsigned ngpus(void) { const char *e = getenv("FAKE_NVML_GPUS"); unsigned n = e ? atoi(e) : 1; return n > 16 ? 16 : n; }
R nvmlInitWithFlags(unsigned f) { return 0; }
R nvmlInit_v2(void) { return 0; }
R nvmlShutdown(void) { return 0; }
const char *nvmlErrorString(R r) { return "Fake error"; }
R nvmlSystemGetCudaDriverVersion(int *v) { *v = 13000; return 0; }
R nvmlSystemGetDriverVersion(char *b, unsigned n) { snprintf(b, n, "580.159.04"); return 0; }
R nvmlDeviceGetCount_v2(unsigned *n) { *n = ngpus(); return 0; }
R nvmlDeviceGetHandleByIndex_v2(unsigned i, dev_t_ **d) { devs[i].i = i; *d = &devs[i]; return 0; }
R nvmlDeviceGetName(dev_t_ *d, char *b, unsigned n) { snprintf(b, n, "NVIDIA H200"); return 0; }
R nvmlDeviceGetUUID(dev_t_ *d, char *b, unsigned n) { snprintf(b, n, "GPU-57ccdb91-1c82-71d4-b28f-78b8003ea7c%d", d->i); return 0; }
R nvmlDeviceGetPciInfo_v3(dev_t_ *d, char *p) { memset(p, 0, 68); snprintf(p + 36, 32, "00000000:%02X:00.0", 0x1b + d->i); return 0; }
R nvmlDeviceGetClockInfo(dev_t_ *d, unsigned t, unsigned *v) { *v = 1980; return 0; }
R nvmlDeviceGetMaxClockInfo(dev_t_ *d, unsigned t, unsigned *v) { *v = 1980; return 0; }
R nvmlDeviceGetTemperature(dev_t_ *d, unsigned s, unsigned *v) { *v = 31; return 0; }
R nvmlDeviceGetPerformanceState(dev_t_ *d, int *v) { *v = 0; return 0; }
R nvmlDeviceGetPowerManagementDefaultLimit(dev_t_ *d, unsigned *v) { *v = 700000; return 0; }
R nvmlDeviceGetEnforcedPowerLimit(dev_t_ *d, unsigned *v) { *v = 700000; return 0; }
R nvmlDeviceGetPowerUsage(dev_t_ *d, unsigned *v) { *v = 76000; return 0; }
R nvmlDeviceGetTotalEnergyConsumption(dev_t_ *d, unsigned long long *v) { *v = 123456789ULL; return 0; }
R nvmlDeviceGetMemoryInfo(dev_t_ *d, unsigned long long *m) { m[0] = 150754820096ULL; m[1] = 150000000000ULL; m[2] = 754820096ULL; return 0; }
R nvmlDeviceGetMemoryInfo_v2(dev_t_ *d, unsigned long long *m) { m[1] = 150754820096ULL; m[2] = 0; m[3] = 150000000000ULL; m[4] = 754820096ULL; return 0; }
R nvmlDeviceGetCudaComputeCapability(dev_t_ *d, int *a, int *b) { *a = 9; *b = 0; return 0; }
R nvmlDeviceGetTotalEccErrors(dev_t_ *d, unsigned a, unsigned b, unsigned long long *v) { *v = 0; return 0; }
R nvmlDeviceGetUtilizationRates(dev_t_ *d, unsigned *u) { const char *e = getenv("FAKE_NVML_UTIL"); u[0] = e ? atoi(e) : 0; u[1] = 0; return 0; }
R nvmlDeviceGetTopologyCommonAncestor(dev_t_ *a, dev_t_ *b, int *level) { *level = 40; return 0; }
static int pids(unsigned *out) {
    const char *e = getenv("FAKE_NVML_PIDS"); int n = 0;
    while (e && *e && n < 8) { out[n++] = strtoul(e, (char **)&e, 10); if (*e == ',') e++; }
    return n;
}
typedef struct { unsigned pid; unsigned long long used; unsigned gi, ci; } proc_t;
R nvmlDeviceGetComputeRunningProcesses_v3(dev_t_ *d, unsigned *count, proc_t *info) {
    unsigned p[8]; int n = d->i == 0 ? pids(p) : 0;
    if (n == 0) { *count = 0; return 0; }
    if (info == NULL || *count < (unsigned)n) { *count = n; return 7; }
    for (int i = 0; i < n; i++) { info[i].pid = p[i]; info[i].used = 1ULL << 30; info[i].gi = info[i].ci = 0xFFFFFFFF; }
    *count = n; return 0;
}
typedef struct { unsigned pid; unsigned long long ts; unsigned sm, mem, enc, dec; } util_t;
R nvmlDeviceGetProcessUtilization(dev_t_ *d, util_t *s, unsigned *count, unsigned long long ts) {
    unsigned p[8]; int n = d->i == 0 ? pids(p) : 0;
    if (n == 0) return 21; /* NO_DATA */
    if (s == NULL || *count < (unsigned)n) { *count = n; return 7; }
    for (int i = 0; i < n; i++) { s[i].pid = p[i]; s[i].ts = ts + 1; s[i].sm = 99; s[i].mem = 1; s[i].enc = s[i].dec = 0; }
    *count = n; return 0;
}
R nvmlDeviceGetCurrPcieLinkGeneration(dev_t_ *d, unsigned *v) { *v = 5; return 0; }
R nvmlDeviceGetMaxPcieLinkGeneration(dev_t_ *d, unsigned *v) { *v = 5; return 0; }
R nvmlDeviceGetCurrPcieLinkWidth(dev_t_ *d, unsigned *v) { *v = 16; return 0; }
R nvmlDeviceGetMaxPcieLinkWidth(dev_t_ *d, unsigned *v) { *v = 16; return 0; }
R nvmlDeviceGetCurrentClocksEventReasons(dev_t_ *d, unsigned long long *v) { *v = 1; return 0; }
R nvmlDeviceGetCurrentClocksThrottleReasons(dev_t_ *d, unsigned long long *v) { *v = 1; return 0; }
typedef struct { unsigned id, scope; long long ts, lat; unsigned type; R ret; unsigned long long val; } field_t;
/* NVML_FI_DEV_NVLINK_LINK_COUNT (91): not supported, as on a PCIe H200 */
R nvmlDeviceGetFieldValues(dev_t_ *d, int n, field_t *f) { for (int i = 0; i < n; i++) { f[i].type = 1; f[i].ret = f[i].id == 91 ? 3 : 0; f[i].val = 75000; } return 0; }
R nvmlDeviceGetMigMode(dev_t_ *d, unsigned *a, unsigned *b) { *a = *b = 0; return 0; }
R nvmlGpmQueryDeviceSupport(dev_t_ *d, unsigned *s) { s[1] = 1; return 0; }
static int sample;
R nvmlGpmSampleAlloc(void **s) { *s = &sample; return 0; }
R nvmlGpmSampleFree(void *s) { return 0; }
R nvmlGpmSampleGet(dev_t_ *d, void *s) { return 0; }
typedef struct { unsigned id; R ret; double value; char *a, *b, *c; } metric_t;
typedef struct { unsigned version, num; void *s1, *s2; metric_t m[477]; } metrics_t;
R nvmlGpmMetricsGet(metrics_t *g) { for (unsigned i = 0; i < g->num; i++) { g->m[i].ret = 0; g->m[i].value = 42.5; } return 0; }

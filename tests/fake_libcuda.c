/* A stand-in libcuda.so.1 for the stub bed's --active tests (tests/integration/test_active_sshd.py): the node
 * finds it through LD_LIBRARY_PATH, as it would find the driver's. GPUDIAG_FAKE_CUDA says what cuInit does:
 * "fail" returns CUDA_ERROR_UNKNOWN (999), as a driver out of step with its kernel module does; "hang" never
 * returns, as a wedged driver's does. Build: cc -shared -fPIC -o libcuda.so.1 fake_libcuda.c */
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

typedef int CUresult;

CUresult cuInit(unsigned int flags) {
    const char *mode = getenv("GPUDIAG_FAKE_CUDA");
    (void)flags;
    if (mode != NULL && strcmp(mode, "hang") == 0) {
        for (;;) {
            sleep(1);
        }
    }
    return 999;
}

CUresult cuGetErrorName(CUresult error, const char **name) {
    *name = error == 999 ? "CUDA_ERROR_UNKNOWN" : "CUDA_ERROR_INVALID_VALUE";
    return 0;
}

CUresult cuDriverGetVersion(int *version) {
    *version = 13000;
    return 0;
}

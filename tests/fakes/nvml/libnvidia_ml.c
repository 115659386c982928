/* A stand-in for the NVIDIA driver's NVML library (libnvidia-ml.so.1), for tests on machines
 * without a GPU: the C functions and return codes of NVML's public API (nvml.h) that KernelEvo's
 * GPU facts call through the real, unmodified nvidia-ml-py, answering for two H200s.
 * Written for KernelEvo's tests. Build: cc -shared -fPIC -o libnvidia-ml.so.1 libnvidia_ml.c
 *
 * FAKE_NVML_DRIVER_NOT_LOADED=1: nvmlInit fails as with the kernel module unloaded.
 * FAKE_NVML_NO_COMPUTE_CAP=1: nvmlDeviceGetCudaComputeCapability is not supported (old driver).
 * FAKE_NVML_NO_MEMORY=1: nvmlDeviceGetMemoryInfo is not supported.
 */
#include <stdlib.h>
#include <string.h>

#define NVML_SUCCESS 0
#define NVML_ERROR_INVALID_ARGUMENT 2
#define NVML_ERROR_NOT_SUPPORTED 3
#define NVML_ERROR_INSUFFICIENT_SIZE 7
#define NVML_ERROR_DRIVER_NOT_LOADED 9
#define NVML_CLOCK_SM 1
#define NVML_CLOCK_MEM 2

struct gpu { const char *uuid, *name; int major, minor; unsigned sm, mem, max_sm, busy; };
static const struct gpu GPUS[2] = {
    {"GPU-1111aaaa-0000-0000-0000-000000000000", "NVIDIA H200", 9, 0, 1980, 3201, 1980, 37},
    {"GPU-2222bbbb-0000-0000-0000-000000000000", "NVIDIA H200", 9, 0, 345, 3201, 1980, 0},
};
struct utilization { unsigned gpu, memory; };
struct memory { unsigned long long total, free, used; };
#define H200_BYTES (143771ULL << 20) /* what an H200's driver reports as total */

static int copy(char *out, unsigned len, const char *text) {
    if (!out || strlen(text) + 1 > len) return NVML_ERROR_INSUFFICIENT_SIZE;
    strcpy(out, text);
    return NVML_SUCCESS;
}
static const struct gpu *gpu_of(void *handle) {
    const struct gpu *g = (const struct gpu *)handle;
    return (g == &GPUS[0] || g == &GPUS[1]) ? g : NULL;
}

int nvmlInitWithFlags(unsigned flags) {
    (void)flags;
    return getenv("FAKE_NVML_DRIVER_NOT_LOADED") ? NVML_ERROR_DRIVER_NOT_LOADED : NVML_SUCCESS;
}
int nvmlInit_v2(void) { return nvmlInitWithFlags(0); }
int nvmlShutdown(void) { return NVML_SUCCESS; }
const char *nvmlErrorString(int result) {
    switch (result) {
    case NVML_SUCCESS: return "Success";
    case NVML_ERROR_INVALID_ARGUMENT: return "Invalid Argument";
    case NVML_ERROR_NOT_SUPPORTED: return "Not Supported";
    case NVML_ERROR_INSUFFICIENT_SIZE: return "Insufficient Size";
    case NVML_ERROR_DRIVER_NOT_LOADED: return "Driver Not Loaded";
    default: return "Unknown Error";
    }
}
int nvmlSystemGetDriverVersion(char *out, unsigned len) { return copy(out, len, "580.95.05"); }
int nvmlDeviceGetCount_v2(unsigned *count) {
    if (!count) return NVML_ERROR_INVALID_ARGUMENT;
    *count = 2;
    return NVML_SUCCESS;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned index, void **handle) {
    if (index >= 2 || !handle) return NVML_ERROR_INVALID_ARGUMENT;
    *handle = (void *)&GPUS[index];
    return NVML_SUCCESS;
}
int nvmlDeviceGetUUID(void *h, char *out, unsigned len) {
    const struct gpu *g = gpu_of(h);
    return g ? copy(out, len, g->uuid) : NVML_ERROR_INVALID_ARGUMENT;
}
int nvmlDeviceGetName(void *h, char *out, unsigned len) {
    const struct gpu *g = gpu_of(h);
    return g ? copy(out, len, g->name) : NVML_ERROR_INVALID_ARGUMENT;
}
int nvmlDeviceGetCudaComputeCapability(void *h, int *major, int *minor) {
    const struct gpu *g = gpu_of(h);
    if (!g || !major || !minor) return NVML_ERROR_INVALID_ARGUMENT;
    if (getenv("FAKE_NVML_NO_COMPUTE_CAP")) return NVML_ERROR_NOT_SUPPORTED;
    *major = g->major;
    *minor = g->minor;
    return NVML_SUCCESS;
}
static int clock_of(const struct gpu *g, int type, int max, unsigned *mhz) {
    if (!g || !mhz) return NVML_ERROR_INVALID_ARGUMENT;
    if (type == NVML_CLOCK_SM) *mhz = max ? g->max_sm : g->sm;
    else if (type == NVML_CLOCK_MEM) *mhz = g->mem;
    else return NVML_ERROR_NOT_SUPPORTED;
    return NVML_SUCCESS;
}
int nvmlDeviceGetClockInfo(void *h, int type, unsigned *mhz) { return clock_of(gpu_of(h), type, 0, mhz); }
int nvmlDeviceGetMaxClockInfo(void *h, int type, unsigned *mhz) { return clock_of(gpu_of(h), type, 1, mhz); }
int nvmlDeviceGetUtilizationRates(void *h, struct utilization *u) {
    const struct gpu *g = gpu_of(h);
    if (!g || !u) return NVML_ERROR_INVALID_ARGUMENT;
    u->gpu = g->busy;
    u->memory = 0;
    return NVML_SUCCESS;
}
int nvmlDeviceGetMemoryInfo(void *h, struct memory *m) {
    const struct gpu *g = gpu_of(h);
    if (!g || !m) return NVML_ERROR_INVALID_ARGUMENT;
    if (getenv("FAKE_NVML_NO_MEMORY")) return NVML_ERROR_NOT_SUPPORTED;
    m->total = H200_BYTES;
    m->used = g->busy ? 20ULL << 30 : 0;
    m->free = m->total - m->used;
    return NVML_SUCCESS;
}

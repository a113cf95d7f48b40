// Host harness (NOT part of the .cdp subset): loads each sample's linked cubin
// with the CUDA driver API, launches it as its header comment says and checks
// the stated expected result. Build on a machine with a GPU and a toolkit:
//   sh samples/check.sh && g++ -O1 -I$CUDA/include samples/harness/run_samples.cpp \
//       -L$CUDA/lib64 -L$CUDA/lib64/stubs -lcuda -o /tmp/s/run_samples
//   /tmp/s/run_samples /tmp/s        (directory holding NAME.cubin)
#include <cuda.h>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>

static int failures = 0;
#define CK(x) do { CUresult r_ = (x); if (r_ != CUDA_SUCCESS) { const char *s_ = 0; \
    cuGetErrorString(r_, &s_); printf("  CUDA error %s at %s:%d\n", s_ ? s_ : "?", __FILE__, __LINE__); \
    failures++; return; } } while (0)
#define EXPECT(c, ...) do { if (!(c)) { printf("  FAIL: "); printf(__VA_ARGS__); printf("\n"); failures++; bad++; } } while (0)

static std::string dir;
static CUmodule load(const char *n) {
    CUmodule m = 0; std::string p = dir + "/" + n + ".cubin";
    if (FILE *f = fopen(p.c_str(), "rb")) fclose(f);
    else { printf("  skipped: no %s (this compiler or ABI refuses the sample)\n", p.c_str()); return 0; }
    if (cuModuleLoad(&m, p.c_str()) != CUDA_SUCCESS) { printf("  cannot load %s\n", p.c_str()); failures++; }
    return m;
}
static CUdeviceptr alloc(size_t bytes) { CUdeviceptr d; cuMemAlloc(&d, bytes); cuMemsetD8(d, 0, bytes); return d; }
static CUresult launch(CUmodule m, const char *k, unsigned g, unsigned b, unsigned ns, void **args) {
    CUfunction f; CUresult r = cuModuleGetFunction(&f, m, k); if (r) return r;
    r = cuLaunchKernel(f, g, 1, 1, b, 1, 1, ns, 0, args, 0); if (r) return r;
    return cuCtxSynchronize();
}
static unsigned devU32(CUmodule m, const char *sym) {
    CUdeviceptr p; size_t sz; unsigned v = 0xdead;
    if (cuModuleGetGlobal(&p, &sz, m, sym) == CUDA_SUCCESS) cuMemcpyDtoH(&v, p, 4);
    return v;
}

static void hello() { CUmodule m = load("hello"); if (!m) return;
    printf("  (expect the line 'Hello World!' below)\n"); fflush(stdout);
    CK(launch(m, "parentKernel", 1, 1, 0, 0)); }

static void memory_visibility() { CUmodule m = load("memory_visibility"); if (!m) return; int bad = 0;
    CUdeviceptr d = alloc(1024); void *a[] = {&d}; CK(launch(m, "parent_launch", 1, 256, 0, a));
    int h[256]; cuMemcpyDtoH(h, d, 1024);
    for (int i = 0; i < 256; i++) EXPECT(h[i] == i + 2, "data[%d]=%d", i, h[i]); }

static void permute() { CUmodule m = load("permute"); if (!m) return; int bad = 0;
    int h[256]; for (int i = 0; i < 256; i++) h[i] = i;
    CUdeviceptr d = alloc(1024); cuMemcpyHtoD(d, h, 1024); int n = 256; void *a[] = {&n, &d};
    CK(launch(m, "permute", 1, 256, 1024, a)); cuMemcpyDtoH(h, d, 1024);
    for (int i = 0; i < 256 && bad < 5; i++) EXPECT(h[i] == (i ^ 0xAA), "data[%d]=%d", i, h[i]); }

static void irregular_loop() { CUmodule m = load("irregular_loop"); if (!m) return; int bad = 0;
    const unsigned n = 1000; std::vector<unsigned> st(n), en(n);
    for (unsigned i = 0; i < n; i++) { st[i] = i * (i + 1) / 2; en[i] = st[i] + i; }
    unsigned M = en[n - 1]; std::vector<float> sd(n), md(M);
    for (unsigned i = 0; i < n; i++) sd[i] = (float)i;
    for (unsigned j = 0; j < M; j++) md[j] = (float)(j % 1000);
    CUdeviceptr ds = alloc(4 * n), de = alloc(4 * n), dsd = alloc(4 * n), dmd = alloc(4 * M);
    cuMemcpyHtoD(ds, st.data(), 4 * n); cuMemcpyHtoD(de, en.data(), 4 * n);
    cuMemcpyHtoD(dsd, sd.data(), 4 * n); cuMemcpyHtoD(dmd, md.data(), 4 * M);
    cuCtxSetLimit(CU_LIMIT_DEV_RUNTIME_PENDING_LAUNCH_COUNT, 4096);
    unsigned nn = n; void *a[] = {&ds, &de, &dsd, &dmd, &nn};
    CK(launch(m, "parent_kernel", (n + 255) / 256, 256, 0, a));
    cuMemcpyDtoH(sd.data(), dsd, 4 * n); cuMemcpyDtoH(md.data(), dmd, 4 * M);
    for (unsigned i = 0; i < n && bad < 5; i++) EXPECT(sd[i] == 2.0f * i, "someData[%u]=%g", i, sd[i]);
    // Segment i covers [start[i], end[i]); the element at end[i] belongs to no segment and keeps its value.
    std::vector<char> covered(M, 0);
    for (unsigned i = 0; i < n; i++) for (unsigned j = st[i]; j < en[i]; j++) covered[j] = 1;
    for (unsigned j = 0; j < M && bad < 5; j++) {
        float want = covered[j] ? 3.0f * (j % 1000) + 1 : (float)(j % 1000);
        EXPECT(md[j] == want, "moreData[%u]=%g want %g", j, md[j], want); } }

static void recursion(int N) { CUmodule m = load("recursion"); if (!m) return; int bad = 0;
    CUdeviceptr c = alloc(4 * (N + 1)); void *a[] = {&N, &c}; CK(launch(m, "recurse", 2, 32, 0, a));
    std::vector<unsigned> h(N + 1); cuMemcpyDtoH(h.data(), c, 4 * (N + 1));
    for (int d = 0; d <= N; d++) EXPECT(h[d] == 64, "N=%d counters[%d]=%u", N, d, h[d]);
    EXPECT(devU32(m, "launch_errors") == 0, "launch_errors=%u", devU32(m, "launch_errors")); }

static void streams_events() { CUmodule m = load("streams_events"); if (!m) return; int bad = 0;
    int n = 1000; CUdeviceptr b = alloc(4 * n), o = alloc(4 * n); void *a[] = {&b, &o, &n};
    CK(launch(m, "parent", 1, 1, 0, a)); std::vector<int> hb(n), ho(n);
    cuMemcpyDtoH(hb.data(), b, 4 * n); cuMemcpyDtoH(ho.data(), o, 4 * n);
    for (int i = 0; i < n && bad < 5; i++) EXPECT(hb[i] == i * i && ho[i] == i * i + (n - 1 - i) * (n - 1 - i), "i=%d buf=%d out=%d", i, hb[i], ho[i]);
    EXPECT(devU32(m, "status") == 0, "status=%u", devU32(m, "status")); }

static void param_layout() { CUmodule m = load("param_layout"); if (!m) return; int bad = 0;
    CUdeviceptr io = alloc(256), fo = alloc(64), mk = alloc(4); int seed = 5; void *a[] = {&io, &fo, &mk, &seed};
    CK(launch(m, "parent", 1, 1, 0, a)); long long hi[32]; double hf[8]; int hm;
    cuMemcpyDtoH(hi, io, 256); cuMemcpyDtoH(hf, fo, 64); cuMemcpyDtoH(&hm, mk, 4);
    long long ei[32] = {65, -3, -1234, 65000, -123456789, 4000000000LL, -9000000000000000005LL, 109, -2, 77777,
                        122, 111, 5000000000LL, 3, 5, 7, 200, 1, 1000000000005LL, 42, -5, -300, 9, 123456, 1};
    double ef[8] = {1.5, 2.25, 0.125, -6.5, 3.0e300};
    for (int k = 0; k < 32; k++) EXPECT(hi[k] == ei[k], "iout[%d]=%lld want %lld", k, hi[k], ei[k]);
    for (int k = 0; k < 8; k++) EXPECT(hf[k] == ef[k], "fout[%d]=%g want %g", k, hf[k], ef[k]);
    EXPECT(hm == 1, "marker=%d", hm); }

static void fire_and_forget() { CUmodule m = load("fire_and_forget"); if (!m) return; int bad = 0;
    const int B = 4, T = 64; CUdeviceptr c = alloc(4 * (B + 1)); void *a[] = {&c};
    CK(launch(m, "parent", B, T, 0, a)); unsigned h[B + 1]; cuMemcpyDtoH(h, c, 4 * (B + 1));
    EXPECT(h[0] == B * T * 32, "counters[0]=%u", h[0]);
    for (int b = 0; b < B; b++) EXPECT(h[1 + b] == T * (T + 1) / 2, "counters[%d]=%u", 1 + b, h[1 + b]);
    EXPECT(devU32(m, "launch_failures") == 0, "launch_failures=%u", devU32(m, "launch_failures")); }

int main(int argc, char **argv) {
    dir = argc > 1 ? argv[1] : "/tmp/s";
    CUdevice dev; CUcontext ctx; cuInit(0); cuDeviceGet(&dev, 0); cuDevicePrimaryCtxRetain(&ctx, dev); cuCtxSetCurrent(ctx);
    struct { const char *name; void (*fn)(); } t[] = {
        {"hello", hello}, {"memory_visibility", memory_visibility}, {"permute", permute},
        {"irregular_loop", irregular_loop}, {"recursion N=23", [] { recursion(23); }},
        {"recursion N=0", [] { recursion(0); }}, {"streams_events", streams_events},
        {"param_layout", param_layout}, {"fire_and_forget", fire_and_forget}};
    for (auto &x : t) { int before = failures; printf("%s\n", x.name); fflush(stdout); x.fn(); fflush(stdout);
        printf("%s %s\n", failures == before ? "ok  " : "FAIL", x.name); }
    printf("%d failure(s)\n", failures); return failures != 0;
}

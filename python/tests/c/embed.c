/* A toolchain's use of cdpc's C API, built only against what `pip install cdpc` installs: the
   header from cdpc.get_include() and the library from cdpc.get_library() (test_c_api.py builds
   it with `pkg-config --cflags --libs cdpc`). It compiles CUDA C++ and LLVM IR with device-side
   launches to cubins and reads diagnostics as text and JSON.
   Usage: embed HAVE_TOOLS(0|1). Prints "all checks passed" and exits 0 when every check passes;
   without the NVIDIA tools (HAVE_TOOLS=0) the cubins are PTX instead and CUDA C++ is skipped. */
#include <cdpc.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

static const char CUDA_CXX[] =
    "template <typename T> __global__ void child(T *data, T add) { data[threadIdx.x] += add; }\n"
    "__global__ void parent(float *data) { child<<<1, 32>>>(data, 7.0f); }\n";

static const char BAD_CUDA_CXX[] = "__global__ void k(int *p) { p[0] = undefined_fn(); }\n";

static const char BAD_CDP[] = "__global__ void k() { undefined(); }\n";

/* What another compiler's front end writes: a kernel launching a kernel through the CUDA
   device runtime's calls (docs/IR-INPUT.md). */
static const char IR[] =
    "target triple = \"nvptx64-nvidia-cuda\"\n"
    "declare ptr @cudaGetParameterBuffer(i64, i64)\n"
    "declare i32 @cudaLaunchDevice(ptr, ptr, { i32, i32, i32 }, { i32, i32, i32 }, i32, ptr)\n"
    "define ptx_kernel void @child(ptr %p) {\n  ret void\n}\n"
    "define ptx_kernel void @parent(ptr %p) {\n"
    "  %buf = call ptr @cudaGetParameterBuffer(i64 8, i64 8)\n"
    "  store ptr %p, ptr %buf, align 8\n"
    "  %st = call i32 @cudaLaunchDevice(ptr @child, ptr %buf, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, { i32, i32, i32 } { i32 1, i32 1, i32 1 }, i32 0, ptr null)\n"
    "  ret void\n}\n";

/* The output of a successful result, NUL-terminated (free with free()); NULL on failure. */
static char *output(CdpcResult *result, size_t *len_out) {
    uint8_t *data = NULL;
    size_t len = 0;
    if (cdpc_result_output(result, &data, &len) != CDPC_STATUS_OK) {
        char *text = cdpc_result_diagnostics_text(result), *message = cdpc_result_message(result);
        fprintf(stderr, "compile failed: %s\n%s\n", message ? message : "", text ? text : "");
        cdpc_string_free(text);
        cdpc_string_free(message);
        return NULL;
    }
    char *copy = malloc(len + 1);
    memcpy(copy, data, len);
    copy[len] = 0;
    cdpc_bytes_free(data, len);
    *len_out = len;
    return copy;
}

static int is_cubin(const char *data, size_t len) { return len > 4 && memcmp(data, "\x7f" "ELF", 4) == 0; }

int main(int argc, char **argv) {
    if (argc < 2) { fprintf(stderr, "usage: embed HAVE_TOOLS\n"); return 2; }
    int have_tools = atoi(argv[1]);

    /* The ABI this program was compiled against is the library's. */
    CHECK(cdpc_abi_version() == CDPC_ABI_VERSION);
    printf("cdpc %s, ABI %u\n", cdpc_version(), cdpc_abi_version());

    CdpcOptions *options = cdpc_options_new();
    CHECK(options != NULL);
    char *error = NULL;
    CHECK(cdpc_options_set(options, "emit", "ptx-or-so", &error) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(error != NULL && strstr(error, "unknown output") != NULL);
    cdpc_string_free(error);
    CHECK(cdpc_options_set(options, "emit", have_tools ? "cubin" : "ptx", NULL) == CDPC_STATUS_OK);

    /* LLVM IR with a device-side launch. */
    CdpcResult *result = NULL;
    CHECK(cdpc_compile_ir((const uint8_t *)IR, strlen(IR), options, &result) == CDPC_STATUS_OK);
    size_t len = 0;
    char *out = output(result, &len);
    CHECK(out != NULL && (have_tools ? is_cubin(out, len) : strstr(out, "__cudaCDP2LaunchDeviceV2") != NULL));
    free(out);
    cdpc_result_free(result);

    /* CUDA C++ with a device-side launch (Clang inside the library, the CUDA headers of the
       NVIDIA wheels), to a cubin and to PTX. */
    if (have_tools) {
        CHECK(cdpc_options_set(options, "language", "cu", NULL) == CDPC_STATUS_OK);
        CHECK(cdpc_options_set(options, "file-name", "launch.cu", NULL) == CDPC_STATUS_OK);
        CHECK(cdpc_compile(CUDA_CXX, options, &result) == CDPC_STATUS_OK);
        out = output(result, &len);
        CHECK(out != NULL && is_cubin(out, len));
        free(out);
        cdpc_result_free(result);
        CHECK(cdpc_options_set(options, "emit", "ptx", NULL) == CDPC_STATUS_OK);
        CHECK(cdpc_compile(CUDA_CXX, options, &result) == CDPC_STATUS_OK);
        out = output(result, &len);
        CHECK(out != NULL && strstr(out, "__cudaCDP2LaunchDeviceV2") != NULL && strstr(out, ".entry _Z6parentPf") != NULL);
        free(out);
        cdpc_result_free(result);

        CHECK(cdpc_compile(BAD_CUDA_CXX, options, &result) == CDPC_STATUS_DIAGNOSTICS);
        CHECK(cdpc_result_diagnostic_count(result) >= 1);
        char *text = cdpc_result_diagnostics_text(result);
        CHECK(text != NULL && strstr(text, "undefined_fn") != NULL && strstr(text, "launch.cu:1:") != NULL);
        if (text) printf("%s", text);
        cdpc_string_free(text);
        cdpc_result_free(result);
    }

    /* Diagnostics of the kernel language, as text and as JSON lines. */
    CHECK(cdpc_options_set(options, "language", "cdp", NULL) == CDPC_STATUS_OK);
    CHECK(cdpc_options_set(options, "file-name", "bad.cdp", NULL) == CDPC_STATUS_OK);
    CHECK(cdpc_compile(BAD_CDP, options, &result) == CDPC_STATUS_DIAGNOSTICS);
    CHECK(cdpc_result_status(result) == CDPC_STATUS_DIAGNOSTICS);
    char *text = cdpc_result_diagnostics_text(result);
    char *json = cdpc_result_diagnostics_json(result);
    CHECK(text != NULL && strstr(text, "error[E0100]") != NULL && strstr(text, "bad.cdp:1:") != NULL);
    CHECK(json != NULL && strstr(json, "\"code\":\"E0100\"") != NULL);
    if (text) printf("%s", text);
    cdpc_string_free(text);
    cdpc_string_free(json);
    cdpc_result_free(result);
    cdpc_options_free(options);

    if (failures) {
        fprintf(stderr, "%d check(s) failed\n", failures);
        return 1;
    }
    printf("all checks passed\n");
    return 0;
}

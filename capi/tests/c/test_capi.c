/* The C API from C: compile samples/hello.cdp to a cubin (when the NVIDIA tools exist) and to
   PTX, and check that bad arguments come back as error codes with messages.
   Usage: test_capi SAMPLES_DIR HAVE_TOOLS(0|1). Exit status 0 when every check passes. */
#include "cdpc.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond) do { if (!(cond)) { fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); failures++; } } while (0)

static char *read_file(const char *path) {
    FILE *f = fopen(path, "rb");
    if (!f) return NULL;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    char *buf = malloc(n + 1);
    if (fread(buf, 1, n, f) != (size_t)n) { fclose(f); free(buf); return NULL; }
    buf[n] = 0;
    fclose(f);
    return buf;
}

int main(int argc, char **argv) {
    if (argc < 3) { fprintf(stderr, "usage: test_capi SAMPLES_DIR HAVE_TOOLS\n"); return 2; }
    char path[4096];
    snprintf(path, sizeof path, "%s/hello.cdp", argv[1]);
    char *source = read_file(path);
    if (!source) { fprintf(stderr, "cannot read %s\n", path); return 2; }
    int have_tools = atoi(argv[2]);

    CdpcOptions *options = cdpc_options_new();
    CHECK(options != NULL);
    CHECK(cdpc_options_set(options, "file-name", "hello.cdp", NULL) == CDPC_STATUS_OK);

    /* A cubin, if ptxas and nvlink are there. */
    if (have_tools) {
        CdpcResult *result = NULL;
        CHECK(cdpc_compile(source, options, &result) == CDPC_STATUS_OK);
        uint8_t *cubin = NULL; size_t len = 0;
        CHECK(cdpc_result_output(result, &cubin, &len) == CDPC_STATUS_OK);
        CHECK(len > 4 && memcmp(cubin, "\x7f" "ELF", 4) == 0);
        cdpc_bytes_free(cubin, len);
        cdpc_result_free(result);
    }

    /* PTX with the V2 launch entry points. */
    CHECK(cdpc_options_set(options, "emit", "ptx", NULL) == CDPC_STATUS_OK);
    CdpcResult *result = NULL;
    CHECK(cdpc_compile(source, options, &result) == CDPC_STATUS_OK);
    CHECK(cdpc_result_status(result) == CDPC_STATUS_OK);
    uint8_t *ptx = NULL; size_t len = 0;
    CHECK(cdpc_result_output(result, &ptx, &len) == CDPC_STATUS_OK);
    char *text = malloc(len + 1);
    memcpy(text, ptx, len);
    text[len] = 0;
    CHECK(strstr(text, "__cudaCDP2GetParameterBufferV2") != NULL);
    CHECK(strstr(text, "__cudaCDP2LaunchDeviceV2") != NULL);
    CHECK(strstr(text, ".entry parentKernel") != NULL);
    free(text);
    cdpc_bytes_free(ptx, len);
    cdpc_result_free(result);

    /* A source with an error: diagnostics, no output. */
    result = NULL;
    CHECK(cdpc_compile("__global__ void k() { undefined_name(); }", options, &result) == CDPC_STATUS_DIAGNOSTICS);
    CHECK(cdpc_result_diagnostic_count(result) >= 1);
    char *diags = cdpc_result_diagnostics_text(result);
    CHECK(diags != NULL && strstr(diags, "error[E0100]") != NULL && strstr(diags, "hello.cdp") != NULL);
    cdpc_string_free(diags);
    char *json = cdpc_result_diagnostics_json(result);
    CHECK(json != NULL && strncmp(json, "{", 1) == 0 && strstr(json, "\"code\":\"E0100\"") != NULL);
    cdpc_string_free(json);
    char *message = cdpc_result_message(result);
    CHECK(message != NULL && strstr(message, "could not compile") != NULL);
    cdpc_string_free(message);
    uint8_t *none = (uint8_t *)1; size_t none_len = 7;
    CHECK(cdpc_result_output(result, &none, &none_len) == CDPC_STATUS_DIAGNOSTICS);
    CHECK(none == NULL && none_len == 0);
    cdpc_result_free(result);

    /* Invalid arguments: codes and messages, no crash. */
    char *error = NULL;
    CHECK(cdpc_options_set(options, "no-such-option", "1", &error) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(error != NULL && strstr(error, "unknown option") != NULL);
    cdpc_string_free(error);
    error = NULL;
    CHECK(cdpc_options_set(options, "arch", "sm_20", &error) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(error != NULL && strstr(error, "sm_35") != NULL);
    cdpc_string_free(error);
    CHECK(cdpc_options_set(NULL, "arch", "sm_90", NULL) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(cdpc_options_set(options, NULL, "sm_90", NULL) == CDPC_STATUS_INVALID_ARGUMENT);
    error = NULL;
    CHECK(cdpc_options_set(options, "arch", "\xff\xfe", &error) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(error != NULL && strstr(error, "UTF-8") != NULL);
    cdpc_string_free(error);

    result = NULL;
    CHECK(cdpc_compile(NULL, options, &result) == CDPC_STATUS_INVALID_ARGUMENT);
    message = cdpc_result_message(result);
    CHECK(message != NULL && strstr(message, "NULL") != NULL);
    cdpc_string_free(message);
    cdpc_result_free(result);
    /* A source that is not UTF-8 is a diagnostic (E0008), like any mistake in the source. */
    result = NULL;
    CHECK(cdpc_compile("int x = 1;\xc3\x28", options, &result) == CDPC_STATUS_DIAGNOSTICS);
    CHECK(cdpc_result_diagnostic_count(result) == 1);
    diags = cdpc_result_diagnostics_text(result);
    CHECK(diags != NULL && strstr(diags, "error[E0008]") != NULL && strstr(diags, "0xC3") != NULL);
    cdpc_string_free(diags);
    cdpc_result_free(result);
    CHECK(cdpc_result_status(NULL) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(cdpc_result_output(NULL, &none, &none_len) == CDPC_STATUS_INVALID_ARGUMENT);
    CHECK(cdpc_result_message(NULL) == NULL);

    /* A cubin at 32 bits is a usage error. */
    CHECK(cdpc_options_set(options, "emit", "cubin", NULL) == CDPC_STATUS_OK);
    CHECK(cdpc_options_set(options, "address-size", "32", NULL) == CDPC_STATUS_OK);
    CHECK(cdpc_compile(source, options, NULL) == CDPC_STATUS_USAGE);

    cdpc_options_free(options);
    cdpc_options_free(NULL);
    cdpc_result_free(NULL);
    cdpc_string_free(NULL);
    cdpc_bytes_free(NULL, 0);
    free(source);
    if (failures) { fprintf(stderr, "%d checks failed\n", failures); return 1; }
    printf("test_capi: all checks passed (%s)\n", cdpc_version());
    return 0;
}

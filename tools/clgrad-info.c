/* clgrad-info.c - lists every OpenCL device with the facts clgrad uses and
 * marks the one clgrad would pick (CLGRAD_DEVICE or --device), as a table or
 * as one JSON object (--json). --smoke also builds a kernel program there. */
#include "clgrad_advanced.h"
#include "bench_kernels.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static void usage(FILE *f)
{
    fprintf(f, "usage: clgrad-info [--json] [--device SEL] [--smoke]\n"
               "  --json        print one JSON object instead of a table\n"
               "  --device SEL  selector: N, P:D or a name substring (default: $CLGRAD_DEVICE,\n"
               "                else the first GPU, else the first device)\n"
               "  --smoke       build clgrad's kernels on the chosen device (cache-aware)\n");
}

static const char *type_name(cl_device_type t)
{
    if (t & CL_DEVICE_TYPE_GPU)
        return "GPU";
    if (t & CL_DEVICE_TYPE_CPU)
        return "CPU";
    if (t & CL_DEVICE_TYPE_ACCELERATOR)
        return "ACCEL";
    return "OTHER";
}

static void json_string(const char *s)
{
    putchar('"');
    for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
        if (*p == '"' || *p == '\\')
            printf("\\%c", *p);
        else if (*p < 0x20)
            printf("\\u%04x", *p);
        else
            putchar(*p);
    }
    putchar('"');
}

static double mib(cl_ulong b)
{
    return (double)b / (1024.0 * 1024.0);
}

static void print_table(const clg_device_info *d, size_t n, long selected)
{
    printf("clgrad %d.%d.%d: %zu OpenCL device(s); * = clgrad's pick\n\n", CLGRAD_VERSION_MAJOR,
           CLGRAD_VERSION_MINOR, CLGRAD_VERSION_PATCH, n);
    printf("  %3s %5s %-5s %-36s %10s %10s %4s %6s %5s %4s %4s\n", "#", "P:D", "TYPE", "NAME",
           "GLOBAL", "MAX ALLOC", "CU", "MAX WG", "WG X", "FP16", "FP64");
    for (size_t i = 0; i < n; i++) {
        char pd[32];
        snprintf(pd, sizeof pd, "%u:%u", d[i].platform_index, d[i].device_index);
        printf("%c %3zu %5s %-5s %-36.36s %7.0f MiB %6.0f MiB %4u %6zu %5zu %4s %4s\n",
               (long)i == selected ? '*' : ' ', i, pd, type_name(d[i].type), d[i].name,
               mib(d[i].global_mem_size), mib(d[i].max_mem_alloc_size), d[i].compute_units,
               d[i].max_work_group_size, d[i].preferred_work_group_multiple,
               d[i].has_fp16 ? "yes" : "no", d[i].has_fp64 ? "yes" : "no");
    }
    printf("\n");
    for (size_t i = 0; i < n; i++) {
        printf("  %zu: %s\n", i, d[i].name);
        printf("     platform  %s (%s)\n", d[i].platform_name, d[i].platform_version);
        printf("     vendor    %s\n", d[i].vendor);
        printf("     version   %s; %s; driver %s\n", d[i].device_version, d[i].opencl_c_version,
               d[i].driver_version);
        printf("     memory    global %llu bytes, max allocation %llu bytes\n",
               (unsigned long long)d[i].global_mem_size,
               (unsigned long long)d[i].max_mem_alloc_size);
    }
}

static void print_json(const clg_device_info *d, size_t n, long selected, const char *error)
{
    printf("{\"clgrad_version\":\"%d.%d.%d\",\"devices\":[", CLGRAD_VERSION_MAJOR,
           CLGRAD_VERSION_MINOR, CLGRAD_VERSION_PATCH);
    for (size_t i = 0; i < n; i++) {
        printf("%s{\"index\":%zu,\"platform_index\":%u,\"device_index\":%u", i ? "," : "", i,
               d[i].platform_index, d[i].device_index);
        const struct {
            const char *key, *value;
        } texts[] = {{"platform_name", d[i].platform_name},
                     {"platform_version", d[i].platform_version},
                     {"name", d[i].name},
                     {"vendor", d[i].vendor},
                     {"driver_version", d[i].driver_version},
                     {"device_version", d[i].device_version},
                     {"opencl_c_version", d[i].opencl_c_version}};
        for (size_t t = 0; t < sizeof texts / sizeof texts[0]; t++) {
            printf(",\"%s\":", texts[t].key);
            json_string(texts[t].value);
        }
        printf(",\"type\":\"%s\",\"global_mem_size\":%llu,\"max_mem_alloc_size\":%llu,"
               "\"compute_units\":%u,\"max_work_group_size\":%zu,"
               "\"preferred_work_group_multiple\":%zu,\"has_fp16\":%s,\"has_fp64\":%s,"
               "\"selected\":%s}",
               type_name(d[i].type), (unsigned long long)d[i].global_mem_size,
               (unsigned long long)d[i].max_mem_alloc_size, d[i].compute_units,
               d[i].max_work_group_size, d[i].preferred_work_group_multiple,
               d[i].has_fp16 ? "true" : "false", d[i].has_fp64 ? "true" : "false",
               (long)i == selected ? "true" : "false");
    }
    printf("],\"selected\":");
    if (selected >= 0)
        printf("%ld", selected);
    else
        printf("null");
    if (error) {
        printf(",\"error\":");
        json_string(error);
    }
    printf("}\n");
}

/* The programs of the smoke run: clgrad's common source alone ("common"),
 * and clgrad-bench's STREAM kernels ("stream", bench/cl/stream.cl, embedded
 * here too: the simplest kernel whose result the host checks without a
 * model), both through clgrad's kernel cache. */
static clg_status smoke_program(clg_context *ctx, const char *name, const char *options,
                                cl_program *prog, int *cached)
{
    if (strcmp(name, "common") == 0)
        return clg_context_program(ctx, name, options, prog, cached);
    return clg_context_program_source(ctx, name, bench_kernel_source(name), options, prog,
                                      cached);
}

/* Runs the bench's stream_copy (one float per work-item) on n floats and
 * checks the copy: proof that a kernel built through clgrad runs on the
 * device. */
static int run_stream_copy(clg_context *ctx)
{
    const cl_ulong n = 1 << 20;
    cl_program prog;
    if (smoke_program(ctx, "stream", "-DVW=1", &prog, NULL) != CLG_SUCCESS) {
        fprintf(stderr, "  stream_copy: %s\n", clg_last_error(ctx));
        return 1;
    }
    cl_int err;
    cl_context c = clg_context_cl(ctx);
    cl_command_queue q = clg_context_queue(ctx);
    cl_kernel k = clCreateKernel(prog, "stream_copy", &err);
    if (err != CL_SUCCESS) {
        fprintf(stderr, "  stream_copy: clCreateKernel failed: %s\n", clg_status_string(err));
        return 1;
    }
    float *host = malloc(n * sizeof *host);
    cl_mem a = clCreateBuffer(c, CL_MEM_READ_WRITE, n * sizeof *host, NULL, &err);
    cl_mem b = clCreateBuffer(c, CL_MEM_READ_WRITE, n * sizeof *host, NULL, &err);
    int rc = 1;
    if (host && a && b) {
        for (cl_ulong i = 0; i < n; i++)
            host[i] = (float)i * 0.5f;
        struct timespec t0, t1;
        size_t global = (size_t)n;
        err = clEnqueueWriteBuffer(q, a, CL_TRUE, 0, n * sizeof *host, host, 0, NULL, NULL);
        err |= clSetKernelArg(k, 0, sizeof a, &a);
        err |= clSetKernelArg(k, 1, sizeof b, &b);
        err |= clSetKernelArg(k, 2, sizeof n, &n);
        clock_gettime(CLOCK_MONOTONIC, &t0);
        err |= clEnqueueNDRangeKernel(q, k, 1, NULL, &global, NULL, 0, NULL, NULL);
        err |= clFinish(q);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        memset(host, 0, n * sizeof *host);
        err |= clEnqueueReadBuffer(q, b, CL_TRUE, 0, n * sizeof *host, host, 0, NULL, NULL);
        cl_ulong bad = 0;
        for (cl_ulong i = 0; i < n; i++)
            bad += host[i] != (float)i * 0.5f;
        double s = (double)(t1.tv_sec - t0.tv_sec) + (double)(t1.tv_nsec - t0.tv_nsec) / 1e9;
        if (err == CL_SUCCESS && bad == 0) {
            printf("  stream_copy of %llu floats: correct (%.1f ms, first run, includes "
                   "the driver's JIT)\n",
                   (unsigned long long)n, s * 1e3);
            rc = 0;
        } else {
            fprintf(stderr, "  stream_copy: %s, %llu wrong elements\n",
                    err == CL_SUCCESS ? "ran" : "OpenCL call failed", (unsigned long long)bad);
        }
    }
    if (a)
        clReleaseMemObject(a);
    if (b)
        clReleaseMemObject(b);
    clReleaseKernel(k);
    free(host);
    return rc;
}

/* Builds the smoke run's programs on the chosen device and says how long
 * it took and whether the disk cache served it. */
static int smoke(const char *selector)
{
    static const char *const programs[] = {"common", "stream"};
    clg_context *ctx = NULL;
    clg_status st = clg_context_create(&ctx, selector);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-info: %s: %s\n", clg_status_string(st), clg_last_error(NULL));
        return 1;
    }
    printf("\nsmoke run on %s:\n", clg_context_device_info(ctx)->name);
    int rc = 0;
    for (size_t i = 0; i < sizeof programs / sizeof programs[0]; i++) {
        struct timespec t0, t1;
        clock_gettime(CLOCK_MONOTONIC, &t0);
        cl_program prog;
        int cached = 0;
        st = smoke_program(ctx, programs[i], "", &prog, &cached);
        clock_gettime(CLOCK_MONOTONIC, &t1);
        double ms = (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6;
        if (st != CLG_SUCCESS) {
            fprintf(stderr, "  %-8s FAILED: %s\n", programs[i], clg_last_error(ctx));
            rc = 1;
            continue;
        }
        size_t nk = 0; /* a size_t, unlike most counts in OpenCL */
        clGetProgramInfo(prog, CL_PROGRAM_NUM_KERNELS, sizeof nk, &nk, NULL);
        printf("  %-8s built in %8.1f ms (%s), %zu kernel(s)\n", programs[i], ms,
               cached ? "from cache" : "from source", nk);
    }
    if (rc == 0)
        rc = run_stream_copy(ctx);
    clg_context_destroy(ctx);
    return rc;
}

int main(int argc, char **argv)
{
    int json = 0, run_smoke = 0;
    const char *selector = NULL;
    for (int i = 1; i < argc; i++) {
        if (strcmp(argv[i], "--json") == 0) {
            json = 1;
        } else if (strcmp(argv[i], "--smoke") == 0) {
            run_smoke = 1;
        } else if (strcmp(argv[i], "--device") == 0 && i + 1 < argc) {
            selector = argv[++i];
        } else if (strcmp(argv[i], "--help") == 0 || strcmp(argv[i], "-h") == 0) {
            usage(stdout);
            return 0;
        } else {
            if (strcmp(argv[i], "--device") == 0)
                fprintf(stderr, "clgrad-info: option '--device' needs a value\n");
            else
                fprintf(stderr, "clgrad-info: unknown option '%s'\n", argv[i]);
            usage(stderr);
            return 2;
        }
    }

    clg_device_info *devices = NULL;
    size_t n = 0;
    clg_status st = clg_devices_list(&devices, &n);
    if (st != CLG_SUCCESS) {
        const char *msg = clg_last_error(NULL);
        if (json)
            print_json(NULL, 0, -1, msg);
        fprintf(stderr, "clgrad-info: no usable OpenCL device: %s (%s)\n", msg,
                clg_status_string(st));
        return 1;
    }
    size_t chosen = 0;
    long selected = -1;
    char error[1024] = "";
    st = clg_device_select(devices, n, selector, &chosen);
    if (st == CLG_SUCCESS)
        selected = (long)chosen;
    else
        snprintf(error, sizeof error, "%s", clg_last_error(NULL));

    if (json)
        print_json(devices, n, selected, error[0] ? error : NULL);
    else
        print_table(devices, n, selected);
    clg_devices_free(devices);
    if (selected < 0) {
        fprintf(stderr, "clgrad-info: %s\n", error);
        return 1;
    }
    if (run_smoke && !json)
        return smoke(selector);
    return 0;
}

/* device.c - lists OpenCL platforms and devices with the facts clgrad needs,
 * and picks one by index, "platform:device", name substring or preference. */
#include "internal.h"
#include "device_info.h"
#include "sized.h"

#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* OpenCL 3.0 query; not in headers that target 2.0. */
#define CLG_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE 0x4067
/* What the ICD loader returns when no platform is installed (cl_khr_icd). */
#define CLG_PLATFORM_NOT_FOUND_KHR (-1001)

/* clGetDeviceInfo or clGetPlatformInfo, for string_query. */
static cl_int info_query(void *object, bool device, cl_uint what, size_t size, void *value,
                         size_t *size_ret)
{
    return device ? clGetDeviceInfo((cl_device_id)object, what, size, value, size_ret)
                  : clGetPlatformInfo((cl_platform_id)object, what, size, value, size_ret);
}

/* Copies a string query of a device or a platform into a fixed field,
 * truncating long values (a plain query into a short buffer would fail
 * instead). */
static cl_int string_query(void *object, bool device, cl_uint what, char *dst, size_t cap)
{
    size_t n = 0;
    dst[0] = '\0';
    cl_int err = info_query(object, device, what, 0, NULL, &n);
    if (err != CL_SUCCESS)
        return err;
    char *tmp = malloc(n + 1);
    if (!tmp)
        return CL_OUT_OF_HOST_MEMORY;
    err = info_query(object, device, what, n, tmp, NULL);
    if (err == CL_SUCCESS) {
        tmp[n] = '\0';
        snprintf(dst, cap, "%s", tmp);
    }
    free(tmp);
    return err;
}

static cl_int device_string(cl_device_id dev, cl_device_info what, char *dst, size_t cap)
{
    return string_query(dev, true, what, dst, cap);
}

static cl_int platform_string(cl_platform_id plat, cl_platform_info what, char *dst, size_t cap)
{
    return string_query(plat, false, what, dst, cap);
}

void clg__parse_cl_version(const char *text, const char *prefix, int *major, int *minor)
{
    int ma = 0, mi = 0;
    size_t n = strlen(prefix);
    if (text && strncmp(text, prefix, n) == 0 && sscanf(text + n, "%d.%d", &ma, &mi) == 2 &&
        ma >= 0 && mi >= 0) {
        *major = ma;
        *minor = mi;
        return;
    }
    *major = 0;
    *minor = 0;
}

/* Does the space-separated extension list contain ext as a whole word? */
static int has_extension(cl_device_id dev, const char *ext)
{
    size_t n = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, 0, NULL, &n) != CL_SUCCESS || n == 0)
        return 0;
    char *list = malloc(n + 1);
    if (!list)
        return 0;
    int found = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_EXTENSIONS, n, list, NULL) == CL_SUCCESS) {
        list[n] = '\0';
        size_t len = strlen(ext);
        for (const char *p = strstr(list, ext); p; p = strstr(p + 1, ext)) {
            int start = p == list || p[-1] == ' ';
            int end = p[len] == '\0' || p[len] == ' ';
            if (start && end) {
                found = 1;
                break;
            }
        }
    }
    free(list);
    return found;
}

/* Before OpenCL 3.0 the preferred multiple is only a kernel property: ask a
 * trivial kernel. Any failure leaves 1, a safe multiple. */
static size_t kernel_preferred_multiple(cl_platform_id plat, cl_device_id dev)
{
    static const char *src =
        "kernel void clg_probe(global float *x) { x[get_global_id(0)] = 0.0f; }";
    size_t multiple = 1;
    cl_int err;
    cl_context_properties props[] = {CL_CONTEXT_PLATFORM, (cl_context_properties)plat, 0};
    cl_context c = clCreateContext(props, 1, &dev, NULL, NULL, &err);
    if (err != CL_SUCCESS)
        return 1;
    cl_program p = clCreateProgramWithSource(c, 1, &src, NULL, &err);
    if (err == CL_SUCCESS) {
        if (clBuildProgram(p, 1, &dev, "", NULL, NULL) == CL_SUCCESS) {
            cl_kernel k = clCreateKernel(p, "clg_probe", &err);
            if (err == CL_SUCCESS) {
                size_t m = 0;
                if (clGetKernelWorkGroupInfo(k, dev, CL_KERNEL_PREFERRED_WORK_GROUP_SIZE_MULTIPLE,
                                             sizeof m, &m, NULL) == CL_SUCCESS &&
                    m > 0)
                    multiple = m;
                clReleaseKernel(k);
            }
        }
        clReleaseProgram(p);
    }
    clReleaseContext(c);
    return multiple;
}

cl_int clg__device_describe(cl_platform_id plat, cl_device_id dev, clg_device_info *info)
{
    cl_int err;
    info->platform = plat;
    info->device = dev;
    if ((err = platform_string(plat, CL_PLATFORM_NAME, info->platform_name,
                               sizeof info->platform_name)) != CL_SUCCESS ||
        (err = platform_string(plat, CL_PLATFORM_VERSION, info->platform_version,
                               sizeof info->platform_version)) != CL_SUCCESS ||
        (err = device_string(dev, CL_DEVICE_NAME, info->name, sizeof info->name)) != CL_SUCCESS ||
        (err = device_string(dev, CL_DEVICE_VENDOR, info->vendor, sizeof info->vendor)) !=
            CL_SUCCESS ||
        (err = device_string(dev, CL_DRIVER_VERSION, info->driver_version,
                             sizeof info->driver_version)) != CL_SUCCESS ||
        (err = device_string(dev, CL_DEVICE_VERSION, info->device_version,
                             sizeof info->device_version)) != CL_SUCCESS ||
        (err = device_string(dev, CL_DEVICE_OPENCL_C_VERSION, info->opencl_c_version,
                             sizeof info->opencl_c_version)) != CL_SUCCESS)
        return err;
    /* Sizes read with the exact types the specification gives them: a
     * cl_ulong read into a size_t would truncate on 32-bit hosts. */
    cl_ulong u64;
    cl_uint u32;
    size_t sz;
    if ((err = clGetDeviceInfo(dev, CL_DEVICE_TYPE, sizeof info->type, &info->type, NULL)) !=
        CL_SUCCESS)
        return err;
    if ((err = clGetDeviceInfo(dev, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof u64, &u64, NULL)) !=
        CL_SUCCESS)
        return err;
    info->global_mem_size = u64;
    if ((err = clGetDeviceInfo(dev, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof u64, &u64, NULL)) !=
        CL_SUCCESS)
        return err;
    info->max_mem_alloc_size = u64;
    if ((err = clGetDeviceInfo(dev, CL_DEVICE_MAX_COMPUTE_UNITS, sizeof u32, &u32, NULL)) !=
        CL_SUCCESS)
        return err;
    info->compute_units = u32;
    if ((err = clGetDeviceInfo(dev, CL_DEVICE_MAX_WORK_GROUP_SIZE, sizeof sz, &sz, NULL)) !=
        CL_SUCCESS)
        return err;
    info->max_work_group_size = sz;

    info->has_fp16 = has_extension(dev, "cl_khr_fp16");
    cl_device_fp_config fp64 = 0;
    if (clGetDeviceInfo(dev, CL_DEVICE_DOUBLE_FP_CONFIG, sizeof fp64, &fp64, NULL) != CL_SUCCESS)
        fp64 = 0;
    info->has_fp64 = fp64 != 0 || has_extension(dev, "cl_khr_fp64");

    int major, minor;
    clg__parse_cl_version(info->device_version, "OpenCL ", &major, &minor);
    info->preferred_work_group_multiple = 0;
    if (major >= 3) {
        size_t m = 0;
        if (clGetDeviceInfo(dev, CLG_DEVICE_PREFERRED_WORK_GROUP_SIZE_MULTIPLE, sizeof m, &m,
                            NULL) == CL_SUCCESS &&
            m > 0)
            info->preferred_work_group_multiple = m;
    }
    if (info->preferred_work_group_multiple == 0)
        info->preferred_work_group_multiple = kernel_preferred_multiple(plat, dev);
    return CL_SUCCESS;
}

/* Every device, in the library's own (full-size) layout. */
static clg_status list_devices(clg_device_info **out, size_t *count)
{

    cl_uint nplat = 0;
    cl_int err = clGetPlatformIDs(0, NULL, &nplat);
    if (err == CLG_PLATFORM_NOT_FOUND_KHR || (err == CL_SUCCESS && nplat == 0))
        return clg__fail(NULL, CLG_ERR_NO_DEVICE,
                         "clg_devices_list: no OpenCL platform found (is an ICD such as "
                         "pocl-opencl-icd installed?)");
    if (err != CL_SUCCESS)
        return clg__cl_fail(NULL, err, "clg_devices_list", "clGetPlatformIDs");
    cl_platform_id *plats = malloc(nplat * sizeof *plats);
    if (!plats)
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_devices_list: out of memory");
    err = clGetPlatformIDs(nplat, plats, NULL);
    if (err != CL_SUCCESS) {
        free(plats);
        return clg__cl_fail(NULL, err, "clg_devices_list", "clGetPlatformIDs");
    }

    clg_device_info *list = NULL;
    size_t n = 0;
    clg_status status = CLG_SUCCESS;
    for (cl_uint p = 0; p < nplat && status == CLG_SUCCESS; p++) {
        cl_uint ndev = 0;
        /* A platform without devices (or a broken one) is skipped, not fatal. */
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, 0, NULL, &ndev) != CL_SUCCESS || ndev == 0)
            continue;
        cl_device_id *devs = malloc(ndev * sizeof *devs);
        clg_device_info *grown = devs ? realloc(list, (n + ndev) * sizeof *list) : NULL;
        if (!devs || !grown) {
            free(devs);
            status = clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_devices_list: out of memory");
            break;
        }
        list = grown;
        if (clGetDeviceIDs(plats[p], CL_DEVICE_TYPE_ALL, ndev, devs, NULL) == CL_SUCCESS) {
            for (cl_uint d = 0; d < ndev; d++) {
                clg_device_info *info = &list[n];
                memset(info, 0, sizeof *info);
                info->struct_size = sizeof *info;
                info->platform_index = p;
                info->device_index = d;
                err = clg__device_describe(plats[p], devs[d], info);
                if (err != CL_SUCCESS) {
                    status = clg__cl_fail(NULL, err, "clg_devices_list", "clGetDeviceInfo");
                    break;
                }
                n++;
            }
        }
        free(devs);
    }
    free(plats);
    if (status != CLG_SUCCESS) {
        free(list);
        return status;
    }
    if (n == 0) {
        free(list);
        return clg__fail(NULL, CLG_ERR_NO_DEVICE,
                         "clg_devices_list: %u OpenCL platform(s) but no device", nplat);
    }
    *out = list;
    *count = n;
    return CLG_SUCCESS;
}

clg_status clg_devices_list_sized(size_t struct_size, clg_device_info **out, size_t *count)
{
    if (!out || !count)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_devices_list: %s is NULL",
                         !out ? "out" : "count");
    *out = NULL;
    *count = 0;
    clg_status st = clg__sized_check(NULL, struct_size, CLG__DEVICE_INFO_SIZE_MIN,
                                     "clg_device_info", "clg_devices_list");
    clg_device_info *full = NULL;
    size_t n = 0;
    if (st == CLG_SUCCESS)
        st = list_devices(&full, &n);
    if (st != CLG_SUCCESS || struct_size == sizeof *full) {
        *out = full;
        *count = n;
        return st;
    }
    /* The caller's layout: elements struct_size bytes apart. */
    unsigned char *list = malloc(n * struct_size);
    if (!list) {
        free(full);
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_devices_list: out of memory");
    }
    for (size_t i = 0; i < n; i++)
        clg__sized_export(list + i * struct_size, struct_size, &full[i], sizeof full[i]);
    free(full);
    *out = (clg_device_info *)list;
    *count = n;
    return CLG_SUCCESS;
}

void clg_devices_free(clg_device_info *devices)
{
    free(devices);
}

/* Case-insensitive strstr. */
static int contains_nocase(const char *hay, const char *needle)
{
    size_t n = strlen(needle);
    for (; *hay; hay++) {
        size_t i = 0;
        while (i < n && hay[i] &&
               tolower((unsigned char)hay[i]) == tolower((unsigned char)needle[i]))
            i++;
        if (i == n)
            return 1;
    }
    return n == 0;
}

/* Strict decimal: digits only, no sign, no overflow. */
static int parse_index(const char *s, size_t len, unsigned long *v)
{
    if (len == 0 || len > 9)
        return 0;
    unsigned long x = 0;
    for (size_t i = 0; i < len; i++) {
        if (!isdigit((unsigned char)s[i]))
            return 0;
        x = x * 10 + (unsigned long)(s[i] - '0');
    }
    *v = x;
    return 1;
}

/* Appends "; N (P:D) name [platform]" for every device, as far as it fits. */
static void describe_all(char *buf, size_t cap, const clg_device_info *devices, size_t count)
{
    size_t used = strlen(buf);
    for (size_t i = 0; i < count && used + 1 < cap; i++) {
        int w = snprintf(buf + used, cap - used, "%s%zu (%u:%u) \"%s\" [%s, %s]", i ? "; " : "", i,
                         devices[i].platform_index, devices[i].device_index, devices[i].name,
                         devices[i].platform_name, devices[i].vendor);
        if (w < 0)
            break;
        used += (size_t)w;
    }
}

static clg_status no_match(const clg_device_info *devices, size_t count, const char *sel,
                           const char *origin, clg_status status, const char *why)
{
    char list[CLG_ERROR_MAX / 2] = "";
    describe_all(list, sizeof list, devices, count);
    return clg__fail(NULL, status, "clg_device_select: selector \"%s\"%s %s; available: %s", sel,
                     origin, why, list);
}

/* The selection proper, over the library's own layout. */
static clg_status select_device(const clg_device_info *devices, size_t count,
                                const char *selector, size_t *chosen)
{

    const char *origin = "";
    if (!selector || !*selector) {
        selector = getenv("CLGRAD_DEVICE");
        origin = " (from CLGRAD_DEVICE)";
    }
    if (!selector || !*selector) {
        for (size_t i = 0; i < count; i++)
            if (devices[i].type & CL_DEVICE_TYPE_GPU) {
                *chosen = i;
                return CLG_SUCCESS;
            }
        *chosen = 0;
        return CLG_SUCCESS;
    }

    /* Surrounding blanks are not part of a name. */
    while (isspace((unsigned char)*selector))
        selector++;
    size_t len = strlen(selector);
    while (len > 0 && isspace((unsigned char)selector[len - 1]))
        len--;
    char sel[256];
    if (len == 0 || len >= sizeof sel)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_device_select: selector%s is %s",
                         origin, len == 0 ? "blank" : "too long");
    memcpy(sel, selector, len);
    sel[len] = '\0';

    /* Made only of digits, ':', '+', '-': meant as an index, so it must parse. */
    if (strspn(sel, "0123456789:+-") == len) {
        unsigned long a, b;
        const char *colon = strchr(sel, ':');
        if (!colon && parse_index(sel, len, &a)) {
            if (a >= count)
                return no_match(devices, count, sel, origin, CLG_ERR_NO_DEVICE, "is out of range");
            *chosen = a;
            return CLG_SUCCESS;
        }
        if (colon && parse_index(sel, (size_t)(colon - sel), &a) &&
            parse_index(colon + 1, strlen(colon + 1), &b)) {
            for (size_t i = 0; i < count; i++)
                if (devices[i].platform_index == a && devices[i].device_index == b) {
                    *chosen = i;
                    return CLG_SUCCESS;
                }
            return no_match(devices, count, sel, origin, CLG_ERR_NO_DEVICE,
                            "names no existing platform:device");
        }
        return no_match(devices, count, sel, origin, CLG_ERR_INVALID_ARGUMENT,
                        "is not a valid index (use N, P:D or a name substring)");
    }

    for (size_t i = 0; i < count; i++)
        if (contains_nocase(devices[i].name, sel) || contains_nocase(devices[i].vendor, sel) ||
            contains_nocase(devices[i].platform_name, sel)) {
            *chosen = i;
            return CLG_SUCCESS;
        }
    return no_match(devices, count, sel, origin, CLG_ERR_NO_DEVICE,
                    "matches no platform, vendor or device name");
}

clg_status clg_device_select(const clg_device_info *list, size_t count, const char *selector,
                             size_t *chosen)
{
    if (!chosen)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_device_select: chosen is NULL");
    if (!list || count == 0)
        return clg__fail(NULL, CLG_ERR_NO_DEVICE, "clg_device_select: no OpenCL device");
    clg_status st = clg__sized_check(NULL, list->struct_size, CLG__DEVICE_INFO_SIZE_MIN,
                                     "clg_device_info", "clg_device_select");
    if (st != CLG_SUCCESS)
        return st;
    /* The caller's array, in its own layout, as the full struct. */
    clg_device_info *devices = malloc(count * sizeof *devices);
    if (!devices)
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY, "clg_device_select: out of memory");
    for (size_t i = 0; i < count; i++) {
        const unsigned char *e = (const unsigned char *)list + i * list->struct_size;
        memset(&devices[i], 0, sizeof devices[i]);
        memcpy(&devices[i], e,
               list->struct_size < sizeof devices[i] ? list->struct_size : sizeof devices[i]);
    }
    st = select_device(devices, count, selector, chosen);
    free(devices);
    return st;
}

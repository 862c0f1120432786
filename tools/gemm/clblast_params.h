/* clblast_params.h - CLBlast's current tuning parameters of one kernel for a
 * device, from C. CLBlast's C API can override parameters
 * (CLBlastOverrideParameters) but not read them; its C++ API can
 * (clblast::RetrieveParameters), and clblast_params.cc wraps that one call.
 * clgrad-tune and clgrad-bench need the values CLBlast would use on its own
 * (to measure against them and to go back to them), the trainer needs them
 * to restore CLBlast's defaults after a tuning it cannot apply in full, and
 * the tests to see that an override took effect. */
#ifndef TUNE_CLBLAST_PARAMS_H
#define TUNE_CLBLAST_PARAMS_H

#ifndef CL_TARGET_OPENCL_VERSION
#define CL_TARGET_OPENCL_VERSION 200
#endif
#include <CL/cl.h>
#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

#define CLBLAST_PARAM_NAME 32 /* longest CLBlast parameter name + 1 */

typedef struct clblast_param {
    char name[CLBLAST_PARAM_NAME];
    size_t value;
} clblast_param;

/* The parameters CLBlast uses now for kernel (e.g. "XgemmDirect") at
 * precision (32 = single) on device: its database entry for the device, or
 * the last override. Sorted by name. Returns CLBlast's status (0 on
 * success); *n is the number of parameters (at most cap are stored; a
 * larger *n means cap was too small). */
int clblast_params_get(cl_device_id device, const char *kernel, int precision,
                       clblast_param *out, size_t cap, size_t *n);

/* Sets them (CLBlastOverrideParameters); CLBlast's status. */
int clblast_params_set(cl_device_id device, const char *kernel, int precision,
                       const clblast_param *params, size_t n);

#ifdef __cplusplus
}
#endif

#endif /* TUNE_CLBLAST_PARAMS_H */

/* device_info.h - private to device.c and context.c: describing one device
 * (used both for listing and for wrapping a caller's device). */
#ifndef CLGRAD_DEVICE_INFO_H
#define CLGRAD_DEVICE_INFO_H

#include "internal.h"

/* Fills every fact of info for dev on platform plat (indices untouched).
 * Returns an OpenCL error code on a failed mandatory query. */
cl_int clg__device_describe(cl_platform_id plat, cl_device_id dev, clg_device_info *info);

/* "OpenCL 2.0 ..." / "OpenCL C 1.2 ..." -> major, minor (0, 0 if unparsable). */
void clg__parse_cl_version(const char *text, const char *prefix, int *major, int *minor);

#endif /* CLGRAD_DEVICE_INFO_H */

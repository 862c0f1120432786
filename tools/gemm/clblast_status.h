/* clblast_status.h - CLBlast's status codes under CLBlast's names. Its
 * calls return OpenCL's codes for OpenCL's failures and codes of its own
 * otherwise, and its own lie in a range OpenCL's extensions also use
 * (-1011 is CLBlastInsufficientMemoryA, and also
 * CL_INVALID_DX9_MEDIA_SURFACE_KHR): a status from a CLBlast call printed
 * with an OpenCL name misleads. The tools print every status of a call that
 * went through CLBlast with these. */
#ifndef TUNE_CLBLAST_STATUS_H
#define TUNE_CLBLAST_STATUS_H

#include <stddef.h>

/* clblast_c.h's name of status (a CLBlastStatusCode, e.g.
 * "CLBlastInsufficientMemoryA" for -1011), or NULL when CLBlast has none. */
const char *clblast_status_name(int status);

/* Whether status is one of CLBlast's own codes rather than an OpenCL one
 * it passes on: for callers whose failures may come from either. */
int clblast_status_own(int status);

/* "CLBlastInsufficientMemoryA (-1011)" into buf; returns buf. */
const char *clblast_status_text(int status, char *buf, size_t size);

#endif /* TUNE_CLBLAST_STATUS_H */

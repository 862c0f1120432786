/* clbuf.h - releasing the OpenCL objects a run holds: each one that is
 * set, then cleared, so that a teardown may run after a failed set-up. */
#ifndef TRAIN_CLBUF_H
#define TRAIN_CLBUF_H

#include "clgrad.h"

#include <stddef.h>

void clbuf_release_mems(cl_mem *const *bufs, size_t n);
void clbuf_release_kernels(cl_kernel *const *kernels, size_t n);

#endif /* TRAIN_CLBUF_H */

/* clbuf.c - see clbuf.h. */
#include "clbuf.h"

void clbuf_release_mems(cl_mem *const *bufs, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (*bufs[i])
            clReleaseMemObject(*bufs[i]);
        *bufs[i] = NULL;
    }
}

void clbuf_release_kernels(cl_kernel *const *kernels, size_t n)
{
    for (size_t i = 0; i < n; i++) {
        if (*kernels[i])
            clReleaseKernel(*kernels[i]);
        *kernels[i] = NULL;
    }
}

/* clblast_status.c - CLBlast's names of its status codes (see
 * clblast_status.h). */
#include "clblast_status.h"

#include <clblast_c.h>
#include <stddef.h>
#include <stdio.h>

/* Every CLBlastStatusCode of clblast_c.h (1.5.3), by its own name. */
#define S(code) {code, #code}
static const struct {
    int code;
    const char *name;
} codes[] = {
    S(CLBlastSuccess), S(CLBlastOpenCLCompilerNotAvailable), S(CLBlastTempBufferAllocFailure),
    S(CLBlastOpenCLOutOfResources), S(CLBlastOpenCLOutOfHostMemory),
    S(CLBlastOpenCLBuildProgramFailure), S(CLBlastInvalidValue), S(CLBlastInvalidCommandQueue),
    S(CLBlastInvalidMemObject), S(CLBlastInvalidBinary), S(CLBlastInvalidBuildOptions),
    S(CLBlastInvalidProgram), S(CLBlastInvalidProgramExecutable), S(CLBlastInvalidKernelName),
    S(CLBlastInvalidKernelDefinition), S(CLBlastInvalidKernel), S(CLBlastInvalidArgIndex),
    S(CLBlastInvalidArgValue), S(CLBlastInvalidArgSize), S(CLBlastInvalidKernelArgs),
    S(CLBlastInvalidLocalNumDimensions), S(CLBlastInvalidLocalThreadsTotal),
    S(CLBlastInvalidLocalThreadsDim), S(CLBlastInvalidGlobalOffset),
    S(CLBlastInvalidEventWaitList), S(CLBlastInvalidEvent), S(CLBlastInvalidOperation),
    S(CLBlastInvalidBufferSize), S(CLBlastInvalidGlobalWorkSize), S(CLBlastNotImplemented),
    S(CLBlastInvalidMatrixA), S(CLBlastInvalidMatrixB), S(CLBlastInvalidMatrixC),
    S(CLBlastInvalidVectorX), S(CLBlastInvalidVectorY), S(CLBlastInvalidDimension),
    S(CLBlastInvalidLeadDimA), S(CLBlastInvalidLeadDimB), S(CLBlastInvalidLeadDimC),
    S(CLBlastInvalidIncrementX), S(CLBlastInvalidIncrementY), S(CLBlastInsufficientMemoryA),
    S(CLBlastInsufficientMemoryB), S(CLBlastInsufficientMemoryC), S(CLBlastInsufficientMemoryX),
    S(CLBlastInsufficientMemoryY), S(CLBlastInsufficientMemoryTemp), S(CLBlastInvalidBatchCount),
    S(CLBlastInvalidOverrideKernel), S(CLBlastMissingOverrideParameter),
    S(CLBlastInvalidLocalMemUsage), S(CLBlastNoHalfPrecision), S(CLBlastNoDoublePrecision),
    S(CLBlastInvalidVectorScalar), S(CLBlastInsufficientMemoryScalar), S(CLBlastDatabaseError),
    S(CLBlastUnknownError), S(CLBlastUnexpectedError),
};

const char *clblast_status_name(int status)
{
    for (size_t i = 0; i < sizeof codes / sizeof *codes; i++)
        if (codes[i].code == status)
            return codes[i].name;
    return NULL;
}

int clblast_status_own(int status)
{
    /* CLBlast's own codes: -1024..-1007 and -2050..-2039 (the others are
     * OpenCL's, passed on) */
    return clblast_status_name(status) && status <= -1000;
}

const char *clblast_status_text(int status, char *buf, size_t size)
{
    const char *name = clblast_status_name(status);
    if (name)
        snprintf(buf, size, "%s (%d)", name, status);
    else
        snprintf(buf, size, "status %d (not one of CLBlast's)", status);
    return buf;
}

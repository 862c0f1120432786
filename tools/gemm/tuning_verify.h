/* tuning_verify.h - a tuning tried on the device before it is trusted: the
 * file's values may pass every constraint (tuning_constraints.h) and still
 * be wrong on this device or driver, and a wrong GEMM trains silently to a
 * useless model. So each GEMM shape the caller will run goes once through
 * mlp_gemm, with the parameters CLBlast holds, against a double-precision
 * product on the host (gemm_check: relative error at most 1e-4 of the sum
 * of |terms|). This runs every kernel the shapes reach, on the path
 * XGEMM_MIN_INDIRECT_SIZE sends each one to: XgemmDirect, or Xgemm with
 * its copy/pad/transpose helpers. */
#ifndef TUNE_TUNING_VERIFY_H
#define TUNE_TUNING_VERIFY_H

#include "clgrad.h"
#include "mlp_gemms.h"
#include "tuning_file.h"

/* Runs shapes[0..n) with the parameters CLBlast holds now for ctx's device
 * (the caller applied t). 0, or -1 with why: the first shape that failed
 * or came out wrong, the kernel that ran it with its parameters in t (or
 * "CLBlast's own"), and CLBlast's status under its name or the relative
 * error. Prints nothing. */
int tuning_verify(const clg_context *ctx, const tuning *t, const mlp_gemm_shape *shapes,
                  size_t n, char *err, size_t errlen);

#endif /* TUNE_TUNING_VERIFY_H */

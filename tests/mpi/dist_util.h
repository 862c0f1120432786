/* dist_util.h - what the MPI tests share: a context or a clean failure
 * (no device: exit 77, or 1 under CLGRAD_REQUIRE_DEVICE), the test's
 * model, failing every rank at once, and deterministic gradients. The MPI
 * tests link the installed form of the libraries (libclgrad and
 * libclgrad-mpi), not the test build, so they use the public API only. */
#ifndef CLGRAD_TEST_DIST_UTIL_H
#define CLGRAD_TEST_DIST_UTIL_H

#include "clgrad_mpi.h"

#include <stddef.h>
#include <stdint.h>

/* Prints "rank r: FAIL ..." and aborts every rank (MPI_Abort, exit 1). */
void du_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2), noreturn));
/* du_fail unless st is CLG_SUCCESS, naming the call and the message. */
#define DU_OK(call) du_ok((call), #call, __LINE__)
void du_ok(clg_status st, const char *what, int line);

/* MPI_Init, then a context on every rank; no device: every rank exits 77,
 * or fails when CLGRAD_REQUIRE_DEVICE is set. */
clg_context *du_init(int *argc, char ***argv, int *rank, int *size);
void du_finish(clg_context *ctx);

/* Builds and finalizes a model of the given tensor counts (two param
 * groups: odd-numbered tensors in "no_decay"), uploads params uniform in
 * [-1, 1) from a fixed seed. */
clg_model *du_model(clg_context *ctx, const clg_config *cfg, const size_t *counts, size_t n);
/* The same, keeping the states of shard `shard` of `shards` (ZeRO-1;
 * shards 0: none). */
clg_model *du_model_sharded(clg_context *ctx, const clg_config *cfg, const size_t *counts,
                            size_t n, unsigned shard, unsigned shards);

/* Gradient of global micro-step j of update u: uniform in [-1, 1), the
 * same on every rank that asks (splitmix64 of (u, j), then per element). */
void du_gradient(float *g, size_t n, unsigned u, unsigned j);

/* ||a - ref|| / ||ref|| in double. */
double du_rel_l2(const float *a, const float *ref, size_t n);

#endif

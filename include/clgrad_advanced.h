/* clgrad_advanced.h - clgrad for tools and layers built on it: budget
 * reservations for the caller's own buffers, launch counting, clgrad's
 * kernel programs and disk cache, and failures recorded by a layer on top
 * of clgrad (libclgrad-mpi, language bindings). A training program needs
 * only clgrad.h; this header is part of the same library and ABI, and
 * follows clgrad.h's conventions. */
#ifndef CLGRAD_ADVANCED_H
#define CLGRAD_ADVANCED_H

#include "clgrad.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------ the budget */

/* Charges the caller's own device allocations (activations) to the
 * context's budget (clg_context_set_budget), so that one budget covers the
 * whole training state. reserve fails with CLG_ERR_OVER_BUDGET and changes
 * nothing; unreserve gives back what a reserve took. */
CLG_API clg_status clg_context_reserve(clg_context *ctx, uint64_t bytes);
CLG_API void clg_context_unreserve(clg_context *ctx, uint64_t bytes);

/* ------------------------------------------------------ launches, programs */

/* Kernels clgrad enqueued on this context so far (for launch counting). */
CLG_API uint64_t clg_context_launches(const clg_context *ctx);

/* Builds (or loads from the disk cache) clgrad's program "name" (a file of
 * cl/ without .cl) with extra options; used by tools that launch clgrad's
 * own auxiliary kernels. The program is owned by ctx. from_cache tells
 * whether the binary came from the disk cache (may be NULL). */
CLG_API clg_status clg_context_program(clg_context *ctx, const char *name, const char *options,
                                       cl_program *program, int *from_cache);

/* Builds a tool's own kernels as clgrad builds its programs: clgrad's
 * common source (the step block's layout and cl/common.cl) followed by the
 * caller's source, chunks (a NULL-terminated array of strings, as
 * tools/embed-cl.py embeds a file), with extra options, through the same
 * disk cache (keyed by the whole source and the options) and the same
 * repair of unusable entries (clg_context_cache_repairs). name is the
 * program's in messages. The program is owned by ctx: a second call with
 * the same name, options and source returns it; another source under the
 * same name (or one of clgrad's program names) is another program. The
 * options that break IEEE results are refused, as by clg_context_program.
 * NULL ctx, name, chunks or program, or an empty name:
 * CLG_ERR_INVALID_ARGUMENT. */
CLG_API clg_status clg_context_program_source(clg_context *ctx, const char *name,
                                              const char *const *chunks, const char *options,
                                              cl_program *program, int *from_cache);

/* Kernel-cache entries this context could not use and rebuilt from
 * source: damaged ones, binaries the driver refused, and binaries of
 * another program (a kernel the program's source does not name). Each is
 * rewritten and counted once; the library prints nothing, so a tool may
 * say so. note (NULL, or size bytes): the last one's description, e.g.
 * "kernel cache: the entry of cl/update.cl holds another program: ...;
 * rebuilt from source and the entry rewritten" (for a caller's source:
 * "the entry of program \"mlp\" ..."), "" when none. NULL ctx: 0. */
CLG_API uint64_t clg_context_cache_repairs(const clg_context *ctx, char *note, size_t size);

/* The directory of clgrad's on-disk cache (compiled kernels; tools keep
 * per-device files there too, e.g. clgrad-tune's CLBlast tuning):
 * CLGRAD_CACHE_DIR, else $XDG_CACHE_HOME/clgrad, else ~/.cache/clgrad, into
 * buf (size bytes, NUL-terminated). CLG_ERR_UNSUPPORTED when the cache is
 * off (CLGRAD_CACHE_DIR=off) or no location is set; CLG_ERR_INVALID_ARGUMENT
 * when the path does not fit. */
CLG_API clg_status clg_cache_dir(char *buf, size_t size);
/* The device part of the kernel cache's keys as 64 lower-case hex digits
 * and a NUL: a SHA-256 of ctx's device name, driver version, platform
 * version and device version. Anything stored under it goes stale with the
 * compiled kernels when the device or its driver changes. */
CLG_API clg_status clg_context_device_key(const clg_context *ctx, char key[65]);

/* ---------------------------------------------------------------- errors */

/* Records a failure of a layer built on clgrad as clgrad records its own:
 * clg_last_error(ctx) then returns message (ctx NULL: this thread's
 * context-less failure). Returns status, so that a layer can write
 * `return clg_context_fail(ctx, st, msg);`. A NULL message records
 * clg_status_string(status). */
CLG_API clg_status clg_context_fail(clg_context *ctx, clg_status status, const char *message);

#ifdef __cplusplus
}
#endif

#endif /* CLGRAD_ADVANCED_H */

/* tuning_apply.h - a device's tuning at run time: where its file is,
 * whether it may be used, and making CLBlast use it (or go back to its own
 * parameters). Used by clgrad-train at start-up, by clgrad-bench and by
 * clgrad-tune; none of these functions prints, the callers do.
 *
 * A file may be used only when it parses (tuning_file.h: format, CRC-32,
 * names, and values CLBlast's kernels can take: tuning_constraints.h), its key is clg_context_device_key of the device (the key
 * of clgrad's kernel cache: device name, driver, platform and device
 * version), it was made with the CLBlast version this program is built
 * against, and each of its kernel records names exactly the parameters
 * CLBlast has for that kernel, its kernels keep to the device's work-group
 * and local-memory limits, and (tuning_setup) the GEMMs of the caller's
 * shapes come out right with it on the device (tuning_verify.h). Anything
 * else leaves CLBlast on its own parameters. */
#ifndef TUNE_TUNING_APPLY_H
#define TUNE_TUNING_APPLY_H

#include "clgrad.h"
#include "mlp_gemms.h"
#include "tuning_file.h"

/* "1.5.3": the CLBlast this program was built against. */
const char *tuning_clblast_version(void);

/* The file of ctx's device: <clgrad's cache directory>/clblast-<key>.tune
 * for the MLP's GEMMs (task NULL), clblast-<key>-<task>.tune for those of
 * another of clgrad-train's tasks (e.g. "gpt"): a tuning is chosen for one
 * set of shapes. 0, or -1 with why (no cache directory:
 * CLGRAD_CACHE_DIR=off, no HOME). */
int tuning_path(const clg_context *ctx, const char *task, char *path, size_t size, char *err,
                size_t errlen);

/* PoCL keeps the programs it compiled in POCL_CACHE_DIR (else in its own
 * directory of the user's cache): unless that is set, it is pointed at
 * <clgrad's cache directory>/pocl, so that the builds of CLBlast's GEMM
 * programs one clgrad-tune run paid for are paid neither by the next nor by
 * clgrad-train's runs with the tuning, and deleting clgrad's cache starts
 * afresh. Before the process's first OpenCL call (PoCL reads it once). */
void tuning_share_pocl_cache(void);

/* Reads path and checks it belongs to ctx's device and this CLBlast, and
 * that its kernels keep to the device's limits: 0;
 * 1 when there is no file at path; -1 with why. */
int tuning_load(const clg_context *ctx, const char *path, tuning *t, char *err, size_t errlen);

/* Makes CLBlast use t's parameters on ctx's device from its next GEMM on
 * (CLBlastOverrideParameters per kernel record). Every record is checked
 * against the parameter names CLBlast has for its kernel before any is
 * applied; if one is refused, CLBlast's own parameters are restored. 0, or
 * -1 with why. Not thread-safe (CLBlast's parameters are per process). */
int tuning_apply(const clg_context *ctx, const tuning *t, char *err, size_t errlen);

/* CLBlast's own parameters again for every kernel this process changed on
 * ctx's device. 0, or -1 with why. */
int tuning_restore_defaults(const clg_context *ctx, char *err, size_t errlen);

typedef struct tuning_status {
    int applied;        /* CLBlast now uses st->t */
    int warning;        /* a file was asked for or found but not used */
    char path[1024];    /* the file looked at, "" if none */
    char message[3072]; /* one line for the log: what runs, and why */
    tuning t;           /* the tuning applied */
} tuning_status;

/* The trainer's start-up: spec NULL or "auto" (the device's file for task,
 * as tuning_path, when there is one), "off" (CLBlast's defaults) or the
 * path of a file. A file is
 * applied only once shapes[0..n_shapes) (the GEMMs the caller runs) came
 * out right with it (tuning_verify); the message then names the kernel,
 * its parameters and the shape that did not. Never fails:
 * whatever cannot be used leaves CLBlast on its defaults with st->warning
 * set and the reason in st->message; with no file for the device the
 * message gives the clgrad-tune command. */
void tuning_setup(const clg_context *ctx, const char *spec, const char *task,
                  const mlp_gemm_shape *shapes, size_t n_shapes, tuning_status *st);

#endif /* TUNE_TUNING_APPLY_H */

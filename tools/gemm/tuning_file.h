/* tuning_file.h - the file clgrad-tune writes for one device: CLBlast
 * parameters that CLBlastOverrideParameters takes, the device they were
 * measured on, and what was measured. This file only formats and parses a
 * buffer; tuning_apply.c finds, checks and applies files, tune_save.c writes
 * them.
 *
 * Format (text, one record per line, fields separated by one space):
 *     clgrad-clblast-tuning 1
 *     key <64 hex digits: clg_context_device_key of the device>
 *     device <name>                  (the rest of the line; informational)
 *     driver <driver version>        (informational)
 *     clblast <major.minor.patch the tuning was made with>
 *     created <UTC time, ISO 8601>
 *     budget <seconds allowed> <seconds used>
 *     model <what was tuned for, e.g. "mlp 784,512,256,10 micro-batch 32">
 *     kernel <CLBlast kernel> <precision> <NAME=value> ...      (1..8 lines)
 *     gemm <m> <n> <k> <ta><tb> <count>[x<batch>] <kernel_default> <gflops_default>
 *          <kernel_tuned> <gflops_tuned>                          (0..32 lines)
 *     crc32 <8 hex digits>
 * The CRC-32 (zlib's) covers every byte before the crc32 line, which must
 * be the last one. Parsing is strict: a missing, repeated or unknown
 * record, a malformed number, a name CLBlast could not have, a value out of
 * range or one CLBlast's kernels cannot take (tuning_constraints.h) or a
 * wrong CRC rejects the whole file, with a message saying what was wrong.
 * gemm lines use the trainer's row-major view (mlp_gemms.h):
 * C[m x n] = op(A)[m x k] op(B)[k x n], ta/tb 'N' or 'T';
 * "4x16" is 4 calls of a strided batched GEMM of 16 such products each. */
#ifndef TUNE_TUNING_FILE_H
#define TUNE_TUNING_FILE_H

#include <stddef.h>

#define TUNING_MAGIC "clgrad-clblast-tuning"
#define TUNING_FORMAT 1
#define TUNING_MAX_BYTES 65536
#define TUNING_MAX_KERNELS 8
#define TUNING_MAX_PARAMS 24
#define TUNING_MAX_GEMMS 32
#define TUNING_NAME 32
/* Largest parameter value accepted: CLBlast's are work-group sizes, tile
 * sizes, vector widths and flags, and the GEMM routine's switch-over size. */
#define TUNING_MAX_VALUE 65536
/* Largest batch of a gemm record (products per batched call) */
#define TUNING_MAX_BATCH (1u << 20)

typedef struct tuning_kernel {
    char name[TUNING_NAME]; /* "XgemmDirect", "Xgemm" or "GemmRoutine" */
    unsigned precision;     /* 32: single (the only one clgrad's tools use) */
    size_t n;
    char param[TUNING_MAX_PARAMS][TUNING_NAME];
    size_t value[TUNING_MAX_PARAMS];
} tuning_kernel;

typedef struct tuning_gemm {
    unsigned m, n, k;
    char ta, tb;                /* 'N' or 'T' */
    unsigned count;             /* calls per micro-batch */
    char kernel_default[TUNING_NAME], kernel_tuned[TUNING_NAME];
    double gflops_default, gflops_tuned;
    unsigned batch;             /* products per call (batched GEMM); 0 or 1: a plain GEMM */
} tuning_gemm;

typedef struct tuning {
    char key[65];
    char device[128];
    char driver[128];
    char clblast[16];
    char created[32];
    double budget_s, seconds;
    char model[128];
    size_t n_kernels;
    tuning_kernel kernel[TUNING_MAX_KERNELS];
    size_t n_gemms;
    tuning_gemm gemm[TUNING_MAX_GEMMS];
} tuning;

/* The text of t, CRC line included, in a malloc'ed buffer of *len bytes
 * (NUL-terminated). Control characters in the informational strings become
 * '?'. NULL when out of memory or when t does not pass tuning_check. */
char *tuning_format(const tuning *t, size_t *len);

/* Parses a whole file. 0, or -1 with the reason in err. */
int tuning_parse(const char *buf, size_t len, tuning *t, char *err, size_t errlen);

/* The checks tuning_parse makes on the values (names, ranges, counts, and
 * tuning_check_kernel_values on each kernel record). */
int tuning_check(const tuning *t, char *err, size_t errlen);

/* The kernel record named name, or NULL. */
const tuning_kernel *tuning_find_kernel(const tuning *t, const char *name);

/* One line describing a kernel record: "XgemmDirect KWID=2 MDIMAD=16 ...". */
void tuning_kernel_text(const tuning_kernel *k, char *out, size_t size);

#endif /* TUNE_TUNING_FILE_H */

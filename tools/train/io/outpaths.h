/* outpaths.h - the files a clgrad-train run reads and writes, checked
 * before any work starts: every output's directory exists and is writable
 * and the output is not a directory, --resume names a regular file, and no
 * two of them name the same file (an output over an input or over another
 * output would destroy it). Files are the same when they have the same
 * device and inode; a file that does not exist yet is named by the
 * resolved path of its directory and its base name. */
#ifndef TRAIN_OUTPATHS_H
#define TRAIN_OUTPATHS_H

#include "options.h"

#include <stddef.h>

/* Checks opt's outputs (--metrics, --dump-weights, --checkpoint) and
 * inputs (--resume, and the IDX files of --data when with_data). One
 * exception: --checkpoint may name the --resume file (a run continues its
 * own checkpoint; checkpoints are replaced atomically after the load).
 * Returns 0, or -1 with a message naming the flag(s) and path in err. */
int outpaths_check(const train_options *opt, int with_data, char *err, size_t errlen);

/* One output path: its directory exists, is a directory and is writable
 * (and searchable), and path is neither an existing directory nor an
 * existing non-regular file. flag names it in the message. */
int outpaths_check_output(const char *flag, const char *path, char *err, size_t errlen);

/* Whether a and b name the same file (see above); -1 when that cannot be
 * told (a's or b's directory cannot be resolved). */
int outpaths_same_file(const char *a, const char *b);

#endif /* TRAIN_OUTPATHS_H */

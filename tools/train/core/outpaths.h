/* outpaths.h - the files a clgrad-train run reads and writes, checked
 * before any work starts: every output passes output_check (its directory
 * exists and is writable, and it is no directory, FIFO or device), --resume
 * names a regular file, and no two of them name the same file (an output
 * over an input or over another output would destroy it; one file as
 * file_id.h tells). */
#ifndef TRAIN_OUTPATHS_H
#define TRAIN_OUTPATHS_H

#include "options.h"
#include "path_list.h"

#include <stddef.h>

/* Checks opt's outputs (--checkpoint, --metrics, --dump-weights,
 * --save-initial) and inputs (--resume, and data: the files the task reads
 * from --data, every file of a directory; NULL when the caller gave the
 * data itself). One exception: --checkpoint may name the --resume file (a
 * run continues its own checkpoint; checkpoints are replaced atomically
 * after the load). Returns 0, or -1 with a message naming the flag(s) and
 * path in err. */
int outpaths_check(const train_options *opt, const path_list *data, char *err, size_t errlen);

#endif /* TRAIN_OUTPATHS_H */

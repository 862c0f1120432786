/* output_file.h - the check of an output file a tool will write, made
 * before the work that produces it (minutes of training, measuring or
 * tuning) rather than when it is written: clgrad-train's outputs,
 * clgrad-bench's --json, --csv and --plot, clgrad-tune's tuning file. */
#ifndef CLGRAD_TOOLS_OUTPUT_FILE_H
#define CLGRAD_TOOLS_OUTPUT_FILE_H

#include <stddef.h>

/* path, named by flag in the message: its directory exists, is a directory
 * and is writable (and searchable), and path is neither a directory nor an
 * existing file that is not a regular one (a FIFO, a device, a socket, or
 * a symbolic link to one), which writing it would replace. 0, or -1 with
 * a message naming flag and path in err. */
int output_check(const char *flag, const char *path, char *err, size_t errlen);

#endif /* CLGRAD_TOOLS_OUTPUT_FILE_H */

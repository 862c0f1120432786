/* write_target.h - the one rule for the paths the library writes (a
 * checkpoint, a kernel-cache entry): only a regular file is ever replaced.
 * Both write a temporary file beside the path and rename it over the path,
 * and rename(2) replaces whatever is there: a save run as root to
 * /dev/null replaced the system's null device with a regular file
 * (issue 37), and a FIFO, a device or a socket would go the same way. */
#ifndef CLGRAD_WRITE_TARGET_H
#define CLGRAD_WRITE_TARGET_H

#include <stdbool.h>
#include <stddef.h>

/* Whether a write may replace path. True when nothing is there, or a
 * regular file, or a symbolic link that leads to a regular file or to
 * nothing: the rename replaces the link itself, and what it led to is
 * left as it was (as before this check). False for anything else, with
 * why (may be NULL) saying what is there:
 *   "'PATH' is a FIFO, not a regular file; it would be replaced"
 *   (a character device, a block device, a socket), "'PATH' is a
 *   symbolic link to a FIFO, not to a regular file; it would be replaced",
 *   "'PATH' is a directory, not a regular file; expected a file name".
 * A path that cannot be looked at (EACCES, ENOTDIR) passes: creating the
 * temporary file beside it fails then, with its own errno. The check is
 * made before the write: it keeps a mistaken path from being replaced,
 * not a node that another process puts there meanwhile. */
bool clg__target_replaceable(const char *path, char *why, size_t whylen);

#endif /* CLGRAD_WRITE_TARGET_H */

/* input_file.h - the one rule for opening a file the tools read (--data,
 * --tuning, IDX files, the tuning cache): refuse what is not a regular file
 * before reading a byte of it, and read no more than the file's size when
 * it was opened. A FIFO nobody writes, /dev/zero or a file that keeps
 * growing would otherwise block or be read forever. */
#ifndef CLGRAD_TOOLS_INPUT_FILE_H
#define CLGRAD_TOOLS_INPUT_FILE_H

#include <stddef.h>
#include <stdint.h>
#include <sys/stat.h>

/* What a file of this mode is, for a message: "a FIFO", "a character
 * device", "a block device", "a socket", "a directory", "a symbolic link"
 * or "not a regular file". */
const char *input_kind(mode_t mode);

/* A check before a run of an input file named by flag: a regular file
 * (stat, which opens nothing, so a FIFO cannot block it). 0, or -1 with
 * "FLAG: PATH is a FIFO, not a regular file" or "FLAG: PATH: strerror" in
 * err. Its reader checks again, on the descriptor it opens. */
int input_check(const char *flag, const char *path, char *err, size_t errlen);

/* input_check for a file that may be missing (its reader says so): 0
 * when nothing is at path, not even a link. */
int input_check_present(const char *flag, const char *path, char *err, size_t errlen);

/* Opens path for reading without blocking (O_NONBLOCK: a FIFO opens at
 * once), then checks the descriptor itself with fstat, so that a path
 * swapped after any earlier check is still caught, and clears O_NONBLOCK.
 * Returns the descriptor, with its size in *size; or -1 with a reason in
 * why (e.g. "is a FIFO, not a regular file", "is 9 bytes, more than the 8
 * it may have", strerror) and errno kept from a failed open (ENOENT,
 * ELOOP). max_bytes UINT64_MAX: no bound. */
int input_open(const char *path, uint64_t max_bytes, size_t *size, char *why, size_t whylen);

/* Reads exactly size bytes of fd into buf, and refuses a file that shrank
 * or grew since it was opened. 0, or -1 with a reason in why. */
int input_read(int fd, void *buf, size_t size, char *why, size_t whylen);

#endif /* CLGRAD_TOOLS_INPUT_FILE_H */

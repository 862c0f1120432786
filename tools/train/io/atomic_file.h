/* atomic_file.h - an output file of clgrad-train (--metrics, --dump-weights)
 * written all or nothing: the bytes go to a temporary file in the target's
 * directory, which is fsynced and renamed over the target, and the
 * directory is fsynced. A failure at any point (a full disk, a file size
 * limit, an I/O error) removes the temporary file and leaves whatever file
 * was at the target before intact. The message of a failure names the path
 * and says why, with the errno of the call that failed. */
#ifndef TRAIN_ATOMIC_FILE_H
#define TRAIN_ATOMIC_FILE_H

#include <stddef.h>

#define ATOMIC_FILE_BUF 65536

typedef struct atomic_file {
    int fd;            /* of the temporary file (valid while tmp is set) */
    char *path;        /* target */
    char *tmp;         /* temporary file next to it; NULL when closed */
    int error;         /* errno of the first failed write, 0 while all went well */
    const char *failed_call;
    size_t len;        /* bytes in buf */
    char buf[ATOMIC_FILE_BUF];
} atomic_file;

/* Creates the temporary file "<path>.tmp.<pid>.<n>" (mode 0666 less the
 * umask). Returns 0, or -1 with a message in err; *a is then closed. */
int atomic_file_open(atomic_file *a, const char *path, char *err, size_t errlen);

/* Buffers n bytes. Returns 0, or -1 once a write failed (the failure is
 * reported in full by atomic_file_commit). */
int atomic_file_write(atomic_file *a, const void *data, size_t n);

/* printf into the file; same return as atomic_file_write. */
int atomic_file_printf(atomic_file *a, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Flushes, fsyncs, closes, renames over the target and fsyncs the
 * directory. Returns 0, or -1 with a message in err after removing the
 * temporary file (the target is then untouched). Closes *a either way. */
int atomic_file_commit(atomic_file *a, char *err, size_t errlen);

/* Drops the temporary file, leaving the target untouched. Safe on a
 * zeroed or already closed *a. */
void atomic_file_abort(atomic_file *a);

#endif /* TRAIN_ATOMIC_FILE_H */

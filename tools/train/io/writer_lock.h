/* writer_lock.h - one clgrad-train run writing a checkpoint path at a time.
 *
 * The writer holds an advisory flock(2) on "<path>.lock", a file beside the
 * checkpoint holding the writer's pid, for its whole run. flock rather than
 * fcntl: its lock belongs to the open file, not to the process, so that two
 * runs in one process (the tests, the benchmark) exclude each other too,
 * and closing some other descriptor of the file does not drop it. The
 * kernel drops it when the holder exits in any way (kill -9 included), so
 * a lock file left by a dead run blocks nothing: the next run locks it and
 * writes its own pid. On NFS, Linux emulates flock with whole-file fcntl
 * locks (lockd / NFSv4), which other clients see; a crashed client's lock
 * lasts until the server's lease expires.
 *
 * A run that ends removes the file while it still holds the lock. A run
 * that opened the old file before then and locks it afterwards finds that
 * the path no longer names the file it locked, and starts over with the
 * new one, so that no two runs ever hold locks on different files of one
 * path. */
#ifndef TRAIN_WRITER_LOCK_H
#define TRAIN_WRITER_LOCK_H

#include <stddef.h>

typedef struct writer_lock {
    int fd;     /* valid while path is set */
    char *path; /* "<path>.lock" while held, else NULL */
} writer_lock;

/* Takes path's lock for writing it, without waiting, and writes this
 * process's pid into the lock file. Returns 0, or -1 with a message in err
 * (flag names the option: "--checkpoint") naming the run holding it by its
 * pid; *l is then not held. */
int writer_lock_take(writer_lock *l, const char *flag, const char *path, char *err,
                     size_t errlen);

/* Whether a live run holds path's lock (for reading the file it writes):
 * 0 when none does (or there is no lock file), -1 with a message as
 * writer_lock_take's when one does. Holds nothing afterwards. */
int writer_lock_check_free(const char *flag, const char *path, char *err, size_t errlen);

/* Removes the lock file and drops the lock. Safe on a lock not held, a
 * zeroed one included. */
void writer_lock_release(writer_lock *l);

#endif /* TRAIN_WRITER_LOCK_H */

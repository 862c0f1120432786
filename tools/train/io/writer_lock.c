/* writer_lock.c - the checkpoint writer's lock (see writer_lock.h). */
#include "writer_lock.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

static char *lock_path(const char *path)
{
    size_t n = strlen(path) + sizeof ".lock";
    char *p = malloc(n);
    if (p)
        snprintf(p, n, "%s.lock", path);
    return p;
}

/* "flag: path is being written by another run (pid N, ...)": the pid the
 * holder wrote into the lock file, when it has yet. */
static int held(const char *flag, const char *path, const char *lpath, int fd, const char *then,
                char *err, size_t errlen)
{
    char text[32] = "";
    ssize_t n = pread(fd, text, sizeof text - 1, 0);
    text[n > 0 ? n : 0] = '\0';
    char *end;
    long pid = strtol(text, &end, 10);
    char who[48] = "its pid not written yet";
    if (end != text && (*end == '\n' || !*end) && pid > 0)
        snprintf(who, sizeof who, "pid %ld", pid);
    errmsg_set(err, errlen,
               "%s: %s is being written by another clgrad-train run (%s; lock file %s); %s", flag,
               path, who, lpath, then);
    return -1;
}

/* flock without waiting, through EINTR: 0 taken, 1 held elsewhere, -1
 * another failure (errno). */
static int try_flock(int fd, int op)
{
    int rc;
    while ((rc = flock(fd, op | LOCK_NB)) != 0 && errno == EINTR)
        ;
    if (rc == 0)
        return 0;
    return errno == EWOULDBLOCK ? 1 : -1;
}

/* Whether fd is still the file lpath names (a run that ended removed it). */
static int still_named(int fd, const char *lpath)
{
    struct stat a, b;
    return fstat(fd, &a) == 0 && stat(lpath, &b) == 0 && a.st_dev == b.st_dev &&
           a.st_ino == b.st_ino;
}

int writer_lock_take(writer_lock *l, const char *flag, const char *path, char *err,
                     size_t errlen)
{
    l->fd = -1;
    l->path = lock_path(path);
    if (!l->path) {
        errmsg_set(err, errlen, "%s: out of host memory", flag);
        return -1;
    }
    for (;;) {
        int fd = open(l->path, O_RDWR | O_CREAT | O_CLOEXEC, 0666);
        if (fd < 0) {
            int e = errno;
            errmsg_set(err, errlen, "%s: cannot create the lock file %s: %s", flag, l->path,
                       strerror(e));
            break;
        }
        int got = try_flock(fd, LOCK_EX);
        if (got == 1) {
            held(flag, path, l->path, fd, "wait until it has ended, or write another path", err,
                 errlen);
            close(fd);
            break;
        }
        if (got < 0) {
            int e = errno;
            errmsg_set(err, errlen, "%s: cannot lock %s: %s", flag, l->path, strerror(e));
            close(fd);
            break;
        }
        if (!still_named(fd, l->path)) {
            close(fd); /* its run ended and removed it: lock the new one */
            continue;
        }
        char pid[32];
        int n = snprintf(pid, sizeof pid, "%ld\n", (long)getpid());
        if (ftruncate(fd, 0) != 0 || pwrite(fd, pid, (size_t)n, 0) != n) {
            int e = errno;
            errmsg_set(err, errlen, "%s: cannot write the lock file %s: %s", flag, l->path,
                       strerror(e));
            unlink(l->path);
            close(fd);
            break;
        }
        l->fd = fd;
        return 0;
    }
    free(l->path);
    l->path = NULL;
    return -1;
}

int writer_lock_check_free(const char *flag, const char *path, char *err, size_t errlen)
{
    char *lpath = lock_path(path);
    if (!lpath) {
        errmsg_set(err, errlen, "%s: out of host memory", flag);
        return -1;
    }
    int rc = 0;
    /* read-only: the file read may be in a directory this run cannot write;
     * no lock file, no writer (a writer creates it before it writes) */
    int fd = open(lpath, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: no wait */
    if (fd >= 0) {
        if (try_flock(fd, LOCK_SH) == 1)
            rc = held(flag, path, lpath, fd, "resume it once that run has ended", err, errlen);
        close(fd); /* drops the shared lock, if taken */
    }
    free(lpath);
    return rc;
}

void writer_lock_release(writer_lock *l)
{
    if (l->path && l->fd >= 0) { /* a zeroed lock (fd 0) is not held either */
        unlink(l->path); /* while held: see writer_lock.h */
        close(l->fd);
    }
    free(l->path);
    l->fd = -1;
    l->path = NULL;
}

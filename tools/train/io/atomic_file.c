/* atomic_file.c - all-or-nothing output files (see atomic_file.h). */
#define _POSIX_C_SOURCE 200809L
#include "atomic_file.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static char *dup_str(const char *s)
{
    size_t n = strlen(s) + 1;
    char *d = malloc(n);
    if (d)
        memcpy(d, s, n);
    return d;
}

static void release(atomic_file *a)
{
    free(a->path);
    free(a->tmp);
    a->path = a->tmp = NULL;
    a->fd = -1;
    a->len = 0;
}

int atomic_file_open(atomic_file *a, const char *path, char *err, size_t errlen)
{
    static unsigned counter;
    memset(a, 0, offsetof(atomic_file, buf));
    a->fd = -1;
    a->path = dup_str(path);
    size_t tlen = strlen(path) + 64;
    a->tmp = malloc(tlen);
    if (!a->path || !a->tmp) {
        release(a);
        errmsg_set(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    for (int tries = 0;; tries++) {
        snprintf(a->tmp, tlen, "%s.tmp.%ld.%u", path, (long)getpid(), counter++);
        a->fd = open(a->tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0666);
        if (a->fd >= 0)
            return 0;
        int e = errno;
        if (e != EEXIST || tries == 100) {
            errmsg_set(err, errlen, "%s: cannot create the temporary file %s: %s", path, a->tmp,
                    strerror(e));
            release(a);
            return -1;
        }
    }
}

/* Writes buf out; records the first failure. */
static int drain(atomic_file *a)
{
    size_t off = 0;
    while (off < a->len && !a->error) {
        ssize_t w = write(a->fd, a->buf + off, a->len - off);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0) {
            a->error = errno;
            a->failed_call = "write";
        } else if (w == 0) {
            a->error = ENOSPC;
            a->failed_call = "write";
        } else {
            off += (size_t)w;
        }
    }
    a->len = 0;
    return a->error ? -1 : 0;
}

int atomic_file_write(atomic_file *a, const void *data, size_t n)
{
    if (!a->tmp || a->error)
        return -1;
    const char *p = data;
    while (n > 0) {
        size_t room = sizeof a->buf - a->len;
        size_t take = n < room ? n : room;
        memcpy(a->buf + a->len, p, take);
        a->len += take;
        p += take;
        n -= take;
        if (a->len == sizeof a->buf && drain(a) != 0)
            return -1;
    }
    return 0;
}

int atomic_file_printf(atomic_file *a, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line, sizeof line, fmt, ap);
    va_end(ap);
    if (n < 0 || (size_t)n >= sizeof line) {
        if (a->tmp && !a->error) {
            a->error = EOVERFLOW;
            a->failed_call = "formatting a line";
        }
        return -1;
    }
    return atomic_file_write(a, line, (size_t)n);
}

/* The directory of path, for its fsync ("." for a bare name). */
static void dir_of(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash)
        snprintf(dir, len, ".");
    else if (slash == path)
        snprintf(dir, len, "/");
    else
        snprintf(dir, len, "%.*s", (int)(slash - path), path);
}

int atomic_file_commit(atomic_file *a, char *err, size_t errlen)
{
    if (!a->tmp) {
        errmsg_set(err, errlen, "no file open");
        return -1;
    }
    drain(a);
    if (!a->error && fsync(a->fd) != 0) {
        a->error = errno;
        a->failed_call = "fsync";
    }
    if (close(a->fd) != 0 && !a->error) {
        a->error = errno;
        a->failed_call = "close";
    }
    a->fd = -1;
    if (!a->error && rename(a->tmp, a->path) != 0) {
        a->error = errno;
        a->failed_call = "rename";
    }
    if (a->error) {
        errmsg_set(err, errlen, "%s: %s failed: %s (the previous file, if any, is unchanged)",
                a->path, a->failed_call, strerror(a->error));
        unlink(a->tmp);
        release(a);
        return -1;
    }
    /* The rename is durable once the directory is. */
    char dir[4096];
    dir_of(a->path, dir, sizeof dir);
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    int rc = 0;
    if (dfd < 0 || fsync(dfd) != 0) {
        int e = errno;
        /* Some file systems refuse fsync on directories; the file itself is
         * in place either way. */
        if (e != EINVAL && e != EROFS && e != ENOTSUP) {
            errmsg_set(err, errlen, "%s: fsync of the directory %s failed: %s", a->path, dir,
                    strerror(e));
            rc = -1;
        }
    }
    if (dfd >= 0)
        close(dfd);
    release(a);
    return rc;
}

void atomic_file_abort(atomic_file *a)
{
    if (!a || !a->tmp)
        return;
    close(a->fd);
    unlink(a->tmp);
    release(a);
}

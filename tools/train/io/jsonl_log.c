/* jsonl_log.c - a JSON Lines file, a whole line per write (see
 * jsonl_log.h). */
#define _POSIX_C_SOURCE 200809L
#include "jsonl_log.h"
#include "errmsg.h"
#include "input_file.h"

#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* A file cut inside a line (a full disk, a crash of the machine) gets
 * the newline it lacks, so that what is appended starts a line of its
 * own: the cut line stays the only one that does not parse. */
static int end_line(int fd, off_t size)
{
    char last = '\n';
    if (size > 0 && pread(fd, &last, 1, size - 1) != 1)
        return -1;
    return last == '\n' || write(fd, "\n", 1) == 1 ? 0 : -1;
}

int jsonl_log_open(jsonl_log *l, const char *path, int append, char *err, size_t errlen)
{
    /* O_NONBLOCK: a FIFO is not waited for (without a reader it fails,
     * ENXIO); it, or a device, is refused on fstat before anything is
     * written (no O_TRUNC before that check). Appending reads the last
     * byte (end_line). */
    int mode = append ? O_RDWR : O_WRONLY;
    l->fd = open(path, mode | O_CREAT | O_APPEND | O_NONBLOCK | O_CLOEXEC, 0666);
    if (l->fd < 0) {
        int e = errno;
        return errmsg_set(err, errlen, "%s: %s", path,
                          e == ENXIO ? "a FIFO (no reader), not a regular file" : strerror(e));
    }
    struct stat sb;
    const char *bad = NULL;
    int e = 0;
    if (fstat(l->fd, &sb) != 0)
        e = errno;
    else if (!S_ISREG(sb.st_mode))
        bad = input_kind(sb.st_mode);
    else if (!append && ftruncate(l->fd, 0) != 0)
        e = errno;
    else if (append && end_line(l->fd, sb.st_size) != 0)
        e = errno;
    if (e || bad) {
        close(l->fd);
        l->fd = -1;
        if (bad)
            return errmsg_set(err, errlen, "%s is %s, not a regular file", path, bad);
        return errmsg_set(err, errlen, "%s: %s", path, strerror(e));
    }
    return 0;
}

int jsonl_log_write(jsonl_log *l, const cJSON *obj, char *err, size_t errlen)
{
    char *text = cJSON_PrintUnformatted(obj);
    size_t n = text ? strlen(text) : 0;
    char *line = text ? realloc(text, n + 1) : NULL;
    if (!line) {
        free(text);
        return errmsg_set(err, errlen, "out of host memory");
    }
    line[n++] = '\n'; /* no longer a C string: written by its length */
    /* One write of the line; a short one (a full disk, a signal) goes on
     * from where it stopped, so that a line is never left half-written
     * while the process lives. */
    size_t done = 0;
    while (done < n) {
        ssize_t w = write(l->fd, line + done, n - done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            int e = w < 0 ? errno : EIO;
            free(line);
            return errmsg_set(err, errlen, "writing: %s", strerror(e));
        }
        done += (size_t)w;
    }
    free(line);
    return 0;
}

int jsonl_log_close(jsonl_log *l, char *err, size_t errlen)
{
    if (l->fd < 0)
        return 0;
    int rc = close(l->fd);
    l->fd = -1;
    return rc == 0 ? 0 : errmsg_set(err, errlen, "closing: %s", strerror(errno));
}

void jsonl_add_number(cJSON *obj, const char *name, double v)
{
    if (isfinite(v))
        cJSON_AddNumberToObject(obj, name, v);
    else
        cJSON_AddNullToObject(obj, name);
}

void jsonl_add_float(cJSON *obj, const char *name, float v)
{
    char text[32] = "";
    for (int digits = 6; isfinite(v) && digits <= 9; digits++) { /* 9 always reads back */
        snprintf(text, sizeof text, "%.*g", digits, (double)v);
        if (strtof(text, NULL) == v)
            break;
    }
    jsonl_add_number(obj, name, isfinite(v) ? strtod(text, NULL) : (double)v);
}

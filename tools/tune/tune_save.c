/* tune_save.c - atomic write of a tuning file (see tune_save.h). */
#include "tune_save.h"
#include "atomic_file.h"
#include "dirpath.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* mkdir -p of path's directory. */
static int make_parent(const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX], failed[PATH_MAX];
    dirpath_split(path, dir, sizeof dir);
    if (dirpath_make(dir, failed, sizeof failed) != 0) {
        snprintf(err, errlen, "creating %s: %s", failed, strerror(errno));
        return -1;
    }
    return 0;
}

int tune_save(const char *path, const tuning *t, char *err, size_t errlen)
{
    char why[1024];
    size_t len;
    if (tuning_check(t, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s: not written, the tuning is invalid: %s", path, why);
        return -1;
    }
    char *text = tuning_format(t, &len);
    if (!text) {
        snprintf(err, errlen, "%s: out of host memory", path);
        return -1;
    }
    if (make_parent(path, err, errlen) != 0) {
        free(text);
        return -1;
    }
    atomic_file *f = malloc(sizeof *f);
    int rc = -1;
    if (!f) {
        snprintf(err, errlen, "%s: out of host memory", path);
    } else if (atomic_file_open(f, path, why, sizeof why) != 0) {
        snprintf(err, errlen, "%s", why);
    } else {
        atomic_file_write(f, text, len); /* a failure is reported by the commit */
        rc = atomic_file_commit(f, why, sizeof why);
        if (rc != 0)
            snprintf(err, errlen, "%s", why);
    }
    free(f);
    free(text);
    return rc;
}

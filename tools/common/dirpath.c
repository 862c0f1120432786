/* dirpath.c - see dirpath.h. */
#include "dirpath.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

const char *dirpath_split(const char *path, char *dir, size_t len)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, len, ".");
        return path;
    }
    /* up to the last '/', or the '/' itself for the root */
    snprintf(dir, len, "%.*s", slash == path ? 1 : (int)(slash - path), path);
    return slash + 1;
}

/* mkdir of one directory; one that is there already is fine. */
static int make_one(const char *dir, char *failed, size_t len)
{
    if (mkdir(dir, 0755) == 0 || errno == EEXIST)
        return 0;
    int e = errno;
    if (failed && len)
        snprintf(failed, len, "%s", dir);
    errno = e;
    return -1;
}

int dirpath_make(const char *dir, char *failed, size_t len)
{
    char prefix[PATH_MAX];
    if (!*dir || strlen(dir) >= sizeof prefix) {
        if (failed && len)
            snprintf(failed, len, "%s", dir);
        errno = *dir ? ENAMETOOLONG : ENOENT;
        return -1;
    }
    /* every prefix that ends before a '/' (the root's excepted), then dir */
    snprintf(prefix, sizeof prefix, "%s", dir);
    for (char *sep = strchr(prefix + 1, '/'); sep; sep = strchr(sep + 1, '/')) {
        *sep = '\0';
        int rc = make_one(prefix, failed, len);
        *sep = '/';
        if (rc != 0)
            return -1;
    }
    return make_one(prefix, failed, len);
}

/* output_file.c - the check of an output file (see output_file.h). */
#include "output_file.h"
#include "dirpath.h"
#include "errmsg.h"
#include "input_file.h"

#include <errno.h>
#include <limits.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int output_check(const char *flag, const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    const char *base = dirpath_split(path, dir, sizeof dir);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode))
            return errmsg_set(err, errlen, "%s: %s is a directory; expected a file name", flag,
                              path);
        if (!S_ISREG(sb.st_mode))
            return errmsg_set(err, errlen,
                              "%s: %s is %s, not a regular file; writing it would replace it",
                              flag, path, input_kind(sb.st_mode));
    }
    if (!*base || !strcmp(base, ".") || !strcmp(base, ".."))
        return errmsg_set(err, errlen, "%s: %s names a directory; expected a file name", flag,
                          path);
    if (stat(dir, &sb) != 0) {
        int e = errno;
        return errmsg_set(err, errlen, "%s: %s: the directory %s %s", flag, path, dir,
                          e == ENOENT ? "does not exist" : strerror(e));
    }
    if (!S_ISDIR(sb.st_mode))
        return errmsg_set(err, errlen, "%s: %s: %s is not a directory", flag, path, dir);
    if (access(dir, W_OK | X_OK) != 0) {
        int e = errno;
        return errmsg_set(err, errlen, "%s: %s: cannot create files in the directory %s: %s",
                          flag, path, dir, strerror(e));
    }
    return 0;
}

/* write_target.c - which paths a write may replace (see write_target.h). */
#include "write_target.h"

#include <stdio.h>
#include <sys/stat.h>

/* A node that is not a regular file, for a message. */
static const char *node_name(mode_t mode)
{
    static const struct {
        mode_t type;
        const char *name;
    } names[] = {{S_IFIFO, "a FIFO"},
                 {S_IFCHR, "a character device"},
                 {S_IFBLK, "a block device"},
                 {S_IFSOCK, "a socket"},
                 {S_IFDIR, "a directory"}};
    for (size_t i = 0; i < sizeof names / sizeof *names; i++)
        if ((mode & S_IFMT) == names[i].type)
            return names[i].name;
    return "an unknown kind of file";
}

bool clg__target_replaceable(const char *path, char *why, size_t whylen)
{
    struct stat at, to;
    if (lstat(path, &at) != 0 || S_ISREG(at.st_mode))
        return true;
    bool link = S_ISLNK(at.st_mode);
    /* a link that leads nowhere (or into a loop) is replaced as itself */
    if (link && (stat(path, &to) != 0 || S_ISREG(to.st_mode)))
        return true;
    if (why == NULL)
        return false;
    if (link)
        snprintf(why, whylen,
                 "'%s' is a symbolic link to %s, not to a regular file; it would be replaced", path,
                 node_name(to.st_mode));
    else if (S_ISDIR(at.st_mode))
        snprintf(why, whylen, "'%s' is a directory, not a regular file; expected a file name",
                 path);
    else
        snprintf(why, whylen, "'%s' is %s, not a regular file; it would be replaced", path,
                 node_name(at.st_mode));
    return false;
}

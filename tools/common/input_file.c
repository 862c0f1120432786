/* input_file.c - opening and reading an input file (see input_file.h). */
#include "input_file.h"
#include "errmsg.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

const char *input_kind(mode_t mode)
{
    switch (mode & S_IFMT) {
    case S_IFIFO: return "a FIFO";
    case S_IFCHR: return "a character device";
    case S_IFBLK: return "a block device";
    case S_IFSOCK: return "a socket";
    case S_IFDIR: return "a directory";
    case S_IFLNK: return "a symbolic link";
    case S_IFREG: return "a regular file";
    default: return "not a regular file";
    }
}

int input_check(const char *flag, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0) {
        int e = errno;
        return errmsg_set(err, errlen, "%s: %s: %s", flag, path, strerror(e));
    }
    if (!S_ISREG(sb.st_mode))
        return errmsg_set(err, errlen, "%s: %s is %s, not a regular file", flag, path,
                          input_kind(sb.st_mode));
    return 0;
}

int input_check_present(const char *flag, const char *path, char *err, size_t errlen)
{
    struct stat sb;
    if (lstat(path, &sb) != 0 && errno == ENOENT)
        return 0;
    return input_check(flag, path, err, errlen);
}

int input_open(const char *path, uint64_t max_bytes, size_t *size, char *why, size_t whylen)
{
    *size = 0;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0) {
        int e = errno;
        errmsg_set(why, whylen, "%s", strerror(e));
        errno = e;
        return -1;
    }
    struct stat sb;
    int flags;
    if (fstat(fd, &sb) != 0 || (flags = fcntl(fd, F_GETFL)) < 0 ||
        fcntl(fd, F_SETFL, flags & ~O_NONBLOCK) != 0) {
        int e = errno;
        errmsg_set(why, whylen, "%s", strerror(e));
    } else if (!S_ISREG(sb.st_mode)) {
        errmsg_set(why, whylen, "is %s, not a regular file", input_kind(sb.st_mode));
    } else if ((uint64_t)sb.st_size > max_bytes) {
        errmsg_set(why, whylen, "is %lld bytes, more than the %llu it may have",
                   (long long)sb.st_size, (unsigned long long)max_bytes);
    } else if ((uint64_t)sb.st_size > SIZE_MAX) {
        errmsg_set(why, whylen, "is %lld bytes, more than this host can address",
                   (long long)sb.st_size);
    } else {
        *size = (size_t)sb.st_size;
        return fd;
    }
    close(fd);
    errno = 0;
    return -1;
}

int input_read(int fd, void *buf, size_t size, char *why, size_t whylen)
{
    size_t got = 0;
    while (got < size) {
        ssize_t r = read(fd, (char *)buf + got, size - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0)
            return errmsg_set(why, whylen, "cannot read it: %s", strerror(errno));
        if (r == 0)
            return errmsg_set(why, whylen, "shrank while it was read (%zu of %zu bytes)", got,
                              size);
        got += (size_t)r;
    }
    char extra;
    ssize_t r;
    while ((r = read(fd, &extra, 1)) < 0 && errno == EINTR)
        ;
    if (r > 0)
        return errmsg_set(why, whylen, "grew while it was read (past its %zu bytes)", size);
    return 0;
}

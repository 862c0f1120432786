/* errmsg.h - error messages of the tools' code that does not print
 * (tools/train, tools/tune, bench): a function that can fail takes a
 * caller's buffer (err, errlen) and writes one line saying what was wrong
 * into it. */
#ifndef CLGRAD_TOOLS_ERRMSG_H
#define CLGRAD_TOOLS_ERRMSG_H

#include <stddef.h>

/* printf into err (at most errlen bytes, always terminated); nothing when
 * err is NULL or errlen is 0. Returns -1, so that a failing function can
 * end with `return errmsg_set(err, errlen, ...);`. */
int errmsg_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CLGRAD_TOOLS_ERRMSG_H */

/* errmsg.h - error messages of the tools' code that does not print: a
 * function that can fail takes a caller's buffer (err, errlen) and writes
 * one line saying what was wrong into it. Used by tools/tune; meant for
 * tools/train too, whose errbuf.c has the same function as set_err (void):
 * this one has its own name, so that a program linking both libraries
 * never gets one in place of the other. */
#ifndef CLGRAD_TOOLS_ERRMSG_H
#define CLGRAD_TOOLS_ERRMSG_H

#include <stddef.h>

/* printf into err (at most errlen bytes, always terminated); nothing when
 * err is NULL or errlen is 0. Returns -1, so that a failing function can
 * end with `return errmsg_set(err, errlen, ...);`. */
int errmsg_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

#endif /* CLGRAD_TOOLS_ERRMSG_H */

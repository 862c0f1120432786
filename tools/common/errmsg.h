/* errmsg.h - error messages of the tools' code that does not print
 * (tools/train, tools/gemm, tools/tune, bench): a function that can fail
 * takes a caller's buffer (err, errlen) and writes one line saying what
 * was wrong into it. */
#ifndef CLGRAD_TOOLS_ERRMSG_H
#define CLGRAD_TOOLS_ERRMSG_H

#include <stddef.h>

/* printf into err (at most errlen bytes, always terminated); nothing when
 * err is NULL or errlen is 0. Returns -1, so that a failing function can
 * end with `return errmsg_set(err, errlen, ...);`. */
int errmsg_set(char *err, size_t errlen, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));

/* s as one line of valid UTF-8, into buf (at most len bytes, always
 * terminated, cut before an escape that does not fit): a control
 * character is written as an escape (\n, \r, \t, else \xNN) and so is
 * each byte that is not part of a valid UTF-8 sequence (\xNN); the rest,
 * a backslash included, as it is. For a message that names a path (or
 * holds anything else read from outside) before it is printed: a file
 * name with a newline or stray bytes cannot forge lines or garble a
 * terminal. Returns buf. */
char *errmsg_escape(const char *s, char *buf, size_t len);

/* The size of a buffer that holds errmsg_escape of n bytes whole. */
#define ERRMSG_ESCAPED_SIZE(n) (4 * (n) + 1)

#endif /* CLGRAD_TOOLS_ERRMSG_H */

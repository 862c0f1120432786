/* errbuf.h - error messages of the tools' code that does not print: a
 * function that can fail takes a caller's buffer (err, errlen) and writes
 * one line saying what was wrong into it. Shared by tools/tune and
 * clgrad-bench (and meant for tools/train, whose own errbuf.h has the same
 * set_err). */
#ifndef CLGRAD_TOOLS_ERRBUF_H
#define CLGRAD_TOOLS_ERRBUF_H

#include <stddef.h>

/* printf into err (at most errlen bytes, always terminated); nothing when
 * err is NULL or errlen is 0. Returns -1, so that a failing function can
 * end with `return set_err(err, errlen, ...);`. */
int set_err(char *err, size_t errlen, const char *fmt, ...) __attribute__((format(printf, 3, 4)));

#endif /* CLGRAD_TOOLS_ERRBUF_H */

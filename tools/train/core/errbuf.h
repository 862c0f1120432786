/* errbuf.h - the trainer's error messages: every function of train_core
 * that can fail takes a caller's buffer (err, errlen) and writes one line
 * saying what was wrong into it, rather than printing. */
#ifndef CLGRAD_TRAIN_ERRBUF_H
#define CLGRAD_TRAIN_ERRBUF_H

#include <stddef.h>

/* printf into err (at most errlen bytes, always terminated); nothing when
 * err is NULL or errlen is 0. */
#if defined(__GNUC__)
__attribute__((format(printf, 3, 4)))
#endif
void set_err(char *err, size_t errlen, const char *fmt, ...);

#endif /* CLGRAD_TRAIN_ERRBUF_H */

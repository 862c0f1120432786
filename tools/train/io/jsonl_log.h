/* jsonl_log.h - a JSON Lines file written one line at a time (--log):
 * each line is one write(2) of the whole object and its newline on a
 * descriptor opened with O_APPEND, and nothing is held back in the
 * process. A reader tailing the file sees each line as soon as it is
 * written, and a process killed at any moment (kill -9 included) leaves
 * every line it finished whole: at worst the last one is cut short. */
#ifndef TRAIN_JSONL_LOG_H
#define TRAIN_JSONL_LOG_H

#include <cjson/cJSON.h>
#include <stddef.h>

typedef struct jsonl_log {
    int fd; /* -1 when closed */
} jsonl_log;

/* Opens path for writing (mode 0666 less the umask): appended to when
 * append is set, else emptied first. Only a regular file (or a new one) is
 * written: a FIFO, a device or a socket is refused without blocking or
 * writing anything. Returns 0, or -1 with a message in err (*l closed). */
int jsonl_log_open(jsonl_log *l, const char *path, int append, char *err, size_t errlen);

/* Writes obj as one line. Returns 0, or -1 with a message in err (the
 * file stays open: its lines so far are whole). */
int jsonl_log_write(jsonl_log *l, const cJSON *obj, char *err, size_t errlen);

/* Closes the file (nothing when closed). Returns 0, or -1 with a message
 * in err. */
int jsonl_log_close(jsonl_log *l, char *err, size_t errlen);

/* obj's member name = v, or null where v is not finite (NaN and inf are
 * not JSON). */
void jsonl_add_number(cJSON *obj, const char *name, double v);
/* The same for a float, as the shortest decimal that reads back as v
 * (lr 0.0001, not the double 0.00010000000474974513). */
void jsonl_add_float(cJSON *obj, const char *name, float v);

#endif /* TRAIN_JSONL_LOG_H */

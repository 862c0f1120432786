/* options_values.h - the custom parsers and stores of the core's flag
 * table (options_table.c), in options_values.c. Signatures are flag_def's
 * parse and store (flags.h). */
#ifndef TRAIN_OPTIONS_VALUES_H
#define TRAIN_OPTIONS_VALUES_H

#include "options.h"

#define TRAIN_MAX_WIDTH 65536u

int opt_parse_bytes(const char *flag, const char *s, void *opts, char *err, size_t errlen);
/* --vram's number (512M, 8G: at least 1M) into *out, for any flag. */
int opt_parse_byte_count(const char *flag, const char *s, uint64_t *out, char *err,
                         size_t errlen);
int opt_parse_hidden(const char *flag, const char *s, void *opts, char *err, size_t errlen);
int opt_parse_loss_scale(const char *flag, const char *val, void *opts, char *err, size_t errlen);
void opt_store_hidden(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_micro_batch(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_epochs(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_steps(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_lr(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_base_batch(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_config(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_loss_scale(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_nonfinite(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_train_limit(const flag_def *f, const flag_run *r, char *buf, size_t len);
void opt_store_data(const flag_def *f, const flag_run *r, char *buf, size_t len);
int opt_parse_grad_path(const char *flag, const char *val, void *opts, char *err, size_t errlen);

#endif /* TRAIN_OPTIONS_VALUES_H */

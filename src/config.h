/* config.h - configuration checks and the sizes that follow from a config. */
#ifndef CLGRAD_CONFIG_H
#define CLGRAD_CONFIG_H

#include "internal.h"
#include "clg_layout.h"

/* Copies a caller's config (of its own struct_size) over the defaults of
 * its optimizer into *full; fails on a bad struct_size. */
clg_status clg__config_import(clg_context *ctx, const clg_config *user, clg_config *full,
                              const char *who);
/* Validates every field; the message names the field and its value.
 * clg_model_create and clg_model_estimate(_shard) both call it. */
clg_status clg__config_check(clg_context *ctx, const clg_config *config, const char *who);
/* Optimizer state arenas the config needs (0..3). */
size_t clg__state_count(const clg_config *config);
/* Bytes per element of a dtype (0 for CLG_DTYPE_NONE). */
size_t clg__dtype_size(clg_dtype dtype);

#endif /* CLGRAD_CONFIG_H */

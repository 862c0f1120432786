/* sized.h - the structs that grow (clg_config, clg_stats, clg_device_info,
 * clg_model_plan): their smallest accepted struct_size, and the copies that
 * never read or write past the caller's struct_size (see "Structs that
 * grow" in clgrad.h). */
#ifndef CLGRAD_SIZED_H
#define CLGRAD_SIZED_H

#include "internal.h"

#include <stddef.h>

/* The first sized layout of each struct (ABI 1). A field added later goes
 * at the end, and these stay as they are. */
#define CLG__CONFIG_SIZE_MIN (offsetof(clg_config, seed) + sizeof(uint64_t))
#define CLG__STATS_SIZE_MIN offsetof(clg_stats, cycles)
#define CLG__PLAN_SIZE_MIN        (offsetof(clg_model_plan, total) + sizeof(uint64_t))
#define CLG__DEVICE_INFO_SIZE_MIN (offsetof(clg_device_info, has_fp64) + sizeof(int))

/* Checks a caller's struct_size against [min, ...): below min is
 * CLG_ERR_INVALID_ARGUMENT naming type and who. */
clg_status clg__sized_check(clg_context *ctx, size_t user_size, size_t min, const char *type,
                            const char *who);

/* Input: overlays the caller's first user_size bytes on *full (which holds
 * the defaults), after clg__sized_check; bytes of a newer caller's larger
 * struct that this library does not know must be zero (else
 * CLG_ERR_UNSUPPORTED). full->struct_size becomes full_size. */
clg_status clg__sized_import(clg_context *ctx, void *full, size_t full_size, const void *user,
                             size_t user_size, size_t min, const char *type, const char *who);

/* Output: writes *full into the caller's first user_size bytes (zeroing what
 * a newer caller has beyond full_size), keeping the caller's struct_size. */
void clg__sized_export(void *user, size_t user_size, const void *full, size_t full_size);

#endif /* CLGRAD_SIZED_H */

/* sized.c - copies of the structs that grow, bounded by the caller's
 * struct_size in both directions (the scheme of Linux's
 * copy_struct_from_user: older callers get defaults for what they lack,
 * newer callers may pass fields this library does not know only as zeros). */
#include "sized.h"

#include <string.h>

clg_status clg__sized_check(clg_context *ctx, size_t user_size, size_t min, const char *type,
                            const char *who)
{
    if (user_size < min)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %s.struct_size is %zu, below the smallest layout (%zu bytes): "
                         "initialize the struct with its init function",
                         who, type, user_size, min);
    return CLG_SUCCESS;
}

clg_status clg__sized_import(clg_context *ctx, void *full, size_t full_size, const void *user,
                             size_t user_size, size_t min, const char *type, const char *who)
{
    clg_status st = clg__sized_check(ctx, user_size, min, type, who);
    if (st != CLG_SUCCESS)
        return st;
    const unsigned char *u = user;
    for (size_t i = full_size; i < user_size; i++)
        if (u[i] != 0)
            return clg__fail(ctx, CLG_ERR_UNSUPPORTED,
                             "%s: %s has a field at byte %zu that this library (clgrad %s, "
                             "%zu-byte %s) does not know; it must be zero here",
                             who, type, i, CLGRAD_VERSION_STRING, full_size, type);
    memcpy(full, user, user_size < full_size ? user_size : full_size);
    size_t own = full_size;
    memcpy(full, &own, sizeof own); /* struct_size is the first member */
    return CLG_SUCCESS;
}

void clg__sized_export(void *user, size_t user_size, const void *full, size_t full_size)
{
    unsigned char *u = user;
    memcpy(u, full, user_size < full_size ? user_size : full_size);
    if (user_size > full_size)
        memset(u + full_size, 0, user_size - full_size);
    memcpy(u, &user_size, sizeof user_size);
}

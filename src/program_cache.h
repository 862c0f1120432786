/* program_cache.h - private to program.c and program_cache.c: the on-disk
 * cache of compiled program binaries. */
#ifndef CLGRAD_PROGRAM_CACHE_H
#define CLGRAD_PROGRAM_CACHE_H

#include "internal.h"

#define CLG_CACHE_KEY_SIZE 32

/* Key of a program: SHA-256 over the cache format version, the full source
 * (parts concatenated), the build options, and the device name, driver
 * version and platform version of ctx's device. */
void clg__cache_key(const clg_context *ctx, const char *const *parts, size_t nparts,
                    const char *options, uint8_t key[CLG_CACHE_KEY_SIZE]);

/* SHA-256 of ctx's device name, driver version, platform version and
 * device version: the device fields of the key above, behind
 * clg_context_device_key (clgrad.h). */
void clg__device_key(const clg_context *ctx, uint8_t key[CLG_CACHE_KEY_SIZE]);

/* The cache directory (malloc'ed), or NULL when the cache is off
 * (CLGRAD_CACHE_DIR=off) or no location can be found. */
char *clg__cache_dir(void);

typedef enum clg_cache_result {
    CLG_CACHE_MISS = 0,     /* no entry (or no cache) */
    CLG_CACHE_HIT = 1,      /* *binary holds the entry's binary */
    CLG_CACHE_REJECTED = 2, /* an entry that failed the checks below */
} clg_cache_result;

/* Loads the binary stored under key; *binary = NULL unless CLG_CACHE_HIT.
 * A binary comes back only if the entry's magic, format version, key,
 * length, file size and digest (SHA-256 of its header and binary) all
 * match, i.e. clg__cache_store wrote it for this key: only then may it be
 * given to clCreateProgramWithBinary, since some drivers abort the process
 * on a damaged binary. A damaged, truncated or foreign entry is
 * CLG_CACHE_REJECTED. The caller frees *binary. */
clg_cache_result clg__cache_load(const uint8_t key[CLG_CACHE_KEY_SIZE], unsigned char **binary,
                                 size_t *size);

/* Stores binary under key atomically (temporary file, then rename); true
 * when the entry was written. Errors are not failures: the cache only ever
 * saves time. */
bool clg__cache_store(const uint8_t key[CLG_CACHE_KEY_SIZE], const unsigned char *binary,
                      size_t size);

#endif /* CLGRAD_PROGRAM_CACHE_H */

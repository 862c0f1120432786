/* program_cache.c - compiled program binaries on disk, so that a second run
 * skips the OpenCL compiler.
 *
 * One file per program: <dir>/<64 hex digits of the key>.bin holding
 *     magic "CLGRADPC" | u32 format version | u32 0 | key[32] |
 *     u64 binary length | digest[32] | binary
 * (integers little-endian), where digest is the SHA-256 of the 56 header
 * bytes before it followed by the binary. An entry whose magic, version, key,
 * length, file size or digest does not match is rejected; the program is
 * rebuilt from source and the entry replaced (program.c, which also checks
 * that a binary that passes is the program's: the digest is no signature,
 * anyone can recompute it over another binary). Files are written to a
 * temporary name in the same directory (mkostemp: O_EXCL) and renamed, so
 * readers never see half an entry; only over a regular file (or nothing:
 * write_target.h), so that a FIFO or a device put at an entry's name is
 * never replaced, and that entry is just not stored.
 *
 * Why the checks must all pass before a driver sees the bytes: drivers do not
 * reliably reject a damaged binary. Some build it and fail later; Mesa's
 * rusticl panics and aborts the whole process inside
 * clCreateProgramWithBinary. So the only binaries clgrad hands to a driver
 * are those this file wrote for the same key, bit for bit. The digest covers
 * the header too, so that a payload with its own valid checksum (another
 * entry's, or one made from its bytes alone) is not accepted under this
 * key. */
#define _GNU_SOURCE
#include "program_cache.h"
#include "write_target.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <unistd.h>

#define CACHE_MAGIC "CLGRADPC"
/* 2: the digest covers the header as well as the binary (1: binary only). */
#define CACHE_FORMAT  2u
#define DIGEST_OFFSET (8 + 4 + 4 + CLG_CACHE_KEY_SIZE + 8)
#define HEADER_SIZE   (DIGEST_OFFSET + 32)
/* A program binary larger than this is not something we wrote. */
#define CACHE_MAX_BINARY ((uint64_t)1 << 31)

static void hash_field(clg_sha256 *s, const void *data, size_t n)
{
    /* Length-prefixed, so that ("ab", "c") and ("a", "bc") differ. */
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)((uint64_t)n >> (8 * i));
    clg__sha256_update(s, len, 8);
    clg__sha256_update(s, data, n);
}

void clg__cache_key(const clg_context *ctx, const char *const *parts, size_t nparts,
                    const char *options, uint8_t key[CLG_CACHE_KEY_SIZE])
{
    clg_sha256 s;
    clg__sha256_init(&s);
    const char tag[] = "clgrad program cache";
    uint32_t format = CACHE_FORMAT;
    hash_field(&s, tag, sizeof tag - 1);
    hash_field(&s, &format, sizeof format);
    uint64_t total = 0;
    for (size_t i = 0; i < nparts; i++)
        total += strlen(parts[i]);
    /* the source as one field: how it is chunked does not matter */
    uint8_t len[8];
    for (int i = 0; i < 8; i++)
        len[i] = (uint8_t)(total >> (8 * i));
    clg__sha256_update(&s, len, 8);
    for (size_t i = 0; i < nparts; i++)
        clg__sha256_update(&s, parts[i], strlen(parts[i]));
    hash_field(&s, options, strlen(options));
    hash_field(&s, ctx->info.name, strlen(ctx->info.name));
    hash_field(&s, ctx->info.driver_version, strlen(ctx->info.driver_version));
    hash_field(&s, ctx->info.platform_version, strlen(ctx->info.platform_version));
    hash_field(&s, ctx->info.device_version, strlen(ctx->info.device_version));
    clg__sha256_final(&s, key);
}

/* The device part of the key above, on its own: the fields that make a
 * compiled binary foreign (device name, driver, platform and device
 * version), under a tag of their own so that no program key equals it. */
void clg__device_key(const clg_context *ctx, uint8_t key[CLG_CACHE_KEY_SIZE])
{
    clg_sha256 s;
    clg__sha256_init(&s);
    const char tag[] = "clgrad device key";
    hash_field(&s, tag, sizeof tag - 1);
    hash_field(&s, ctx->info.name, strlen(ctx->info.name));
    hash_field(&s, ctx->info.driver_version, strlen(ctx->info.driver_version));
    hash_field(&s, ctx->info.platform_version, strlen(ctx->info.platform_version));
    hash_field(&s, ctx->info.device_version, strlen(ctx->info.device_version));
    clg__sha256_final(&s, key);
}

static char *join(const char *a, const char *b)
{
    size_t n = strlen(a) + strlen(b) + 1;
    char *s = malloc(n);
    if (s)
        snprintf(s, n, "%s%s", a, b);
    return s;
}

char *clg__cache_dir(void)
{
    const char *env = getenv("CLGRAD_CACHE_DIR");
    if (env && *env) {
        if (strcasecmp(env, "off") == 0)
            return NULL;
        return strdup(env);
    }
    const char *xdg = getenv("XDG_CACHE_HOME");
    if (xdg && xdg[0] == '/') /* the XDG spec ignores relative values */
        return join(xdg, "/clgrad");
    const char *home = getenv("HOME");
    if (home && *home)
        return join(home, "/.cache/clgrad");
    return NULL;
}

/* mkdir -p; 0 on success. */
static int make_dirs(const char *path)
{
    char *p = strdup(path);
    if (!p)
        return -1;
    int rc = 0;
    for (char *s = p + 1;; s++) {
        if (*s == '/' || *s == '\0') {
            char c = *s;
            *s = '\0';
            if (mkdir(p, 0755) != 0 && errno != EEXIST) {
                rc = -1;
                break;
            }
            *s = c;
            if (c == '\0')
                break;
        }
    }
    free(p);
    return rc;
}

static char *entry_path(const char *dir, const uint8_t key[CLG_CACHE_KEY_SIZE])
{
    char hex[2 * CLG_CACHE_KEY_SIZE + 1];
    for (int i = 0; i < CLG_CACHE_KEY_SIZE; i++)
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    size_t n = strlen(dir) + sizeof hex + 8;
    char *path = malloc(n);
    if (path)
        snprintf(path, n, "%s/%s.bin", dir, hex);
    return path;
}

static void put_u32(uint8_t *p, uint32_t v)
{
    for (int i = 0; i < 4; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static void put_u64(uint8_t *p, uint64_t v)
{
    for (int i = 0; i < 8; i++)
        p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_u64(const uint8_t *p)
{
    uint64_t v = 0;
    for (int i = 0; i < 8; i++)
        v |= (uint64_t)p[i] << (8 * i);
    return v;
}

static uint32_t get_u32(const uint8_t *p)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)p[i] << (8 * i);
    return v;
}

/* The entry's digest: SHA-256 of the header up to the digest field, then
 * the binary. */
static void entry_digest(const uint8_t header[DIGEST_OFFSET], const unsigned char *binary,
                         size_t size, uint8_t digest[32])
{
    clg_sha256 s;
    clg__sha256_init(&s);
    clg__sha256_update(&s, header, DIGEST_OFFSET);
    clg__sha256_update(&s, binary, size);
    clg__sha256_final(&s, digest);
}

/* Reads n bytes into in, or writes n bytes from out (when out is not
 * NULL), retrying after signals; -1 on an error or an early end of file. */
static int transfer_all(int fd, void *in, const void *out, size_t n)
{
    for (size_t done = 0; done < n;) {
        ssize_t r = out ? write(fd, (const uint8_t *)out + done, n - done)
                        : read(fd, (uint8_t *)in + done, n - done);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            return -1;
        done += (size_t)r;
    }
    return 0;
}

static int read_all(int fd, void *buf, size_t n)
{
    return transfer_all(fd, buf, NULL, n);
}

static int write_all(int fd, const void *buf, size_t n)
{
    return transfer_all(fd, NULL, buf, n);
}

clg_cache_result clg__cache_load(const uint8_t key[CLG_CACHE_KEY_SIZE], unsigned char **binary,
                                 size_t *size)
{
    *binary = NULL;
    *size = 0;
    char *dir = clg__cache_dir();
    if (!dir)
        return CLG_CACHE_MISS;
    char *path = entry_path(dir, key);
    free(dir);
    if (!path)
        return CLG_CACHE_MISS;
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC); /* a FIFO: no wait */
    free(path);
    if (fd < 0)
        return CLG_CACHE_MISS;

    clg_cache_result ok = CLG_CACHE_REJECTED;
    unsigned char *data = NULL;
    uint8_t h[HEADER_SIZE];
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || read_all(fd, h, sizeof h) != 0)
        goto done;
    uint64_t n = get_u64(h + 48);
    if (memcmp(h, CACHE_MAGIC, 8) != 0 || get_u32(h + 8) != CACHE_FORMAT ||
        memcmp(h + 16, key, CLG_CACHE_KEY_SIZE) != 0 || n == 0 || n > CACHE_MAX_BINARY ||
        (uint64_t)st.st_size != HEADER_SIZE + n)
        goto done;
    data = malloc((size_t)n);
    if (!data || read_all(fd, data, (size_t)n) != 0)
        goto done;
    uint8_t digest[32];
    entry_digest(h, data, (size_t)n, digest);
    if (memcmp(digest, h + DIGEST_OFFSET, 32) != 0)
        goto done;
    *binary = data;
    *size = (size_t)n;
    data = NULL;
    ok = CLG_CACHE_HIT;
done:
    free(data);
    close(fd);
    return ok;
}

bool clg__cache_store(const uint8_t key[CLG_CACHE_KEY_SIZE], const unsigned char *binary,
                      size_t size)
{
    if (!binary || size == 0)
        return false;
    char *dir = clg__cache_dir();
    if (!dir)
        return false;
    bool stored = false;
    char *path = entry_path(dir, key);
    char *tmp = path ? join(path, ".tmp-XXXXXX") : NULL;
    /* a FIFO, a device or a directory at the entry's name is left alone */
    if (!path || !tmp || !clg__target_replaceable(path, NULL, 0) || make_dirs(dir) != 0)
        goto done;
    int fd = mkostemp(tmp, O_CLOEXEC);
    if (fd < 0)
        goto done;
    uint8_t h[HEADER_SIZE];
    memcpy(h, CACHE_MAGIC, 8);
    put_u32(h + 8, CACHE_FORMAT);
    put_u32(h + 12, 0);
    memcpy(h + 16, key, CLG_CACHE_KEY_SIZE);
    put_u64(h + 48, size);
    entry_digest(h, binary, size, h + DIGEST_OFFSET);
    int ok = write_all(fd, h, sizeof h) == 0 && write_all(fd, binary, size) == 0;
    /* entries are readable by others, like any cache */
    ok = ok && fchmod(fd, 0644) == 0;
    ok = close(fd) == 0 && ok;
    stored = ok && rename(tmp, path) == 0;
    if (!stored)
        unlink(tmp);
done:
    free(tmp);
    free(path);
    free(dir);
    return stored;
}

/* ------------------------------------------------ public (clgrad.h) */

clg_status clg_cache_dir(char *buf, size_t size)
{
    if (!buf || size == 0)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_cache_dir: buf is NULL or size is 0");
    char *dir = clg__cache_dir();
    if (!dir)
        return clg__fail(NULL, CLG_ERR_UNSUPPORTED,
                         "clg_cache_dir: no cache directory (CLGRAD_CACHE_DIR is off, or none "
                         "of CLGRAD_CACHE_DIR, XDG_CACHE_HOME and HOME is set)");
    size_t n = strlen(dir) + 1;
    if (n > size) {
        free(dir);
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT,
                         "clg_cache_dir: the path needs %zu bytes, size is %zu", n, size);
    }
    memcpy(buf, dir, n);
    free(dir);
    return CLG_SUCCESS;
}

clg_status clg_context_device_key(const clg_context *ctx, char key[65])
{
    if (!ctx)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_context_device_key: ctx is NULL");
    if (!key)
        return clg__fail((clg_context *)ctx, CLG_ERR_INVALID_ARGUMENT,
                         "clg_context_device_key: key is NULL");
    uint8_t k[CLG_CACHE_KEY_SIZE];
    clg__device_key(ctx, k);
    for (int i = 0; i < CLG_CACHE_KEY_SIZE; i++)
        snprintf(key + 2 * i, 3, "%02x", k[i]);
    return CLG_SUCCESS;
}

/* test_program_cache.c - the on-disk program cache: a second load (new
 * context) comes from the cache, CLGRAD_CACHE_DIR=off never caches, default
 * locations, and damaged, truncated or foreign entries fall back to a source
 * build and are repaired. Build failures carry the build log. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"
#include "testutil.h"

#include <dirent.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define HEADER_SIZE 88 /* magic 8, version 4, reserved 4, key 32, length 8, sha 32 */

static char *tmp;        /* scratch directory of this test run */
static char cache[4096]; /* CLGRAD_CACHE_DIR, nested to test mkdir -p */

static int group_setup(void **state)
{
    (void)state;
    tu_require_platform();
    unsetenv("CLGRAD_DEVICE");
    tmp = tu_mkdtemp("clgrad-cache-test");
    snprintf(cache, sizeof cache, "%s/nested/cache", tmp);
    return 0;
}

static int group_teardown(void **state)
{
    (void)state;
    tu_rmdir_tree(tmp);
    free(tmp);
    return 0;
}

static int setup(void **state)
{
    (void)state;
    setenv("CLGRAD_CACHE_DIR", cache, 1);
    return 0;
}

/* Number of finished entries in dir; the path of the last one in *path. */
static int entries(const char *dir, char *path, size_t cap, int *temps)
{
    int n = 0;
    if (temps)
        *temps = 0;
    DIR *d = opendir(dir);
    if (!d)
        return 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        size_t len = strlen(e->d_name);
        if (strstr(e->d_name, ".tmp") && temps)
            (*temps)++;
        if (len == 64 + 4 && strcmp(e->d_name + 64, ".bin") == 0) {
            n++;
            if (path)
                snprintf(path, cap, "%s/%s", dir, e->d_name);
        }
    }
    closedir(d);
    return n;
}

/* Loads program "stream" with options in a fresh context; returns from_cache. */
static int load(const char *options, char *kernel_names, size_t cap)
{
    clg_context *ctx = tu_context_or_skip();
    cl_program p = NULL;
    int cached = -1;
    clg_status st = clg_context_program(ctx, "stream", options, &p, &cached);
    if (st != CLG_SUCCESS)
        fprintf(stderr, "clg_context_program: %s\n", clg_last_error(ctx));
    assert_int_equal(st, CLG_SUCCESS);
    assert_non_null(p);
    cl_build_status bs = CL_BUILD_ERROR;
    assert_int_equal(clGetProgramBuildInfo(p, clg_context_device(ctx), CL_PROGRAM_BUILD_STATUS,
                                           sizeof bs, &bs, NULL),
                     CL_SUCCESS);
    assert_int_equal(bs, CL_BUILD_SUCCESS);
    if (kernel_names) {
        kernel_names[0] = '\0';
        size_t n = 0;
        /* a program without kernels may answer CL_INVALID_VALUE: then "" */
        if (clGetProgramInfo(p, CL_PROGRAM_KERNEL_NAMES, cap, kernel_names, &n) != CL_SUCCESS)
            kernel_names[0] = '\0';
    }
    clg_context_destroy(ctx);
    assert_true(cached == 0 || cached == 1);
    return cached;
}

static void test_second_load_comes_from_cache(void **state)
{
    (void)state;
    char names1[4096], names2[4096], path[4200];
    int temps;
    assert_int_equal(load("-DCLG_TEST_CACHE=1", names1, sizeof names1), 0);
    assert_int_equal(entries(cache, path, sizeof path, &temps), 1);
    assert_int_equal(temps, 0);
    assert_int_equal(load("-DCLG_TEST_CACHE=1", names2, sizeof names2), 1);
    assert_string_equal(names1, names2); /* the same program came back */
    assert_int_equal(entries(cache, NULL, 0, NULL), 1);

    /* the entry starts with the documented header */
    size_t n;
    unsigned char *buf = tu_read_file(path, &n);
    assert_true(n > HEADER_SIZE);
    assert_memory_equal(buf, "CLGRADPC", 8);
    free(buf);

    /* other options are another program, another entry */
    assert_int_equal(load("-DCLG_TEST_CACHE=2", NULL, 0), 0);
    assert_int_equal(entries(cache, NULL, 0, NULL), 2);
    assert_int_equal(load("-DCLG_TEST_CACHE=2", NULL, 0), 1);
}

static void test_cache_off(void **state)
{
    (void)state;
    char xdg[4200], home[4200];
    snprintf(xdg, sizeof xdg, "%s/off-xdg", tmp);
    snprintf(home, sizeof home, "%s/off-home", tmp);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    setenv("XDG_CACHE_HOME", xdg, 1);
    setenv("HOME", home, 1);
    setenv("CLGRAD_CACHE_DIR", "off", 1);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    setenv("CLGRAD_CACHE_DIR", "OFF", 1);
    assert_int_equal(load("-DCLG_TEST_OFF=1", NULL, 0), 0);
    struct stat st;
    assert_int_not_equal(stat(xdg, &st), 0);
    assert_int_not_equal(stat(home, &st), 0);
    assert_int_equal(entries(cache, NULL, 0, NULL), 2); /* only the first test's */
    unsetenv("XDG_CACHE_HOME");
    if (old_home) {
        setenv("HOME", old_home, 1);
        free(old_home);
    }
}

static void test_default_locations(void **state)
{
    (void)state;
    char xdg[4200], home[4200], dir[4300];
    snprintf(xdg, sizeof xdg, "%s/xdg", tmp);
    snprintf(home, sizeof home, "%s/home", tmp);
    char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
    unsetenv("CLGRAD_CACHE_DIR");

    setenv("XDG_CACHE_HOME", xdg, 1);
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 0);
    snprintf(dir, sizeof dir, "%s/clgrad", xdg);
    assert_int_equal(entries(dir, NULL, 0, NULL), 1);
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 1);

    unsetenv("XDG_CACHE_HOME");
    setenv("HOME", home, 1);
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 0);
    snprintf(dir, sizeof dir, "%s/.cache/clgrad", home);
    assert_int_equal(entries(dir, NULL, 0, NULL), 1);
    assert_int_equal(load("-DCLG_TEST_DEFAULT=1", NULL, 0), 1);

    if (old_home) {
        setenv("HOME", old_home, 1);
        free(old_home);
    }
}

typedef enum damage {
    FLIP_BINARY_BYTE,
    FLIP_MAGIC,
    WRONG_FORMAT_VERSION,
    WRONG_LENGTH_FIELD,
    TRUNCATE_HALF,
    TRUNCATE_HEADER,
    EMPTY_FILE,
    FOREIGN_ENTRY,          /* a valid entry of another program under this name */
    GARBAGE_WITH_VALID_SUM, /* header and checksum fine, binary not a program */
    DAMAGE_KINDS
} damage;

static const char *const damage_names[] = {
    "flip binary byte",   "flip magic",    "wrong format version",
    "wrong length field", "truncate half", "truncate header",
    "empty file",         "foreign entry", "garbage with valid checksum",
};

static void apply_damage(damage kind, const char *path, const char *foreign_path)
{
    size_t n;
    unsigned char *buf = tu_read_file(path, &n);
    switch (kind) {
    case FLIP_BINARY_BYTE:
        buf[HEADER_SIZE + (n - HEADER_SIZE) / 2] ^= 0x40;
        tu_write_file(path, buf, n);
        break;
    case FLIP_MAGIC:
        buf[0] ^= 1;
        tu_write_file(path, buf, n);
        break;
    case WRONG_FORMAT_VERSION:
        buf[8] += 1;
        tu_write_file(path, buf, n);
        break;
    case WRONG_LENGTH_FIELD:
        buf[48] += 1;
        tu_write_file(path, buf, n);
        break;
    case TRUNCATE_HALF: tu_write_file(path, buf, n / 2); break;
    case TRUNCATE_HEADER: tu_write_file(path, buf, 20); break;
    case EMPTY_FILE: tu_write_file(path, buf, 0); break;
    case FOREIGN_ENTRY: {
        size_t fn;
        unsigned char *other = tu_read_file(foreign_path, &fn);
        tu_write_file(path, other, fn);
        free(other);
        break;
    }
    case GARBAGE_WITH_VALID_SUM: {
        static const char junk[] = "this is not a program binary";
        unsigned char out[HEADER_SIZE + sizeof junk];
        memcpy(out, buf, HEADER_SIZE);
        uint64_t len = sizeof junk;
        for (int i = 0; i < 8; i++)
            out[48 + i] = (unsigned char)(len >> (8 * i));
        clg_sha256 s;
        clg__sha256_init(&s);
        clg__sha256_update(&s, junk, sizeof junk);
        clg__sha256_final(&s, out + 56);
        memcpy(out + HEADER_SIZE, junk, sizeof junk);
        tu_write_file(path, out, sizeof out);
        break;
    }
    default: fail();
    }
    free(buf);
}

static void test_damaged_entries_fall_back_and_repair(void **state)
{
    (void)state;
    char dir[4200], path[4400], foreign[4400];
    snprintf(dir, sizeof dir, "%s/damage", tmp);
    setenv("CLGRAD_CACHE_DIR", dir, 1);
    /* an entry of another program to pass off as this one */
    assert_int_equal(load("-DCLG_TEST_FOREIGN=1", NULL, 0), 0);
    assert_int_equal(entries(dir, foreign, sizeof foreign, NULL), 1);
    char foreign_dir[4400];
    snprintf(foreign_dir, sizeof foreign_dir, "%s/foreign.bin.keep", tmp);
    assert_int_equal(rename(foreign, foreign_dir), 0);

    char names_ok[4096];
    assert_int_equal(load("-DCLG_TEST_DAMAGE=1", names_ok, sizeof names_ok), 0);
    assert_int_equal(entries(dir, path, sizeof path, NULL), 1);

    for (int k = 0; k < DAMAGE_KINDS; k++) {
        print_message("damage: %s\n", damage_names[k]);
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", NULL, 0), 1); /* intact before */
        apply_damage((damage)k, path, foreign_dir);
        char names[4096];
        /* damaged: ignored, rebuilt from source, same program */
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", names, sizeof names), 0);
        assert_string_equal(names, names_ok);
        /* and the entry was replaced by a good one */
        int temps;
        assert_int_equal(entries(dir, NULL, 0, &temps), 1);
        assert_int_equal(temps, 0);
        assert_int_equal(load("-DCLG_TEST_DAMAGE=1", NULL, 0), 1);
    }
}

static void test_unusable_cache_dir_never_fails_a_build(void **state)
{
    (void)state;
    char file[4200], under_file[4300];
    snprintf(file, sizeof file, "%s/a-file", tmp);
    tu_write_file(file, "x", 1);
    snprintf(under_file, sizeof under_file, "%s/sub", file); /* a directory under a file */
    const char *dirs[] = {under_file, "/proc/clgrad-cannot-exist/cache"};
    for (size_t i = 0; i < 2; i++) {
        setenv("CLGRAD_CACHE_DIR", dirs[i], 1);
        assert_int_equal(load("-DCLG_TEST_UNUSABLE=1", NULL, 0), 0);
        assert_int_equal(load("-DCLG_TEST_UNUSABLE=1", NULL, 0), 0);
    }
}

static void test_build_failure_carries_log(void **state)
{
    (void)state;
    clg_context *ctx = tu_context_or_skip();
    cl_program p = (cl_program)0x1;
    int cached = -1;
    /* The embedded sources are fine; an #error forced in through a macro
     * that the -D value cannot satisfy would need source access, so break
     * the build with a redefinition under -Werror instead. */
    clg_status st = clg_context_program(
        ctx, "stream", "-Werror -DCLG_TEST_REDEF=1 -DCLG_TEST_REDEF=2", &p, &cached);
    assert_int_equal(st, CLG_ERR_BUILD);
    assert_null(p);
    assert_int_equal(cached, 0);
    const char *msg = clg_last_error(ctx);
    assert_non_null(strstr(msg, "build log"));
    assert_non_null(strstr(msg, "CLG_TEST_REDEF"));
    assert_int_equal(entries(cache, NULL, 0, NULL), 2); /* nothing cached */
    /* the context is still usable */
    assert_int_equal(clg_context_program(ctx, "stream", "-DCLG_TEST_CACHE=1", &p, &cached),
                     CLG_SUCCESS);
    assert_int_equal(cached, 1);
    clg_context_destroy(ctx);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_second_load_comes_from_cache, setup),
        cmocka_unit_test_setup(test_cache_off, setup),
        cmocka_unit_test_setup(test_default_locations, setup),
        cmocka_unit_test_setup(test_damaged_entries_fall_back_and_repair, setup),
        cmocka_unit_test_setup(test_unusable_cache_dir_never_fails_a_build, setup),
        cmocka_unit_test_setup(test_build_failure_carries_log, setup),
    };
    return cmocka_run_group_tests(tests, group_setup, group_teardown);
}

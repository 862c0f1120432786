/* test_status.c - status names, error messages (per context and per
 * thread), SHA-256 and CRC-32 against published vectors. No device needed. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "internal.h"

#include <stdio.h>
#include <string.h>
#include <threads.h>

static void test_every_clg_status_has_a_name(void **state)
{
    (void)state;
    const char *seen[CLG_ERR_FIRST - CLG_ERR_LAST + 2] = {0};
    for (int s = CLG_ERR_FIRST; s >= CLG_ERR_LAST; s--) {
        const char *name = clg_status_string((clg_status)s);
        assert_non_null(name);
        assert_string_not_equal(name, "CLG_UNKNOWN_STATUS");
        assert_int_equal(strncmp(name, "CLG_", 4), 0);
        /* names are distinct */
        for (int j = 0; j < CLG_ERR_FIRST - s; j++)
            assert_string_not_equal(name, seen[j]);
        seen[CLG_ERR_FIRST - s] = name;
    }
    assert_string_equal(clg_status_string(CLG_SUCCESS), "CLG_SUCCESS");
    assert_string_equal(clg_status_string(CLG_ERR_OVER_BUDGET), "CLG_ERR_OVER_BUDGET");
    assert_string_equal(clg_status_string(CLG_ERR_OUT_OF_HOST_MEMORY),
                        "CLG_ERR_OUT_OF_HOST_MEMORY");
}

static void test_opencl_codes_pass_through_by_name(void **state)
{
    (void)state;
    /* every code of the core specification, 1.0 to 3.0 */
    for (int c = -1; c >= -72; c--) {
        if (c < -19 && c > -30)
            continue; /* unassigned range */
        const char *name = clg_status_string((clg_status)c);
        assert_non_null(name);
        assert_int_equal(strncmp(name, "CL_", 3), 0);
        assert_ptr_equal(name, clg__cl_error_name(c));
    }
    assert_string_equal(clg_status_string((clg_status)CL_OUT_OF_RESOURCES), "CL_OUT_OF_RESOURCES");
    assert_string_equal(clg_status_string((clg_status)CL_INVALID_VALUE), "CL_INVALID_VALUE");
    assert_string_equal(clg_status_string((clg_status)-1001), "CL_PLATFORM_NOT_FOUND_KHR");
    assert_string_equal(clg_status_string((clg_status)-72), "CL_MAX_SIZE_RESTRICTION_EXCEEDED");
}

static void test_unknown_status(void **state)
{
    (void)state;
    const int unknown[] = {1, 12345, -25, -73, -999, -9999, -10013, -20000};
    for (size_t i = 0; i < sizeof unknown / sizeof unknown[0]; i++)
        assert_string_equal(clg_status_string((clg_status)unknown[i]), "CLG_UNKNOWN_STATUS");
    assert_null(clg__cl_error_name(-25));
}

static void test_cl_fail_maps_allocation_failures(void **state)
{
    (void)state;
    /* Only a failed allocation becomes CLG_ERR_OUT_OF_DEVICE_MEMORY... */
    assert_int_equal(clg__cl_alloc_fail(NULL, CL_MEM_OBJECT_ALLOCATION_FAILURE, "w", "clX"),
                     CLG_ERR_OUT_OF_DEVICE_MEMORY);
    assert_string_equal(clg_last_error(NULL),
                        "w: clX failed: CL_MEM_OBJECT_ALLOCATION_FAILURE (-4)");
    assert_int_equal(clg__cl_alloc_fail(NULL, CL_OUT_OF_RESOURCES, "a", "b"),
                     CLG_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(clg__cl_alloc_fail(NULL, CL_INVALID_BUFFER_SIZE, "a", "b"),
                     CLG_ERR_OUT_OF_DEVICE_MEMORY);
    assert_int_equal(clg__cl_alloc_fail(NULL, CL_INVALID_CONTEXT, "a", "b"), CL_INVALID_CONTEXT);
    /* ...the same codes from any other call pass through, as the header says */
    assert_int_equal(clg__cl_fail(NULL, CL_OUT_OF_RESOURCES, "launch", "clEnqueueNDRangeKernel"),
                     CL_OUT_OF_RESOURCES);
    assert_int_equal(clg__cl_fail(NULL, CL_MEM_OBJECT_ALLOCATION_FAILURE, "a", "b"),
                     CL_MEM_OBJECT_ALLOCATION_FAILURE);
    assert_int_equal(clg__cl_fail(NULL, CL_INVALID_BUFFER_SIZE, "a", "b"), CL_INVALID_BUFFER_SIZE);
    assert_int_equal(
        clg__cl_fail(NULL, CL_INVALID_KERNEL_ARGS, "launch axpy", "clEnqueueNDRangeKernel"),
        CL_INVALID_KERNEL_ARGS);
    assert_string_equal(clg_last_error(NULL),
                        "launch axpy: clEnqueueNDRangeKernel failed: CL_INVALID_KERNEL_ARGS (-52)");
    assert_int_equal(clg__cl_fail(NULL, -4242, "x", "clY"), -4242);
    assert_non_null(strstr(clg_last_error(NULL), "(-4242)"));
}

static void test_fail_formats_and_returns_status(void **state)
{
    (void)state;
    assert_int_equal(clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_step: weight %g", -1.5),
                     CLG_ERR_INVALID_ARGUMENT);
    assert_string_equal(clg_last_error(NULL), "clg_step: weight -1.5");
    /* a message longer than the slot is truncated, not overflowed */
    char big[CLG_ERROR_MAX * 2];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    clg__fail(NULL, CLG_ERR_IO, "%s", big);
    assert_int_equal(strlen(clg_last_error(NULL)), CLG_ERROR_MAX - 1);
}

static int other_thread(void *arg)
{
    const char **out = arg;
    /* a fresh thread sees none of the main thread's context-less errors */
    static char copy[64];
    snprintf(copy, sizeof copy, "%s", clg_last_error(NULL));
    out[0] = copy;
    clg__fail(NULL, CLG_ERR_IO, "from the other thread");
    static char copy2[64];
    snprintf(copy2, sizeof copy2, "%s", clg_last_error(NULL));
    out[1] = copy2;
    return 0;
}

static void test_context_less_errors_are_per_thread(void **state)
{
    (void)state;
    clg__fail(NULL, CLG_ERR_STATE, "main thread message");
    const char *seen[2] = {NULL, NULL};
    thrd_t t;
    assert_int_equal(thrd_create(&t, other_thread, seen), thrd_success);
    assert_int_equal(thrd_join(t, NULL), thrd_success);
    assert_string_not_equal(seen[0], "main thread message");
    assert_string_equal(seen[1], "from the other thread");
    assert_string_equal(clg_last_error(NULL), "main thread message");
}

static clg_context *make_fake_context(clg_context *ctx)
{
    /* A context's own slot, without a device: only the fields error.c uses. */
    memset(ctx, 0, sizeof *ctx);
    assert_int_equal(mtx_init(&ctx->lock, mtx_plain | mtx_recursive), thrd_success);
    return ctx;
}

typedef struct slot_thread_arg {
    clg_context *ctx;
    char seen_before[64]; /* clg_last_error(ctx) before failing on it */
    char seen_after[64];  /* and after */
} slot_thread_arg;

static int fail_on_shared_context(void *p)
{
    slot_thread_arg *a = p;
    snprintf(a->seen_before, sizeof a->seen_before, "%s", clg_last_error(a->ctx));
    clg__fail(a->ctx, CLG_ERR_IO, "other thread on ctx");
    snprintf(a->seen_after, sizeof a->seen_after, "%s", clg_last_error(a->ctx));
    return 0;
}

static void test_context_error_slot(void **state)
{
    (void)state;
    clg_context ctx, other;
    make_fake_context(&ctx);
    make_fake_context(&other);
    clg__fail(NULL, CLG_ERR_IO, "thread slot");
    assert_int_equal(clg__fail(&ctx, CLG_ERR_MISMATCH, "ctx slot %d", 7), CLG_ERR_MISMATCH);
    assert_string_equal(clg_last_error(&ctx), "ctx slot 7");
    assert_string_equal(clg_last_error(NULL), "thread slot");
    assert_string_equal(clg_last_error(&other), "no error recorded");

    /* The getter returns a copy, and later failures elsewhere do not change
     * what this thread sees of ctx: a context-less failure... */
    const char *before = clg_last_error(&ctx);
    char saved[64];
    snprintf(saved, sizeof saved, "%s", before);
    assert_int_equal(clg__fail(NULL, CLG_ERR_STATE, "later, no context"), CLG_ERR_STATE);
    assert_string_equal(saved, "ctx slot 7");
    assert_string_equal(clg_last_error(&ctx), "ctx slot 7");
    assert_string_equal(clg_last_error(NULL), "later, no context");

    /* ...a failure on another context, which keeps its own message... */
    assert_int_equal(clg__fail(&other, CLG_ERR_UNSUPPORTED, "other slot"), CLG_ERR_UNSUPPORTED);
    assert_string_equal(clg_last_error(&other), "other slot");
    assert_string_equal(clg_last_error(&ctx), "ctx slot 7");
    assert_string_equal(clg_last_error(NULL), "later, no context");

    /* ...and, once this thread's last failure is on ctx again, another
     * thread failing on the same shared ctx (errno-like, clgrad.h) */
    clg__fail(&ctx, CLG_ERR_MISMATCH, "ctx slot %d", 8);
    before = clg_last_error(&ctx);
    slot_thread_arg arg = {.ctx = &ctx};
    thrd_t t;
    assert_int_equal(thrd_create(&t, fail_on_shared_context, &arg), thrd_success);
    assert_int_equal(thrd_join(t, NULL), thrd_success);
    /* the other thread had no failure of its own: it saw ctx's last one,
     * then its own */
    assert_string_equal(arg.seen_before, "ctx slot 8");
    assert_string_equal(arg.seen_after, "other thread on ctx");
    /* the copy handed out before is untouched, and this thread still sees
     * its own failure */
    assert_string_equal(before, "ctx slot 8");
    assert_string_equal(clg_last_error(&ctx), "ctx slot 8");
    /* a thread whose own last failure is elsewhere sees ctx's last one from
     * any thread */
    clg__fail(&other, CLG_ERR_UNSUPPORTED, "other slot again");
    assert_string_equal(clg_last_error(&ctx), "other thread on ctx");
    assert_string_equal(clg_last_error(&other), "other slot again");
    clg__error_forget(&ctx);
    clg__error_forget(&other);
    mtx_destroy(&ctx.lock);
    mtx_destroy(&other.lock);
}

static void hex(const uint8_t *d, size_t n, char *out)
{
    for (size_t i = 0; i < n; i++)
        sprintf(out + 2 * i, "%02x", d[i]);
}

static void sha_of(const void *data, size_t n, char out[65])
{
    clg_sha256 s;
    uint8_t d[32];
    clg__sha256_init(&s);
    clg__sha256_update(&s, data, n);
    clg__sha256_final(&s, d);
    hex(d, 32, out);
}

static void test_sha256_fips_vectors(void **state)
{
    (void)state;
    char out[65];
    /* FIPS 180-2 appendix B and the NIST example values */
    sha_of("abc", 3, out);
    assert_string_equal(out, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
    sha_of("", 0, out);
    assert_string_equal(out, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
    const char *m448 = "abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq";
    sha_of(m448, strlen(m448), out);
    assert_string_equal(out, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
    const char *m896 = "abcdefghbcdefghicdefghijdefghijkefghijklfghijklmghijklmnhijklmno"
                       "ijklmnopjklmnopqklmnopqrlmnopqrsmnopqrstnopqrstu";
    sha_of(m896, strlen(m896), out);
    assert_string_equal(out, "cf5b16a778af8380036ce59e7b0492370b249b11e8f07a51afac45037afee9d1");

    /* one million 'a', fed in odd-sized pieces to exercise block joins */
    clg_sha256 s;
    uint8_t d[32];
    char piece[997];
    memset(piece, 'a', sizeof piece);
    clg__sha256_init(&s);
    size_t left = 1000000;
    while (left) {
        size_t n = left < sizeof piece ? left : sizeof piece;
        clg__sha256_update(&s, piece, n);
        left -= n;
    }
    clg__sha256_final(&s, d);
    hex(d, 32, out);
    assert_string_equal(out, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void test_crc32_vectors(void **state)
{
    (void)state;
    assert_int_equal(clg__crc32(0, "123456789", 9), 0xCBF43926u);
    assert_int_equal(clg__crc32(0, "", 0), 0);
    assert_int_equal(clg__crc32(0, "The quick brown fox jumps over the lazy dog", 43), 0x414FA339u);
    /* incremental use, as zlib's crc32(crc, buf, len) */
    uint32_t c = clg__crc32(0, "12345", 5);
    assert_int_equal(clg__crc32(c, "6789", 4), 0xCBF43926u);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_clg_status_has_a_name),
        cmocka_unit_test(test_opencl_codes_pass_through_by_name),
        cmocka_unit_test(test_unknown_status),
        cmocka_unit_test(test_cl_fail_maps_allocation_failures),
        cmocka_unit_test(test_fail_formats_and_returns_status),
        cmocka_unit_test(test_context_less_errors_are_per_thread),
        cmocka_unit_test(test_context_error_slot),
        cmocka_unit_test(test_sha256_fips_vectors),
        cmocka_unit_test(test_crc32_vectors),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

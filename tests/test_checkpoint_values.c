/* test_checkpoint_values.c - the values a checkpoint holds, checked by the
 * parser against what clgrad's updates can produce (src/checkpoint_values.c),
 * on bytes in memory (no device). Every forged file is CRC-valid: the
 * writer's header (clg__ckpt_header) is made again over the edited data, so
 * the edit reaches the value checks, as a file edited on purpose and
 * re-summed would. Each case asserts the whole message.
 *   - Q8/Q4 absmax: NaN, +inf and -1 refused under every policy; 3e38 and
 *     -0 load (any finite value >= 0 is the largest magnitude of some block
 *     of fp32 values);
 *   - fp32 and bf16 optimizer states: inf/NaN refused under a policy that
 *     skips non-finite updates, loaded under "ignore" (which can write them);
 *   - the loss scale: finite and > 0; 1 without loss scaling; the static
 *     value; within [min, max] (or the initial value) when dynamic; the
 *     growth tracker below the interval and no more than the updates. */
#include <stdarg.h>
#include <stddef.h>
#include <setjmp.h>
#include <stdint.h>
#include <cmocka.h>

#include "checkpoint.h"
#include "ckpt_testutil.h"
#include "testutil.h" /* TU_MAIN only: these tests link no testutil.c */

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* ------------------------------------------------------------ fixture */

/* A small AdamW model, as checkpoint_layout.c lays out a Q8 one: tensor
 * "w" (5000 elements: more than one of the value checks' 4096-element scan
 * blocks) keeps fp32 m and bf16 v (as a small tensor and a bf16 state
 * would be), tensor "q" (300 elements) Q8 states, two absmax blocks each. Configuration: ckpt_fixture_config (skip_update, dynamic loss scale
 * in [1, 2^24] from 1024, interval 100) unless a test changes it. */
enum { Q_COUNT = 300, Q_BLOCKS = 2, W_COUNT = 5000, UPDATES = 5 };

typedef struct fixture {
    clg_config cfg;
    clg_ckpt_layout layout;
    uint8_t *data; /* canonical offsets */
    clg_cycle_state state;
} fixture;

static void build(fixture *f, const clg_config *cfg)
{
    char err[256];
    clg_ckpt_layout *l = &f->layout;
    memset(f, 0, sizeof *f);
    f->cfg = *cfg;
    clg__ckpt_layout_config(l, cfg);
    assert_int_equal(clg__ckpt_layout_add(l, CLG_CKPT_STEP_BLOCK_KEY, CLG_CKPT_I32, 32,
                                          CLG_CKPT_SRC_STEP_BLOCK, -1), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "w", CLG_CKPT_F32, W_COUNT, CLG_ARENA_PARAMS, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "q", CLG_CKPT_F32, Q_COUNT, CLG_ARENA_PARAMS, 1), 0);
    assert_int_equal(
        clg__ckpt_layout_add(l, "w.state0", CLG_CKPT_F32, W_COUNT, CLG_ARENA_STATE0, 0), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "q.state0.absmax", CLG_CKPT_F32, Q_BLOCKS,
                                          CLG_CKPT_SRC_SCALE0, 1), 0);
    assert_int_equal(clg__ckpt_layout_add(l, "q.state1.absmax", CLG_CKPT_F32, Q_BLOCKS,
                                          CLG_CKPT_SRC_SCALE0 - 1, 1), 0);
    assert_int_equal(
        clg__ckpt_layout_add(l, "w.state1", CLG_CKPT_BF16, W_COUNT, CLG_ARENA_STATE0 + 1, 0), 0);
    assert_int_equal(
        clg__ckpt_layout_add(l, "q.state0", CLG_CKPT_U8, Q_COUNT, CLG_ARENA_STATE0, 1), 0);
    assert_int_equal(
        clg__ckpt_layout_add(l, "q.state1", CLG_CKPT_U8, Q_COUNT, CLG_ARENA_STATE0 + 1, 1), 0);
    assert_int_equal(clg__ckpt_layout_finish(l, err, sizeof err), 0);

    /* values an update could have written: finite states, absmax > 0,
     * every code; UPDATES updates, no skip, the scale grown once */
    f->data = ckpt_xmalloc(l->data_size);
    for (size_t i = 0; i < l->n; i++) {
        const clg_ckpt_entry *e = &l->entries[i];
        uint8_t *d = f->data + e->begin;
        for (uint64_t k = 0; k < e->count; k++) {
            float v = (float)(k + 1) * (e->source <= CLG_CKPT_SRC_SCALE0 ? 0.25f : -0.125f);
            if (e->dtype == CLG_CKPT_F32)
                memcpy(d + 4 * k, &v, 4);
            else if (e->dtype == CLG_CKPT_BF16)
                memcpy(d + 2 * k, (const uint8_t *)&v + 2, 2); /* upper half, little-endian */
            else if (e->dtype == CLG_CKPT_U8)
                d[k] = (uint8_t)(k * 7);
        }
    }
    f->state.micro = 0;
    f->state.weight_sum = 0.0f;
    f->state.cycles = UPDATES;
    f->state.micro_total = 2 * UPDATES;
    uint32_t *sb = f->state.step_block;
    const float scale = cfg->loss_scale == CLG_LOSS_SCALE_DYNAMIC ? 2048.0f
                        : cfg->loss_scale == CLG_LOSS_SCALE_STATIC ? cfg->loss_scale_init
                                                                    : 1.0f;
    memcpy(&sb[CLG_SB_LOSS_SCALE], &scale, 4);
    sb[CLG_SB_T] = UPDATES;
    sb[CLG_SB_GROWTH] = cfg->loss_scale == CLG_LOSS_SCALE_DYNAMIC ? 3 : 0;
}

static int setup(void **state)
{
    fixture *f = calloc(1, sizeof *f);
    assert_non_null(f);
    clg_config c = ckpt_fixture_config();
    build(f, &c);
    *state = f;
    return 0;
}

static void release(fixture *f)
{
    clg__ckpt_layout_free(&f->layout);
    free(f->data);
}

/* f again with the fixture's configuration but policy, mode and (static)
 * loss_scale_init. */
static void rebuild(fixture *f, clg_nonfinite_policy policy, clg_loss_scale_mode mode, float init)
{
    release(f);
    clg_config c = ckpt_fixture_config();
    c.nonfinite = policy;
    c.loss_scale = mode;
    c.loss_scale_init = init;
    build(f, &c);
}

static int teardown(void **state)
{
    fixture *f = *state;
    release(f);
    free(f);
    return 0;
}

/* ------------------------------------------------------------ forgeries */

/* The file the writer makes of f's data with element index of key set to
 * the bytes of value (F32: the float; BF16: its upper half), and the step
 * block's words as in sb: every CRC right. */
static uint8_t *forged_file(fixture *f, const char *key, uint64_t index, float value,
                            const uint32_t *sb, size_t *size)
{
    uint8_t *data = ckpt_xmalloc(f->layout.data_size);
    memcpy(data, f->data, f->layout.data_size);
    clg_cycle_state st = f->state;
    if (sb)
        memcpy(st.step_block, sb, sizeof st.step_block);
    const clg_ckpt_entry *block = &f->layout.entries[0];
    for (int w = 0; w < 32; w++)
        for (int b = 0; b < 4; b++)
            data[block->begin + 4 * w + b] = (uint8_t)(st.step_block[w] >> (8 * b));
    if (key) {
        long i = clg__ckpt_layout_find(&f->layout, key);
        assert_true(i >= 0);
        const clg_ckpt_entry *e = &f->layout.entries[i];
        assert_true(index < e->count);
        if (e->dtype == CLG_CKPT_F32)
            memcpy(data + e->begin + 4 * index, &value, 4);
        else
            memcpy(data + e->begin + 2 * index, (const uint8_t *)&value + 2, 2);
    }
    char *header = NULL, err[512];
    size_t hlen = 0;
    assert_int_equal(clg__ckpt_header(&f->layout, data, &st, NULL, NULL, 0, &header, &hlen, err,
                                      sizeof err),
                     0);
    uint8_t *file = ckpt_assemble(header, hlen, data, f->layout.data_size, size);
    free(header);
    free(data);
    return file;
}

/* Parses file; msg NULL: must load, else must be refused with exactly msg. */
static void expect_parse(fixture *f, uint8_t *file, size_t size, const char *msg)
{
    char err[512] = "";
    clg_ckpt_parsed p;
    clg_status st = clg__ckpt_parse(file, size, &f->layout, &p, err, sizeof err);
    if (!msg && st != CLG_SUCCESS)
        fail_msg("expected the file to load, got %s: '%s'", clg_status_string(st), err);
    if (msg && st != CLG_ERR_CORRUPT_FILE)
        fail_msg("expected CLG_ERR_CORRUPT_FILE '%s', got %s: '%s'", msg, clg_status_string(st),
                 err);
    if (msg)
        assert_string_equal(err, msg);
    if (st == CLG_SUCCESS)
        clg__ckpt_parsed_free(&p);
    free(file);
}

/* f's file with element index of key set to value: msg as expect_parse. */
static void expect_element(fixture *f, const char *key, uint64_t index, float value,
                         const char *msg)
{
    size_t size;
    uint8_t *file = forged_file(f, key, index, value, NULL, &size);
    expect_parse(f, file, size, msg);
}

/* f's file with step block word w set to v. */
static void expect_word(fixture *f, int w, uint32_t v, const char *msg)
{
    uint32_t sb[32];
    memcpy(sb, f->state.step_block, sizeof sb);
    sb[w] = v;
    size_t size;
    uint8_t *file = forged_file(f, NULL, 0, 0.0f, sb, &size);
    expect_parse(f, file, size, msg);
}

static uint32_t bits(float v)
{
    uint32_t u;
    memcpy(&u, &v, 4);
    return u;
}

/* ------------------------------------------------------------ tests */

static void test_valid_file_loads(void **state)
{
    fixture *f = *state;
    size_t size;
    uint8_t *file = forged_file(f, NULL, 0, 0.0f, NULL, &size);
    expect_parse(f, file, size, NULL);
}

#define ABSMAX_RULE ", but an absmax (the largest magnitude in a block of states) is finite and >= 0"

static void test_absmax(void **state)
{
    fixture *f = *state;
    expect_element(f, "q.state0.absmax", 1, NAN,
                 "tensor 'q.state0.absmax': absmax[1] is nan" ABSMAX_RULE);
    expect_element(f, "q.state0.absmax", 0, INFINITY,
                 "tensor 'q.state0.absmax': absmax[0] is inf" ABSMAX_RULE);
    expect_element(f, "q.state1.absmax", 1, -1.0f,
                 "tensor 'q.state1.absmax': absmax[1] is -1" ABSMAX_RULE);
    expect_element(f, "q.state1.absmax", 0, -INFINITY,
                 "tensor 'q.state1.absmax': absmax[0] is -inf" ABSMAX_RULE);
    /* finite and >= 0: the largest magnitude of some block of fp32 values */
    expect_element(f, "q.state0.absmax", 1, 3e38f, NULL);
    expect_element(f, "q.state1.absmax", 0, 0.0f, NULL);
    expect_element(f, "q.state1.absmax", 0, -0.0f, NULL);
    /* under every policy: a block with such an absmax holds no finite value */
    rebuild(f, CLG_NONFINITE_IGNORE, CLG_LOSS_SCALE_NONE, 1.0f);
    expect_element(f, "q.state0.absmax", 1, NAN,
                 "tensor 'q.state0.absmax': absmax[1] is nan" ABSMAX_RULE);
}

/* What the refusal of a non-finite state says after its policy's name. */
#define SKIPPED_RULE                                                                               \
    " an update whose gradient is not finite is skipped, so the optimizer states stay finite"
#define STATE_RULE ", but under the non-finite policy 'skip_update'" SKIPPED_RULE

static void test_states(void **state)
{
    fixture *f = *state;
    expect_element(f, "w.state0", 4, NAN, "tensor 'w.state0': element 4 is nan" STATE_RULE);
    expect_element(f, "w.state0", 0, -INFINITY, "tensor 'w.state0': element 0 is -inf" STATE_RULE);
    expect_element(f, "w.state1", 2, INFINITY, "tensor 'w.state1': element 2 is inf" STATE_RULE);
    expect_element(f, "w.state1", 5, NAN, "tensor 'w.state1': element 5 is nan" STATE_RULE);
    /* the last element of a scan block, the first and the last of the next */
    expect_element(f, "w.state0", 4095, NAN, "tensor 'w.state0': element 4095 is nan" STATE_RULE);
    expect_element(f, "w.state0", 4096, INFINITY,
                   "tensor 'w.state0': element 4096 is inf" STATE_RULE);
    expect_element(f, "w.state1", 4999, -INFINITY,
                   "tensor 'w.state1': element 4999 is -inf" STATE_RULE);
    expect_element(f, "w.state0", 3, 3e38f, NULL);
    /* parameters are not states: their values are the caller's */
    expect_element(f, "w", 1, NAN, NULL);
    /* the error policy skips such updates too */
    rebuild(f, CLG_NONFINITE_ERROR, CLG_LOSS_SCALE_NONE, 1.0f);
    expect_element(f, "w.state0", 1, NAN,
                   "tensor 'w.state0': element 1 is nan, but under the non-finite policy 'error'"
                   SKIPPED_RULE);
    /* "ignore" applies such updates: their states load */
    rebuild(f, CLG_NONFINITE_IGNORE, CLG_LOSS_SCALE_NONE, 1.0f);
    expect_element(f, "w.state0", 1, NAN, NULL);
    expect_element(f, "w.state1", 1, INFINITY, NULL);
    /* ... unless a dynamic loss scale upgrades it to skip_update */
    rebuild(f, CLG_NONFINITE_IGNORE, CLG_LOSS_SCALE_DYNAMIC, 65536.0f);
    expect_element(f, "w.state0", 1, NAN,
                   "tensor 'w.state0': element 1 is nan, but under the non-finite policy 'ignore' "
                   "with a dynamic loss scale (skip_update)'" SKIPPED_RULE);
}

static void test_dynamic_loss_scale(void **state)
{
    fixture *f = *state;
    const char *range = "the step block's LOSS_SCALE is %s, outside the dynamic loss scale's "
                        "range [1, 16777216] (loss_scale_min, loss_scale_max)";
    const char *positive = "the step block's LOSS_SCALE is %s, but a loss scale is finite and > 0";
    char msg[512];
    snprintf(msg, sizeof msg, positive, "nan");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(NAN), msg);
    snprintf(msg, sizeof msg, positive, "inf");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(INFINITY), msg);
    snprintf(msg, sizeof msg, positive, "0");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(0.0f), msg);
    snprintf(msg, sizeof msg, positive, "-2048");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(-2048.0f), msg);
    snprintf(msg, sizeof msg, range, "33554432");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(33554432.0f), msg);
    snprintf(msg, sizeof msg, range, "0.5");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(0.5f), msg);
    /* the bounds, and the initial value before the first update clamps it */
    expect_word(f, CLG_SB_LOSS_SCALE, bits(1.0f), NULL);
    expect_word(f, CLG_SB_LOSS_SCALE, bits(16777216.0f), NULL);
    expect_word(f, CLG_SB_LOSS_SCALE, bits(1024.0f), NULL);
    /* the growth tracker: reset when it reaches the interval (100) */
    expect_word(f, CLG_SB_GROWTH, 99, "the step block's GROWTH (clean updates since the loss "
                                      "scale last changed) is 99, more than T (updates "
                                      "applied) 5");
    expect_word(f, CLG_SB_GROWTH, 100, "the step block's GROWTH (clean updates since the loss "
                                       "scale last changed) is 100, but the scale changes after "
                                       "loss_scale_interval 100 of them");
    expect_word(f, CLG_SB_GROWTH, 5, NULL);
}

static void test_fixed_loss_scale(void **state)
{
    fixture *f = *state;
    rebuild(f, CLG_NONFINITE_SKIP_UPDATE, CLG_LOSS_SCALE_NONE, 1.0f);
    expect_word(f, CLG_SB_LOSS_SCALE, bits(2.0f),
                "the step block's LOSS_SCALE is 2, but without loss scaling it stays 1");
    expect_word(f, CLG_SB_GROWTH, 1,
                "the step block's GROWTH is 1, but only a dynamic loss scale counts clean "
                "updates (it stays 0)");
    rebuild(f, CLG_NONFINITE_SKIP_UPDATE, CLG_LOSS_SCALE_STATIC, 128.0f);
    expect_word(f, CLG_SB_LOSS_SCALE, bits(128.0f), NULL);
    expect_word(f, CLG_SB_LOSS_SCALE, bits(256.0f),
                "the step block's LOSS_SCALE is 256, but a static loss scale stays "
                "loss_scale_init 128");
    expect_word(f, CLG_SB_LOSS_SCALE, bits(-INFINITY),
                "the step block's LOSS_SCALE is -inf, but a loss scale is finite and > 0");
}

TU_MAIN("checkpoint_values", NULL, NULL,
        cmocka_unit_test_setup_teardown(test_valid_file_loads, setup, teardown),
        cmocka_unit_test_setup_teardown(test_absmax, setup, teardown),
        cmocka_unit_test_setup_teardown(test_states, setup, teardown),
        cmocka_unit_test_setup_teardown(test_dynamic_loss_scale, setup, teardown),
        cmocka_unit_test_setup_teardown(test_fixed_loss_scale, setup, teardown))

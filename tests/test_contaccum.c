/* test_contaccum.c - ContAccum's memory banks (clg_contrastive_bank_*):
 *   - FIFO order: row j of all pushes since the last reset sits in slot
 *     j mod bank_size, through wrap-around and a push longer than the bank
 *     (only its last bank_size rows land), for both banks, fp32 and bf16;
 *   - no gradient flows into bank rows: a compute leaves both banks bit
 *     for bit as they were, the cache's gradients are those of a loss whose
 *     bank rows are constants (test_contrastive.c checks them against the
 *     reference), and a reset bank computes exactly what a bankless cache
 *     does;
 *   - checkpoints: attached banks (clg_contrastive_attach) are saved with
 *     the model and come back bit for bit with their counters, into the
 *     same objects after more pushes and into fresh ones; a file without
 *     them, or with another bank size, is refused (CLG_ERR_MISMATCH), and
 *     a file whose bank counters cannot be a FIFO's (CRCs resealed) is
 *     refused (CLG_ERR_CORRUPT_FILE) before anything changes; attach
 *     refuses bad names and keys that collide, keeping what it had, and
 *     either side may be destroyed first. */
#include "checkpoint.h"
#include "contrastive.h"
#include "testutil.h"

#include <cjson/cJSON.h>
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

static clg_contrastive *make(size_t batch, size_t dim, size_t bank, clg_dtype dtype)
{
    clg_contrastive_config cfg = tu_contrastive_config(batch, dim, bank, dtype);
    return tu_contrastive_create(&cfg);
}

/* The value of element e of row r of push `push` on side s: below 256
 * times a power of two, so exact in bf16 (8 significant bits). */
static float tag(int s, int push, size_t r, size_t e)
{
    return ldexpf((float)(s * 128 + push * 20 + (int)r), (int)e);
}

/* Fills rows [0, rows) of both sides with push `push`'s tags and pushes them. */
static void push_tagged(clg_contrastive *c, int push, size_t rows, size_t d)
{
    float *x = tu_xmalloc(rows * d * 4);
    for (int s = 0; s < 2; s++) {
        for (size_t r = 0; r < rows; r++)
            for (size_t e = 0; e < d; e++)
                x[r * d + e] = tag(s, push, r, e);
        cl_mem m = tu_buffer_from(x, rows * d * 4);
        OK(clg_contrastive_fill(c, (clg_side)s, 0, rows, m, 0, d, CLG_FP32, NULL));
        clReleaseMemObject(m);
    }
    free(x);
    OK(clg_contrastive_bank_push(c, rows, NULL));
}

/* ------------------------------------------------------------ FIFO */

static void fifo_case(clg_dtype dtype)
{
    const size_t B = 16, d = 3, M = 10;
    clg_contrastive *c = make(B, d, M, dtype);
    /* slot -> (push, row) expected; -1: never written */
    int want_push[10], want_row[10];
    for (size_t i = 0; i < M; i++)
        want_push[i] = -1, want_row[i] = 0;
    const size_t pushes[] = {4, 8, 3, 13, 10};
    size_t total = 0;
    for (int p = 0; p < 5; p++) {
        push_tagged(c, p, pushes[p], d);
        for (size_t r = 0; r < pushes[p]; r++) { /* row j of all pushes in slot j mod M */
            want_push[(total + r) % M] = p;
            want_row[(total + r) % M] = (int)r;
        }
        total += pushes[p];
        size_t count, head;
        OK(clg_contrastive_bank_info(c, &count, &head));
        assert_int_equal(count, total < M ? total : M);
        assert_int_equal(head, total % M);
        float got[10 * 3];
        for (int s = 0; s < 2; s++) {
            OK(clg_contrastive_bank_download(c, (clg_side)s, got, M * d, NULL));
            for (size_t slot = 0; slot < M; slot++)
                for (size_t e = 0; e < d; e++) {
                    float want = want_push[slot] < 0
                                     ? 0.0f
                                     : tag(s, want_push[slot], (size_t)want_row[slot], e);
                    assert_true(got[slot * d + e] == want);
                }
        }
    }
    OK(clg_contrastive_bank_reset(c));
    size_t count, head;
    OK(clg_contrastive_bank_info(c, &count, &head));
    assert_int_equal(count, 0);
    assert_int_equal(head, 0);
    clg_contrastive_destroy(c);
}

static void test_fifo_order_and_wrap(void **state)
{
    (void)state;
    fifo_case(CLG_FP32);
    fifo_case(CLG_BF16);
}

/* ------------------------------------------------------------ no gradient into the bank */

static void compute_random(clg_contrastive *c, size_t n, size_t d, uint64_t seed, float *loss,
                           float *gq, float *gk)
{
    float *x = tu_xmalloc(n * d * 4);
    for (int s = 0; s < 2; s++) {
        tu_fill_normal(x, n * d, seed + (uint64_t)s, 1.0f);
        cl_mem m = tu_buffer_from(x, n * d * 4);
        OK(clg_contrastive_fill(c, (clg_side)s, 0, n, m, 0, d, CLG_FP32, NULL));
        clReleaseMemObject(m);
    }
    free(x);
    OK(clg_contrastive_compute(c, n, NULL));
    OK(clg_contrastive_loss(c, loss));
    clg_view v;
    OK(clg_contrastive_grad_view(c, CLG_SIDE_QUERY, &v));
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE, 0, n * d * 4,
                                         gq, 0, NULL, NULL),
                     CL_SUCCESS);
    OK(clg_contrastive_grad_view(c, CLG_SIDE_KEY, &v));
    assert_int_equal(clEnqueueReadBuffer(clg_context_queue(tu_ctx), v.mem, CL_TRUE, 0, n * d * 4,
                                         gk, 0, NULL, NULL),
                     CL_SUCCESS);
}

static void test_bank_is_constant(void **state)
{
    (void)state;
    const size_t B = 40, d = 12, M = 64;
    clg_contrastive *c = make(B, d, M, CLG_FP32);
    for (int p = 0; p < 3; p++) {
        float *x = tu_xmalloc(B * d * 4);
        for (int s = 0; s < 2; s++) {
            tu_fill_normal(x, B * d, 500 + 2 * (uint64_t)p + (uint64_t)s, 1.0f);
            cl_mem m = tu_buffer_from(x, B * d * 4);
            OK(clg_contrastive_fill(c, (clg_side)s, 0, B, m, 0, d, CLG_FP32, NULL));
            clReleaseMemObject(m);
        }
        free(x);
        OK(clg_contrastive_bank_push(c, B, NULL));
    }
    float before[2][64 * 12], after[2][64 * 12];
    for (int s = 0; s < 2; s++)
        OK(clg_contrastive_bank_download(c, (clg_side)s, before[s], M * d, NULL));
    float loss_bank, loss_reset, loss_plain;
    float *gq = tu_xmalloc(B * d * 4), *gk = tu_xmalloc(B * d * 4);
    float *gq2 = tu_xmalloc(B * d * 4), *gk2 = tu_xmalloc(B * d * 4);
    compute_random(c, B, d, 77, &loss_bank, gq, gk);
    for (int s = 0; s < 2; s++) {
        OK(clg_contrastive_bank_download(c, (clg_side)s, after[s], M * d, NULL));
        assert_memory_equal(before[s], after[s], sizeof before[s]);
    }
    /* the bank changed the loss (it is used) ... */
    OK(clg_contrastive_bank_reset(c));
    compute_random(c, B, d, 77, &loss_reset, gq, gk);
    assert_true(loss_bank > loss_reset);
    /* ... and a reset bank is no bank at all */
    clg_contrastive *plain = make(B, d, 0, CLG_FP32);
    compute_random(plain, B, d, 77, &loss_plain, gq2, gk2);
    assert_memory_equal(&loss_reset, &loss_plain, sizeof loss_plain);
    assert_memory_equal(gq, gq2, B * d * 4);
    assert_memory_equal(gk, gk2, B * d * 4);
    free(gq), free(gk), free(gq2), free(gk2);
    clg_contrastive_destroy(plain);
    clg_contrastive_destroy(c);
}

/* ------------------------------------------------------------ checkpoints */

/* collider: a tensor "enc.bank_k", the key banks attached as "enc" would have */
static clg_model *make_model(int collider)
{
    clg_config cfg = clg_config_init(CLG_ADAMW);
    clg_model *m;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    int t;
    OK(clg_model_add_tensor(m, "w", 100, 0, &t));
    if (collider)
        OK(clg_model_add_tensor(m, "enc.bank_k", 10, 0, &t));
    OK(clg_model_finalize(m));
    tu_upload_uniform_params(m, 3);
    return m;
}

typedef struct bank_snapshot {
    float q[10 * 3], k[10 * 3];
    size_t count, head;
} bank_snapshot;

static void snapshot(clg_contrastive *c, bank_snapshot *s)
{
    OK(clg_contrastive_bank_download(c, CLG_SIDE_QUERY, s->q, 30, NULL));
    OK(clg_contrastive_bank_download(c, CLG_SIDE_KEY, s->k, 30, NULL));
    OK(clg_contrastive_bank_info(c, &s->count, &s->head));
}

static void assert_same(const bank_snapshot *a, const bank_snapshot *b)
{
    assert_memory_equal(a->q, b->q, sizeof a->q);
    assert_memory_equal(a->k, b->k, sizeof a->k);
    assert_int_equal(a->count, b->count);
    assert_int_equal(a->head, b->head);
}

/* Rewrites tensor key's bytes in a checkpoint file, with its CRC and the
 * header CRC made right again: a file only the FIFO check can refuse. */
static void forge_tensor(const char *path, const char *key, const void *bytes, size_t n)
{
    size_t size;
    uint8_t *f = tu_read_file(path, &size);
    uint64_t hlen = 0;
    for (int i = 7; i >= 0; i--)
        hlen = hlen << 8 | f[i];
    char *json = tu_xmalloc(hlen + 1);
    memcpy(json, f + 8, hlen);
    json[hlen] = 0;
    cJSON *root = cJSON_Parse(json);
    assert_non_null(root);
    cJSON *offs = cJSON_GetObjectItem(cJSON_GetObjectItem(root, key), "data_offsets");
    assert_non_null(offs);
    size_t begin = (size_t)cJSON_GetArrayItem(offs, 0)->valuedouble;
    assert_int_equal((size_t)cJSON_GetArrayItem(offs, 1)->valuedouble - begin, n);
    memcpy(f + 8 + hlen + begin, bytes, n);
    char crc_key[300], old_hex[16], new_hex[16];
    snprintf(crc_key, sizeof crc_key, "clgrad.crc32.%s", key);
    snprintf(old_hex, sizeof old_hex, "\"%s\"",
             cJSON_GetObjectItem(cJSON_GetObjectItem(root, "__metadata__"), crc_key)->valuestring);
    snprintf(new_hex, sizeof new_hex, "\"%08x\"", (unsigned)clg__crc32(0, bytes, n));
    char *at = strstr((char *)f + 8, old_hex);
    assert_non_null(at);
    memcpy(at, new_hex, 10);
    assert_true(clg__ckpt_header_seal(f, size));
    tu_write_file(path, f, size);
    cJSON_Delete(root);
    free(json);
    free(f);
}

static void test_checkpoint_round_trip(void **state)
{
    (void)state;
    const size_t B = 8, d = 3, M = 10;
    clg_model *m = make_model(0);
    clg_contrastive *c = make(B, d, M, CLG_FP32);
    OK(clg_contrastive_attach(c, m, "enc"));
    push_tagged(c, 0, 7, d);
    push_tagged(c, 1, 6, d); /* wrapped: count 10, head 3 */
    bank_snapshot saved, now;
    snapshot(c, &saved);
    assert_int_equal(saved.count, 10);
    assert_int_equal(saved.head, 3);
    char *path = tu_tmp_path("banks.ckpt");
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));

    /* the same objects, after more pushes and a reset: back as saved */
    push_tagged(c, 2, 5, d);
    OK(clg_contrastive_bank_reset(c));
    OK(clg_checkpoint_load(m, path, NULL, NULL));
    snapshot(c, &now);
    assert_same(&saved, &now);

    /* fresh objects */
    clg_model *m2 = make_model(0);
    clg_contrastive *c2 = make(B, d, M, CLG_FP32);
    OK(clg_contrastive_attach(c2, m2, "enc"));
    OK(clg_checkpoint_load(m2, path, NULL, NULL));
    snapshot(c2, &now);
    assert_same(&saved, &now);

    /* a model without the banks refuses the file, and a file without
     * them is refused by one with banks */
    OK(clg_contrastive_attach(c2, NULL, NULL));
    assert_int_equal(clg_checkpoint_load(m2, path, NULL, NULL), CLG_ERR_MISMATCH);
    assert_non_null(strstr(clg_last_error(tu_ctx), "enc.bank_q"));
    char *plain = tu_tmp_path("plain.ckpt");
    OK(clg_checkpoint_save(m2, plain, NULL, NULL, 0));
    assert_int_equal(clg_checkpoint_load(m, plain, NULL, NULL), CLG_ERR_MISMATCH);
    assert_non_null(strstr(clg_last_error(tu_ctx), "is not in the file"));
    snapshot(c, &now);
    assert_same(&saved, &now);

    /* another bank size */
    clg_contrastive *c3 = make(B, d, M + 1, CLG_FP32);
    OK(clg_contrastive_attach(c3, m2, "enc"));
    assert_int_equal(clg_checkpoint_load(m2, path, NULL, NULL), CLG_ERR_MISMATCH);
    clg_contrastive_destroy(c3); /* detaches */
    OK(clg_contrastive_attach(c2, m2, "enc"));
    OK(clg_checkpoint_load(m2, path, NULL, NULL));

    /* counters no FIFO can have, with every CRC right: refused before
     * anything changes (the params and banks of m stay as they are) */
    float w_before[100], w_after[100];
    OK(clg_model_download_params(m, CLG_ALL_TENSORS, w_before, 100, NULL));
    const uint32_t bad[][2] = {{5, 3}, {10, 10}, {2, 11}};
    for (size_t i = 0; i < 3; i++) {
        char *forged = tu_tmp_path("forged.ckpt");
        size_t n;
        uint8_t *orig = tu_read_file(path, &n);
        tu_write_file(forged, orig, n);
        free(orig);
        uint8_t le[8];
        for (int b = 0; b < 4; b++) {
            le[b] = (uint8_t)(bad[i][0] >> (8 * b));
            le[4 + b] = (uint8_t)(bad[i][1] >> (8 * b));
        }
        forge_tensor(forged, "enc.bank_state", le, 8);
        push_tagged(c, 3, 2, d);
        bank_snapshot live;
        snapshot(c, &live);
        assert_int_equal(clg_checkpoint_load(m, forged, NULL, NULL), CLG_ERR_CORRUPT_FILE);
        assert_non_null(strstr(clg_last_error(tu_ctx), "enc.bank_state"));
        assert_non_null(strstr(clg_last_error(tu_ctx), "10-row FIFO"));
        snapshot(c, &now);
        assert_same(&live, &now);
        OK(clg_model_download_params(m, CLG_ALL_TENSORS, w_after, 100, NULL));
        assert_memory_equal(w_before, w_after, sizeof w_before);
        free(forged);
    }
    free(plain);
    free(path);
    clg_contrastive_destroy(c2);
    clg_model_destroy(m2);
    clg_contrastive_destroy(c);
    clg_model_destroy(m);
}

static void test_attach_rules(void **state)
{
    (void)state;
    clg_model *m = make_model(1);
    clg_contrastive *c = make(4, 2, 6, CLG_BF16);
    /* bad names: NULL, empty, clgrad's prefix; keys of the model's own */
    const char *bad[] = {NULL, "", "clgrad.banks"};
    for (size_t i = 0; i < 3; i++) {
        assert_int_equal(clg_contrastive_attach(c, m, bad[i]), CLG_ERR_INVALID_ARGUMENT);
        assert_non_null(strstr(clg_last_error(tu_ctx), "clg_contrastive_attach: name"));
    }
    OK(clg_contrastive_attach(c, m, "first"));
    assert_int_equal(clg_contrastive_attach(c, m, "enc"), CLG_ERR_INVALID_ARGUMENT);
    assert_non_null(strstr(clg_last_error(tu_ctx), "enc.bank_k"));
    /* still attached as "first": its keys are in the checkpoint */
    char *path = tu_tmp_path("attach.ckpt");
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    size_t n;
    uint8_t *f = tu_read_file(path, &n);
    assert_non_null(strstr((const char *)f + 8, "\"first.bank_q\":{\"dtype\":\"BF16\""));
    assert_non_null(strstr((const char *)f + 8, "\"first.bank_state\":{\"dtype\":\"I32\""));
    free(f);
    /* renamed on the same model */
    OK(clg_contrastive_attach(c, m, "second"));
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    f = tu_read_file(path, &n);
    assert_null(strstr((const char *)f + 8, "first.bank_q"));
    assert_non_null(strstr((const char *)f + 8, "\"second.bank_k\""));
    free(f);
    free(path);
    /* without banks, before finalize */
    clg_contrastive *nob = make(4, 2, 0, CLG_FP32);
    assert_int_equal(clg_contrastive_attach(nob, m, "x"), CLG_ERR_STATE);
    assert_non_null(strstr(clg_last_error(tu_ctx), "bank_size is 0"));
    clg_contrastive_destroy(nob);
    clg_config cfg = clg_config_init(CLG_SGD);
    clg_model *unfinished;
    OK(clg_model_create(tu_ctx, &cfg, &unfinished));
    assert_int_equal(clg_contrastive_attach(c, unfinished, "x"), CLG_ERR_STATE);
    clg_model_destroy(unfinished);
    /* the model goes first: c forgets it and can be attached again */
    clg_model_destroy(m);
    clg_model *m2 = make_model(0);
    OK(clg_contrastive_attach(c, m2, "again"));
    clg_contrastive_destroy(c); /* c goes first: the model forgets it */
    char *p2 = tu_tmp_path("after.ckpt");
    OK(clg_checkpoint_save(m2, p2, NULL, NULL, 0));
    f = tu_read_file(p2, &n);
    assert_null(strstr((const char *)f + 8, "again.bank_q"));
    free(f);
    free(p2);
    clg_model_destroy(m2);
}

TU_MAIN("contaccum", tu_group_setup_tmpdir, tu_group_teardown,
        cmocka_unit_test(test_fifo_order_and_wrap),
        cmocka_unit_test(test_bank_is_constant),
        cmocka_unit_test(test_checkpoint_round_trip),
        cmocka_unit_test(test_attach_rules))

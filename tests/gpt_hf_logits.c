/* gpt_hf_logits.c - for tests/gpt/hf_gpt2_check.py: a Hugging Face GPT-2
 * directory read through gpt_hf_load (tools/train/tasks/gpt/gpt_hf.h), run
 * on the device by the GPT task's model, and its logits written out; then,
 * when EXPORT_DIR is given, the same weights written back with
 * gpt_hf_export.
 *   gpt_hf_logits DIR TOKENS OUT [EXPORT_DIR]
 * TOKENS: B sequences of T tokens (T = the config's n_positions; a token
 * is a byte for vocab_size <= 256, else a little-endian uint16; B = the
 * file's size / T tokens); OUT: B x T x vocab_size little-endian floats. Exit 0, 1 on a
 * failure (said on stderr), 77 with no OpenCL platform (tu_context_or_skip). */
#include "gpt_hf.h"
#include "gpt_model_testutil.h"
#include "testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int fail(const char *what, const char *why)
{
    fprintf(stderr, "gpt_hf_logits: %s: %s\n", what, why);
    return 1;
}

int main(int argc, char **argv)
{
    if (argc != 4 && argc != 5) {
        fprintf(stderr, "usage: %s DIR TOKENS OUT [EXPORT_DIR]\n", argv[0]);
        return 2;
    }
    char err[2048];
    gpt_hf_config c;
    float *params = NULL;
    if (gpt_hf_load(argv[1], &c, &params, err, sizeof err) != 0)
        return fail("gpt_hf_load", err);
    const gpt_shape *s = &c.shape;
    unsigned T = s->context, V = s->vocab, tb = gpt_token_bytes(V);
    size_t nbytes, row = (size_t)T * tb;
    uint8_t *text = tu_read_file(argv[2], &nbytes);
    unsigned B = (unsigned)(nbytes / row);
    if (B == 0 || nbytes % row)
        return fail(argv[2], "not a whole number of n_positions-token sequences");

    clg_context *ctx = tu_context_or_skip();
    tu_ctx = ctx;
    clg_model *model = gmt_model(s);
    OK(clg_model_upload_params(model, CLG_ALL_TENSORS, params, (size_t)gpt_hf_param_count(&c),
                               NULL));
    gpt_model *gm = NULL;
    if (gpt_create(ctx, s, B, &gm, err, sizeof err) != 0)
        return fail("gpt_create", err);
    OK(gpt_bind(gm, model));

    /* window b: sequence b and one token more (a target the forward does
     * not read for the logits) */
    size_t stride = (size_t)T + 1;
    uint8_t *windows = calloc((size_t)B * stride, tb);
    int32_t *idx = malloc(B * sizeof *idx);
    float *logits = malloc((size_t)B * T * V * sizeof *logits);
    if (!windows || !idx || !logits)
        return fail("host", "out of memory");
    for (unsigned b = 0; b < B; b++) {
        memcpy(windows + b * stride * tb, text + b * row, row);
        idx[b] = (int32_t)b;
    }
    gpt_tokens tok = {tu_buffer_from(windows, (size_t)B * stride * tb), tu_buffer_from(idx, B * 4),
                      0, (unsigned)stride};
    if (gpt_forward_logits(gm, &tok, B, T) != CL_SUCCESS)
        return fail("gpt_forward_logits", "failed");
    for (unsigned b = 0; b < B; b++)
        for (unsigned t = 0; t < T; t++)
            if (gpt_read_logits(gm, b, t, T, logits + ((size_t)b * T + t) * V) != CL_SUCCESS)
                return fail("gpt_read_logits", "failed");
    tu_write_file(argv[3], logits, (size_t)B * T * V * sizeof *logits);

    if (argc == 5) { /* what the device holds, written back */
        OK(clg_model_download_params(model, CLG_ALL_TENSORS, params, (size_t)gpt_hf_param_count(&c),
                                     NULL));
        if (gpt_hf_export(argv[4], &c, params, err, sizeof err) != 0)
            return fail("gpt_hf_export", err);
    }
    clReleaseMemObject(tok.windows);
    clReleaseMemObject(tok.idx);
    gpt_destroy(gm);
    clg_model_destroy(model);
    clg_context_destroy(ctx);
    free(windows);
    free(idx);
    free(logits);
    free(text);
    free(params);
    return 0;
}

/* gpt_sample.c - --sample N: N tokens generated after training (bytes of
 * a byte model), each drawn from the softmax of the last position's
 * logits over temperature (0: the most likely token), with a sliding
 * context of the last T tokens, from the trainer's generator seeded by
 * --seed (stream 3), so that a run repeats its text. A byte model starts
 * from --prompt's bytes; a token model from --prompt-tokens' ids (or the
 * decode table's end-of-text token) and prints each token's bytes through
 * its decode table (its ids, comma-separated, without one). Only the V
 * logits of a row are read: the padding is never sampled. */
#include "gpt_run_internal.h"
#include "gpt_resolve.h"
#include "gpt_token_data.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The token drawn from V logits at temperature temp with u uniform in
 * [0, 1); p holds V doubles of scratch. */
static unsigned draw(const float *logits, unsigned V, double temp, double u, double *p)
{
    unsigned best = 0;
    for (unsigned v = 1; v < V; v++)
        if (logits[v] > logits[best])
            best = v;
    if (temp <= 0)
        return best;
    double sum = 0;
    for (unsigned v = 0; v < V; v++)
        sum += p[v] = exp(((double)logits[v] - logits[best]) / temp);
    double x = u * sum;
    for (unsigned v = 0; v < V; v++) {
        if (x < p[v])
            return v;
        x -= p[v];
    }
    return best; /* rounding left x past the last: the likeliest */
}

/* The prompt as token ids into ids (n of them; malloc'ed). */
static int prompt_ids(gpt_trainer *t, uint16_t **ids, size_t *n)
{
    const gpt_options *g = t->g;
    if (g->prompt_tokens)
        return gpt_prompt_tokens_parse(g->prompt_tokens, t->shape.vocab, ids, n, t->run.err,
                                       t->run.errlen);
    *n = g->tokens ? 1 : strlen(g->prompt);
    if (!(*ids = malloc(*n * sizeof **ids)))
        return task_fail(t, "--sample: out of host memory");
    for (size_t i = 0; i < *n; i++) /* gpt_options_resolve checked the eot's there */
        (*ids)[i] = g->tokens ? (uint16_t)t->decoder.eot : (uint8_t)g->prompt[i];
    return 0;
}

/* Token id to stdout: its bytes (a byte model's byte; a token model's
 * through the decode table), or its id. */
static void print_token(const gpt_trainer *t, uint16_t id, int first)
{
    if (!t->g->tokens) {
        putchar(id);
    } else if (t->decoder.vocab) {
        size_t len;
        const uint8_t *b = gpt_decoder_token(&t->decoder, id, &len);
        fwrite(b, 1, len, stdout);
    } else {
        printf(first ? "%u" : ",%u", id);
    }
}

/* Tokens ids[0 .. n) of tb bytes each into a window's bytes: a byte
 * each, or the token windows' little-endian pairs (gpt_tokens_put). */
static void pack(const uint16_t *ids, size_t n, unsigned tb, uint8_t *out)
{
    if (tb == 2) {
        gpt_tokens_put(out, ids, n);
        return;
    }
    for (size_t i = 0; i < n; i++)
        out[i] = (uint8_t)ids[i];
}

/* The generation loop: text[0 .. plen) the prompt, n in all. */
static int generate(gpt_trainer *t, uint16_t *text, size_t plen, size_t n, cl_mem window,
                    cl_mem idx, float *logits, double *p, uint8_t *packed)
{
    unsigned T = t->shape.context, V = t->shape.vocab, tb = gpt_token_bytes(V);
    train_rng rng = train_rng_seed(t->run.opt->seed, 3);
    cl_command_queue q = clg_context_queue(t->run.ctx);
    for (size_t len = plen; len < n; len++) {
        unsigned tc = len < T ? (unsigned)len : T;
        gpt_tokens tok = {window, idx, 0, T + 1};
        pack(text + len - tc, tc, tb, packed);
        cl_int e =
            clEnqueueWriteBuffer(q, window, CL_TRUE, 0, (size_t)tc * tb, packed, 0, NULL, NULL);
        if (e == CL_SUCCESS)
            e = gpt_forward_logits(t->m, &tok, 1, tc);
        if (e == CL_SUCCESS)
            e = gpt_read_logits(t->m, 0, tc - 1, tc, logits);
        if (e != CL_SUCCESS)
            return task_fail_cl(t, "--sample", e);
        double u = (double)(train_rng_u64(&rng) >> 11) * 0x1p-53;
        text[len] = (uint16_t)draw(logits, V, t->g->temperature, u, p);
        print_token(t, text[len], 0);
    }
    return 0;
}

int gpt_sample(gpt_trainer *t)
{
    const gpt_options *g = t->g;
    unsigned T = t->shape.context, V = t->shape.vocab, tb = gpt_token_bytes(V);
    uint16_t *prompt = NULL;
    size_t plen = 0;
    if (prompt_ids(t, &prompt, &plen) != 0)
        return -1;
    size_t n = plen + (size_t)g->sample;
    uint16_t *text = malloc(n * sizeof *text);
    float *logits = malloc(V * sizeof *logits);
    double *p = malloc(V * sizeof *p);
    uint8_t *packed = malloc(((size_t)T + 1) * tb);
    cl_int e = CL_SUCCESS, e2 = CL_SUCCESS;
    cl_context cl = clg_context_cl(t->run.ctx);
    cl_mem window = clCreateBuffer(cl, CL_MEM_READ_ONLY, ((size_t)T + 1) * tb, NULL, &e);
    cl_int zero = 0;
    cl_mem idx =
        clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &e2);
    if (e == CL_SUCCESS)
        e = e2;
    int rc = 0;
    if (!text || !logits || !p || !packed)
        rc = task_fail(t, "--sample: out of host memory");
    else if (e != CL_SUCCESS)
        rc = task_fail_cl(t, "--sample: its buffers", e);
    if (rc == 0) {
        memcpy(text, prompt, plen * sizeof *text);
        printf("sample (%llu %s after the prompt, temperature %g, seed %llu):\n",
               (unsigned long long)g->sample, g->tokens ? "tokens" : "bytes",
               (double)g->temperature, (unsigned long long)t->run.opt->seed);
        for (size_t i = 0; i < plen; i++)
            print_token(t, text[i], i == 0);
        rc = generate(t, text, plen, n, window, idx, logits, p, packed);
        printf("\n");
    }
    if (window)
        clReleaseMemObject(window);
    if (idx)
        clReleaseMemObject(idx);
    free(prompt);
    free(text);
    free(logits);
    free(p);
    free(packed);
    return rc;
}

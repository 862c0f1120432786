/* gpt_sample.c - --sample N: N bytes generated from --prompt after
 * training, each drawn from the softmax of the last position's logits over
 * temperature (0: the most likely byte), with a sliding context of the
 * last T bytes, from the trainer's generator seeded by --seed (stream 3),
 * so that a run repeats its text. */
#include "gpt_run_internal.h"
#include "rng.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The byte drawn from logits at temperature temp with u uniform in [0, 1). */
static int draw(const float *logits, double temp, double u)
{
    int best = 0;
    for (int v = 1; v < GPT_VOCAB; v++)
        if (logits[v] > logits[best])
            best = v;
    if (temp <= 0)
        return best;
    double p[GPT_VOCAB], sum = 0;
    for (int v = 0; v < GPT_VOCAB; v++)
        sum += p[v] = exp(((double)logits[v] - logits[best]) / temp);
    double x = u * sum;
    for (int v = 0; v < GPT_VOCAB; v++) {
        if (x < p[v])
            return v;
        x -= p[v];
    }
    return best; /* rounding left x past the last: the likeliest */
}

int gpt_sample(gpt_trainer *t)
{
    const gpt_options *g = t->g;
    unsigned T = t->shape.context;
    size_t plen = strlen(g->prompt), n = plen + (size_t)g->sample;
    uint8_t *text = malloc(n);
    float *logits = malloc(GPT_VOCAB * sizeof *logits);
    cl_int e = CL_SUCCESS, e2 = CL_SUCCESS;
    cl_context cl = clg_context_cl(t->run.ctx);
    cl_mem window = clCreateBuffer(cl, CL_MEM_READ_ONLY, (size_t)T + 1, NULL, &e);
    cl_int zero = 0;
    cl_mem idx =
        clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, sizeof zero, &zero, &e2);
    if (e == CL_SUCCESS)
        e = e2;
    int rc = 0;
    if (!text || !logits)
        rc = task_fail(t, "--sample: out of host memory");
    else if (e != CL_SUCCESS)
        rc = task_fail_cl(t, "--sample: its buffers", e);
    if (rc == 0) {
        memcpy(text, g->prompt, plen);
        train_rng rng = train_rng_seed(t->run.opt->seed, 3);
        cl_command_queue q = clg_context_queue(t->run.ctx);
        printf("sample (%llu bytes after the prompt, temperature %g, seed %llu):\n%s",
               (unsigned long long)g->sample, (double)g->temperature,
               (unsigned long long)t->run.opt->seed, g->prompt);
        for (size_t len = plen; len < n && rc == 0; len++) {
            unsigned tc = len < T ? (unsigned)len : T;
            gpt_tokens tok = {window, idx, 0, T + 1};
            e = clEnqueueWriteBuffer(q, window, CL_FALSE, 0, tc, text + len - tc, 0, NULL, NULL);
            if (e == CL_SUCCESS)
                e = gpt_forward_logits(t->m, &tok, 1, tc);
            if (e == CL_SUCCESS)
                e = gpt_read_logits(t->m, 0, tc - 1, tc, logits);
            if (e != CL_SUCCESS) {
                rc = task_fail_cl(t, "--sample", e);
                break;
            }
            double u = (double)(train_rng_u64(&rng) >> 11) * 0x1p-53;
            text[len] = (uint8_t)draw(logits, g->temperature, u);
            putchar(text[len]);
        }
        printf("\n");
    }
    if (window)
        clReleaseMemObject(window);
    if (idx)
        clReleaseMemObject(idx);
    free(text);
    free(logits);
    return rc;
}

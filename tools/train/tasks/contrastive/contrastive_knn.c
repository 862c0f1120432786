/* contrastive_knn.c - kNN evaluation of the encoder: the features of the
 * training samples the run uses (the memory of the classifier) and of the
 * test samples, without augmentation, L2-normalized: by default those of
 * the last hidden layer, the representation SimCLR evaluates (the loss's
 * embedding after it is made invariant to the augmentations and keeps less
 * of the rest), or the embedding itself (--knn-on embedding); each test sample's
 * cosine similarities to every training embedding by CLBlast GEMMs in
 * chunks of test rows; the label most frequent among its k most similar
 * training samples (a tie goes to the label of larger summed similarity)
 * against its own. The buffers are charged to the budget for the
 * evaluation only, and the chunk shrinks to what the budget leaves; the
 * features themselves must fit (a message says so). */
#include "contrastive_internal.h"
#include "clgrad_advanced.h"
#include "clblast_status.h"

#include <clblast_c.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CHUNK 256 /* test rows per similarity GEMM, unless the budget allows fewer */

typedef struct knn_buffers {
    cl_mem ident, emb_train, emb_test, sims;
    uint64_t bytes;
    size_t chunk; /* test rows per GEMM */
} knn_buffers;

static void release(con_trainer *t, knn_buffers *k)
{
    cl_mem all[] = {k->ident, k->emb_train, k->emb_test, k->sims};
    for (int i = 0; i < 4; i++)
        if (all[i])
            clReleaseMemObject(all[i]);
    if (k->bytes)
        clg_context_unreserve(t->run.ctx, k->bytes);
    memset(k, 0, sizeof *k);
}

/* The layer evaluated, and its width. */
static int eval_layer(const con_trainer *t, size_t *width)
{
    int L = t->enc->n_layers;
    int layer = t->c->knn_embedding || L == 1 ? L - 1 : L - 2;
    *width = t->enc->dims[layer + 1];
    return layer;
}

static int allocate(con_trainer *t, knn_buffers *k, size_t n_train, size_t n_test)
{
    size_t d;
    eval_layer(t, &d);
    /* the features and identity order, then as many test rows per GEMM as
     * the budget leaves room for (at most CHUNK) */
    uint64_t fixed = 4ull * (n_train + (n_train + n_test) * d), row = 4ull * n_train;
    uint64_t budget = clg_context_budget(t->run.ctx), used = clg_context_device_bytes(t->run.ctx);
    k->chunk = CHUNK;
    if (budget && (used + fixed + row > budget))
        return task_fail(t,
                         "kNN evaluation: the features of %zu training and %zu test samples "
                         "(%" PRIu64 " B) and one row of similarities do not fit the budget "
                         "(%" PRIu64 " B in use of %" PRIu64 "); use a smaller --train-limit or "
                         "--knn-on embedding",
                         n_train, n_test, fixed, used, budget);
    if (budget && (budget - used - fixed) / row < k->chunk)
        k->chunk = (size_t)((budget - used - fixed) / row);
    uint64_t bytes = fixed + row * k->chunk;
    clg_status st = clg_context_reserve(t->run.ctx, bytes);
    if (st != CLG_SUCCESS)
        return task_fail(t, "kNN evaluation: %" PRIu64 " B of features and similarities: %s", bytes,
                         clg_last_error(t->run.ctx));
    k->bytes = bytes;
    t->res->eval_bytes = bytes;
    int32_t *ident = malloc(n_train * sizeof *ident);
    if (!ident)
        return task_fail(t, "out of host memory");
    for (size_t i = 0; i < n_train; i++)
        ident[i] = (int32_t)i;
    cl_context cl = clg_context_cl(t->run.ctx);
    cl_int e[4];
    k->ident = clCreateBuffer(cl, CL_MEM_READ_ONLY | CL_MEM_COPY_HOST_PTR, n_train * 4, ident, &e[0]);
    free(ident);
    k->emb_train = clCreateBuffer(cl, CL_MEM_READ_WRITE, n_train * d * 4, NULL, &e[1]);
    k->emb_test = clCreateBuffer(cl, CL_MEM_READ_WRITE, n_test * d * 4, NULL, &e[2]);
    k->sims = clCreateBuffer(cl, CL_MEM_READ_WRITE, k->chunk * n_train * 4, NULL, &e[3]);
    for (int i = 0; i < 4; i++)
        if (e[i] != CL_SUCCESS)
            return task_fail_cl(t, "kNN evaluation buffers", e[i]);
    return 0;
}

/* Embeddings of samples idx[0 .. n) of (images, idx) into emb, normalized. */
static int embed(con_trainer *t, cl_mem images, cl_mem idx, size_t n, cl_mem emb)
{
    cl_command_queue q = clg_context_queue(t->run.ctx);
    size_t d, cap = t->enc->cap;
    int layer = eval_layer(t, &d);
    for (size_t off = 0; off < n; off += cap) {
        cl_uint rows = (cl_uint)(n - off < cap ? n - off : cap);
        cl_int e = mlp_gather(&t->enc->k, images, idx, (cl_uint)off, rows,
                              (cl_uint)t->run.train->dim, t->enc->x);
        if (e == CL_SUCCESS)
            e = con_encoder_forward(t->enc, rows);
        if (e == CL_SUCCESS)
            e = clEnqueueCopyBuffer(q, t->enc->act[layer], emb, 0, off * d * 4,
                                    rows * d * 4, 0, NULL, NULL);
        if (e != CL_SUCCESS)
            return task_fail_cl(t, "kNN evaluation: embedding", e);
    }
    cl_uint rows = (cl_uint)n, dim = (cl_uint)d;
    cl_int e = clSetKernelArg(t->k_l2norm, 0, sizeof emb, &emb);
    e |= clSetKernelArg(t->k_l2norm, 1, sizeof rows, &rows);
    e |= clSetKernelArg(t->k_l2norm, 2, sizeof dim, &dim);
    size_t global = n;
    if (e == CL_SUCCESS)
        e = clEnqueueNDRangeKernel(q, t->k_l2norm, 1, NULL, &global, NULL, 0, NULL, NULL);
    return e == CL_SUCCESS ? 0 : task_fail_cl(t, "kNN evaluation: normalizing", e);
}

/* The vote of one test row's similarities to n training samples. */
static int vote(const float *sim, size_t n, const uint8_t *labels, unsigned k)
{
    float best[1000];
    uint8_t lab[1000];
    unsigned have = 0;
    for (size_t j = 0; j < n; j++) {
        float s = sim[j];
        if (have == k && s <= best[k - 1])
            continue;
        unsigned p = have < k ? have++ : k - 1; /* insertion into the sorted top k */
        while (p > 0 && best[p - 1] < s) {
            best[p] = best[p - 1];
            lab[p] = lab[p - 1];
            p--;
        }
        best[p] = s;
        lab[p] = labels[j];
    }
    int count[DATASET_CLASSES] = {0};
    float weight[DATASET_CLASSES] = {0};
    for (unsigned i = 0; i < have; i++) {
        count[lab[i]]++;
        weight[lab[i]] += best[i];
    }
    int winner = 0;
    for (int c = 1; c < DATASET_CLASSES; c++)
        if (count[c] > count[winner] || (count[c] == count[winner] && weight[c] > weight[winner]))
            winner = c;
    return winner;
}

int con_knn_eval(con_trainer *t, double *accuracy)
{
    size_t n_train = t->run.dtrain.n, n_test = t->run.dtest.n, d;
    eval_layer(t, &d);
    unsigned k = t->c->knn < n_train ? t->c->knn : (unsigned)n_train;
    knn_buffers kb = {0};
    float *sims = NULL;
    int rc = -1;
    if (allocate(t, &kb, n_train, n_test) != 0)
        goto out;
    sims = malloc(kb.chunk * n_train * sizeof *sims);
    if (!sims) {
        task_fail(t, "out of host memory for the kNN evaluation");
        goto out;
    }
    if (embed(t, t->run.dtrain.images, kb.ident, n_train, kb.emb_train) != 0 ||
        embed(t, t->run.dtest.images, t->run.dtest.idx, n_test, kb.emb_test) != 0)
        goto out;
    cl_command_queue q = clg_context_queue(t->run.ctx);
    size_t correct = 0;
    for (size_t off = 0; off < n_test; off += kb.chunk) {
        size_t rows = n_test - off < kb.chunk ? n_test - off : kb.chunk;
        /* S[rows x n_train] = E_test[rows x d] E_train^T */
        CLBlastStatusCode s = CLBlastSgemm(CLBlastLayoutRowMajor, CLBlastTransposeNo,
                                           CLBlastTransposeYes, rows, n_train, d, 1.0f,
                                           kb.emb_test, off * d, d, kb.emb_train, 0, d, 0.0f,
                                           kb.sims, 0, n_train, &q, NULL);
        if (s != CLBlastSuccess) {
            char name[64];
            task_fail(t, "kNN evaluation: CLBlastSgemm failed (%s)",
                      clblast_status_text((int)s, name, sizeof name));
            goto out;
        }
        cl_int e = clEnqueueReadBuffer(q, kb.sims, CL_TRUE, 0, rows * n_train * 4, sims, 0, NULL,
                                       NULL);
        if (e != CL_SUCCESS) {
            task_fail_cl(t, "kNN evaluation: reading similarities", e);
            goto out;
        }
        for (size_t r = 0; r < rows; r++)
            correct += vote(sims + r * n_train, n_train, t->run.train->labels, k) ==
                       t->run.test->labels[off + r];
    }
    *accuracy = n_test ? (double)correct / (double)n_test : 0.0;
    rc = 0;
out:
    free(sims);
    release(t, &kb);
    return rc;
}

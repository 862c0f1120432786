/* trainer_weights.c - bf16 master weights (--master-dtype bf16): clgrad
 * keeps the parameters as bf16 and updates them with stochastic rounding;
 * CLBlast's GEMMs take fp32, so the trainer keeps an fp32 copy of them,
 * widened (exactly) after every update and after a resume, and the MLP
 * reads that copy. It is the trainer's memory, reserved in the budget like
 * the fp32 gradient scratch; both are split_buffers. */
#include "trainer_internal.h"

int trainer_split_buffer(trainer *t, const char *what, cl_mem *buf, uint64_t *bytes,
                         clg_view *views)
{
    uint64_t n = clg_model_param_count(t->run.model);
    if (run_reserve_buffer(&t->run, 4 * n, what, buf, bytes) != 0)
        return -1;
    size_t off = 0;
    for (int i = 0; i < t->n_tensors; i++) {
        size_t cnt = clg_model_tensor_size(t->run.model, i);
        views[i] = (clg_view){*buf, off, cnt};
        off += cnt;
    }
    return 0;
}

int trainer_setup_weights(trainer *t)
{
    if (t->run.opt->master_dtype != CLG_BF16)
        return 0;
    clg_view fp32[2 * MLP_MAX_LAYERS];
    if (trainer_split_buffer(t, "fp32 copy of the bf16 weights", &t->weights, &t->weights_bytes,
                             fp32) != 0)
        return -1;
    for (int i = 0; i < t->n_tensors; i++) {
        clg_status st = clg_model_param_view(t->run.model, i, &t->master_view[i]);
        if (st != CLG_SUCCESS)
            return trainer_fail_clg(t, "parameter view", st);
        /* tensor 2l is layer l's weight, 2l + 1 its bias (mlp_add_tensors) */
        *(i % 2 ? &t->net->b_view[i / 2] : &t->net->w_view[i / 2]) = fp32[i];
    }
    return trainer_widen_weights(t);
}

int trainer_widen_weights(trainer *t)
{
    for (int i = 0; t->weights && i < t->n_tensors; i++) {
        const clg_view *src = &t->master_view[i];
        const clg_view *dst = i % 2 ? &t->net->b_view[i / 2] : &t->net->w_view[i / 2];
        cl_int e = mlp_widen_bf16(&t->net->k, src->mem, src->offset, dst->mem, dst->offset,
                                  (cl_uint)src->count);
        if (e != CL_SUCCESS)
            return trainer_fail_cl(t, "widening the bf16 weights", e);
    }
    return 0;
}

void trainer_release_weights(trainer *t)
{
    run_release_buffer(&t->run, &t->weights, &t->weights_bytes);
}

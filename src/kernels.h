/* kernels.h - clgrad's own kernels: variant selection (-D options), a
 * per-model kernel cache, and one launcher per kernel. Every launcher
 * enqueues and returns; none waits. */
#ifndef CLGRAD_KERNELS_H
#define CLGRAD_KERNELS_H

#include "model.h"

size_t clg__kernels_wg(clg_context *ctx);
/* Work-groups of a reduction pass over n4 float4s (one partial each). */
size_t clg__kernels_reduce_groups(const clg_model *m, size_t n4);
/* Builds the variants every update of this model needs, so that a build
 * failure shows at finalize rather than at the first update. */
clg_status clg__kernels_create(clg_model *m);
void clg__kernels_destroy(clg_model *m);
/* Per-work-group (lr_mult, weight decay) of chunks with several param
 * groups, for the update kernel (after the layout). */
clg_status clg__kernels_group_params(clg_model *m);
void clg__kernels_free_group_params(clg_model *m);
/* Device bytes of those tables. */
uint64_t clg__kernels_group_params_bytes(const clg_model *m);

/* acc (+)= w*g over all chunks. region >= 0: fused statistics into that
 * partials region. skip_micro: read the verdict from the step block. */
clg_status clg__launch_accumulate(clg_model *m, const clg_grads *g, float w, bool first, int region,
                                  bool skip_micro);
/* Finiteness of g into CLG_REGION_CHECK, then the micro-step verdict. */
clg_status clg__launch_check_micro(clg_model *m, const clg_grads *g, float w);
/* Sum of squares and non-finite flag of the accumulator into region. */
clg_status clg__launch_acc_sumsq(clg_model *m, int region);
/* The same over the shard's part of each chunk, into the main region. */
clg_status clg__launch_shard_sumsq(clg_model *m);
/* Per-tensor sums of squares of the accumulator. */
clg_status clg__launch_tensor_sumsq(clg_model *m);
/* Noise scale: the first micro-step's statistics (CLG_REGION_SMALL) and
 * weight into the step block. */
clg_status clg__launch_fold_small(clg_model *m, float weight);
/* End of cycle: the step block for the update. */
clg_status clg__launch_prologue(clg_model *m, bool stats, float weight_sum);
/* The fused update, one launch per chunk; last != NULL is path C, and
 * acc_empty says the accumulator holds nothing of this cycle. */
clg_status clg__launch_update(clg_model *m, const clg_grads *last, float w_last, bool acc_empty);

#endif /* CLGRAD_KERNELS_H */

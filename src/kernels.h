/* kernels.h - the launchers of a model's cycle over its launch plan
 * (plan.h): each sets the arguments of the call (gradients, weights,
 * seeds, a partials region) and enqueues the planned launches. Every
 * launcher enqueues and returns; none waits. */
#ifndef CLGRAD_KERNELS_H
#define CLGRAD_KERNELS_H

#include "model.h"

/* acc (+)= w*g over all chunks. region >= 0: fused statistics into that
 * partials region. Skip-micro models read the verdict from the step
 * block. */
clg_status clg__launch_accumulate(clg_model *m, const clg_grads *g, float w, bool first,
                                  int region);
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
clg_status clg__launch_prologue(clg_model *m, float weight_sum);
/* The fused update, one launch per chunk; last != NULL is path C, and
 * acc_empty says the accumulator holds nothing of this cycle. */
clg_status clg__launch_update(clg_model *m, const clg_grads *last, float w_last, bool acc_empty);

#endif /* CLGRAD_KERNELS_H */

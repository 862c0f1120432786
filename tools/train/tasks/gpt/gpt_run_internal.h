/* gpt_run_internal.h - the state of one GPT run, shared by gpt_setup.c (data,
 * model, memory plan, teardown), gpt_loop.c (the loop's hooks and the
 * evaluation), gpt_sample.c (generation) and gpt_run.c. Not part of
 * train_core's interface. */
#ifndef TRAIN_GPT_RUN_INTERNAL_H
#define TRAIN_GPT_RUN_INTERNAL_H

#include "gpt_decode.h"
#include "gpt_run.h"
#include "gpt_source.h"
#include "model_fp32.h"
#include "task_settings.h"

typedef struct gpt_trainer {
    run_state run; /* what every task's run has (run.h) */
    const gpt_options *g;
    gpt_result *res;

    gpt_shape shape;
    gpt_model *m;
    gpt_source src;         /* --data, listed before the plan */
    gpt_source_data data;   /* what the run read of it (or the caller's
                               windows' training bytes) */
    gpt_decoder decoder;    /* a token model's decode table (vocab 0: none) */
    cl_mem sums[3];         /* the loss sum and the positions of the epoch
                               (GPT_TRAIN_SUMS), of the evaluation and of
                               the update (--metrics) */
    uint64_t sums_bytes[3]; /* reserved */
    clg_view scale;         /* clgrad's loss scale (mem NULL: none) */
    model_fp32 weights;     /* --master-dtype bf16: the fp32 copy the model
                               reads, widened after every update */
    task_settings settings; /* train.gpt.* */
    double micro_done;      /* --profile: when the last micro-step's work ended */
} gpt_trainer;

enum { GPT_TRAIN_SUMS = 0, GPT_EVAL_SUMS = 1, GPT_UPDATE_SUMS = 2, GPT_N_SUMS = 3 };
#define GPT_SUMS_BYTES (GPT_N_SUMS * 2 * sizeof(float)) /* all of them */

/* A --sample of a finished run's checkpoint: no training, and no
 * evaluation (nobody asked for one; a --resume without --sample gives it). */
int gpt_sampling_only(const gpt_trainer *t);

/* gpt_setup.c */
int gpt_setup(gpt_trainer *t, const train_io *io);
void gpt_print_run_plan(gpt_trainer *t);
/* run_end's release: the run's state (a gpt_trainer), then run_release */
void gpt_teardown(void *task);

/* gpt_plan.c: the largest micro-batch whose activations fit in avail
 * bytes beside fixed ones (0: none fits), capped at cap. */
unsigned gpt_fit_micro_batch(const gpt_act_bytes *a, uint64_t avail, uint64_t fixed, unsigned cap);

/* gpt_loop.c: the training (with --profile its split in t->res) */
int gpt_loop(gpt_trainer *t);
int gpt_evaluate(gpt_trainer *t);

/* gpt_sample.c: --sample's bytes to stdout */
int gpt_sample(gpt_trainer *t);

#endif /* TRAIN_GPT_RUN_INTERNAL_H */

/* run.h - the part of a training run every task shares: the options, the
 * failure message, the context and its budget, the data sets (host and
 * device), clgrad's model, gradients and configuration, the run
 * configuration checkpoints store, the data order and the position in it,
 * the counters, progress, and the outputs written at the end. A task's
 * run state (tasks/<task>/) holds a run_state as its member `run` and
 * adds its model, buffers and kernels; run.c sets up and releases what is
 * here, in the same order for every task. */
#ifndef TRAIN_RUN_H
#define TRAIN_RUN_H

#include "clgrad.h"
#include "atomic_file.h"
#include "dataset.h"
#include "devdata.h"
#include "dist_hooks.h"
#include "options.h"
#include "order.h"
#include "position.h"
#include "progress.h"
#include "runconfig.h"
#include "summary.h"
#include "writer_lock.h"

#include <stddef.h>
#include <stdint.h>

/* What a caller (a test, the benchmark) may hand a run instead of what the
 * options name. */
typedef struct train_io {
    clg_context *ctx;     /* NULL: create one from opt->device */
    const dataset *train; /* NULL: load from opt->data_dir */
    const dataset *test;  /* NULL: load from opt->data_dir */
    float *weights;       /* non-NULL: receives the final parameters in */
    size_t weights_cap;   /* model order (weights_cap floats at most) */
} train_io;

/* A task's running sums on the device: n floats from float first of buf
 * (its buffer; buf NULL: none). */
typedef struct run_sums {
    cl_mem buf;
    size_t first;
    unsigned n;
} run_sums;

struct task_settings;
struct model_fp32;

typedef struct run_state {
    const train_options *opt;
    const char *task; /* the task's --task name: a --resume file must be its */
    char *err;
    size_t errlen;
    train_dist_hooks *dist; /* --dist: this rank's MPI side (dist.h), else NULL */
    int dist_pending;       /* --dist: in a phase whose failures the next agreement
                               (at the latest run_end's) must still carry */
    run_result *result;     /* the task's result's shared part (summary.h) */
    double started;         /* progress_now() at run_start: total_seconds' origin */
    /* the task's: its stored settings (task_settings.h; NULL: none), which
     * checkpoints and --log carry, and its fp32 copy of bf16 master weights
     * (model_fp32.h; NULL: none), widened after every update */
    const struct task_settings *settings;
    struct model_fp32 *master;
    /* the loop's running sums (loop.h): the epoch's, cleared when a pass
     * starts, and the update's (--metrics, --log), cleared after each one */
    run_sums epoch_sums, update_sums;
    writer_lock lock; /* --checkpoint's, held for the run (run_lock_files) */
    const char *save_path; /* run_save's file: --checkpoint's unless set (--save-initial) */
    atomic_file *metrics;  /* --metrics while it is open (rank 0's under --dist) */
    struct run_log *log;   /* --log while it is open (rank 0's): run_log.h */

    clg_context *ctx;
    int own_ctx;
    uint64_t old_budget;       /* a caller's context gets its budget back */
    dataset train_ds, test_ds; /* loaded here (else the caller's) */
    const dataset *train, *test;
    devdata dtrain, dtest;

    clg_config cfg;    /* the model's configuration */
    run_config config; /* the settings stored in checkpoints (runconfig.h) */
    clg_model *model;
    int no_decay; /* the model's parameter group of weight decay 0 (run_create_model) */
    clg_grads *grads;

    batch_order order;
    unsigned b, k;    /* micro-batch, micro-steps of a full batch (run_set_micro_batch) */
    unsigned cycle_k; /* micro-steps of the current cycle (run_begin_cycle) */
    uint64_t total_updates, batches_per_epoch;

    uint64_t updates, micro_steps, samples;
    uint64_t epoch, next_batch; /* position of the next batch */
    uint64_t samples_at_start;  /* samples of a resumed run before it */
    uint64_t updates_at_start;
    double train_seconds;
    double eval_seconds; /* the loop's evaluations (rank 0's) */
    progress prog;
    cl_event ahead[2]; /* the ends of the last updates enqueued (run_bound_queue) */
} run_state;

/* A task's run begins: r (zeroed) for the task named task on the options,
 * under --dist its MPI side dist (else NULL), the result's shared part
 * res (zeroed by the caller) filled as the run goes, failures into err;
 * progress on a single step until run_plan_order knows the run's. */
void run_start(run_state *r, const char *task, const train_options *o, train_dist_hooks *dist,
               run_result *res, char *err, size_t errlen);

/* The result's shape of the updates, its data and model bytes, once the
 * run is set up (run_plan_order, the micro-batch, the model, the data). */
void run_result_setup(run_state *r);

/* The one-line memory plan on the progress log (not under --quiet) of a
 * set-up run from its result: "memory plan on DEVICE: model M (P
 * parameters)MODEL_EXTRA, activations A (ROWS), data D; total TOTAL of the
 * budget or the device's memory". */
void run_print_plan_line(run_state *r, const char *model_extra, const char *rows,
                         uint64_t total);

/* Message into r->err; return -1. */
int run_fail(run_state *r, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* "what: clgrad's last error (status)" / "what: OpenCL status (code)",
 * CLBlast's own statuses under CLBlast's names (clblast_status.h). */
int run_fail_clg(run_state *r, const char *what, clg_status st);
int run_fail_cl(run_state *r, const char *what, cl_int e);
/* The same for a task's state t, whose run_state is its member run. */
#define task_fail(t, ...) run_fail(&(t)->run, __VA_ARGS__)
#define task_fail_clg(t, what, st) run_fail_clg(&(t)->run, what, st)
#define task_fail_cl(t, what, e) run_fail_cl(&(t)->run, what, e)

/* Before any device work: --checkpoint's lock (writer_lock.h), taken when
 * this process writes it (writes: 0 on a --dist rank other than 0) and
 * held until run_release, and --resume refused while another run writes
 * that file. Returns 0, or -1 with a message naming the other run's pid. */
int run_lock_files(run_state *r, int writes);

/* The caller's data sets, else --data's "train" and "t10k" files. */
int run_load_data(run_state *r, const train_io *io);

/* The first limit of n samples (limit 0: all n): --train-limit's and
 * --test-limit's rule. */
size_t run_limited(size_t n, uint64_t limit);

/* The samples a run uses: all, or --train-limit/--test-limit's first. */
void run_limits(const run_state *r, size_t *n_train, size_t *n_test);

/* The samples run_limits will give, before the data is loaded: the
 * caller's sets' counts, else the files' (their labels read alone); 0 for
 * a set that cannot be read (run_load_data says why). */
void run_count_samples(const run_state *r, const train_io *io, size_t *n_train, size_t *n_test);

/* The first n_train and n_test samples onto the device (r->dtrain,
 * r->dtest); over --vram's budget, a message with the bytes needed and
 * the budget's left. */
int run_upload_data(run_state *r, size_t n_train, size_t n_test);

/* clg_model_estimate of n parameters under the run's configuration
 * (clg_model_estimate_shard for shard of shards > 1), with clgrad's
 * gradient buffers of paths A and C: the model's memory plan before it
 * exists. */
int run_estimate_model(run_state *r, uint64_t n, unsigned shard, unsigned shards,
                       clg_model_plan *p);
/* Bytes of clgrad's gradient buffers of n parameters as the run creates
 * them: --grad-dtype's on paths A and C, none on path B. */
uint64_t run_grad_buffer_bytes(const train_options *o, uint64_t n);

/* The caller's context, else one on --device; --vram's budget; the
 * device's name into the result. */
int run_open_context(run_state *r, const train_io *io);

/* The data order of n_train samples in batches of --batch, the updates
 * the run takes (--steps, else --epochs' worth) and progress over them. */
int run_plan_order(run_state *r, size_t n_train);

/* --warmup, capped so that a decaying schedule has at least one update
 * after it. */
uint64_t run_warmup(const run_state *r);

/* run_cycle.c: the one owner of b, k and each cycle's length.
 * The micro-batch b and k = ceil(--batch / b), the micro-steps of a full
 * batch: how every task's setup and --auto-micro-batch's halving set them. */
void run_set_micro_batch(run_state *r, unsigned b);
/* An update of share samples (an epoch's partial last batch has fewer,
 * a --dist rank takes its 1/R) begins: its micro-steps, ceil(share / b),
 * returned and recorded as the cycle's length for clgrad. */
size_t run_begin_cycle(run_state *r, size_t share);
/* clg_config.k_schedule: the length run_begin_cycle recorded; user is
 * the run_state. The one way the trainer gives clgrad a cycle's length. */
unsigned run_k_of_cycle(uint64_t update_index, void *user);

/* Whether the run is over after an update: --steps (or the epochs) done,
 * or --stop-after updates of this run. */
int run_done(const run_state *r);

/* clgrad's model of the run: its configuration from the options
 * (train_options_clg_config; its lr after --lr-scale into the result)
 * with the schedule over the run's updates and k micro-steps per update
 * (fewer in a partial last batch), created on the context, with the
 * parameter group "no_decay" (weight decay 0: biases) as r->no_decay.
 * Returns -1 with a message when the model cannot be created; else 0,
 * with the group's status in *st for the task to report with the rest of
 * its model. */
int run_create_model(run_state *r, clg_status *st);

/* The model's initial parameters: init(arg, --seed, host) fills all of
 * them in model order (e.g. mlp_init_shape), then they are uploaded; their
 * count into the result. */
typedef void (*run_param_init)(const void *arg, uint64_t seed, float *host);
int run_init_params(run_state *r, run_param_init init, const void *arg);

/* Training samples of this run (not of a resumed one's past) per second
 * of training. */
double run_samples_per_s(const run_state *r);

/* The epochs the run's updates span (the last may be partial). */
uint64_t run_epochs(const run_state *r);

/* At the end of an epoch's pass: the next epoch starts at batch 0. */
void run_next_epoch(run_state *r);

/* Where the run stands (position.h), for checkpoints. */
train_position run_position(const run_state *r);

/* The settings checkpoints store (runconfig.h) for the run as it trains:
 * its options, clgrad configuration, micro-batch and training samples. */
void run_build_config(run_state *r);

/* --checkpoint: the model with the run's position, its stored settings and
 * the task's own n keys and values. Under --dist collective: every rank
 * calls it, rank 0 writes the one file (with every shard's optimizer
 * states under ZeRO-1), and every rank gets its status. */
int run_save(run_state *r, const char *const *keys, const char *const *values, size_t n);

/* What a task adds to --resume: on_meta gets every metadata pair of the
 * file (to collect its own keys; reset clears what it collected), and
 * compare checks them against the run's before the core's settings are
 * (0, or -1 with a message). Any may be NULL; user is passed back. */
typedef struct run_resume_task {
    void (*on_meta)(const char *key, const char *value, void *user);
    void (*reset)(void *user);
    int (*compare)(void *user);
    void *user;
} run_resume_task;

/* --resume: from the file's header, verified first (its CRC: a damaged
 * header is left to the load, which reports it), the task that saved it
 * (its "train.<task>.task" key; a file without one is the default task's)
 * must be r->task, then the stored settings are compared (the task's,
 * then the core's: --override's accepted changes described in
 * overridden); then the load (model, state and the position into *p) and
 * the same checks on the metadata as loaded. task may be NULL. Returns 0
 * or -1 with a message. */
int run_resume_load(run_state *r, const run_resume_task *task, char *overridden, size_t olen,
                    train_position *p);

/* The counters and the place in the data order of a loaded position. */
void run_set_position(run_state *r, const train_position *p);

/* The final parameters into io->weights and --dump-weights (little-endian
 * fp32 in model order, written through atomic_file.h). write_file: 0 on a
 * --dist rank other than 0. */
int run_dump_weights(run_state *r, const train_io *io, int write_file);

/* A buffer of the task's own (not clgrad's) charged to the context's
 * budget: bytes reserved (into *reserved), then allocated; what names it
 * in the message. run_release_buffer frees and unreserves (either may be
 * unset). */
int run_reserve_buffer(run_state *r, uint64_t bytes, const char *what, cl_mem *buf,
                       uint64_t *reserved);
void run_release_buffer(run_state *r, cl_mem *buf, uint64_t *reserved);

/* After an update is enqueued: the host stays at most two updates ahead
 * of the device, waiting for the end of the update before last. Without
 * a bound it enqueued whole epochs ahead (it waits only to read something
 * back), and PoCL's queue does work linear in the commands pending for
 * every command it completes: a profile of a 1-epoch run had 78% of the
 * time in that list walk, and the throughput fell with the run's length.
 * Two updates keep the device fed. */
int run_bound_queue(run_state *r);

/* --metrics (run_metrics.c): the file opened by the process that writes
 * it (writes: rank 0 under --dist; nothing without the flag), one row per
 * update with the update's mean training loss and clgrad's statistics (lr,
 * gradient norm, loss scale, skipped updates), put in place at the end of
 * the run; run_release drops it (the previous file stays) when the run did
 * not get there. Each returns 0, or -1 with a message. */
int run_metrics_open(run_state *r, int writes);
int run_metrics_row(run_state *r, double loss, const clg_stats *st);
int run_metrics_close(run_state *r);

/* --tuning (run_tuning.c), before the run's first GEMM (CLBlast builds its
 * GEMM program with the parameters it holds at its first call): the
 * device's tuning for task (tuning_apply.h: NULL, the MLP's file) or the
 * file given, applied only once the run's own GEMM shapes come out right
 * with it; a line on the log says what runs (a tuning that cannot be used:
 * a warning, even under --quiet). applied gets the file's path when one is
 * applied, else "". 0, or -1 with a message (out of host memory). */
struct mlp_gemm_shape;
int run_apply_tuning(run_state *r, const char *task, const struct mlp_gemm_shape *shapes,
                     size_t n_shapes, char *applied, size_t size);

/* Releases everything above (model, gradients, data, order, context or
 * its budget, the checkpoint's lock); what a task added it releases
 * first. The result's total_seconds: the time since run_start. */
void run_release(run_state *r);

#endif /* TRAIN_RUN_H */

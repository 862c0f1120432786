/* gpt_task.c - the GPT task as clgrad-train runs it (task.h): its flags
 * and the core's defaults it changes (gpt_options.c), their checks, and
 * the command line's run (gpt_run.c, or --plan's) with its summary,
 * --profile's split and --json. */
#include "gpt_hf.h"
#include "gpt_resolve.h"
#include "gpt_options.h"
#include "gpt_run.h"
#include "gpt_source.h"
#include "summary.h"
#include "task.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>

static void defaults(void *g)
{
    gpt_options_default(g);
}

static int check(void *g, const train_options *o, char *err, size_t errlen)
{
    return gpt_options_check(g, o, err, errlen);
}

static int print_json(const train_options *o, const gpt_options *g, const gpt_result *r)
{
    const json_field f[] = {
        JSON_STR("task", GPT_TASK_NAME),
        JSON_NUM("val_loss", r->val_loss),
        JSON_NUM("val_bits_per_byte", gpt_bits(r->val_loss / r->bytes_per_token)),
        JSON_NUM("vocab", r->vocab),
        JSON_NUM("bytes_per_token", r->bytes_per_token),
        JSON_NUM("unigram_loss", r->base.unigram),
        JSON_NUM("bigram_loss", r->base.bigram),
        JSON_NUM("train_loss", r->train_loss),
        JSON_NUM("layers", g->layers),
        JSON_NUM("heads", g->heads),
        JSON_NUM("width", g->width),
        JSON_NUM("context", g->context),
        JSON_NUM("params", r->run.params),
        JSON_NUM("updates", r->run.updates),
        JSON_RUN_SHAPE(&r->run),
        JSON_NUM("train_windows", r->train_windows),
        JSON_NUM("val_windows", r->val_windows),
        JSON_NUM("tokens_per_s", r->run.samples_per_s * g->context),
        JSON_NUM("peak_device_bytes", r->run.peak_device_bytes),
        JSON_NUM("planned_bytes", r->planned_bytes),
        JSON_NUM("activation_bytes", r->run.activation_bytes),
        JSON_NUM("model_bytes", r->run.model_bytes),
        JSON_NUM("data_bytes", r->run.data_bytes),
        JSON_RUN_OPTIMIZER(o, &r->run),
        JSON_STR("state_dtype", clg_dtype_name(o->state_dtype)),
        JSON_RUN_SECONDS(&r->run),
        JSON_RUN_DEVICE(&r->run, 1),
        JSON_NUM_IF(g->profile, "profile_gemm_s", r->prof.gemm),
        JSON_NUM_IF(g->profile, "profile_attention_s", r->prof.attention),
        JSON_NUM_IF(g->profile, "profile_other_s", r->prof.other),
        JSON_NUM_IF(g->profile, "profile_optimizer_s", r->optimizer_seconds),
    };
    return train_print_json(o->json, f, sizeof f / sizeof *f);
}

/* --profile's split of the training time; the rest is the host's work
 * and the waits between launches. */
static void print_profile(const gpt_result *r)
{
    const double train = r->run.train_seconds, total = train > 0 ? train : 1.0;
    const double part[] = {r->prof.gemm, r->prof.attention, r->prof.other, r->optimizer_seconds};
    const char *name[] = {"GEMMs (CLBlast)", "attention kernels", "other kernels", "optimizer"};
    double rest = train;
    printf("profile of %.2f s training (each launch waited for):\n", train);
    for (int i = 0; i < 4; i++) {
        printf("  %-18s %8.3f s %5.1f%%\n", name[i], part[i], 100.0 * part[i] / total);
        rest -= part[i];
    }
    printf("  %-18s %8.3f s %5.1f%% (host, waits)\n", "rest", rest, 100.0 * rest / total);
    printf("  clgrad's own kernels (attention + other): %.1f%% of the training time\n",
           100.0 * (part[1] + part[2]) / total);
}

static int print_summary(const train_options *o, const gpt_options *g, const gpt_result *res)
{
    const run_result *r = &res->run;
    char split[64];
    train_split_text(split, sizeof split, r->update_samples, r->micro_batch);
    const char *unit = res->tokens ? "token" : "byte";
    double bpt = res->bytes_per_token;
    if (isnan(res->val_loss))
        printf("not evaluated (a --sample of a finished run; --resume it without --sample to "
               "evaluate)");
    else
        printf("validation loss %.4f nats/%s (%.3f bits; unigram %.3f, bigram %.3f)",
               res->val_loss, unit, gpt_bits(res->val_loss), gpt_bits(res->base.unigram),
               gpt_bits(res->base.bigram));
    /* a token model's per byte too: comparable with a byte model's */
    if (res->tokens && !isnan(res->val_loss) && bpt > 0)
        printf(", %.4f nats/byte (%.3f bits; bigram %.3f) at %.3f bytes a token",
               res->val_loss / bpt, gpt_bits(res->val_loss / bpt),
               gpt_bits(res->base.bigram / bpt), bpt);
    printf(" after %" PRIu64 " updates of %u sequences of %u %ss (%s); %.1f s training, %.0f "
           "tokens/s, %.1f s evaluating, peak device bytes %" PRIu64 "\n",
           r->updates, r->update_samples, g->context, unit, split, r->train_seconds,
           r->samples_per_s * g->context, r->eval_seconds, r->peak_device_bytes);
    train_print_outputs(o->resume, r);
    if (g->profile)
        print_profile(res);
    return print_json(o, g, res);
}

/* The command line's run (or --plan's): the summary on stdout, --json as
 * its last line; the exit status. */
static int run_main(const train_options *o, const void *opts)
{
    const gpt_options *g = opts;
    char err[4096] = "";
    if (g->plan) {
        gpt_options hf = *g; /* --init-from: its config's shape (gpt_hf.h) */
        if (gpt_options_resolve(&hf, o, err, sizeof err) == 0 &&
            gpt_print_plan(o, &hf, err, sizeof err) == 0)
            return 0;
        train_print_error(err);
        return 1;
    }
    gpt_result r;
    if (gpt_run(o, g, NULL, &r, err, sizeof err) != 0) {
        train_print_error(err);
        return 1;
    }
    return print_summary(o, g, &r);
}

/* A rank's run under --dist: rank 0 prints the summary. 0, 1 when it could
 * not be written, -1 with the failure in err. */
static int run_dist(const train_options *o, const void *opts, train_dist_hooks *d, char *err,
                    size_t errlen)
{
    const gpt_options *g = opts;
    gpt_result r;
    if (gpt_run_dist(o, g, NULL, d, &r, err, errlen) != 0)
        return -1;
    return d->rank == 0 ? print_summary(o, g, &r) : 0;
}

/* The model's GEMMs at --micro-batch (gpt_gemm_shapes: what gpt_setup
 * checks a tuning on), for clgrad-tune. */
static int gemms(const train_options *o, const void *g, task_gemms *out, char *err,
                 size_t errlen)
{
    gpt_options hf = *(const gpt_options *)g; /* --init-from: its config's shape */
    if (gpt_options_resolve(&hf, o, err, errlen) != 0)
        return -1;
    gpt_shape s = gpt_options_shape(&hf);
    out->n = gpt_gemm_shapes(&s, o->micro_batch, out->shape, MLP_GEMMS_MAX);
    if (out->n > MLP_GEMMS_MAX) {
        snprintf(err, errlen, "--task gpt: %zu GEMM shapes, more than the %d a tuning holds",
                 out->n, MLP_GEMMS_MAX);
        return -1;
    }
    snprintf(out->model, sizeof out->model,
             "gpt layers %u heads %u width %u context %u micro-batch %u", s.layers, s.heads,
             s.width, s.context, o->micro_batch);
    out->tuning_task = GPT_TASK_NAME;
    out->micro_steps = (double)o->steps * ceil((double)o->batch / o->micro_batch);
    return 0;
}

const train_task gpt_task = {
    .name = GPT_TASK_NAME,
    .flags = &gpt_flag_table,
    .options_size = sizeof(gpt_options),
    .defaults = defaults,
    .wrong_task = "the GPT flags (--preset, --layers, --sample, --plan, ...) need --task gpt",
    .core_defaults = gpt_core_defaults,
    .check = check,
    .main = run_main,
    .dist_run = run_dist,
    .gemms = gemms,
    .data_files = gpt_data_files,
};

/* main.c - clgrad-tune: tunes CLBlast's GEMM kernels for one OpenCL device
 * at the GEMM shapes of a clgrad-train run (tune_search.h says how), and
 * stores the parameters where clgrad-train looks for them: clgrad's cache
 * directory, under the device's key and the task (tuning_apply.h). The run
 * is described with clgrad-train's own flags, parsed by its own parser, and
 * its task gives the shapes from the model description its run uses
 * (task.h's gemms). Progress on stderr, the result on stdout. */
#include "clgrad_advanced.h"
#include "errmsg.h"
#include "mlp_gemms.h"
#include "output_file.h"
#include "task.h"
#include "tasks.h"
#include "tune_prebuild.h"
#include "tune_save.h"
#include "tune_search.h"
#include "tuning_apply.h"
#include "tuning_verify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#define DEFAULT_BUDGET 180
#define MAX_ARGS 256

typedef struct options {
    const char *device, *output;
    double budget;
    unsigned top;
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes;
    int show, quiet, fresh;
    unsigned build_jobs;
    /* the run's description: argv[0] and every argument that is not
     * clgrad-tune's own, for clgrad-train's parser */
    int train_argc;
    char *train_argv[MAX_ARGS + 1];
} options;

static const char usage[] =
    "usage: clgrad-tune [options] [clgrad-train's flags]\n"
    "Tunes CLBlast's GEMM kernels for one OpenCL device at the GEMM shapes of the clgrad-train\n"
    "run the trainer's flags describe (default: its default job, the MLP), with CLBlast's own\n"
    "tuners (Debian package clblast-utils), and stores the parameters in clgrad's cache\n"
    "directory, where clgrad-train applies them at start-up (one file per device and task).\n"
    "The trainer's flags that shape the GEMMs are --task, --micro-batch, --hidden (the MLP)\n"
    "and --preset, --layers, --heads, --width, --context (--task gpt); the others are\n"
    "checked as clgrad-train checks them. E.g.: clgrad-tune --task gpt\n"
    "  --device SEL        device, as clgrad-train's --device (default: CLGRAD_DEVICE, else\n"
    "                      clgrad's pick)\n"
    "  --budget SECONDS    time for the whole tuning, 5..3600 (default 180); kept to within\n"
    "                      about one build of CLBlast's GEMM program\n"
    "  --shape MxNxK[:AB][@BATCH]\n"
    "                      tune for this GEMM instead, row-major C[MxN] = op(A) op(B),\n"
    "                      A and B each N or T (default NN), @BATCH: a strided batched\n"
    "                      GEMM of BATCH such products; repeatable, up to 32\n"
    "  --build-jobs N      CLBlast programs built at once, 1..8 (default: the host's cores,\n"
    "                      at most 8): candidates are built by other processes while\n"
    "                      this one builds its own, and found in the driver's cache\n"
    "  --top K             fastest configurations of each tuner tried on the shapes, 1..6\n"
    "                      (default 6; as many as the budget allows)\n"
    "  --output PATH       write the tuning here instead of the device's file\n"
    "  --fresh             ignore the device's previous tuning: run CLBlast's tuners again\n"
    "                      (by default a previous tuning is re-measured with the seeds and\n"
    "                      the defaults, and the tuners are skipped)\n"
    "  --show              print where the device's tuning is and whether clgrad-train would\n"
    "                      use it: its values, and its GEMMs at the shapes above on the device\n"
    "  --quiet             no progress lines\n"
    "  --help\n";

static int parse_uint(const char *s, unsigned long lo, unsigned long hi, unsigned long *v)
{
    char *end;
    errno = 0;
    unsigned long x = strtoul(s, &end, 10);
    if (!*s || *s == '-' || *end || errno || x < lo || x > hi)
        return -1;
    *v = x;
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    /* a build takes one core: as many at once as the host has */
    long cores = sysconf(_SC_NPROCESSORS_ONLN);
    *o = (options){.budget = DEFAULT_BUDGET, .top = 6, .train_argc = 1,
                   .build_jobs = cores < 1 ? 1 : cores > 8 ? 8 : (unsigned)cores};
    o->train_argv[0] = argv[0];
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        const char *v = i + 1 < argc ? argv[i + 1] : NULL;
        unsigned long x;
        if (strcmp(a, "--help") == 0 || strcmp(a, "-h") == 0) {
            fputs(usage, stdout);
            exit(0);
        } else if (strcmp(a, "--quiet") == 0) {
            o->quiet = 1;
            continue;
        } else if (strcmp(a, "--show") == 0) {
            o->show = 1;
            continue;
        } else if (strcmp(a, "--fresh") == 0) {
            o->fresh = 1;
            continue;
        }
        static const char *const own[] = {"--device", "--output",     "--budget",
                                          "--top",    "--build-jobs", "--shape"};
        int mine = 0;
        for (size_t j = 0; j < sizeof own / sizeof *own; j++)
            mine |= strcmp(a, own[j]) == 0;
        if (!mine) {
            /* clgrad-train's (its parser says what is wrong with it) */
            if (o->train_argc == MAX_ARGS) {
                fprintf(stderr, "clgrad-tune: more than %d arguments\n", MAX_ARGS);
                return -1;
            }
            o->train_argv[o->train_argc++] = argv[i];
            continue;
        }
        if (!v) {
            fprintf(stderr, "clgrad-tune: %s needs a value (see --help)\n", a);
            return -1;
        }
        i++;
        if (strcmp(a, "--device") == 0) {
            o->device = v;
        } else if (strcmp(a, "--output") == 0) {
            o->output = v;
        } else if (strcmp(a, "--budget") == 0) {
            char *end;
            errno = 0;
            o->budget = strtod(v, &end);
            if (*end || errno || !(o->budget >= 5 && o->budget <= 3600)) {
                fprintf(stderr, "clgrad-tune: --budget %s: expected seconds in 5..3600\n", v);
                return -1;
            }
        } else if (strcmp(a, "--top") == 0) {
            if (parse_uint(v, 1, 6, &x) != 0) {
                fprintf(stderr, "clgrad-tune: --top %s: expected 1..6\n", v);
                return -1;
            }
            o->top = (unsigned)x;
        } else if (strcmp(a, "--build-jobs") == 0) {
            if (parse_uint(v, 1, 8, &x) != 0) {
                fprintf(stderr, "clgrad-tune: --build-jobs %s: expected 1..8\n", v);
                return -1;
            }
            o->build_jobs = (unsigned)x;
        } else {
            if (o->n_shapes == MLP_GEMMS_MAX ||
                mlp_gemm_shape_parse(v, &o->shapes[o->n_shapes]) != 0) {
                fprintf(stderr, "clgrad-tune: --shape %s: expected MxNxK[:AB][@BATCH] with sizes "
                        "in 1..65536, A and B each N or T, BATCH 1..65536 (at most %d "
                        "shapes)\n", v, MLP_GEMMS_MAX);
                return -1;
            }
            o->n_shapes++;
        }
    }
    o->train_argv[o->train_argc] = NULL;
    return 0;
}

/* The run the trainer's flags describe, through clgrad-train's parser,
 * and its GEMMs (its task's gemms). 0, or -1 with why in err. */
static int run_gemms(options *o, task_gemms *g, char *err, size_t errlen)
{
    train_set_tasks(train_tasks, train_n_tasks);
    train_options t;
    void *task_opts[TRAIN_MAX_TASKS];
    memset(g, 0, sizeof *g);
    int rc = train_cli_parse_all(o->train_argc, o->train_argv, &t, task_opts, err, errlen);
    if (rc == 1)
        rc = errmsg_set(err, errlen, "--help lists clgrad-tune's flags (clgrad-train --help "
                        "the trainer's)");
    const train_task *task = rc == 0 ? train_task_at(t.task) : NULL;
    if (rc == 0 && !task->gemms)
        rc = errmsg_set(err, errlen, "--task %s: its run has no CLBlast GEMMs to tune",
                        task->name);
    if (rc == 0)
        rc = task->gemms(&t, task_opts[t.task], g, err, errlen);
    train_cli_free(task_opts);
    return rc;
}

/* The shapes to tune (or, with --show, to check the file on) and what they
 * are: --shape's, else the run's (run_gemms). */
static void request_shapes(const options *o, const task_gemms *g, tune_request *q)
{
    memset(q, 0, sizeof *q);
    q->budget_s = o->budget;
    q->top = o->top;
    q->quiet = o->quiet;
    q->device = o->device;
    q->build_jobs = o->build_jobs;
    if (o->n_shapes) {
        memcpy(q->shapes, o->shapes, o->n_shapes * sizeof *o->shapes);
        q->n_shapes = o->n_shapes;
        snprintf(q->model, sizeof q->model, "%zu GEMM shape(s) given with --shape", o->n_shapes);
        return;
    }
    memcpy(q->shapes, g->shape, g->n * sizeof *g->shape);
    q->n_shapes = g->n;
    snprintf(q->model, sizeof q->model, "%s", g->model);
}

static int show(clg_context *ctx, const char *path, const tune_request *q)
{
    tuning t;
    char why[1536];
    printf("device  %s (driver %s)\n", clg_context_device_info(ctx)->name,
           clg_context_device_info(ctx)->driver_version);
    printf("file    %s\n", path);
    /* the trainer's verdict: the file's checks, then its GEMMs on the device */
    int rc = tuning_load(ctx, path, &t, why, sizeof why);
    if (rc == 0 && (rc = tuning_apply(ctx, &t, why, sizeof why)) == 0)
        rc = tuning_verify(ctx, &t, q->shapes, q->n_shapes, why, sizeof why);
    tuning_restore_defaults(ctx, NULL, 0);
    if (rc == 1) {
        printf("status  none: clgrad-train runs CLBlast's default parameters\n");
        return 0;
    }
    if (rc != 0) {
        printf("status  unusable, clgrad-train ignores it: %s\n", why);
        return 1;
    }
    printf("status  valid: made %s for %s in %.0f s (budget %.0f s)\n", t.created, t.model,
           t.seconds, t.budget_s);
    printf("checked %zu GEMM shape(s) of %s on this device: right\n", q->n_shapes, q->model);
    for (size_t i = 0; i < t.n_kernels; i++) {
        char line[1024];
        tuning_kernel_text(&t.kernel[i], line, sizeof line);
        printf("kernel  %s\n", line);
    }
    for (size_t i = 0; i < t.n_gemms; i++) {
        const tuning_gemm *g = &t.gemm[i];
        printf("gemm    %ux%ux%u %c%c: %s %.1f -> %s %.1f GFLOP/s\n", g->m, g->n, g->k, g->ta,
               g->tb, g->kernel_default, g->gflops_default, g->kernel_tuned, g->gflops_tuned);
    }
    return 0;
}

/* The table of the shapes; micro_steps: of the run the flags describe, for
 * the end-to-end estimate (0: none). */
static void print_result(const tune_request *q, const tune_outcome *r, double micro_steps)
{
    int w = 12, batched = 0; /* the roles' column */
    for (size_t k = 0; k < q->n_shapes; k++) {
        int len = (int)strlen(q->shapes[k].role);
        w = len > w ? len : w;
        batched |= mlp_gemm_batch(&q->shapes[k]) > 1;
    }
    printf("%-*s %-16s %6s  %-22s  %-22s %-8s %s\n", w, "GEMM", "shape (row-major)", "calls",
           "CLBlast's defaults", "tuned", "speed-up", "fastest seen");
    int slower = 0, same = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        const mlp_gemm_shape *g = &q->shapes[k];
        const tune_shape_result *s = &r->shape[k];
        char shape[32], calls[24], d[48], t[48], b[48] = "-";
        if (mlp_gemm_batch(g) > 1)
            snprintf(calls, sizeof calls, "%ux%zu", g->count, g->batch);
        else
            snprintf(calls, sizeof calls, "%u", g->count);
        snprintf(shape, sizeof shape, "%zux%zux%zu %c%c", g->m, g->n, g->k, g->ta ? 'T' : 'N',
                 g->tb ? 'T' : 'N');
        snprintf(d, sizeof d, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_default * 1e6),
                 s->direct_default ? "direct" : "Xgemm");
        snprintf(t, sizeof t, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_tuned * 1e6),
                 s->direct_tuned ? "direct" : "Xgemm");
        if (isfinite(s->ms_best))
            snprintf(b, sizeof b, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_best * 1e6),
                     s->direct_best ? "direct" : "Xgemm");
        /* the same kernel with the same parameters is not slower: noise */
        int worse = s->ms_tuned > 1.05 * s->ms_default && !s->same_kernel;
        slower += worse;
        same += s->same_kernel;
        printf("%-*s %-16s %6s  %-22s  %-22s %5.2fx%s  %s\n", w, g->role, shape, calls, d, t,
               s->ms_default / s->ms_tuned, worse ? " !" : s->same_kernel ? " =" : "  ", b);
    }
    if (same)
        printf("(= the same kernel with the same parameters as CLBlast's defaults: what its two "
               "figures differ by is the timing's noise)\n");
    if (batched)
        printf("(calls AxB: A strided batched GEMMs of B products each per micro-step)\n");
    printf("one micro-step's GEMMs: %.2f ms -> %.2f ms (%.2fx), tuned in %.0f s (budget %.0f s)\n",
           r->step_ms_default, r->step_ms_tuned, r->step_ms_default / r->step_ms_tuned, r->seconds,
           q->budget_s);
    if (slower)
        printf("! %d shape(s) more than 5%% slower than with CLBlast's defaults (see the notes)\n",
               slower);
    printf("(CLBlast takes one switch-over size: shapes with m n k below its cube run XgemmDirect,\n"
           " the others Xgemm with one configuration each; \"fastest seen\" is the best any\n"
           " candidate ran a shape, which that single size may not let every shape have)\n");
    if (micro_steps > 0)
        printf("end to end, the clgrad-train run these flags describe (%.0f micro-steps): GEMMs "
               "about %.1f s with CLBlast's defaults, %.1f s tuned (the rest of the step, "
               "about the same either way, not included)\n", micro_steps,
               micro_steps * r->step_ms_default * 1e-3, micro_steps * r->step_ms_tuned * 1e-3);
    printf("%zu configuration(s) run on the shapes, %zu of them known ones (device class %s)\n",
           r->candidates_run, r->seeds_run, r->device_class ? r->device_class : "?");
    for (size_t i = 0; i < r->t.n_kernels; i++) {
        char line[1024];
        tuning_kernel_text(&r->t.kernel[i], line, sizeof line);
        printf("  %s\n", line);
    }
    if (r->notes[0])
        printf("notes: %s\n", r->notes);
}

int main(int argc, char **argv)
{
    if (argc > 1 && strcmp(argv[1], "--prebuild") == 0)
        return tune_prebuild_main(argc, argv);
    static options o;
    static task_gemms g;
    char err[4096];
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    if (run_gemms(&o, &g, err, sizeof err) != 0) {
        fprintf(stderr, "clgrad-tune: %s\n", err);
        return 2;
    }
    tuning_share_pocl_cache();
    clg_context *ctx;
    clg_status st = clg_context_create(&ctx, o.device);
    if (st != CLG_SUCCESS) {
        fprintf(stderr, "clgrad-tune: --device %s: %s\n", o.device ? o.device : "(default)",
                clg_last_error(NULL));
        return 1;
    }
    char path[1024], why[1024];
    if (o.output)
        snprintf(path, sizeof path, "%s", o.output);
    else if (tuning_path(ctx, g.tuning_task, path, sizeof path, why, sizeof why) != 0) {
        fprintf(stderr, "clgrad-tune: nowhere to store the tuning: %s (pass --output PATH)\n",
                why);
        clg_context_destroy(ctx);
        return 1;
    }
    if (o.show) {
        tune_request q;
        request_shapes(&o, &g, &q);
        int rc = show(ctx, path, &q);
        clg_context_destroy(ctx);
        return rc;
    }
    /* What the tuning will replace, checked now rather than after minutes
     * of tuning: --output, or the device's file if something is there (its
     * directory is made when it is written). */
    struct stat sb;
    if ((o.output || lstat(path, &sb) == 0) &&
        output_check(o.output ? "--output" : "the device's tuning file", path, err,
                     sizeof err) != 0) {
        fprintf(stderr, "clgrad-tune: %s\n", err);
        clg_context_destroy(ctx);
        return 2;
    }

    tune_request q;
    request_shapes(&o, &g, &q);
    if (!o.quiet)
        fprintf(stderr, "clgrad-tune: %s (driver %s), %s, budget %.0f s\n",
                clg_context_device_info(ctx)->name, clg_context_device_info(ctx)->driver_version,
                q.model, q.budget_s);
    tune_outcome *r = malloc(sizeof *r);
    if (!r) {
        fprintf(stderr, "clgrad-tune: out of host memory\n");
        clg_context_destroy(ctx);
        return 1;
    }
    /* the device's previous tuning, if it is still valid here: the
     * starting point (tune_search.h) */
    static tuning previous;
    if (!o.fresh) {
        char pwhy[1024];
        int lrc = tuning_load(ctx, path, &previous, pwhy, sizeof pwhy);
        if (lrc == 0)
            q.previous = &previous;
        else if (lrc != 1 && !o.quiet)
            fprintf(stderr, "clgrad-tune: the previous tuning is not used: %s\n", pwhy);
    }
    int rc = 0;
    if (tune_search(ctx, &q, r, why, sizeof why) != 0) {
        fprintf(stderr, "clgrad-tune: %s\n", why);
        rc = 1;
    } else if (tune_save(path, &r->t, why, sizeof why) != 0) {
        print_result(&q, r, o.n_shapes ? 0 : g.micro_steps);
        fprintf(stderr, "clgrad-tune: %s\n", why);
        rc = 1;
    } else {
        print_result(&q, r, o.n_shapes ? 0 : g.micro_steps);
        printf("wrote %s\n", path);
    }
    free(r);
    clg_context_destroy(ctx);
    return rc;
}

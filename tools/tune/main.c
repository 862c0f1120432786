/* main.c - clgrad-tune: tunes CLBlast's GEMM kernels for one OpenCL device
 * at the GEMM shapes of clgrad-train's MLP (tune_search.h says how), and
 * stores the parameters where clgrad-train looks for them: clgrad's cache
 * directory, under the device's key (tuning_apply.h). Progress on stderr,
 * the result on stdout. */
#include "clgrad_advanced.h"
#include "mlp_gemms.h"
#include "tune_save.h"
#include "tune_search.h"
#include "tuning_apply.h"
#include "tuning_verify.h"

#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define DEFAULT_BUDGET 180
/* Fashion-MNIST, as clgrad-train */
#define MLP_INPUT 784
#define MLP_CLASSES 10
/* clgrad-train's default job, for the end-to-end estimate: Fashion-MNIST's
 * training set, 3 epochs (tools/train/core/options_table.c) */
#define TRAIN_SAMPLES 60000
#define TRAIN_EPOCHS 3

typedef struct options {
    const char *device, *output;
    double budget;
    unsigned hidden[8];
    int n_hidden;
    unsigned micro_batch, top;
    mlp_gemm_shape shapes[MLP_GEMMS_MAX];
    size_t n_shapes;
    int show, quiet, fresh;
} options;

static const char usage[] =
    "usage: clgrad-tune [options]\n"
    "Tunes CLBlast's GEMM kernels for one OpenCL device at the GEMM shapes of clgrad-train's\n"
    "MLP with CLBlast's own tuners (Debian package clblast-utils), and stores the parameters\n"
    "in clgrad's cache directory, where clgrad-train applies them at start-up.\n"
    "  --device SEL        device, as clgrad-train's --device (default: CLGRAD_DEVICE, else\n"
    "                      clgrad's pick)\n"
    "  --budget SECONDS    time for the whole tuning, 5..3600 (default 180); kept to within\n"
    "                      about one build of CLBlast's GEMM program\n"
    "  --hidden LIST       the MLP's hidden widths (default 512,256, as clgrad-train)\n"
    "  --micro-batch b     its micro-batch, 1..65536 (default 32, as clgrad-train)\n"
    "  --shape MxNxK[:AB]  tune for this GEMM instead, row-major C[MxN] = op(A) op(B),\n"
    "                      A and B each N or T (default NN); repeatable, up to 32\n"
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

static int parse_shape(const char *s, mlp_gemm_shape *g)
{
    unsigned long m, n, k;
    char ta = 'N', tb = 'N', rest[8] = "";
    int got = sscanf(s, "%lux%lux%lu%7s", &m, &n, &k, rest);
    if (got < 3 || m == 0 || n == 0 || k == 0 || m > 65536 || n > 65536 || k > 65536)
        return -1;
    if (got == 4) {
        if (strlen(rest) != 3 || rest[0] != ':')
            return -1;
        ta = rest[1];
        tb = rest[2];
        if ((ta != 'N' && ta != 'T') || (tb != 'N' && tb != 'T'))
            return -1;
    }
    *g = (mlp_gemm_shape){m, n, k, ta == 'T', tb == 'T', 1, "--shape"};
    return 0;
}

static int parse_args(int argc, char **argv, options *o)
{
    /* clgrad-train's MLP (hidden 512,256) at its default micro-batch */
    *o = (options){.budget = DEFAULT_BUDGET, .hidden = {512, 256}, .n_hidden = 2,
                   .micro_batch = 32, .top = 6};
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
        } else if (strcmp(a, "--micro-batch") == 0) {
            if (parse_uint(v, 1, 65536, &x) != 0) {
                fprintf(stderr, "clgrad-tune: --micro-batch %s: expected 1..65536\n", v);
                return -1;
            }
            o->micro_batch = (unsigned)x;
        } else if (strcmp(a, "--top") == 0) {
            if (parse_uint(v, 1, 6, &x) != 0) {
                fprintf(stderr, "clgrad-tune: --top %s: expected 1..6\n", v);
                return -1;
            }
            o->top = (unsigned)x;
        } else if (strcmp(a, "--hidden") == 0) {
            char buf[256];
            snprintf(buf, sizeof buf, "%s", v);
            o->n_hidden = 0;
            char *save = NULL;
            for (char *t = strtok_r(buf, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
                if (o->n_hidden == 8 || parse_uint(t, 1, 65536, &x) != 0) {
                    fprintf(stderr, "clgrad-tune: --hidden %s: expected 1..8 widths in "
                            "1..65536, comma-separated\n", v);
                    return -1;
                }
                o->hidden[o->n_hidden++] = (unsigned)x;
            }
            if (o->n_hidden == 0) {
                fprintf(stderr, "clgrad-tune: --hidden %s: no width\n", v);
                return -1;
            }
        } else if (strcmp(a, "--shape") == 0) {
            if (o->n_shapes == MLP_GEMMS_MAX || parse_shape(v, &o->shapes[o->n_shapes]) != 0) {
                fprintf(stderr, "clgrad-tune: --shape %s: expected MxNxK or MxNxK:AB with sizes "
                        "in 1..65536 and A, B each N or T (at most %d shapes)\n", v,
                        MLP_GEMMS_MAX);
                return -1;
            }
            o->n_shapes++;
        } else {
            fprintf(stderr, "clgrad-tune: unknown option %s (see --help)\n", a);
            return -1;
        }
    }
    return 0;
}

/* The shapes to tune (or, with --show, to check the file on) and what they
 * are: --shape's, else the MLP's of --hidden at --micro-batch, as
 * clgrad-train runs them. */
static void request_shapes(const options *o, tune_request *q)
{
    memset(q, 0, sizeof *q);
    q->budget_s = o->budget;
    q->top = o->top;
    q->quiet = o->quiet;
    if (o->n_shapes) {
        memcpy(q->shapes, o->shapes, o->n_shapes * sizeof *o->shapes);
        q->n_shapes = o->n_shapes;
        snprintf(q->model, sizeof q->model, "%zu GEMM shape(s) given with --shape", o->n_shapes);
        return;
    }
    unsigned dims[10];
    int n = 0;
    dims[n++] = MLP_INPUT;
    for (int i = 0; i < o->n_hidden; i++)
        dims[n++] = o->hidden[i];
    dims[n++] = MLP_CLASSES;
    q->n_shapes = mlp_gemm_shapes(dims, n, o->micro_batch, q->shapes, MLP_GEMMS_MAX);
    if (q->n_shapes > MLP_GEMMS_MAX)
        q->n_shapes = MLP_GEMMS_MAX;
    size_t used = (size_t)snprintf(q->model, sizeof q->model, "mlp %u", dims[0]);
    for (int i = 1; i < n && used < sizeof q->model; i++)
        used += (size_t)snprintf(q->model + used, sizeof q->model - used, ",%u", dims[i]);
    if (used < sizeof q->model)
        snprintf(q->model + used, sizeof q->model - used, " micro-batch %u", o->micro_batch);
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

static void print_result(const tune_request *q, const tune_outcome *r, unsigned micro_batch,
                         int is_mlp)
{
    printf("%-12s %-16s %5s  %-22s  %-22s %-8s %s\n", "GEMM", "shape (row-major)", "calls",
           "CLBlast's defaults", "tuned", "speed-up", "fastest seen");
    int slower = 0;
    for (size_t k = 0; k < q->n_shapes; k++) {
        const mlp_gemm_shape *g = &q->shapes[k];
        const tune_shape_result *s = &r->shape[k];
        char shape[32], d[48], t[48], b[48] = "-";
        snprintf(shape, sizeof shape, "%zux%zux%zu %c%c", g->m, g->n, g->k, g->ta ? 'T' : 'N',
                 g->tb ? 'T' : 'N');
        snprintf(d, sizeof d, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_default * 1e6),
                 s->direct_default ? "direct" : "Xgemm");
        snprintf(t, sizeof t, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_tuned * 1e6),
                 s->direct_tuned ? "direct" : "Xgemm");
        if (isfinite(s->ms_best))
            snprintf(b, sizeof b, "%6.1f GFLOP/s %s", mlp_gemm_flops(g) / (s->ms_best * 1e6),
                     s->direct_best ? "direct" : "Xgemm");
        int worse = s->ms_tuned > 1.05 * s->ms_default;
        slower += worse;
        printf("%-12s %-16s %5u  %-22s  %-22s %5.2fx%s  %s\n", g->role, shape, g->count, d, t,
               s->ms_default / s->ms_tuned, worse ? " !" : "  ", b);
    }
    printf("one micro-step's GEMMs: %.2f ms -> %.2f ms (%.2fx), tuned in %.0f s (budget %.0f s)\n",
           r->step_ms_default, r->step_ms_tuned, r->step_ms_default / r->step_ms_tuned, r->seconds,
           q->budget_s);
    if (slower)
        printf("! %d shape(s) more than 5%% slower than with CLBlast's defaults (see the notes)\n",
               slower);
    printf("(CLBlast takes one switch-over size: shapes with m n k below its cube run XgemmDirect,\n"
           " the others Xgemm with one configuration each; \"fastest seen\" is the best any\n"
           " candidate ran a shape, which that single size may not let every shape have)\n");
    if (is_mlp) {
        /* the trainer's micro-steps: every sample once per epoch */
        double steps = TRAIN_EPOCHS * ceil((double)TRAIN_SAMPLES / micro_batch);
        printf("end to end, clgrad-train's default job (%d epochs x %.0f micro-steps): GEMMs "
               "about %.1f s with CLBlast's defaults, %.1f s tuned (the rest of the step, "
               "about the same either way, not included)\n", TRAIN_EPOCHS, steps / TRAIN_EPOCHS,
               steps * r->step_ms_default * 1e-3, steps * r->step_ms_tuned * 1e-3);
    }
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

/* PoCL keeps compiled programs in POCL_CACHE_DIR (else its own directory
 * in the user's cache): pointed into clgrad's cache directory, the builds
 * of CLBlast's GEMM program that one run of clgrad-tune paid for are not
 * paid again by the next, and deleting clgrad's cache starts afresh. */
static void share_pocl_cache(void)
{
    char dir[1024];
    if (getenv("POCL_CACHE_DIR") || clg_cache_dir(dir, sizeof dir - 8) != CLG_SUCCESS)
        return;
    strcat(dir, "/pocl");
    setenv("POCL_CACHE_DIR", dir, 0);
}

int main(int argc, char **argv)
{
    options o;
    if (parse_args(argc, argv, &o) != 0)
        return 2;
    share_pocl_cache();
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
    else if (tuning_path(ctx, path, sizeof path, why, sizeof why) != 0) {
        fprintf(stderr, "clgrad-tune: nowhere to store the tuning: %s (pass --output PATH)\n",
                why);
        clg_context_destroy(ctx);
        return 1;
    }
    if (o.show) {
        tune_request q;
        request_shapes(&o, &q);
        int rc = show(ctx, path, &q);
        clg_context_destroy(ctx);
        return rc;
    }

    tune_request q;
    request_shapes(&o, &q);
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
        print_result(&q, r, o.micro_batch, o.n_shapes == 0);
        fprintf(stderr, "clgrad-tune: %s\n", why);
        rc = 1;
    } else {
        print_result(&q, r, o.micro_batch, o.n_shapes == 0);
        printf("wrote %s\n", path);
    }
    free(r);
    clg_context_destroy(ctx);
    return rc;
}

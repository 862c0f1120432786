/* contrastive_options.c - the contrastive task's flags (see
 * contrastive_options.h). */
#include "contrastive_options.h"
#include "errmsg.h"

#include <inttypes.h>

#include <stdio.h>
#include <string.h>
#include <strings.h>

void con_options_default(con_options *c)
{
    memset(c, 0, sizeof *c);
    c->method = CON_GRADCACHE;
    c->temperature = 0.1f;
    c->embed_dim = 128;
    c->knn = 20;
    c->shift = 2;
    c->noise = 0.1f;
}

const char *con_method_name(con_method m)
{
    return m == CON_NAIVE ? "naive" : m == CON_CONTACCUM ? "contaccum" : "gradcache";
}

/* train.contrastive.bank-size: 0 without banks */
static void store_bank(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    const con_options *c = r->opts;
    snprintf(buf, len, "%" PRIu64, c->method == CON_CONTACCUM ? c->bank_size : 0);
}

static void store_task(const flag_def *f, const flag_run *r, char *buf, size_t len)
{
    (void)f;
    (void)r;
    snprintf(buf, len, "contrastive");
}

#define AT(f) offsetof(con_options, f), sizeof(((con_options *)0)->f)

static const int methods[] = {CON_GRADCACHE, CON_NAIVE, CON_CONTACCUM};
static const int knn_on[] = {0, 1};

/* Stored ("train.contrastive.<key>") and compared on --resume: none can be
 * overridden (each changes what the saved state means, or which rows the
 * banks hold). */
static const flag_def rows[] = {
    {.name = "--contrastive", .metavar = "M",
     .help = "gradcache (default: the loss of the whole batch, exactly),\nnaive (each "
             "micro-batch its own loss), contaccum (each\nmicro-batch's loss with FIFO banks "
             "of past rows)",
     .kind = FLAG_CHOICE, AT(method), .choices = "gradcache|naive|contaccum", .values = methods,
     .expect = "naive, gradcache or contaccum", .example = "naive", .stored = 1,
     .key = "contrastive"},
    {.name = "--temperature", .metavar = "X", .help = "in [1e-4, 100] (default 0.1)",
     .kind = FLAG_NUMBER, AT(temperature), .lo = 1e-4, .hi = 100, .example = "0.5",
     .stored = 2, .key = "temperature"},
    {.name = "--embed-dim", .metavar = "N",
     .help = "encoder output width, 1..4096 (default 128)", .kind = FLAG_INTEGER,
     AT(embed_dim), .lo = 1, .hi = 4096, .example = "64", .stored = 3, .key = "embed-dim"},
    {.name = "--bank-size", .metavar = "N",
     .help = "contaccum: rows per bank, 1..1048576 (default the batch)", .kind = FLAG_INTEGER,
     AT(bank_size), .lo = 1, .hi = 1048576, .example = "100",
     .needs = "--contrastive=contaccum", .stored = 4, .key = "bank-size",
     .store = store_bank},
    {.name = "--one-way", .help = "queries against keys only (default: both ways)",
     .kind = FLAG_SWITCH, AT(one_way), .example = "", .stored = 5, .key = "one-way"},
    {.name = "--aug-shift", .metavar = "N",
     .help = "views shift by up to N pixels each way, 0..8 (default 2)", .kind = FLAG_INTEGER,
     AT(shift), .lo = 0, .hi = 8, .example = "3", .stored = 6, .key = "aug-shift"},
    {.name = "--aug-noise", .metavar = "X", .help = "pixel noise std in [0, 1] (default 0.1)",
     .kind = FLAG_NUMBER, AT(noise), .lo = 0, .hi = 1, .example = "0.25", .stored = 7,
     .key = "aug-noise"},
    {.name = "--knn", .metavar = "K",
     .help = "neighbours of the kNN evaluation, 1..1000 (default 20)", .kind = FLAG_INTEGER,
     AT(knn), .lo = 1, .hi = 1000, .example = "5"},
    {.name = "--knn-on", .metavar = "L",
     .help = "features it compares: hidden (default: the last hidden\nlayer's, as SimCLR "
             "evaluates) or embedding (the loss's)",
     .kind = FLAG_CHOICE, AT(knn_embedding), .choices = "hidden|embedding", .values = knn_on,
     .expect = "hidden or embedding", .example = "embedding"},
    {.name = "--knn-init", .help = "also evaluate before the first update", .kind = FLAG_SWITCH,
     AT(knn_init), .example = ""},
    {.stored = 8, .key = "task", .label = "task", .store = store_task},
};

/* The core's flags the task cannot take (flags.h): checked after parsing,
 * before anything runs, and listed in --help. */
static const flag_limit limits[] = {
    {.flag = "--grad-dtype", .takes = "fp32", .why = "the contrastive task writes fp32 gradients"},
    {.flag = "--master-dtype", .takes = "fp32",
     .why = "its GEMMs read fp32 parameters; it keeps no fp32 copy of bf16 ones"},
    {.flag = "--loss-scale", .why = "its loss gradient is not scaled"},
    {.flag = "--metrics", .why = "it writes no per-update metrics"},
    {.flag = "--log", .why = "it writes no per-update metrics"},
    {.flag = "--auto-micro-batch", .why = "its activations are allocated once, for --micro-batch"},
    {.flag = "--tuning", .takes = "off", .why = "its GEMMs run on CLBlast's default parameters"},
    {.flag = "--dist", .why = "it does not run under MPI"},
};

const flag_table con_flag_table = {
    .rows = rows,
    .n = sizeof rows / sizeof *rows,
    .preface = "Contrastive task (--task contrastive): an MLP encoder (--hidden, then "
               "--embed-dim)\ntrained with InfoNCE on two augmented views of each image, "
               "evaluated by kNN test\naccuracy on its embeddings:\n",
    .footer = "--json adds loss, knn_accuracy and the cache's bytes.\n",
    .limits = limits,
    .n_limits = sizeof limits / sizeof *limits,
    .scope = "--task contrastive",
};

int con_options_check(con_options *c, const train_options *o, char *err, size_t errlen)
{
    /* the core flags it cannot take: con_flag_table's limits (train_cli_parse) */
    if (c->method != CON_CONTACCUM && c->bank_size) {
        errmsg_set(err, errlen, "--bank-size: only --contrastive contaccum has banks");
        return -1;
    }
    if (c->method == CON_CONTACCUM && !c->bank_size)
        c->bank_size = o->batch;
    return 0;
}

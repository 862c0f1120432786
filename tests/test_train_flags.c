/* test_train_flags.c - clgrad-train's flag tables (tools/train/core/flags.h)
 * checked row by row, from the tables themselves: every flag of the core
 * and of every task parses its example value (changing the options it
 * writes into), is listed in --help at the start of a line, is refused
 * with another task's --task, is refused twice when it names an output
 * file (taken twice otherwise), and every stored setting round-trips through
 * the run configuration a checkpoint stores (written, read back, compared
 * equal; compared with a default run's, the difference is named). Nothing
 * here lists a flag by hand: a row added to a table is tested as it is. */
#include "clg_layout.h"
#include "options.h"
#include "runconfig.h"
#include "task.h"
#include "tasks.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

/* Options of a command line: the core's and every task's, at defaults. */
typedef struct cli {
    train_options o;
    void *task[TRAIN_MAX_TASKS];
} cli;

static void cli_init(cli *c)
{
    memset(c, 0, sizeof *c);
    train_options_default(&c->o);
    for (int i = 0; i < train_n_tasks; i++) {
        const train_task *t = train_tasks[i];
        c->task[i] = calloc(1, t->options_size ? t->options_size : 1);
        assert_non_null(c->task[i]);
        if (t->defaults)
            t->defaults(c->task[i]);
    }
}

static void cli_free(cli *c)
{
    for (int i = 0; i < train_n_tasks; i++)
        free(c->task[i]);
}

/* Parses flag's example (with what it needs) under --task task_name, the
 * flag given `times` times (0: the same command line without it). */
static int parse_example(cli *c, const flag_def *f, int times, const char *task_name, char *err,
                         size_t errlen)
{
    char *argv[12] = {"clgrad-train"};
    int argc = 1;
    if (task_name) {
        argv[argc++] = "--task";
        argv[argc++] = (char *)task_name;
    }
    if (f->needs)
        argv[argc++] = (char *)f->needs;
    for (int k = 0; k < times && k < 3; k++) {
        argv[argc++] = (char *)f->name;
        if (f->kind != FLAG_SWITCH && f->kind != FLAG_HELP)
            argv[argc++] = (char *)f->example;
    }
    cli_init(c);
    err[0] = 0;
    return train_cli_parse(argc, argv, &c->o, c->task, err, errlen);
}

/* The whole --help text. */
static char *usage_text(void)
{
    char *text = NULL;
    size_t len = 0;
    FILE *f = open_memstream(&text, &len);
    assert_non_null(f);
    train_cli_usage(f);
    assert_int_equal(fclose(f), 0);
    return text;
}

/* Whether help lists flag at the start of one of its lines ("  --flag"
 * then a space or the end of the line). */
static int listed(const char *help, const char *flag)
{
    char head[80];
    snprintf(head, sizeof head, "\n  %s", flag);
    for (const char *p = strstr(help, head); p; p = strstr(p + 1, head)) {
        char next = p[strlen(head)];
        if (next == ' ' || next == '\n')
            return 1;
    }
    return 0;
}

/* The stored run configuration of c's options (the data fixed). */
static void build_config(run_config *rc, const cli *c)
{
    clg_config cfg;
    char err[512];
    assert_int_equal(train_options_clg_config(&c->o, &cfg, err, sizeof err), 0);
    uint64_t n_train = c->o.limit_train ? c->o.limit_train : 60000;
    runconfig_build(rc, &c->o, &cfg, c->o.micro_batch, n_train, 0x1234abcdu);
    runconfig_meta(rc);
}

static const char *value_of(const run_config *rc, const char *key)
{
    for (int i = 0; i < rc->n; i++)
        if (!strcmp(rc->items[i].name, key))
            return rc->items[i].value;
    return NULL;
}

/* A stored setting of the core: present in both configurations, changed
 * by the example, and through a checkpoint's keys and values back to the
 * same configuration; the default run's compares different, naming it. */
static void check_core_stored(const flag_def *f, const cli *given, const cli *dflt)
{
    run_config now, base, back;
    build_config(&now, given);
    build_config(&base, dflt);
    const char *v = value_of(&now, f->key), *d = value_of(&base, f->key);
    if (!v || !d)
        fail_msg("%s: stored setting '%s' missing from the run configuration", f->name, f->key);
    if (!strcmp(v, d))
        fail_msg("%s %s: stored '%s' = '%s' as the default's", f->name, f->example, f->key, v);
    memset(&back, 0, sizeof back);
    for (int i = 0; i < now.n; i++)
        runconfig_add_saved(&back, now.key_ptr[i], now.value_ptr[i]);
    assert_int_equal(back.n, now.n);
    char over[512], err[4096];
    if (runconfig_compare(&back, &now, "", "ck", over, sizeof over, err, sizeof err) != 0)
        fail_msg("%s: the stored configuration does not read back: %s", f->name, err);
    assert_int_equal(runconfig_compare(&back, &base, "", "ck", over, sizeof over, err, sizeof err),
                     -1);
    if (!strstr(err, f->label ? f->label : f->name))
        fail_msg("%s: the difference is not named: %s", f->name, err);
}

/* A task's stored setting: its value changed by the example. */
static void check_task_stored(const flag_def *f, const cli *given, const cli *dflt, int task)
{
    char v[128], d[128];
    flag_run r = {.o = &given->o, .opts = given->task[task]};
    (f->store ? f->store : flags_store_field)(f, &r, v, sizeof v);
    r.o = &dflt->o;
    r.opts = dflt->task[task];
    (f->store ? f->store : flags_store_field)(f, &r, d, sizeof d);
    if (!strcmp(v, d))
        fail_msg("%s %s: stored '%s' = '%s' as the default's", f->name, f->example, f->key, v);
}

/* A flag given twice: an output's is refused (the second file would
 * silently replace the first), naming both values; any other takes the
 * last value, as it always has. */
static void check_given_twice(const flag_def *f, const char *task_name)
{
    if (f->kind == FLAG_HELP)
        return;
    cli twice;
    char err[4096], want[1024];
    int rc = parse_example(&twice, f, 2, task_name, err, sizeof err);
    cli_free(&twice);
    if (!f->output) {
        if (rc != 0)
            fail_msg("%s given twice: %s", f->name, err);
        return;
    }
    snprintf(want, sizeof want, "%s: given twice ('%s', then '%s'); a run writes one file per "
             "output flag: give it once", f->name, f->example, f->example);
    if (rc != -1 || strcmp(err, want) != 0)
        fail_msg("%s given twice: got %d '%s'", f->name, rc, err);
}

/* Every row of a table (task: its index, -1 for the core's). */
static void check_table(const flag_table *t, int task, const char *help)
{
    const char *task_name = task >= 0 ? train_tasks[task]->name : NULL;
    for (int i = 0; i < t->n; i++) {
        const flag_def *f = &t->rows[i];
        if (!f->name)
            continue; /* a stored setting that is no flag */
        if (!listed(help, f->name))
            fail_msg("%s is not in --help", f->name);
        cli given, dflt;
        char err[4096];
        int rc = parse_example(&given, f, 1, task_name, err, sizeof err);
        if (f->kind == FLAG_HELP) {
            assert_int_equal(rc, 1);
            cli_free(&given);
            continue;
        }
        if (rc != 0)
            fail_msg("%s %s: %s", f->name, f->example ? f->example : "(no example)", err);
        /* the same command line without the flag: the flag changed something */
        if (parse_example(&dflt, f, 0, task_name, err, sizeof err) != 0)
            fail_msg("%s's command line without it: %s", f->name, err);
        void *a = task >= 0 ? given.task[task] : (void *)&given.o;
        void *b = task >= 0 ? dflt.task[task] : (void *)&dflt.o;
        size_t n = task >= 0 ? train_tasks[task]->options_size : sizeof given.o;
        if (!memcmp(a, b, n))
            fail_msg("%s %s: parsed, but the options are the defaults", f->name, f->example);
        if (f->stored && task < 0)
            check_core_stored(f, &given, &dflt);
        else if (f->stored)
            check_task_stored(f, &given, &dflt, task);
        cli_free(&given);
        cli_free(&dflt);
        check_given_twice(f, task_name);
        /* a task's flag under another task is refused, unless that task
         * has a flag of the same name (--temperature): then it is that one */
        for (int other = 0; task >= 0 && other < train_n_tasks; other++) {
            if (other == task ||
                (train_tasks[other]->flags && flags_find(train_tasks[other]->flags, f->name)))
                continue;
            /* a name several tasks have: the first of them refuses it */
            int first = task;
            for (int i = task - 1; i >= 0; i--)
                if (train_tasks[i]->flags && flags_find(train_tasks[i]->flags, f->name))
                    first = i;
            rc = parse_example(&given, f, 1, train_tasks[other]->name, err, sizeof err);
            cli_free(&given);
            if (rc != -1 || strcmp(err, train_tasks[first]->wrong_task) != 0)
                fail_msg("%s with --task %s: got %d '%s'", f->name, train_tasks[other]->name, rc,
                         err);
        }
    }
}

static void test_core_flags(void **state)
{
    (void)state;
    char *help = usage_text();
    check_table(&train_flag_table, -1, help);
    free(help);
}

static void test_task_flags(void **state)
{
    (void)state;
    char *help = usage_text();
    int tables = 0;
    for (int i = 0; i < train_n_tasks; i++) {
        assert_true(listed(help, "--task"));
        assert_non_null(strstr(train_tasks_help, train_tasks[i]->name));
        if (train_tasks[i]->flags) {
            check_table(train_tasks[i]->flags, i, help);
            tables++;
        }
    }
    assert_true(tables >= 1);
    free(help);
}

/* The core's rows that take an optimizer or a dtype spell each value as
 * the library names it (clg_optimizer_name, clg_dtype_name: what logs and
 * checkpoints print), the names parse back to their values, and
 * --optimizer offers every member of clgrad.h's clg_optimizer (the list
 * the kernels' OPT_* come from, clg_layout.h), so that a new optimizer is
 * a choice of the trainer or this test fails. */
static void test_enum_choice_names(void **state)
{
    (void)state;
    static const struct {
        size_t offset;
        int optimizer; /* 1: clg_optimizer, 0: clg_dtype */
    } fields[] = {
        {offsetof(train_options, optimizer), 1},
        {offsetof(train_options, grad_dtype), 0},
        {offsetof(train_options, state_dtype), 0},
        {offsetof(train_options, master_dtype), 0},
        {offsetof(train_options, acc_dtype), 0},
    };
#define MEMBER(c_name, cl_name, name) (int)(c_name),
    static const int optimizers[] = {CLG_LAYOUT_OPTIMIZERS(MEMBER)};
#undef MEMBER
    const flag_table *t = &train_flag_table;
    for (size_t k = 0; k < sizeof fields / sizeof fields[0]; k++) {
        const flag_def *f = NULL;
        for (int r = 0; r < t->n; r++)
            if (t->rows[r].kind == FLAG_CHOICE && t->rows[r].offset == fields[k].offset)
                f = &t->rows[r];
        assert_non_null(f);
        char name[64], err[256];
        int n = 0;
        for (; flags_choice_at(f->choices, n, name, sizeof name) == 0; n++) {
            const char *lib = fields[k].optimizer ? clg_optimizer_name((clg_optimizer)f->values[n])
                                                  : clg_dtype_name((clg_dtype)f->values[n]);
            if (strcmp(name, lib) != 0)
                fail_msg("%s: choice %d is '%s', the library names its value '%s'", f->name, n,
                         name, lib);
            cli c;
            cli_init(&c);
            assert_int_equal(flags_parse_value(f, lib, &c.o, err, sizeof err), 0);
            int got;
            memcpy(&got, (const char *)&c.o + f->offset, sizeof got);
            assert_int_equal(got, f->values[n]);
            cli_free(&c);
        }
        if (!fields[k].optimizer)
            continue;
        for (size_t i = 0; i < sizeof optimizers / sizeof optimizers[0]; i++) {
            int offered = 0;
            for (int j = 0; j < n; j++)
                offered |= f->values[j] == optimizers[i];
            if (!offered)
                fail_msg("%s does not offer %s", f->name,
                         clg_optimizer_name((clg_optimizer)optimizers[i]));
        }
    }
}

/* Every setting a checkpoint stores is a row (a flag or a derived one) and
 * their positions are 1..n without a gap or a repeat, so that the stored
 * order (which resume messages follow) is defined by the table. */
static void test_stored_positions(void **state)
{
    (void)state;
    const flag_table *tables[1 + TRAIN_MAX_TASKS] = {&train_flag_table};
    int n = 1;
    for (int i = 0; i < train_n_tasks; i++)
        if (train_tasks[i]->flags)
            tables[n++] = train_tasks[i]->flags;
    for (int t = 0; t < n; t++) {
        int count = 0;
        for (int i = 0; i < tables[t]->n; i++)
            count += tables[t]->rows[i].stored > 0;
        for (int k = 1; k <= count; k++) {
            int found = 0;
            for (int i = 0; i < tables[t]->n; i++)
                found += tables[t]->rows[i].stored == k;
            if (found != 1)
                fail_msg("table %d: %d rows stored at %d", t, found, k);
        }
        assert_null(flags_stored_at(tables[t], count + 1));
    }
    cli c;
    cli_init(&c);
    run_config rc;
    build_config(&rc, &c);
    int stored = 0;
    for (int i = 0; i < train_flag_table.n; i++)
        stored += train_flag_table.rows[i].stored > 0;
    assert_int_equal(rc.n, stored);
    cli_free(&c);
}

/* Issue 24, 5: the combinations the tasks (and --dist) cannot take are
 * refused when the command line is parsed, before any device work, each
 * with its exact message; what they can take still parses. Every limit of
 * every table has a case here (checked from the tables), and --help lists
 * it. */
typedef struct combination {
    const char *argv[12];
    const char *message; /* NULL: accepted */
} combination;

static const combination combinations[] = {
    {{"--task", "contrastive", "--grad-dtype", "bf16"},
     "--grad-dtype bf16: not with --task contrastive (the contrastive task writes fp32 "
     "gradients)"},
    {{"--task", "contrastive", "--grad-dtype", "fp16"},
     "--grad-dtype fp16: not with --task contrastive (the contrastive task writes fp32 "
     "gradients)"},
    {{"--task", "contrastive", "--master-dtype", "bf16"},
     "--master-dtype bf16: not with --task contrastive (its GEMMs read fp32 parameters; it "
     "keeps no fp32 copy of bf16 ones)"},
    {{"--task", "contrastive", "--loss-scale", "dynamic"},
     "--loss-scale: not with --task contrastive (its loss gradient is not scaled)"},
    {{"--task", "contrastive", "--loss-scale", "1024"},
     "--loss-scale: not with --task contrastive (its loss gradient is not scaled)"},
    {{"--task", "contrastive", "--metrics", "m.csv"},
     "--metrics: not with --task contrastive (it writes no per-update metrics)"},
    {{"--task", "contrastive", "--log", "l.jsonl"},
     "--log: not with --task contrastive (it writes no per-update metrics)"},
    {{"--task", "contrastive", "--auto-micro-batch"},
     "--auto-micro-batch: not with --task contrastive (its activations are allocated once, "
     "for --micro-batch)"},
    {{"--task", "contrastive", "--tuning", "auto"},
     "--tuning auto: not with --task contrastive (its GEMMs run on CLBlast's default "
     "parameters)"},
    {{"--task", "contrastive", "--tuning", "my.tune"},
     "--tuning my.tune: not with --task contrastive (its GEMMs run on CLBlast's default "
     "parameters)"},
    {{"--task", "contrastive", "--dist", "ddp"},
     "--dist: not with --task contrastive (it does not run under MPI)"},
    {{"--dist", "ddp", "--auto-micro-batch"},
     "--auto-micro-batch: not with --dist (every rank must use the same --micro-batch; give "
     "one that fits)"},
    {{"--dist", "zero1", "--auto-micro-batch"},
     "--auto-micro-batch: not with --dist (every rank must use the same --micro-batch; give "
     "one that fits)"},
    {{"--dist", "zero1", "--master-dtype", "bf16"},
     "--master-dtype bf16: not with --dist zero1 (a sharded model does not support bf16 "
     "params)"},
    {{"--task", "gpt", "--grad-dtype", "bf16"},
     "--grad-dtype bf16: not with --task gpt (its kernels write fp32 gradients)"},
    /* issue 37: flags that would change nothing are refused */
    {{"--base-batch", "64"},
     "--base-batch: not with --lr-scale none (it is the batch --lr-scale linear or sqrt scales "
     "the lr from)"},
    {{"--base-batch", "64", "--lr-scale", "sqrt"}, NULL},
    {{"--state-min-size", "100"},
     "--state-min-size: not with --state-dtype fp32 (only q8 and q4 states keep small tensors "
     "in fp32)"},
    {{"--state-min-size", "100", "--state-dtype", "bf16"},
     "--state-min-size: not with --state-dtype bf16 (only q8 and q4 states keep small tensors "
     "in fp32)"},
    {{"--state-min-size", "100", "--state-dtype", "q4"}, NULL},
    {{"--epochs", "2", "--steps", "5"},
     "--epochs: not with --steps (the run ends after --steps updates, whatever the epochs); "
     "give one"},
    {{"--task", "gpt", "--prompt", "The "},
     "--prompt: needs --sample N (what sampling starts from)"},
    {{"--task", "gpt", "--temperature", "0"},
     "--temperature: needs --sample N (how sampling draws)"},
    {{"--task", "gpt", "--epochs", "1"}, NULL}, /* over its --steps default */
    {{"--dist-timeout", "60"},
     "--dist-timeout: needs --dist ddp or zero1 (it bounds the waits of its ranks)"},
    {{"--dist-timeout", "60", "--dist", "zero1"}, NULL},
    /* issue 37: accepted, ignored, yet stored in its checkpoints */
    {{"--task", "gpt", "--hidden", "64"},
     "--hidden: not with --task gpt (its sizes are --preset, --layers, --heads and --width)"},
    {{"--task", "gpt", "--hidden", "512,256"}, NULL}, /* the default: nothing given */
    {{"--task", "gpt", "--grad-dtype", "fp16", "--grad-path", "C"},
     "--grad-dtype fp16: not with --task gpt (its kernels write fp32 gradients)"},
    {{"--task", "gpt", "--grad-path", "A"},
     "--grad-path A: not with --accum-dtype fp32 (--task gpt adds into an fp32 accumulator in "
     "place; bf16 takes A or C)"},
    {{"--task", "gpt", "--grad-path", "C"},
     "--grad-path C: not with --accum-dtype fp32 (--task gpt adds into an fp32 accumulator in "
     "place; bf16 takes A or C)"},
    /* a bf16 accumulator takes path C (or A), bf16 master weights an fp32 copy */
    {{"--task", "gpt", "--accum-dtype", "bf16"}, NULL},
    {{"--task", "gpt", "--accum-dtype", "bf16", "--grad-path", "A"}, NULL},
    {{"--task", "gpt", "--accum-dtype", "bf16", "--grad-path", "C", "--master-dtype", "bf16"},
     NULL},
    {{"--task", "gpt", "--accum-dtype", "bf16", "--grad-path", "B"},
     "--grad-path: B's GEMMs write fp32 gradients in place; --accum-dtype bf16 needs A or C"},
    {{"--task", "gpt", "--master-dtype", "bf16"}, NULL},
    {{"--task", "gpt", "--dist", "ddp", "--accum-dtype", "bf16"},
     "--accum-dtype bf16: not with --dist (clgrad sums only fp32 accumulators across ranks)"},
    {{"--task", "gpt", "--metrics", "m.csv"}, NULL},
    /* its own tuning file (clgrad-tune --task gpt), or one given */
    {{"--task", "gpt", "--tuning", "auto"}, NULL},
    {{"--task", "gpt", "--tuning", "my.tune"}, NULL},
    {{"--task", "gpt", "--dist", "ddp", "--batch", "16"}, NULL},
    /* a flag two tasks share is the chosen task's; without either, the first's */
    {{"--temperature", "0.5"},
     "the contrastive flags (--contrastive, --temperature, ...) need --task contrastive"},
    {{"--task", "gpt", "--temperature", "0", "--sample", "10"}, NULL},
    {{"--temperature", "0.5", "--task", "contrastive"}, NULL},
    {{"--task", "gpt", "--contrastive", "naive"},
     "the contrastive flags (--contrastive, --temperature, ...) need --task contrastive"},
    {{"--task", "contrastive", "--temperature", "0"},
     "--temperature: expected a number in [0.0001, 100], got '0'"},
    /* the task's defaults, then what the command line gives */
    {{"--task", "gpt", "--micro-batch", "64"},
     "--micro-batch: expected an integer in [1, 8] (the --batch), got 64"},
    {{"--task", "gpt", "--batch", "2"}, NULL}, /* its micro-batch 4 becomes 2 */
    {{"--task", "gpt", "--width", "30", "--heads", "4"},
     "--heads 4 does not divide --width 30"},
    {{"--task", "gpt", "--state-dtype", "q8", "--loss-scale", "dynamic", "--clip", "1",
      "--auto-micro-batch", "--memory", "8G"},
     NULL},
    /* what the limits leave */
    {{"--task", "contrastive", "--grad-dtype", "fp32", "--master-dtype", "fp32", "--loss-scale",
      "none"},
     NULL},
    {{"--task", "contrastive", "--state-dtype", "q8", "--grad-path", "C", "--clip", "1"}, NULL},
    {{"--task", "contrastive", "--tuning", "off"}, NULL}, /* what it does anyway */
    {{"--dist", "zero1", "--state-dtype", "bf16"}, NULL},
    {{"--dist", "zero1", "--state-dtype", "q8"}, NULL},
    {{"--dist", "zero1", "--state-dtype", "q4"}, NULL},
    {{"--dist", "ddp", "--state-dtype", "q4", "--master-dtype", "bf16"}, NULL},
    {{"--master-dtype", "bf16", "--grad-dtype", "bf16", "--loss-scale", "dynamic", "--metrics",
      "m.csv", "--auto-micro-batch", "--tuning", "off"},
     NULL},
};

static void test_combinations(void **state)
{
    (void)state;
    size_t n = sizeof combinations / sizeof combinations[0];
    for (size_t i = 0; i < n; i++) {
        char *argv[14] = {"clgrad-train"};
        int argc = 1;
        for (int k = 0; k < 12 && combinations[i].argv[k]; k++)
            argv[argc++] = (char *)combinations[i].argv[k];
        cli c;
        cli_init(&c);
        char err[1024] = "";
        int rc = train_cli_parse(argc, argv, &c.o, c.task, err, sizeof err);
        cli_free(&c);
        const char *want = combinations[i].message;
        if (want ? rc != -1 || strcmp(err, want) != 0 : rc != 0)
            fail_msg("case %zu (%s %s ...): got %d '%s', expected %s", i, argv[1], argv[2], rc,
                     err, want ? want : "success");
    }
    /* every limit of every table: a refused case that names its flag and
     * says its reason, and a line of --help */
    char *help = usage_text();
    const flag_table *tables[1 + TRAIN_MAX_TASKS] = {&train_flag_table};
    int nt = 1;
    for (int t = 0; t < train_n_tasks; t++)
        if (train_tasks[t]->flags)
            tables[nt++] = train_tasks[t]->flags;
    for (int t = 0; t < nt; t++) {
        for (int k = 0; k < tables[t]->n_limits; k++) {
            const flag_limit *l = &tables[t]->limits[k];
            /* it names core flags, and values only of a choice row's or a
             * text row's */
            const flag_def *f = flags_find(&train_flag_table, l->flag);
            char when[64];
            snprintf(when, sizeof when, "%.*s", (int)strcspn(l->when ? l->when : "", "="),
                     l->when ? l->when : "");
            if (!f || (l->takes && !f->choices && f->kind != FLAG_TEXT) ||
                (l->when && !flags_find(&train_flag_table, when)))
                fail_msg("limit %s (%s): not a core flag, or values of a row without them",
                         l->flag, l->why);
            int covered = 0;
            for (size_t i = 0; i < n; i++) {
                const char *m = combinations[i].message;
                covered += m && !strncmp(m, l->flag, strlen(l->flag)) && strstr(m, l->why);
            }
            if (!covered)
                fail_msg("limit %s (%s) has no case", l->flag, l->why);
            char line[512];
            snprintf(line, sizeof line, "%s%s%s\n      (%s)\n", l->flag,
                     l->takes ? " other than " : "", l->takes ? l->takes : "", l->why);
            if (!strstr(help, line))
                fail_msg("--help does not list '%s'", line);
        }
    }
    free(help);
}

int main(void)
{
    train_set_tasks(train_tasks, train_n_tasks); /* as clgrad-train's main */
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_core_flags),
        cmocka_unit_test(test_task_flags),
        cmocka_unit_test(test_stored_positions),
        cmocka_unit_test(test_enum_choice_names),
        cmocka_unit_test(test_combinations),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}

/* gpt_hf_run.c - the trainer's side of Hugging Face GPT-2 directories
 * (gpt_hf.h): --init-from's shape and weights, --export-hf's check before
 * the run and its files after it. */
#define _POSIX_C_SOURCE 200809L /* lstat */
#include "gpt_hf.h"
#include "errmsg.h"
#include "file_id.h"
#include "gpt_data.h"
#include "gpt_source.h"
#include "output_file.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

int gpt_hf_apply_options(gpt_options *g, char *err, size_t errlen)
{
    if (!g->init_from)
        return 0;
    gpt_hf_config c;
    char why[1024];
    if (gpt_hf_load(g->init_from, &c, NULL, why, sizeof why) != 0)
        return errmsg_set(err, errlen, "--init-from: %s", why);
    const struct {
        const char *flag, *key;
        unsigned given, file;
        unsigned *to;
    } dims[] = {
        {"--layers", "n_layer", g->shape_flags.layers, c.shape.layers, &g->layers},
        {"--heads", "n_head", g->shape_flags.heads, c.shape.heads, &g->heads},
        {"--width", "n_embd", g->shape_flags.width, c.shape.width, &g->width},
        {"--context", "n_positions", g->shape_flags.context, c.shape.context, &g->context},
        {"--vocab", "vocab_size", g->shape_flags.vocab, c.vocab, &g->vocab},
    };
    for (size_t i = 0; i < sizeof dims / sizeof *dims; i++) {
        if (dims[i].given && dims[i].given != dims[i].file)
            return errmsg_set(err, errlen, "%s %u, but --init-from %s has %s %u", dims[i].flag,
                              dims[i].given, g->init_from, dims[i].key, dims[i].file);
        *dims[i].to = dims[i].file;
    }
    return 0;
}

int gpt_hf_check_export(const char *dir, const char *data_path, char *err, size_t errlen)
{
    char d[PATH_MAX], file[PATH_MAX + 32];
    snprintf(d, sizeof d, "%s", dir);
    for (size_t n = strlen(d); n > 1 && d[n - 1] == '/'; n--)
        d[n - 1] = 0;
    struct stat sb;
    if (lstat(d, &sb) != 0) /* made at the end: its parent must take it */
        return output_check("--export-hf", d, err, errlen);
    if (stat(d, &sb) != 0) /* a link to nothing (or a loop): no directory to make */
        return errmsg_set(err, errlen, "--export-hf: %s: %s", dir, strerror(errno));
    if (!S_ISDIR(sb.st_mode))
        return errmsg_set(err, errlen, "--export-hf: %s is not a directory", dir);
    /* the two files in the corpus's directory would be read as text by the next run */
    if (data_path && file_same(d, data_path) == 1)
        return errmsg_set(err, errlen,
                          "--export-hf %s is the directory of --data: its files "
                          "would join the corpus",
                          dir);
    const char *files[] = {"model.safetensors", "config.json"};
    path_list data = {0};
    if (data_path && gpt_data_files(data_path, &data, err, errlen) != 0)
        return -1;
    int rc = 0;
    for (int i = 0; rc == 0 && i < 2; i++) {
        snprintf(file, sizeof file, "%s/%s", d, files[i]);
        rc = output_check("--export-hf", file, err, errlen);
        /* a file of the corpus replaced would change what a run reads */
        for (size_t k = 0; rc == 0 && k < data.n; k++)
            if (file_same(file, data.path[k]) != 0)
                rc = errmsg_set(err, errlen, "--export-hf %s would replace %s, a file of --data %s",
                                dir, data.path[k], data_path);
    }
    path_list_free(&data);
    return rc;
}

typedef struct loaded {
    const float *params;
    uint64_t n;
} loaded;

/* run_param_init's form: the loaded weights as the initial ones. */
static void copy_loaded(const void *arg, uint64_t seed, float *host)
{
    (void)seed;
    const loaded *l = arg;
    memcpy(host, l->params, l->n * sizeof *host);
}

int gpt_hf_init_params(run_state *r, const char *dir, const gpt_shape *s)
{
    gpt_hf_config c;
    float *params = NULL;
    char why[1024];
    if (gpt_hf_load(dir, &c, &params, why, sizeof why) != 0)
        return run_fail(r, "--init-from: %s", why);
    loaded l = {params, gpt_hf_param_count(&c)};
    int rc;
    /* the directory changed since gpt_hf_apply_options read it */
    if (c.shape.layers != s->layers || c.shape.heads != s->heads || c.shape.width != s->width ||
        c.shape.context != s->context || l.n != clg_model_param_count(r->model))
        rc = run_fail(r, "--init-from %s: its config changed during the run's setup", dir);
    else
        rc = run_init_params(r, copy_loaded, &l);
    free(params);
    return rc;
}

int gpt_hf_export_run(run_state *r, const char *dir, const gpt_shape *s)
{
    gpt_hf_config c = {.shape = *s, .vocab = s->vocab};
    uint64_t n = clg_model_param_count(r->model);
    float *host = malloc(n * sizeof *host);
    if (!host)
        return run_fail(r, "--export-hf: out of host memory");
    clg_status st = clg_model_download_params(r->model, CLG_ALL_TENSORS, host, (size_t)n, NULL);
    char why[1024];
    int rc = 0;
    if (st != CLG_SUCCESS)
        rc = run_fail_clg(r, "--export-hf: downloading the parameters", st);
    else if (gpt_hf_export(dir, &c, host, why, sizeof why) != 0)
        rc = run_fail(r, "--export-hf: %s", why);
    free(host);
    return rc;
}

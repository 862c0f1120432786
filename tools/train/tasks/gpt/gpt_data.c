/* gpt_data.c - the GPT task's corpus, windows and baselines (see
 * gpt_data.h). */
#define _DEFAULT_SOURCE /* lstat, d_name */
#include "gpt_data.h"
#include "errmsg.h"
#include "input_file.h"

#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

size_t gpt_split(size_t n)
{
    return n - n / 10;
}

/* Appends the file at path to c->bytes: a regular file of at most
 * GPT_CORPUS_MAX_BYTES in all, read to the size it had when opened (a
 * FIFO, a device or a growing file is refused, not read forever). */
static int append_file(gpt_corpus *c, const char *path, char *err, size_t errlen)
{
    char why[256];
    size_t size;
    int fd = input_open(path, GPT_CORPUS_MAX_BYTES - c->n, &size, why, sizeof why);
    if (fd < 0)
        return errmsg_set(err, errlen, "--data: %s: %s", path, why);
    int rc = 0;
    uint8_t *p = realloc(c->bytes, c->n + size + 1);
    if (!p) {
        rc = errmsg_set(err, errlen, "--data: %s: out of host memory", path);
    } else {
        c->bytes = p;
        if (input_read(fd, p + c->n, size, why, sizeof why) != 0)
            rc = errmsg_set(err, errlen, "--data: %s: %s", path, why);
        else
            c->n += size;
    }
    close(fd);
    c->files += rc == 0;
    return rc;
}

static int by_name(const void *a, const void *b)
{
    return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Whether a directory entry is part of the corpus: a regular file (not a
 * link: fortunes' .u8 names link to the plain files) that is no strfile
 * index (".dat", binary). */
static int is_text_file(const char *dir, const char *name, char *path, size_t len)
{
    size_t n = strlen(name);
    if (name[0] == '.' || (n >= 4 && !strcmp(name + n - 4, ".dat")))
        return 0;
    snprintf(path, len, "%s/%s", dir, name);
    struct stat sb;
    return lstat(path, &sb) == 0 && S_ISREG(sb.st_mode);
}

/* The corpus files of a directory, in strcmp order of their names. */
static int list_dir(const char *dir, path_list *files, char *err, size_t errlen)
{
    DIR *d = opendir(dir);
    if (!d)
        return errmsg_set(err, errlen, "--data: %s: %s", dir, strerror(errno));
    char **names = NULL;
    size_t count = 0;
    int rc = 0;
    char path[4096];
    for (struct dirent *e; rc == 0 && (e = readdir(d)) != NULL;) {
        if (!is_text_file(dir, e->d_name, path, sizeof path))
            continue;
        char **p = realloc(names, (count + 1) * sizeof *names);
        char *name = strdup(e->d_name);
        if (p)
            names = p;
        if (!p || !name) {
            free(name);
            rc = errmsg_set(err, errlen, "--data: %s: out of host memory", dir);
        } else {
            names[count++] = name;
        }
    }
    closedir(d);
    qsort(names, count, sizeof *names, by_name);
    for (size_t i = 0; i < count; i++) {
        snprintf(path, sizeof path, "%s/%s", dir, names[i]);
        struct stat sb;
        if (rc == 0 && lstat(path, &sb) != 0)
            rc = errmsg_set(err, errlen, "--data: %s: %s", path, strerror(errno));
        if (rc == 0 && path_list_add(files, path, (uint64_t)sb.st_size) != 0)
            rc = errmsg_set(err, errlen, "--data: %s: out of host memory", dir);
        free(names[i]);
    }
    free(names);
    if (rc == 0 && count == 0)
        rc = errmsg_set(err, errlen, "--data: %s holds no regular text file", dir);
    return rc;
}

int gpt_corpus_files(const char *path, path_list *files, char *err, size_t errlen)
{
    struct stat sb;
    if (stat(path, &sb) != 0)
        return errmsg_set(err, errlen, "--data: %s: %s", path, strerror(errno));
    if (S_ISDIR(sb.st_mode)) {
        if (list_dir(path, files, err, errlen) != 0)
            return -1;
    } else {
        if (input_check("--data", path, err, errlen) != 0)
            return -1;
        if (path_list_add(files, path, (uint64_t)sb.st_size) != 0)
            return errmsg_set(err, errlen, "--data: %s: out of host memory", path);
    }
    uint64_t total = path_list_bytes(files);
    if (total > GPT_CORPUS_MAX_BYTES)
        return errmsg_set(err, errlen,
                          "--data: %s: %" PRIu64 " bytes in %zu file(s), more than the %" PRIu64
                          " a corpus may have (it is held in host memory whole)",
                          path, total, files->n, (uint64_t)GPT_CORPUS_MAX_BYTES);
    return 0;
}

static int too_small(const char *path, uint64_t n, char *err, size_t errlen)
{
    return errmsg_set(err, errlen, "--data: %s: %" PRIu64 " bytes; a corpus needs at least 2",
                      path, n);
}

int gpt_windows_none(const char *where, const char *what, uint64_t n, const char *unit,
                     unsigned T, char *err, size_t errlen)
{
    return errmsg_set(err, errlen,
                      "%s: the %s split has %" PRIu64 " %s, fewer than a window of --context %u "
                      "+ 1",
                      where, what, n, unit, T);
}

static int no_window(const char *what, uint64_t n, unsigned T, char *err, size_t errlen)
{
    return gpt_windows_none("--data", what, n, "bytes", T, err, errlen);
}

int gpt_corpus_fits(const char *path, uint64_t n, unsigned T, char *err, size_t errlen)
{
    if (n < 2)
        return too_small(path, n, err, errlen);
    size_t w[2];
    gpt_corpus_windows(n, T, w);
    uint64_t n_train = gpt_split((size_t)n);
    if (!w[0])
        return no_window("training", n_train, T, err, errlen);
    if (!w[1])
        return no_window("validation", n - n_train, T, err, errlen);
    return 0;
}

int gpt_corpus_read(const path_list *files, const char *path, gpt_corpus *c, char *err,
                    size_t errlen)
{
    memset(c, 0, sizeof *c);
    int rc = 0;
    for (size_t i = 0; rc == 0 && i < files->n; i++)
        rc = append_file(c, files->path[i], err, errlen);
    if (rc == 0 && c->n < 2)
        rc = too_small(path, c->n, err, errlen);
    if (rc != 0) {
        gpt_corpus_free(c);
        return -1;
    }
    c->n_train = gpt_split(c->n);
    return 0;
}

int gpt_corpus_load(const char *path, gpt_corpus *c, char *err, size_t errlen)
{
    path_list files = {0};
    memset(c, 0, sizeof *c);
    int rc = gpt_corpus_files(path, &files, err, errlen) != 0 ? -1
             : gpt_corpus_read(&files, path, c, err, errlen);
    path_list_free(&files);
    return rc;
}

void gpt_corpus_free(gpt_corpus *c)
{
    free(c->bytes);
    memset(c, 0, sizeof *c);
}

size_t gpt_window_count(size_t n, unsigned T)
{
    return n > 1 && T ? (n - 1) / T : 0;
}

void gpt_corpus_windows(uint64_t n, unsigned T, size_t windows[2])
{
    size_t n_train = gpt_split((size_t)n);
    windows[0] = gpt_window_count(n_train, T);
    windows[1] = gpt_window_count((size_t)n - n_train, T);
}

uint64_t gpt_corpus_host_bytes(uint64_t n, unsigned T)
{
    size_t w[2];
    gpt_corpus_windows(n, T, w);
    return n + 1 + ((uint64_t)w[0] + w[1]) * ((uint64_t)T + 2);
}

int gpt_windows_make(const uint8_t *bytes, size_t n, unsigned T, const char *what, gpt_windows *w,
                     char *err, size_t errlen)
{
    memset(w, 0, sizeof *w);
    size_t count = gpt_window_count(n, T), dim = (size_t)T + 1;
    if (count == 0)
        return no_window(what, n, T, err, errlen);
    if (gpt_windows_alloc(count, dim, what, w, err, errlen) != 0)
        return -1;
    for (size_t i = 0; i < count; i++)
        memcpy(w->images + i * dim, bytes + i * T, dim);
    return 0;
}

int gpt_windows_alloc(size_t count, size_t dim, const char *what, gpt_windows *w, char *err,
                      size_t errlen)
{
    memset(w, 0, sizeof *w);
    if (count <= SIZE_MAX / dim) { /* dim a few bytes a position: wraps only on 32 bits */
        /* zeroed: dataset_wrap is given them before the caller writes them
         * (fresh pages from the kernel are zero anyway) */
        w->images = calloc(count, dim);
        w->labels = calloc(count, 1);
    }
    if (!w->images || !w->labels) {
        gpt_windows_free(w);
        return errmsg_set(err, errlen, "--data: out of host memory for the %s windows", what);
    }
    if (dataset_wrap(w->images, w->labels, count, dim, &w->set, err, errlen) != 0) {
        gpt_windows_free(w);
        return -1;
    }
    return 0;
}

void gpt_windows_free(gpt_windows *w)
{
    free(w->images);
    free(w->labels);
    memset(w, 0, sizeof *w);
}

void gpt_baselines_compute(const uint8_t *train, size_t n_train, const dataset *w, size_t n,
                           gpt_baselines *out)
{
    double uni[256] = {0}, after[256] = {0};        /* c(b), c(b .) */
    double *pair = calloc(256 * 256, sizeof *pair); /* c(a b) at a * 256 + b */
    out->unigram = out->bigram = NAN;
    if (!pair)
        return;
    for (size_t i = 0; i < n_train; i++) {
        uni[train[i]] += 1;
        if (i + 1 < n_train) {
            after[train[i]] += 1;
            pair[train[i] * 256 + train[i + 1]] += 1;
        }
    }
    double su = 0, sb = 0;
    size_t T = w->dim - 1;
    for (size_t i = 0; i < n && i < w->count; i++) {
        const uint8_t *x = w->images + i * w->dim;
        for (size_t t = 0; t < T; t++) {
            su -= log((uni[x[t + 1]] + 1) / ((double)n_train + 256));
            sb -= log((pair[x[t] * 256 + x[t + 1]] + 1) / (after[x[t]] + 256));
        }
    }
    size_t m = (n < w->count ? n : w->count) * T;
    out->unigram = m ? su / (double)m : NAN;
    out->bigram = m ? sb / (double)m : NAN;
    free(pair);
}

double gpt_bits(double nats)
{
    return nats / log(2.0);
}

/* outpaths.c - checks of the run's files before it starts (see outpaths.h). */
#include "outpaths.h"
#include "errmsg.h"
#include "dataset.h"
#include "input_file.h"
#include "tuning_spec.h"

#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Splits path into its directory ("." for a bare name) and base name. */
static void split(const char *path, char *dir, size_t dlen, const char **base)
{
    const char *slash = strrchr(path, '/');
    if (!slash) {
        snprintf(dir, dlen, ".");
        *base = path;
    } else {
        if (slash == path)
            snprintf(dir, dlen, "/");
        else
            snprintf(dir, dlen, "%.*s", (int)(slash - path), path);
        *base = slash + 1;
    }
}

int outpaths_check_output(const char *flag, const char *path, char *err, size_t errlen)
{
    char dir[PATH_MAX];
    const char *base;
    struct stat sb;
    split(path, dir, sizeof dir, &base);
    if (stat(path, &sb) == 0) {
        if (S_ISDIR(sb.st_mode)) {
            errmsg_set(err, errlen, "%s: %s is a directory; expected a file name", flag, path);
            return -1;
        }
        if (!S_ISREG(sb.st_mode)) {
            errmsg_set(err, errlen, "%s: %s exists and is not a regular file; it would be replaced",
                    flag, path);
            return -1;
        }
    }
    if (!*base || !strcmp(base, ".") || !strcmp(base, "..")) {
        errmsg_set(err, errlen, "%s: %s names a directory; expected a file name", flag, path);
        return -1;
    }
    if (stat(dir, &sb) != 0) {
        int e = errno;
        errmsg_set(err, errlen, "%s: %s: the directory %s %s", flag, path, dir,
                e == ENOENT ? "does not exist" : strerror(e));
        return -1;
    }
    if (!S_ISDIR(sb.st_mode)) {
        errmsg_set(err, errlen, "%s: %s: %s is not a directory", flag, path, dir);
        return -1;
    }
    if (access(dir, W_OK | X_OK) != 0) {
        int e = errno;
        errmsg_set(err, errlen, "%s: %s: cannot create files in the directory %s: %s", flag, path,
                dir, strerror(e));
        return -1;
    }
    return 0;
}

typedef struct file_id {
    int exists;
    dev_t dev;
    ino_t ino;
    char resolved[PATH_MAX + NAME_MAX + 2]; /* when it does not exist */
    int known;                              /* 0: the directory could not be resolved */
} file_id;

static void identify(const char *path, file_id *id)
{
    memset(id, 0, sizeof *id);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        id->exists = 1;
        id->known = 1;
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return;
    }
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base;
    split(path, dir, sizeof dir, &base);
    if (!realpath(dir, real))
        return;
    snprintf(id->resolved, sizeof id->resolved, "%s/%s", strcmp(real, "/") ? real : "", base);
    id->known = 1;
}

static int same_id(const file_id *a, const file_id *b)
{
    if (!a->known || !b->known)
        return -1;
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->resolved, b->resolved) == 0;
}

int outpaths_same_file(const char *a, const char *b)
{
    file_id ia, ib;
    identify(a, &ia);
    identify(b, &ib);
    return same_id(&ia, &ib);
}

enum { MAX_FILES = 10 }; /* 4 outputs, --resume, 4 data files */

typedef struct named_file {
    const char *flag;
    const char *path;
    int output;
    file_id id;
} named_file;

int outpaths_check(const train_options *o, int with_data, char *err, size_t errlen)
{
    /* --tuning FILE that is there but no regular file (a FIFO, a device, a
     * dangling link): refused here, where its reader would only warn. A
     * missing file still warns and runs on CLBlast's defaults. */
    const char *tuning = tuning_spec_file(o->tuning);
    if (tuning && input_check_present("--tuning", tuning, err, errlen) != 0)
        return -1;
    named_file f[MAX_FILES];
    int n = 0;
    const char *out_flags[] = {"--checkpoint", "--metrics", "--dump-weights", "--save-initial"};
    const char *out_paths[] = {o->checkpoint, o->metrics, o->dump_weights, o->save_initial};
    for (size_t i = 0; i < sizeof out_paths / sizeof *out_paths; i++) {
        if (!out_paths[i])
            continue;
        if (outpaths_check_output(out_flags[i], out_paths[i], err, errlen) != 0)
            return -1;
        f[n++] = (named_file){out_flags[i], out_paths[i], 1, {0}};
    }
    if (o->resume) {
        if (input_check("--resume", o->resume, err, errlen) != 0)
            return -1;
        f[n++] = (named_file){"--resume", o->resume, 0, {0}};
    }
    char data_paths[4][4096];
    if (with_data && o->data_dir) {
        const char *prefixes[2] = {"train", "t10k"};
        for (int i = 0; i < 2; i++) {
            dataset_paths(o->data_dir, prefixes[i], data_paths[2 * i], data_paths[2 * i + 1],
                          sizeof data_paths[0]);
            f[n++] = (named_file){"--data", data_paths[2 * i], 0, {0}};
            f[n++] = (named_file){"--data", data_paths[2 * i + 1], 0, {0}};
        }
    }
    for (int i = 0; i < n; i++)
        identify(f[i].path, &f[i].id);
    for (int i = 0; i < n; i++) {
        for (int j = i + 1; j < n; j++) {
            if (!f[i].output && !f[j].output)
                continue; /* two inputs may be one file */
            /* a run may continue its own checkpoint: it is read first and
             * replaced atomically */
            if (!strcmp(f[i].flag, "--checkpoint") && !strcmp(f[j].flag, "--resume"))
                continue;
            if (same_id(&f[i].id, &f[j].id) == 1) {
                if (f[j].output)
                    errmsg_set(err, errlen,
                            "%s %s and %s %s name the same file: one output would overwrite "
                            "the other", f[i].flag, f[i].path, f[j].flag, f[j].path);
                else
                    errmsg_set(err, errlen,
                            "%s %s and %s %s name the same file: writing %s would destroy the "
                            "input", f[i].flag, f[i].path, f[j].flag, f[j].path, f[i].flag);
                return -1;
            }
        }
    }
    return 0;
}

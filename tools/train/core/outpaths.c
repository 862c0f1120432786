/* outpaths.c - checks of the run's files before it starts (see outpaths.h). */
#include "outpaths.h"
#include "errmsg.h"
#include "file_id.h"
#include "input_file.h"
#include "output_file.h"
#include "tuning_spec.h"

#include <stdlib.h>
#include <string.h>

typedef struct named_file {
    const char *flag;
    const char *path;
    int output;
    file_id id;
} named_file;

int outpaths_check(const train_options *o, const path_list *data, char *err, size_t errlen)
{
    /* --tuning FILE that is there but no regular file (a FIFO, a device, a
     * dangling link): refused here, where its reader would only warn. A
     * missing file still warns and runs on CLBlast's defaults. */
    const char *tuning = tuning_spec_file(o->tuning);
    if (tuning && input_check_present("--tuning", tuning, err, errlen) != 0)
        return -1;
    const char *out_flags[] = {"--checkpoint", "--metrics", "--dump-weights", "--save-initial",
                               "--log"};
    const char *out_paths[] = {o->checkpoint, o->metrics, o->dump_weights, o->save_initial,
                               o->log};
    enum { N_OUT = sizeof out_paths / sizeof *out_paths };
    size_t n_data = data ? data->n : 0, n = 0;
    named_file *f = malloc((N_OUT + 1 + n_data) * sizeof *f);
    if (!f)
        return errmsg_set(err, errlen, "checking the run's files: out of host memory");
    int rc = -1;
    for (size_t i = 0; i < N_OUT; i++) {
        if (!out_paths[i])
            continue;
        if (output_check(out_flags[i], out_paths[i], err, errlen) != 0)
            goto out;
        f[n++] = (named_file){out_flags[i], out_paths[i], 1, {0}};
    }
    if (o->resume) {
        if (input_check("--resume", o->resume, err, errlen) != 0)
            goto out;
        f[n++] = (named_file){"--resume", o->resume, 0, {0}};
    }
    for (size_t i = 0; i < n_data; i++)
        f[n++] = (named_file){"--data", data->path[i], 0, {0}};
    for (size_t i = 0; i < n; i++)
        file_id_of(f[i].path, &f[i].id);
    for (size_t i = 0; i < n; i++) {
        for (size_t j = i + 1; j < n && f[i].output; j++) { /* outputs come first */
            /* a run may continue its own checkpoint: it is read first and
             * replaced atomically */
            if (!strcmp(f[i].flag, "--checkpoint") && !strcmp(f[j].flag, "--resume"))
                continue;
            if (file_id_same(&f[i].id, &f[j].id) != 1)
                continue;
            if (f[j].output)
                errmsg_set(err, errlen,
                           "%s %s and %s %s name the same file: one output would overwrite "
                           "the other", f[i].flag, f[i].path, f[j].flag, f[j].path);
            else
                errmsg_set(err, errlen,
                           "%s %s and %s %s name the same file: writing %s would destroy the "
                           "input", f[i].flag, f[i].path, f[j].flag, f[j].path, f[i].flag);
            goto out;
        }
    }
    rc = 0;
out:
    free(f);
    return rc;
}

/* checkpoint_load.c - clg_checkpoint_load: stage the file, verify it
 * completely in host memory (checkpoint_parse.c), back up the live state,
 * write the checkpoint to the device (checkpoint_transfer.c), and restore
 * the backup if a device write fails half-way. clg_checkpoint_read_meta:
 * the header alone, verified the same way. */
#include "checkpoint.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------ load */

/* Opens path for reading only if it is a regular file: O_NONBLOCK, so that
 * a FIFO no one writes cannot block the open, then fstat on the descriptor
 * itself, so that a path swapped after any earlier check is still caught.
 * ctx NULL: the error goes to the thread's last error alone. */
static clg_status open_regular(clg_context *ctx, const char *who, const char *path, int *fd_out,
                               struct stat *sb)
{
    int fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC);
    if (fd < 0)
        return clg__fail(ctx, CLG_ERR_IO, "%s: cannot open '%s': %s", who, path,
                         strerror(errno));
    if (fstat(fd, sb) != 0) {
        int e = errno;
        close(fd);
        return clg__fail(ctx, CLG_ERR_IO, "%s: cannot stat '%s': %s", who, path, strerror(e));
    }
    if (!S_ISREG(sb->st_mode)) {
        close(fd);
        return clg__fail(ctx, CLG_ERR_IO, "%s: '%s' is not a regular file", who, path);
    }
    *fd_out = fd;
    return CLG_SUCCESS;
}

/* Reads the whole file into memory: exactly the size it had when opened, and
 * refuses one that shrank or grew meanwhile (a file still being written is
 * not a checkpoint, and is never read without end). */
static clg_status read_file(clg_context *ctx, const char *path, uint8_t **out, size_t *size)
{
    int fd;
    struct stat sb;
    clg_status st = open_regular(ctx, "clg_checkpoint_load", path, &fd, &sb);
    if (st != CLG_SUCCESS)
        return st;
    size_t n = (size_t)sb.st_size;
    uint8_t *buf = malloc(n ? n : 1);
    if (!buf) {
        close(fd);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY,
                         "clg_checkpoint_load: no host memory to stage %zu bytes of '%s'", n, path);
    }
    size_t got = 0;
    while (got < n) {
        ssize_t r = read(fd, buf + got, n - got);
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0) {
            int e = errno;
            free(buf);
            close(fd);
            return clg__fail(ctx, CLG_ERR_IO, "clg_checkpoint_load: reading '%s' failed: %s", path,
                             r == 0 ? "file shrank while reading" : strerror(e));
        }
        got += (size_t)r;
    }
    uint8_t more;
    ssize_t r;
    while ((r = read(fd, &more, 1)) < 0 && errno == EINTR)
        ;
    int e = errno;
    close(fd);
    if (r != 0) {
        free(buf);
        return clg__fail(ctx, CLG_ERR_IO, "clg_checkpoint_load: reading '%s' failed: %s", path,
                         r > 0 ? "file grew while reading" : strerror(e));
    }
    *out = buf;
    *size = n;
    return CLG_SUCCESS;
}

/* A mid-cycle checkpoint needs a cycle at least as long as the part
 * already taken (k may have changed between runs). */
static clg_status check_cycle_fits(clg_model *model, const char *path, const clg_cycle_state *saved)
{
    const clg_config *cfg = &model->cfg;
    unsigned k =
        cfg->k_schedule ? cfg->k_schedule(saved->cycles, cfg->k_schedule_user) : cfg->accum_steps;
    if (saved->micro >= k)
        return clg__fail(model->ctx, CLG_ERR_MISMATCH,
                         "clg_checkpoint_load: '%s': the checkpoint is %u micro-steps into a "
                         "cycle, but the model's cycle %llu has %u",
                         path, saved->micro, (unsigned long long)saved->cycles, k);
    return CLG_SUCCESS;
}

/* Attached parts (ckpt_ext.h) say whether their bytes can be loaded. */
static clg_status check_attached_parts(clg_model *model, const char *path,
                                       const clg_ckpt_layout *layout, const uint8_t *data)
{
    char why[512];
    for (size_t i = 0; i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        clg_ckpt_ext *x = e->source == CLG_CKPT_SRC_EXT ? clg__ckpt_ext_at(model, e->tensor) : NULL;
        if (x && x->check && !x->check(x->owner, x->part, data + e->file_begin, why, sizeof why))
            return clg__fail(model->ctx, CLG_ERR_CORRUPT_FILE,
                             "clg_checkpoint_load: '%s': tensor '%s': %s", path, e->key, why);
    }
    return CLG_SUCCESS;
}

/* Writes the parsed checkpoint to the device. The live state is kept
 * first, so that a device failure half-way through the writes can be
 * undone. */
static clg_status apply_or_undo(clg_model *model, const char *path, const clg_ckpt_layout *layout,
                                const clg_ckpt_parsed *parsed)
{
    clg_context *ctx = model->ctx;
    uint8_t *backup = NULL;
    clg_cycle_state backup_state;
    void **own = NULL; /* a sharded model's backup: its own shard's states */
    clg_status st = model->sharded ? clg__shard_images(model, &own) : CLG_SUCCESS;
    if (st == CLG_SUCCESS)
        st = clg__ckpt_collect(model, layout, (const void *const *)own, &backup, &backup_state);
    clg__shard_images_free(model, own);
    if (st != CLG_SUCCESS)
        return st; /* nothing changed yet; message set by the failing call */
    /* A successful load clears a failed step's refusal (the whole state is
     * written); an undone one must leave it as it was, and one that could
     * not be undone sets it: the model then holds neither state. */
    clg_status was_failed = model->failed;
    st = clg__ckpt_apply(model, layout, parsed->data, 1, &parsed->state);
    if (st != CLG_SUCCESS) {
        char first[CLG_ERROR_MAX / 2];
        snprintf(first, sizeof first, "%s", clg_last_error(ctx));
        clg_status undo = clg__ckpt_apply(model, layout, backup, 0, &backup_state);
        model->failed = undo == CLG_SUCCESS ? was_failed : st;
        clg__fail(ctx, st, "clg_checkpoint_load: '%s': %s (%s)", path, first,
                  undo == CLG_SUCCESS ? "the previous state was restored"
                                      : "restoring the previous state failed too: the model "
                                        "state is undefined");
    }
    free(backup);
    return st;
}

/* The length bytes and the header of a file: at most 8 + the length they
 * give (the parse says what is wrong with one shorter than that). */
static clg_status read_header(const char *path, uint8_t **out, size_t *size)
{
    static const char who[] = "clg_checkpoint_read_meta";
    int fd;
    struct stat sb;
    clg_status st = open_regular(NULL, who, path, &fd, &sb);
    if (st != CLG_SUCCESS)
        return st;
    uint8_t len8[8];
    ssize_t got = pread(fd, len8, 8, 0);
    if (got < 0) {
        int e = errno;
        close(fd);
        return clg__fail(NULL, CLG_ERR_IO, "%s: reading '%s' failed: %s", who, path, strerror(e));
    }
    uint64_t hlen = got == 8 ? clg__ckpt_get_le64(len8) : 0;
    size_t want = 8 + (size_t)(hlen <= CLG_CKPT_HEADER_MAX ? hlen : 0); /* else refused */
    uint8_t *buf = malloc(want);
    if (!buf) {
        close(fd);
        return clg__fail(NULL, CLG_ERR_OUT_OF_HOST_MEMORY,
                         "%s: no host memory for the %zu-byte header of '%s'", who, want, path);
    }
    size_t n = 0;
    while (n < want) {
        ssize_t r = pread(fd, buf + n, want - n, (off_t)n);
        if (r < 0 && errno == EINTR)
            continue;
        if (r < 0) {
            int e = errno;
            free(buf);
            close(fd);
            return clg__fail(NULL, CLG_ERR_IO, "%s: reading '%s' failed: %s", who, path,
                             strerror(e));
        }
        if (r == 0)
            break; /* shorter than its header: the parse says so */
        n += (size_t)r;
    }
    close(fd);
    *out = buf;
    *size = n;
    return CLG_SUCCESS;
}

clg_status clg_checkpoint_read_meta(const char *path, clg_meta_fn meta, void *user)
{
    if (!path || !*path)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_checkpoint_read_meta: path is %s",
                         path ? "empty" : "NULL");
    uint8_t *file = NULL;
    size_t size = 0;
    clg_status st = read_header(path, &file, &size);
    if (st != CLG_SUCCESS)
        return st;
    char err[512];
    st = clg__ckpt_parse_header(file, size, meta, user, err, sizeof err);
    if (st != CLG_SUCCESS)
        clg__fail(NULL, st, "clg_checkpoint_read_meta: '%s': %s", path, err);
    free(file);
    return st;
}

clg_status clg_checkpoint_load(clg_model *model, const char *path, clg_meta_fn meta, void *user)
{
    if (!model)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "clg_checkpoint_load: model is NULL");
    clg_context *ctx = model->ctx;
    if (!path || !*path)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "clg_checkpoint_load: path is %s",
                         path ? "empty" : "NULL");
    if (!model->finalized)
        return clg__fail(ctx, CLG_ERR_STATE,
                         "clg_checkpoint_load: the model is not finalized (call "
                         "clg_model_finalize first)");

    char err[512];
    clg_ckpt_layout layout;
    clg_status st = clg__ckpt_layout_model(model, &layout, err, sizeof err);
    if (st != CLG_SUCCESS)
        return clg__fail(ctx, st, "clg_checkpoint_load: '%s': %s", path, err);
    uint8_t *file = NULL;
    size_t size = 0;
    clg_ckpt_parsed parsed;
    memset(&parsed, 0, sizeof parsed);
    st = read_file(ctx, path, &file, &size);
    if (st == CLG_SUCCESS) {
        st = clg__ckpt_parse(file, size, &layout, &parsed, err, sizeof err);
        if (st != CLG_SUCCESS)
            clg__fail(ctx, st, "clg_checkpoint_load: '%s': %s", path, err);
    }
    if (st == CLG_SUCCESS)
        st = check_cycle_fits(model, path, &parsed.state);
    if (st == CLG_SUCCESS)
        st = check_attached_parts(model, path, &layout, parsed.data);
    /* all checks passed: only now does anything change */
    if (st == CLG_SUCCESS)
        st = apply_or_undo(model, path, &layout, &parsed);
    if (st == CLG_SUCCESS && meta)
        for (size_t i = 0; i < parsed.n_meta; i++)
            meta(parsed.meta_keys[i], parsed.meta_values[i], user);
    clg__ckpt_parsed_free(&parsed);
    clg__ckpt_layout_free(&layout);
    free(file);
    return st;
}

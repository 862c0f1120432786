/* checkpoint.c - the checkpoint writer, clg_checkpoint_save: snapshot the
 * model into host memory (checkpoint_transfer.c), build the safetensors
 * header (checkpoint_format.h), and write it durably: a temporary file in
 * the same directory, fsync, rename over the target, fsync of the
 * directory. A crash at any point leaves the old or the new
 * file, never a broken one. Every write, fsync and the rename pass through
 * clg__fault_hit(CLG_FAULT_WRITE), so tests can fail or kill at each.
 *
 * A process killed during a save leaves its temporary file behind
 * ("<path>.tmp.<pid>.<n>"); the next save to the same path removes those
 * of processes that no longer exist (remove_stale_temps).
 *
 * Only a regular file at the path is replaced (write_target.h): a FIFO, a
 * device, a socket or a directory there, or a symbolic link to one, is
 * refused before anything is written. A symbolic link to a regular file
 * (or to nothing) is replaced by the new file; its target is left as it
 * was. */
#include "checkpoint.h"
#include "write_target.h"

#include <cjson/cJSON.h>
#include <limits.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

/* Writes at most this much per write(2): bounds the time of one call and
 * gives the crash test more points to kill at. */
#define CKPT_WRITE_CHUNK ((size_t)1 << 20)

/* ------------------------------------------------------------ header */

static int cmp_str_ptr(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The caller's metadata: non-NULL UTF-8 strings, keys unique, non-empty
 * and outside clgrad's "clgrad." namespace. */
static clg_status check_meta(const char *const *keys, const char *const *values, size_t n,
                             char *err, size_t errlen)
{
    if (n == 0)
        return CLG_SUCCESS;
    if (!keys || !values) {
        snprintf(err, errlen, "n_meta is %zu but meta_keys or meta_values is NULL", n);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    for (size_t i = 0; i < n; i++) {
        if (!keys[i] || !values[i] || !keys[i][0]) {
            snprintf(err, errlen, "metadata entry %zu has a NULL or empty key or a NULL value", i);
            return CLG_ERR_INVALID_ARGUMENT;
        }
        if (strncmp(keys[i], CLG_CKPT_META_PREFIX, strlen(CLG_CKPT_META_PREFIX)) == 0) {
            snprintf(err, errlen,
                     "metadata key '%.200s' is reserved (keys starting with "
                     "\"" CLG_CKPT_META_PREFIX "\" are clgrad's)",
                     keys[i]);
            return CLG_ERR_INVALID_ARGUMENT;
        }
        if (!clg__ckpt_utf8_valid(keys[i]) || !clg__ckpt_utf8_valid(values[i])) {
            snprintf(err, errlen, "metadata entry %zu is not valid UTF-8", i);
            return CLG_ERR_INVALID_ARGUMENT;
        }
    }
    const char **sorted = malloc(n * sizeof *sorted);
    if (!sorted) {
        snprintf(err, errlen, "out of host memory");
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    memcpy(sorted, keys, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_str_ptr);
    clg_status st = CLG_SUCCESS;
    for (size_t i = 1; i < n; i++) {
        if (strcmp(sorted[i - 1], sorted[i]) == 0) {
            snprintf(err, errlen, "metadata key '%.200s' is given twice", sorted[i]);
            st = CLG_ERR_INVALID_ARGUMENT;
            break;
        }
    }
    free(sorted);
    return st;
}

/* Adds a string; false when cJSON ran out of memory. */
static bool add_str(cJSON *obj, const char *key, const char *value)
{
    return cJSON_AddStringToObject(obj, key, value) != NULL;
}

/* Integers go in as raw text: cJSON prints large doubles as 1e+15. */
static cJSON *raw_u64(uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof buf, "%" PRIu64, v);
    return cJSON_CreateRaw(buf);
}

/* clgrad's own metadata, the header CRC field first: cJSON prints members
 * in insertion order, so the header begins with CLG_CKPT_HEADER_PREFIX. Its
 * digits are filled in once the header's bytes are final (pad_and_sign). */
static bool add_clgrad_meta(cJSON *meta, const clg_ckpt_layout *layout,
                            const clg_cycle_state *state)
{
    char buf[64];
    uint32_t wbits;
    memcpy(&wbits, &state->weight_sum, sizeof wbits);
    bool ok = add_str(meta, CLG_CKPT_KEY_HEADER_CRC, "0x00000000");
    ok = ok && add_str(meta, CLG_CKPT_KEY_FORMAT, CLG_CKPT_FORMAT);
    snprintf(buf, sizeof buf, "%d", CLG_CKPT_VERSION);
    ok = ok && add_str(meta, CLG_CKPT_KEY_VERSION, buf);
    ok = ok && add_str(meta, CLG_CKPT_KEY_OPTIMIZER, layout->optimizer);
    for (size_t i = 0; ok && i < layout->n_config; i++) {
        snprintf(buf, sizeof buf, CLG_CKPT_META_PREFIX "%s", layout->config[i].field);
        ok = add_str(meta, buf, layout->config[i].value);
    }
    snprintf(buf, sizeof buf, "%u", state->micro);
    ok = ok && add_str(meta, CLG_CKPT_KEY_MICRO, buf);
    snprintf(buf, sizeof buf, "0x%08" PRIx32, wbits); /* exact float bits */
    ok = ok && add_str(meta, CLG_CKPT_KEY_WEIGHT_SUM, buf);
    snprintf(buf, sizeof buf, "%" PRIu64, state->cycles);
    ok = ok && add_str(meta, CLG_CKPT_KEY_CYCLES, buf);
    snprintf(buf, sizeof buf, "%" PRIu64, state->micro_total);
    ok = ok && add_str(meta, CLG_CKPT_KEY_MICRO_TOTAL, buf);
    /* the step block's counters again, readable and cross-checked */
    snprintf(buf, sizeof buf, "%" PRIu32, state->step_block[CLG_SB_T]);
    ok = ok && add_str(meta, CLG_CKPT_KEY_UPDATES, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, state->step_block[CLG_SB_SKIPPED]);
    ok = ok && add_str(meta, CLG_CKPT_KEY_SKIPPED, buf);
    snprintf(buf, sizeof buf, "%" PRIu32, state->step_block[CLG_SB_SKIPPED_MICRO]);
    ok = ok && add_str(meta, CLG_CKPT_KEY_SKIPPED_MICRO, buf);
    return ok;
}

/* "clgrad.crc32.<key>" for every entry, computing each entry's CRC. */
static bool add_entry_crcs(cJSON *meta, clg_ckpt_layout *layout, const uint8_t *data)
{
    bool ok = true;
    for (size_t i = 0; ok && i < layout->n; i++) {
        clg_ckpt_entry *e = &layout->entries[i];
        e->crc = clg__crc32(0, data + e->begin, (size_t)(e->end - e->begin));
        size_t klen = strlen(e->key) + 16;
        char *key = malloc(klen);
        ok = key != NULL;
        if (ok) {
            char crc[16];
            snprintf(key, klen, CLG_CKPT_CRC_PREFIX "%s", e->key);
            snprintf(crc, sizeof crc, "%08" PRIx32, e->crc);
            ok = add_str(meta, key, crc);
            free(key);
        }
    }
    return ok;
}

/* One {"dtype", "shape", "data_offsets"} object per entry, in layout order. */
static bool add_entries(cJSON *root, const clg_ckpt_layout *layout)
{
    bool ok = true;
    for (size_t i = 0; ok && i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        cJSON *entry = cJSON_AddObjectToObject(root, e->key);
        cJSON *shape = NULL, *offs = NULL;
        ok = entry && add_str(entry, "dtype", clg__ckpt_dtype_name(e->dtype)) &&
             (shape = cJSON_AddArrayToObject(entry, "shape")) != NULL;
        for (size_t d = 0; ok && d < e->ndim; d++)
            ok = cJSON_AddItemToArray(shape, raw_u64(e->dims[d]));
        ok = ok && (offs = cJSON_AddArrayToObject(entry, "data_offsets")) != NULL &&
             cJSON_AddItemToArray(offs, raw_u64(e->begin)) &&
             cJSON_AddItemToArray(offs, raw_u64(e->end));
    }
    return ok;
}

/* Pads the printed header text (malloc'ed, taken over) with spaces so that
 * the data starts at a multiple of 8, and fills in its CRC field, which
 * covers the length bytes the file will start with. */
static clg_status pad_and_sign(char *text, char **header, size_t *header_len, char *err,
                               size_t errlen)
{
    size_t len = strlen(text);
    size_t padded = (len + 7) / 8 * 8;
    char *out = realloc(text, padded + 1);
    if (!out) {
        free(text);
        snprintf(err, errlen, "out of host memory building the header");
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    memset(out + len, ' ', padded - len);
    out[padded] = '\0';
    if (padded > CLG_CKPT_HEADER_MAX) {
        free(out);
        snprintf(err, errlen, "header of %zu bytes exceeds the %llu-byte limit readers enforce",
                 padded, (unsigned long long)CLG_CKPT_HEADER_MAX);
        return CLG_ERR_INVALID_ARGUMENT;
    }
    if (!clg__ckpt_has_crc_field((const uint8_t *)out, padded)) {
        free(out);
        snprintf(err, errlen, "internal error: the header does not begin with its CRC field");
        return CLG_ERR_STATE;
    }
    uint8_t len_bytes[8];
    clg__ckpt_put_le64(len_bytes, padded);
    clg__ckpt_header_sign(len_bytes, (uint8_t *)out, padded);
    *header = out;
    *header_len = padded;
    return CLG_SUCCESS;
}

clg_status clg__ckpt_header(clg_ckpt_layout *layout, const uint8_t *data,
                            const clg_cycle_state *state, const char *const *meta_keys,
                            const char *const *meta_values, size_t n_meta, char **header,
                            size_t *header_len, char *err, size_t errlen)
{
    *header = NULL;
    *header_len = 0;
    clg_status st = check_meta(meta_keys, meta_values, n_meta, err, errlen);
    if (st != CLG_SUCCESS)
        return st;
    cJSON *root = cJSON_CreateObject();
    cJSON *meta = root ? cJSON_AddObjectToObject(root, "__metadata__") : NULL;
    bool ok = meta && add_clgrad_meta(meta, layout, state) && add_entry_crcs(meta, layout, data);
    for (size_t i = 0; ok && i < n_meta; i++)
        ok = add_str(meta, meta_keys[i], meta_values[i]);
    ok = ok && add_entries(root, layout);
    char *text = ok ? cJSON_PrintUnformatted(root) : NULL;
    cJSON_Delete(root);
    if (!text) {
        snprintf(err, errlen, "out of host memory building the header");
        return CLG_ERR_OUT_OF_HOST_MEMORY;
    }
    return pad_and_sign(text, header, header_len, err, errlen);
}

/* ------------------------------------------------------------ durable write */

/* One write(2) (or fsync, or rename) of the save: the fault hook may make
 * it fail like a full disk would, or kill the process right here. */
static _Thread_local int fault_injected; /* for the message only */

static int faulted(void)
{
    if (clg__fault_hit(CLG_FAULT_WRITE)) {
        fault_injected = 1;
        errno = EIO;
        return 1;
    }
    return 0;
}

static int write_all(int fd, const void *buf, size_t n)
{
    const uint8_t *p = buf;
    while (n > 0) {
        size_t part = n < CKPT_WRITE_CHUNK ? n : CKPT_WRITE_CHUNK;
        if (faulted())
            return -1;
        ssize_t w = write(fd, p, part);
        if (w < 0 && errno == EINTR)
            continue;
        if (w < 0)
            return -1;
        if (w == 0) {
            errno = ENOSPC;
            return -1;
        }
        p += w;
        n -= (size_t)w;
    }
    return 0;
}

static atomic_uint temp_counter;

/* The temporary file of a save: "<path>.tmp.<pid>.<n>", pid and n in
 * decimal as write_durably prints them. */
static void temp_name(char *out, size_t len, const char *path, long pid, unsigned n)
{
    snprintf(out, len, "%s.tmp.%ld.%u", path, pid, n);
}

/* A decimal number as printf's %ld / %u writes it: digits only, no sign,
 * no leading zero (but "0"), at most 19 digits. Advances *s past it. */
static bool take_decimal(const char **s, uint64_t *out)
{
    const char *p = *s;
    if (*p < '0' || *p > '9' || (p[0] == '0' && p[1] >= '0' && p[1] <= '9'))
        return false;
    uint64_t v = 0;
    int n = 0;
    for (; *p >= '0' && *p <= '9'; p++, n++) {
        if (n == 19)
            return false;
        v = v * 10 + (uint64_t)(*p - '0');
    }
    *s = p;
    *out = v;
    return true;
}

/* If name (a directory entry) is exactly "<base>.tmp.<pid>.<n>", the name
 * temp_name gives a save of <dir>/<base>, sets *pid. */
static bool is_temp_of(const char *name, const char *base, pid_t *pid)
{
    size_t bl = strlen(base);
    if (strncmp(name, base, bl) != 0 || strncmp(name + bl, ".tmp.", 5) != 0)
        return false;
    const char *p = name + bl + 5;
    uint64_t v, n;
    if (!take_decimal(&p, &v) || *p++ != '.' || !take_decimal(&p, &n) || *p != '\0')
        return false;
    if (v == 0 || v > (uint64_t)INT32_MAX || n > UINT32_MAX)
        return false;
    *pid = (pid_t)v;
    return true;
}

/* Removes the temporary files that saves to <dir>/<base> of processes that
 * no longer exist left behind (a run killed during a save), before this
 * save adds its own. Only names temp_name gives for this very target are
 * touched, only regular files, never this process's own (another thread
 * may be saving), never one whose process exists or whose existence cannot
 * be told (kill(pid, 0) failing with EPERM: another user's live process).
 * A pid of another PID namespace sharing the directory cannot be told from
 * a dead one: its save would then fail at its rename with a message, and
 * no complete checkpoint is ever lost. Best effort: a failure here does not
 * fail the save. */
static void remove_stale_temps(const char *dir, const char *base)
{
    DIR *d = opendir(dir);
    if (!d)
        return;
    int dfd = dirfd(d);
    pid_t self = getpid();
    struct dirent *e;
    while ((e = readdir(d)) != NULL) {
        pid_t pid;
        if (!is_temp_of(e->d_name, base, &pid) || pid == self)
            continue;
        if (kill(pid, 0) == 0 || errno != ESRCH)
            continue;
        struct stat st;
        if (fstatat(dfd, e->d_name, &st, AT_SYMLINK_NOFOLLOW) != 0 || !S_ISREG(st.st_mode))
            continue;
        unlinkat(dfd, e->d_name, 0);
    }
    closedir(d);
}

/* Makes dir (a copy of path) the directory part of path ("." when there
 * is none), and returns the name within it. */
static const char *split_dir(char *dir, const char *path)
{
    char *slash = strrchr(dir, '/');
    const char *base = slash ? path + (slash - dir) + 1 : path;
    if (!slash)
        strcpy(dir, ".");
    else if (slash == dir)
        dir[1] = '\0';
    else
        *slash = '\0';
    return base;
}

/* Creates a fresh temporary file for a save to path, its name in tmp;
 * the descriptor, or -1 with errno set. O_EXCL: a name that exists, even
 * as a symbolic link (dangling or not), is never opened but skipped for
 * the next (POSIX); O_NOFOLLOW states it outright. */
static int create_temp(const char *path, char *tmp, size_t tlen)
{
    int fd = -1;
    for (int attempt = 0; attempt < 100 && fd < 0; attempt++) {
        temp_name(tmp, tlen, path, (long)getpid(), atomic_fetch_add(&temp_counter, 1));
        fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, 0666);
        if (fd < 0 && errno != EEXIST)
            break;
    }
    return fd;
}

/* Writes the whole file (length, header, entries in layout order) to fd,
 * fsyncs and closes it. NULL on success, else the step that failed
 * ("write", "fsync", "close") with its errno in *saved. */
static const char *write_temp(int fd, const char *header, size_t header_len,
                              const clg_ckpt_layout *layout, const uint8_t *data, int *saved)
{
    uint8_t prefix[8];
    clg__ckpt_put_le64(prefix, header_len);
    const char *step = "write";
    int failed = write_all(fd, prefix, sizeof prefix) || write_all(fd, header, header_len);
    for (size_t i = 0; !failed && i < layout->n; i++) {
        const clg_ckpt_entry *e = &layout->entries[i];
        failed = write_all(fd, data + e->begin, (size_t)(e->end - e->begin));
    }
    if (!failed) {
        step = "fsync";
        failed = faulted() || fsync(fd) != 0;
    }
    *saved = errno;
    if (close(fd) != 0 && !failed) {
        step = "close";
        failed = 1;
        *saved = errno;
    }
    return failed ? step : NULL;
}

/* Renames the complete temporary file over path, then makes the rename
 * durable: it is only once the directory entry is. */
static clg_status publish(clg_context *ctx, const char *what, const char *tmp, const char *path,
                          const char *dir)
{
    if (faulted() || rename(tmp, path) != 0) {
        int saved = errno;
        unlink(tmp);
        return clg__fail(ctx, CLG_ERR_IO, "%s: renaming '%s' to '%s' failed: %s%s", what, tmp, path,
                         strerror(saved), fault_injected ? " (injected fault)" : "");
    }
    clg_status st = CLG_SUCCESS;
    int dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0 || faulted() || fsync(dfd) != 0) {
        int saved = errno;
        st = clg__fail(ctx, CLG_ERR_IO,
                       "%s: '%s' was written, but fsync of its directory '%s' failed: %s%s", what,
                       path, dir, strerror(saved), fault_injected ? " (injected fault)" : "");
    }
    if (dfd >= 0)
        close(dfd);
    return st;
}

/* Writes header and data to a fresh temporary file next to path, makes it
 * durable and renames it over path. On failure the temp file is removed
 * and path is untouched. */
static clg_status write_durably(clg_context *ctx, const char *path, const char *header,
                                size_t header_len, const clg_ckpt_layout *layout,
                                const uint8_t *data)
{
    const char *what = "clg_checkpoint_save";
    fault_injected = 0;
    size_t tlen = strlen(path) + 64;
    char *tmp = malloc(tlen);
    char *dir = strdup(path);
    if (!tmp || !dir) {
        free(tmp);
        free(dir);
        return clg__fail(ctx, CLG_ERR_OUT_OF_HOST_MEMORY, "%s: out of host memory", what);
    }
    const char *base = split_dir(dir, path);
    if (*base)
        remove_stale_temps(dir, base);

    clg_status st;
    int saved;
    const char *failed_step = NULL;
    int fd = create_temp(path, tmp, tlen);
    if (fd < 0)
        st = clg__fail(ctx, CLG_ERR_IO, "%s: cannot create temporary file '%s': %s", what, tmp,
                       strerror(errno));
    else if ((failed_step = write_temp(fd, header, header_len, layout, data, &saved)) != NULL) {
        unlink(tmp);
        st =
            clg__fail(ctx, CLG_ERR_IO, "%s: %s of temporary file '%s' failed: %s%s", what,
                      failed_step, tmp, strerror(saved), fault_injected ? " (injected fault)" : "");
    } else
        st = publish(ctx, what, tmp, path, dir);
    free(tmp);
    free(dir);
    return st;
}

/* ------------------------------------------------------------ save */

/* images: the gathered states of a sharded model (NULL: from the device). */
static clg_status save(clg_model *model, const char *path, const char *const *meta_keys,
                       const char *const *meta_values, size_t n_meta, const void *const *images,
                       const char *who)
{
    clg_context *ctx = model->ctx;
    if (!path || !*path)
        return clg__fail(ctx, CLG_ERR_INVALID_ARGUMENT, "%s: path is %s", who,
                         path ? "empty" : "NULL");
    if (!model->finalized)
        return clg__fail(ctx, CLG_ERR_STATE,
                         "%s: the model is not finalized (call clg_model_finalize first)", who);
    /* After a step failed half-way the device holds part of a step the
     * counters don't reflect: a checkpoint of that would load as a valid,
     * silently wrong state. */
    if (model->failed != CLG_SUCCESS)
        return clg__fail(ctx, CLG_ERR_STATE,
                         "%s: an earlier step failed half-way (%s); the model state is "
                         "inconsistent and is not saved (load a checkpoint to continue)",
                         who, clg_status_string(model->failed));
    /* A collected cycle is half done: its accumulator holds the whole cycle
     * but no update ran, a state no checkpoint format describes. */
    if (model->pending)
        return clg__fail(ctx, CLG_ERR_STATE,
                         "%s: a collected cycle is pending (clg_step_collect); call "
                         "clg_finish_cycle or clg_reset_cycle first",
                         who);
    char err[512];
    clg_status st = check_meta(meta_keys, meta_values, n_meta, err, sizeof err);
    if (st != CLG_SUCCESS)
        return clg__fail(ctx, st, "%s: %s", who, err);
    /* before any work: the rename would replace a FIFO or a device */
    char why[PATH_MAX + 128];
    if (!clg__target_replaceable(path, why, sizeof why))
        return clg__fail(ctx, CLG_ERR_IO, "%s: %s", who, why);

    clg_ckpt_layout layout;
    st = clg__ckpt_layout_model(model, &layout, err, sizeof err);
    if (st != CLG_SUCCESS)
        return clg__fail(ctx, st, "%s: '%s': %s", who, path, err);
    uint8_t *data = NULL;
    char *header = NULL;
    size_t header_len = 0;
    clg_cycle_state state;
    st = clg__ckpt_collect(model, &layout, images, &data, &state);
    if (st == CLG_SUCCESS) {
        st = clg__ckpt_header(&layout, data, &state, meta_keys, meta_values, n_meta, &header,
                              &header_len, err, sizeof err);
        if (st != CLG_SUCCESS)
            clg__fail(ctx, st, "%s: '%s': %s", who, path, err);
    }
    if (st == CLG_SUCCESS)
        st = write_durably(ctx, path, header, header_len, &layout, data);
    free(header);
    free(data);
    clg__ckpt_layout_free(&layout);
    return st;
}

clg_status clg_checkpoint_save(clg_model *model, const char *path, const char *const *meta_keys,
                               const char *const *meta_values, size_t n_meta)
{
    const char *who = "clg_checkpoint_save";
    if (!model)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: model is NULL", who);
    clg_status st = clg__shard_refuse(model, who);
    return st == CLG_SUCCESS ? save(model, path, meta_keys, meta_values, n_meta, NULL, who) : st;
}

clg_status clg_checkpoint_save_gathered(clg_model *model, const char *path,
                                        const char *const *meta_keys,
                                        const char *const *meta_values, size_t n_meta,
                                        const void *const *states, size_t n_states)
{
    const char *who = "clg_checkpoint_save_gathered";
    if (!model)
        return clg__fail(NULL, CLG_ERR_INVALID_ARGUMENT, "%s: model is NULL", who);
    if (model->finalized && n_states != model->n_states)
        return clg__fail(model->ctx, CLG_ERR_INVALID_ARGUMENT,
                         "%s: %zu state images given, the optimizer has %zu states", who, n_states,
                         model->n_states);
    for (size_t s = 0; s < n_states; s++)
        if (states == NULL || states[s] == NULL)
            return clg__fail(model->ctx, CLG_ERR_INVALID_ARGUMENT, "%s: state image %zu is NULL",
                             who, s);
    static const void *const none[1] = {NULL};
    return save(model, path, meta_keys, meta_values, n_meta, n_states ? states : none, who);
}

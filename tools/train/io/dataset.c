/* dataset.c - loading and validation of image/label pairs (see dataset.h). */
#include "dataset.h"
#include "errmsg.h"
#include "input_file.h"

#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int check_labels(const uint8_t *labels, size_t count, const char *name, char *err,
                        size_t errlen)
{
    for (size_t i = 0; i < count; i++) {
        if (labels[i] >= DATASET_CLASSES) {
            errmsg_set(err, errlen, "%s: label %u of item %zu is out of range (expected 0..%d)", name,
                    labels[i], i, DATASET_CLASSES - 1);
            return -1;
        }
    }
    return 0;
}

int dataset_from_idx(idx_file *images, idx_file *labels, const char *image_name,
                     const char *label_name, size_t rows, size_t cols, dataset *out, char *err,
                     size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (images->ndims != 3) {
        errmsg_set(err, errlen, "%s: expected images (3 dimensions: count, rows, columns), got %d "
                "dimension(s)", image_name, images->ndims);
        return -1;
    }
    if (images->dims[1] != rows || images->dims[2] != cols) {
        errmsg_set(err, errlen, "%s: expected images of %zu x %zu pixels (the model's input), the "
                "header declares %u x %u", image_name, rows, cols, images->dims[1],
                images->dims[2]);
        return -1;
    }
    if (labels->ndims != 1) {
        errmsg_set(err, errlen, "%s: expected labels (1 dimension), got %d dimensions", label_name,
                labels->ndims);
        return -1;
    }
    if (images->count != labels->count) {
        errmsg_set(err, errlen, "label/image count mismatch: %s holds %zu images, %s holds %zu labels",
                image_name, images->count, label_name, labels->count);
        return -1;
    }
    if (images->count == 0) {
        errmsg_set(err, errlen, "%s: no samples", image_name);
        return -1;
    }
    if (check_labels(labels->data, labels->count, label_name, err, errlen) != 0)
        return -1;
    out->count = images->count;
    out->dim = images->item_size;
    out->images = images->data;
    out->labels = labels->data;
    out->image_file = *images;
    out->label_file = *labels;
    memset(images, 0, sizeof *images);
    memset(labels, 0, sizeof *labels);
    return 0;
}

/* dir/name.gz if it exists, else dir/name (if that does not exist either,
 * the .gz name: the one a message should name). */
static void pick_path(char *path, size_t len, const char *dir, const char *name)
{
    snprintf(path, len, "%s/%s.gz", dir, name);
    if (access(path, F_OK) == 0)
        return;
    char plain[4096];
    snprintf(plain, sizeof plain, "%s/%s", dir, name);
    if (access(plain, F_OK) == 0)
        snprintf(path, len, "%s", plain);
}

void dataset_paths(const char *dir, const char *prefix, char *image_path, char *label_path,
                   size_t len)
{
    char image_name[64], label_name[64];
    snprintf(image_name, sizeof image_name, "%s-images-idx3-ubyte", prefix);
    snprintf(label_name, sizeof label_name, "%s-labels-idx1-ubyte", prefix);
    pick_path(image_path, len, dir, image_name);
    pick_path(label_path, len, dir, label_name);
}

int dataset_files(const char *dir, path_list *files, char *err, size_t errlen)
{
    static const char *const prefixes[] = {"train", "t10k"};
    struct stat sd;
    if (stat(dir, &sd) == 0 && !S_ISDIR(sd.st_mode))
        return errmsg_set(err, errlen, "--data: %s is %s, not a directory", dir,
                          input_kind(sd.st_mode));
    for (int i = 0; i < 2; i++) {
        char pair[2][4096];
        dataset_paths(dir, prefixes[i], pair[0], pair[1], sizeof pair[0]);
        for (int j = 0; j < 2; j++) {
            struct stat sb;
            uint64_t bytes = stat(pair[j], &sb) == 0 ? (uint64_t)sb.st_size : 0;
            if (path_list_add(files, pair[j], bytes) != 0)
                return errmsg_set(err, errlen, "--data: %s: out of host memory", dir);
        }
    }
    return 0;
}

int dataset_load(const char *dir, const char *prefix, dataset *out, char *err, size_t errlen)
{
    return dataset_load_shape(dir, prefix, DATASET_ROWS, DATASET_COLS, out, err, errlen);
}

int dataset_load_shape(const char *dir, const char *prefix, size_t rows, size_t cols,
                       dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    char image_path[4096], label_path[4096];
    dataset_paths(dir, prefix, image_path, label_path, sizeof image_path);

    idx_file images, labels;
    if (idx_load(image_path, &images, err, errlen) != 0)
        return -1;
    if (idx_load(label_path, &labels, err, errlen) != 0) {
        idx_free(&images);
        return -1;
    }
    if (dataset_from_idx(&images, &labels, image_path, label_path, rows, cols, out, err,
                         errlen) != 0) {
        idx_free(&images);
        idx_free(&labels);
        return -1;
    }
    return 0;
}

int dataset_count(const char *dir, const char *prefix, size_t *count, char *err, size_t errlen)
{
    char image_path[4096], label_path[4096];
    dataset_paths(dir, prefix, image_path, label_path, sizeof image_path);
    idx_file labels;
    if (idx_load(label_path, &labels, err, errlen) != 0)
        return -1;
    *count = labels.count;
    idx_free(&labels);
    return 0;
}

int dataset_wrap(const uint8_t *images, const uint8_t *labels, size_t count, size_t dim,
                 dataset *out, char *err, size_t errlen)
{
    memset(out, 0, sizeof *out);
    if (!images || !labels || count == 0 || dim == 0) {
        errmsg_set(err, errlen, "empty data set");
        return -1;
    }
    if (check_labels(labels, count, "labels", err, errlen) != 0)
        return -1;
    out->count = count;
    out->dim = dim;
    out->images = images;
    out->labels = labels;
    return 0;
}

void dataset_free(dataset *d)
{
    if (!d)
        return;
    idx_free(&d->image_file);
    idx_free(&d->label_file);
    memset(d, 0, sizeof *d);
}

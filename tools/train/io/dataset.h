/* dataset.h - a labelled image set for clgrad-train (Fashion-MNIST layout:
 * one IDX file of images, one of labels), checked for consistency. */
#ifndef TRAIN_DATASET_H
#define TRAIN_DATASET_H

#include "idx.h"
#include "path_list.h"

#include <stddef.h>
#include <stdint.h>

#define DATASET_CLASSES 10
#define DATASET_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"
/* The image shape of Fashion-MNIST, the trainer's model input. */
#define DATASET_ROWS 28
#define DATASET_COLS 28

typedef struct dataset {
    size_t count;          /* samples */
    size_t dim;            /* bytes (pixels) per sample */
    const uint8_t *images; /* count * dim, row-major */
    const uint8_t *labels; /* count, each < DATASET_CLASSES */
    idx_file image_file, label_file; /* storage when loaded from files */
} dataset;

/* Checks a pair of parsed IDX files and fills *out (which then owns them;
 * free with dataset_free). The images must have 3 dimensions (count, rows,
 * columns) of rows x cols pixels each. names are used in messages. */
int dataset_from_idx(idx_file *images, idx_file *labels, const char *image_name,
                     const char *label_name, size_t rows, size_t cols, dataset *out, char *err,
                     size_t errlen);

/* The files dataset_load reads: "<prefix>-images-idx3-ubyte[.gz]" and
 * "<prefix>-labels-idx1-ubyte[.gz]" in dir. The .gz name is preferred; the
 * plain name is used when only it exists. */
void dataset_paths(const char *dir, const char *prefix, char *image_path, char *label_path,
                   size_t len);

/* The four files a run reads from dir, the "train" and "t10k" pairs of
 * dataset_paths, with their sizes (0: missing). 0, or -1 with a message
 * naming --data: dir is there but no directory (a FIFO would otherwise be
 * found out only when the run, set up, reads it), or out of host memory. */
int dataset_files(const char *dir, path_list *files, char *err, size_t errlen);

/* Loads the files of dataset_paths, prefix "train" or "t10k": images of
 * DATASET_ROWS x DATASET_COLS pixels, what the trainer's model takes (a
 * header that declares another shape, even of as many pixels, is an error). */
int dataset_load(const char *dir, const char *prefix, dataset *out, char *err, size_t errlen);
/* The same with images of rows x cols pixels. */
int dataset_load_shape(const char *dir, const char *prefix, size_t rows, size_t cols,
                       dataset *out, char *err, size_t errlen);

/* The sample count of the set dataset_load would load, from its labels
 * file alone (a byte per sample): what a plan needs before the images are
 * read. 0, or -1 with why. */
int dataset_count(const char *dir, const char *prefix, size_t *count, char *err, size_t errlen);

/* Wraps caller-owned arrays (tests); nothing is copied or freed. */
int dataset_wrap(const uint8_t *images, const uint8_t *labels, size_t count, size_t dim,
                 dataset *out, char *err, size_t errlen);

void dataset_free(dataset *d);

#endif /* TRAIN_DATASET_H */

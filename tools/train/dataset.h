/* dataset.h - a labelled image set for clgrad-train (Fashion-MNIST layout:
 * one IDX file of images, one of labels), checked for consistency. */
#ifndef TRAIN_DATASET_H
#define TRAIN_DATASET_H

#include "idx.h"

#include <stddef.h>
#include <stdint.h>

#define DATASET_CLASSES 10
#define DATASET_DEFAULT_DIR "/usr/share/datasets/fashion-mnist"

typedef struct dataset {
    size_t count;          /* samples */
    size_t dim;            /* bytes (pixels) per sample */
    const uint8_t *images; /* count * dim, row-major */
    const uint8_t *labels; /* count, each < DATASET_CLASSES */
    idx_file image_file, label_file; /* storage when loaded from files */
} dataset;

/* Checks a pair of parsed IDX files and fills *out (which then owns them;
 * free with dataset_free). names are used in messages. */
int dataset_from_idx(idx_file *images, idx_file *labels, const char *image_name,
                     const char *label_name, dataset *out, char *err, size_t errlen);

/* Loads "<prefix>-images-idx3-ubyte[.gz]" and "<prefix>-labels-idx1-ubyte[.gz]"
 * from dir, prefix "train" or "t10k". The .gz name is preferred; the plain
 * name is tried when it does not exist. */
int dataset_load(const char *dir, const char *prefix, dataset *out, char *err, size_t errlen);

/* Wraps caller-owned arrays (tests); nothing is copied or freed. */
int dataset_wrap(const uint8_t *images, const uint8_t *labels, size_t count, size_t dim,
                 dataset *out, char *err, size_t errlen);

void dataset_free(dataset *d);

#endif /* TRAIN_DATASET_H */

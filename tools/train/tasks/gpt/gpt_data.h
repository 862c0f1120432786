/* gpt_data.h - the GPT task's data: a text corpus read as bytes (a file,
 * or a directory's regular files joined in name order), split into the
 * training bytes and the last 10% for validation, cut into windows of
 * T + 1 bytes at stride T (the samples: T inputs, each with the next byte
 * as its target), and the unigram and bigram baselines of the validation
 * targets. The windows are a dataset (dataset.h: images = windows, labels
 * zeros) so that the core orders, positions, resumes and distributes them
 * as any other samples. */
#ifndef TRAIN_GPT_DATA_H
#define TRAIN_GPT_DATA_H

#include "dataset.h"
#include "path_list.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_corpus {
    uint8_t *bytes;
    size_t n;       /* all bytes */
    size_t n_train; /* the first n_train train, the rest validate (gpt_split) */
    unsigned files; /* files joined (1 for a file) */
} gpt_corpus;

/* The validation split's first byte: the last 10% (n / 10 bytes, rounded
 * down) validate. */
size_t gpt_split(size_t n);

/* The most bytes a corpus may have, all its files together: more is
 * refused before it is read (the corpus is held in host memory whole). */
#define GPT_CORPUS_MAX_BYTES ((uint64_t)1 << 31)

/* The files of the corpus at path, with their sizes, appended to files:
 * path itself, or a directory's regular files (symbolic links such as
 * fortunes' .u8 skipped, and strfile's ".dat" indexes) in strcmp order of
 * their names. Nothing is read: a corpus over GPT_CORPUS_MAX_BYTES is
 * refused here, and a run plans from these sizes before it reads. 0, or
 * -1 with a message naming --data and the path. */
int gpt_corpus_files(const char *path, path_list *files, char *err, size_t errlen);
/* Reads the files (of gpt_corpus_files on path) into c, joined in order,
 * each to the size it has when opened (a FIFO, a device or a file that
 * grows is refused). 0, or -1 with a message naming --data. */
int gpt_corpus_read(const path_list *files, const char *path, gpt_corpus *c, char *err,
                    size_t errlen);
/* gpt_corpus_files, then gpt_corpus_read. */
int gpt_corpus_load(const char *path, gpt_corpus *c, char *err, size_t errlen);
void gpt_corpus_free(gpt_corpus *c);

/* The windows of n bytes: window i is bytes[i T .. i T + T] (T + 1 bytes),
 * for i < (n - 1) / T. */
size_t gpt_window_count(size_t n, unsigned T);

/* The training and validation windows of a corpus of n bytes (gpt_split,
 * gpt_window_count): what a run plans from before it reads the corpus. */
void gpt_corpus_windows(uint64_t n, unsigned T, size_t windows[2]);
/* Whether a corpus of n bytes at path gives windows of T + 1 bytes to both
 * splits, as gpt_corpus_read and gpt_windows_make will require: 0, or -1
 * with their message (a plan of no window would divide by zero). */
int gpt_corpus_fits(const char *path, uint64_t n, unsigned T, char *err, size_t errlen);
/* The host memory the run holds for a corpus of n bytes: the bytes, and
 * the windows (T + 1 bytes each) with their labels. */
uint64_t gpt_corpus_host_bytes(uint64_t n, unsigned T);

typedef struct gpt_windows {
    uint8_t *images; /* count x dim: T + 1 tokens each (gpt_source.h's gpt_window_bytes) */
    uint8_t *labels; /* count zeros */
    dataset set;     /* wraps them (dataset_wrap) */
} gpt_windows;

/* The message of a split without a window: "WHERE: the WHAT split has N
 * UNIT, fewer than a window of --context T + 1" (-1, always). */
int gpt_windows_none(const char *where, const char *what, uint64_t n, const char *unit,
                     unsigned T, char *err, size_t errlen);
/* count (>= 1) windows of dim bytes into w, wrapped as a dataset, labels
 * zero and the images for the caller to write. 0, or -1 with a message
 * naming --data and the split (what); w is then empty. */
int gpt_windows_alloc(size_t count, size_t dim, const char *what, gpt_windows *w, char *err,
                      size_t errlen);

/* The windows of bytes[0 .. n) into w. 0, or -1 with a message (none, or
 * out of memory) naming which (what: "training", "validation"). */
int gpt_windows_make(const uint8_t *bytes, size_t n, unsigned T, const char *what, gpt_windows *w,
                     char *err, size_t errlen);
void gpt_windows_free(gpt_windows *w);

/* Cross-entropy in nats per byte of the targets of the first n windows of
 * w (T each: window byte t + 1 after bytes 0..t) under the byte models
 * estimated on train[0 .. n_train) with add-one smoothing over 256 bytes:
 * unigram p(b) = (c(b) + 1) / (n_train + 256), bigram p(b | a) =
 * (c(a b) + 1) / (c(a .) + 256), c(a .) the bigrams that start with a. */
typedef struct gpt_baselines {
    double unigram, bigram;
} gpt_baselines;
void gpt_baselines_compute(const uint8_t *train, size_t n_train, const dataset *w, size_t n,
                           gpt_baselines *out);

/* nats to bits */
double gpt_bits(double nats);

#endif /* TRAIN_GPT_DATA_H */

/* gpt_safetensors.h - a small reader and writer of the safetensors format
 * for gpt_hf.c (Hugging Face's model.safetensors): an 8-byte little-endian
 * header length N, N bytes of JSON (an object of "name": {"dtype",
 * "shape", "data_offsets": [begin, end]} and an optional "__metadata__"
 * object of strings), then the data, whose byte ranges (relative to the
 * end of the header) must cover it exactly, without gap or overlap, as the
 * format's own library requires. The reader checks all of that when it
 * opens a file and reads tensors row by row, so that no copy of a whole
 * file is ever held; F32, F16 and BF16 convert exactly to float. This is
 * not clgrad's checkpoint format (src/checkpoint_*.c), whose header holds
 * more and is checked against a model's layout. */
#ifndef TRAIN_GPT_SAFETENSORS_H
#define TRAIN_GPT_SAFETENSORS_H

#include "atomic_file.h"

#include <stddef.h>
#include <stdint.h>

#define ST_MAX_DIMS 8
/* The format's own bound on the header (safetensors' MAX_HEADER_SIZE). */
#define ST_MAX_HEADER 100000000u

typedef struct st_entry {
    char *name;
    char dtype[8];  /* as written: "F32", "BF16", "I64", ... */
    unsigned esize; /* bytes per element */
    unsigned ndim;
    uint64_t shape[ST_MAX_DIMS];
    uint64_t begin, end; /* bytes, from the start of the data */
} st_entry;

typedef struct st_file {
    int fd;
    char *path;
    uint64_t data_start, data_len;
    st_entry *e;
    size_t n;
} st_file;

/* Opens path and checks its header and the data's length against it.
 * 0, or -1 with a message naming the path (and the tensor, when one is at
 * fault); *f is then closed. */
int st_open(st_file *f, const char *path, char *err, size_t errlen);
void st_close(st_file *f);

/* The elements of e (the product of its shape; 1 for a scalar). */
uint64_t st_numel(const st_entry *e);

/* Elements first .. first + count of e (a float dtype) as floats into out.
 * 0, or -1 with a message naming the tensor (a dtype that is no float, a
 * read that failed or came short). */
int st_read_floats(const st_file *f, const st_entry *e, uint64_t first, uint64_t count, float *out,
                   char *err, size_t errlen);

/* What st_write_header describes: F32 tensors, stored in this order. */
typedef struct st_desc {
    const char *name;
    unsigned ndim;
    uint64_t shape[2];
} st_desc;

/* The 8-byte length and the JSON header of the n tensors of t (metadata
 * {"format": "pt"}, which transformers requires), padded with spaces to a
 * multiple of 8 bytes, into a; the caller then writes each tensor's floats
 * in order. 0, or -1 with a message. */
int st_write_header(atomic_file *a, const st_desc *t, size_t n, char *err, size_t errlen);

#endif /* TRAIN_GPT_SAFETENSORS_H */

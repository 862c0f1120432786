/* fuzz_idx.c - libFuzzer harness for the trainer's IDX parser
 * (tools/train/idx.c): any bytes either parse into a header whose payload
 * lies exactly inside the input, or are rejected with a message. */
#include "idx.h"

#include <stdlib.h>
#include <string.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    idx_file f;
    char err[256];
    err[0] = '\0';
    if (idx_parse(data, size, &f, err, sizeof err) != 0) {
        if (err[0] == '\0' || f.data || f.count || f.ndims)
            abort(); /* rejected, but without a reason or with leftovers */
        return 0;
    }
    if (f.ndims < 1 || f.ndims > IDX_MAX_DIMS || f.buffer || f.count != f.dims[0])
        abort();
    size_t item = 1;
    for (int d = 1; d < f.ndims; d++)
        item *= f.dims[d];
    if (item != f.item_size)
        abort();
    /* the payload must be inside the input: ASan reports any byte outside */
    if (f.count && f.item_size) {
        if (f.data < data || f.data > data + size)
            abort();
        size_t payload = f.count * f.item_size;
        if (payload / f.item_size != f.count || payload > size - (size_t)(f.data - data))
            abort();
        volatile uint8_t x = 0;
        x ^= f.data[0];
        x ^= f.data[payload - 1];
        (void)x;
    }
    return 0;
}

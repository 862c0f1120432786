/* fuzz_checkpoint.c - libFuzzer harness for the checkpoint parser: any
 * bytes, parsed against a fixed small layout (checkpoint_parse.c's
 * clg__ckpt_parse, no device). The parser must either accept the input
 * with every entry inside it, or reject it with one of its documented
 * statuses and a message; anything else (a crash, a sanitizer report, an
 * undocumented status) is a bug.
 *
 * The parser checks the header CRC before it reads any JSON, so almost
 * every mutated input would stop there. Each input is therefore parsed
 * twice: as it is (the CRC check and what precedes it), then, when its
 * header begins with the CRC field, with that CRC re-sealed
 * (clg__ckpt_header_seal), which takes the mutation on to the JSON parser,
 * the metadata, the configuration, the entries and the counters. */
#include "checkpoint.h"
#include "ckpt_testutil.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layout the seed corpus (fuzz/corpus/checkpoint, made by
 * fuzz/make_seeds.py) was written for: its configuration, tensors, dtypes
 * and shapes. */
static clg_ckpt_layout layout;

static void build_layout(void)
{
    char err[256];
    clg_config c = ckpt_fixture_config();
    clg__ckpt_layout_config(&layout, &c);
    const uint64_t w_shape[2] = {5, 1};
    if (clg__ckpt_layout_add(&layout, CLG_CKPT_STEP_BLOCK_KEY, CLG_CKPT_I32, 32,
                             CLG_CKPT_SRC_STEP_BLOCK, -1) ||
        clg__ckpt_layout_add(&layout, "w", CLG_CKPT_F32, 5, CLG_ARENA_PARAMS, 0) ||
        clg__ckpt_layout_shape(&layout, 2, w_shape) ||
        clg__ckpt_layout_add(&layout, "b", CLG_CKPT_F32, 3, CLG_ARENA_PARAMS, 1) ||
        clg__ckpt_layout_add(&layout, "empty", CLG_CKPT_F32, 0, CLG_ARENA_PARAMS, 2) ||
        clg__ckpt_layout_add(&layout, "w.state0", CLG_CKPT_F32, 5, CLG_ARENA_STATE0, 0) ||
        clg__ckpt_layout_shape(&layout, 2, w_shape) ||
        clg__ckpt_layout_add(&layout, "w.acc", CLG_CKPT_BF16, 5, CLG_ARENA_ACC, 0) ||
        clg__ckpt_layout_shape(&layout, 2, w_shape) ||
        clg__ckpt_layout_add(&layout, "b.acc", CLG_CKPT_BF16, 3, CLG_ARENA_ACC, 1) ||
        clg__ckpt_layout_finish(&layout, err, sizeof err))
        abort();
}

static void check(const uint8_t *data, size_t size)
{
    char err[512];
    err[0] = '\0';
    clg_ckpt_parsed parsed;
    clg_status st = clg__ckpt_parse(data, size, &layout, &parsed, err, sizeof err);
    if (st == CLG_SUCCESS) {
        /* Touch every accepted byte: ASan catches an entry outside the input. */
        volatile uint32_t sum = 0;
        for (size_t i = 0; i < layout.n; i++) {
            const clg_ckpt_entry *e = &layout.entries[i];
            if (e->file_end - e->file_begin != e->count * clg__ckpt_dtype_size(e->dtype))
                abort();
            for (uint64_t b = e->file_begin; b < e->file_end; b++)
                sum += parsed.data[b];
        }
        for (size_t i = 0; i < parsed.n_meta; i++)
            sum += (uint32_t)(strlen(parsed.meta_keys[i]) + strlen(parsed.meta_values[i]));
        (void)sum;
        clg__ckpt_parsed_free(&parsed);
        return;
    }
    if (st != CLG_ERR_CORRUPT_FILE && st != CLG_ERR_MISMATCH && st != CLG_ERR_OUT_OF_HOST_MEMORY)
        abort();
    if (err[0] == '\0' || parsed.json || parsed.n_meta || parsed.meta_keys)
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!layout.n)
        build_layout();
    check(data, size);
    /* the same bytes with a right header CRC: on to the JSON */
    uint8_t *copy = malloc(size ? size : 1);
    if (!copy)
        return 0;
    if (size)
        memcpy(copy, data, size);
    if (clg__ckpt_header_seal(copy, size))
        check(copy, size);
    free(copy);
    return 0;
}

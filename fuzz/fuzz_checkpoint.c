/* fuzz_checkpoint.c - libFuzzer harness for the checkpoint parser: any
 * bytes, parsed against a fixed small layout (checkpoint_parse.c's
 * clg__ckpt_parse, no device). The parser must either accept the input
 * with every entry inside it, or reject it with one of its documented
 * statuses and a message; anything else (a crash, a sanitizer report, an
 * undocumented status) is a bug. */
#include "checkpoint.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The layout the seed corpus (fuzz/corpus/checkpoint, made by
 * fuzz/make_seeds.py) was written for. */
static clg_ckpt_layout layout;

static void build_layout(void)
{
    char err[256];
    snprintf(layout.optimizer, sizeof layout.optimizer, "adamw");
    if (clg__ckpt_layout_add(&layout, CLG_CKPT_STEP_BLOCK_KEY, CLG_CKPT_U32, 32,
                             CLG_CKPT_SRC_STEP_BLOCK, -1) ||
        clg__ckpt_layout_add(&layout, "w", CLG_CKPT_F32, 5, CLG_ARENA_PARAMS, 0) ||
        clg__ckpt_layout_add(&layout, "b", CLG_CKPT_F32, 3, CLG_ARENA_PARAMS, 1) ||
        clg__ckpt_layout_add(&layout, "empty", CLG_CKPT_F32, 0, CLG_ARENA_PARAMS, 2) ||
        clg__ckpt_layout_add(&layout, "w.state0", CLG_CKPT_F32, 5, CLG_ARENA_STATE0, 0) ||
        clg__ckpt_layout_add(&layout, "w.acc", CLG_CKPT_BF16, 5, CLG_ARENA_ACC, 0) ||
        clg__ckpt_layout_add(&layout, "b.acc", CLG_CKPT_BF16, 3, CLG_ARENA_ACC, 1) ||
        clg__ckpt_layout_finish(&layout, err, sizeof err))
        abort();
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    if (!layout.n)
        build_layout();
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
        return 0;
    }
    if (st != CLG_ERR_CORRUPT_FILE && st != CLG_ERR_MISMATCH && st != CLG_ERR_OUT_OF_HOST_MEMORY)
        abort();
    if (err[0] == '\0' || parsed.json || parsed.n_meta || parsed.meta_keys)
        abort();
    return 0;
}

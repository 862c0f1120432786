/* gpt_options.h - the flags of clgrad-train's GPT task (--task gpt): the
 * model's shape (a preset, then --layers --heads --width --context), the
 * sampling after training, and the memory plan without a device (--plan
 * --memory); the core's defaults the task changes, and the combinations
 * it refuses. */
#ifndef TRAIN_GPT_OPTIONS_H
#define TRAIN_GPT_OPTIONS_H

#include "gpt_model.h"
#include "options.h"

#include <stddef.h>
#include <stdint.h>

/* The default corpus: Debian's fortunes package (scripts/install-deps.sh). */
#define GPT_DEFAULT_CORPUS "/usr/share/games/fortunes"

typedef enum gpt_preset {
    GPT_PRESET_SMALL = 0, /* the default: about two minutes on 2 CPU cores (PoCL) */
    GPT_PRESET_TINY = 1,  /* the tests' */
    GPT_PRESET_124M = 2,  /* GPT-2 small's shape with a 256-byte vocabulary */
} gpt_preset;

typedef struct gpt_options {
    gpt_preset preset;                      /* --preset (small) */
    unsigned layers, heads, width, context; /* 0: the preset's; gpt_options_check
                                               resolves them */
    uint64_t sample;                        /* --sample: bytes generated after training (0: none) */
    const char *prompt;                     /* --prompt (default "\n") */
    float temperature;                      /* --temperature (0.8; 0: the most likely byte) */
    int plan;                               /* --plan: print the memory plan and exit, no device */
    uint64_t memory;                        /* --memory: bytes the plan fits (0: --vram, or none) */
    int profile;                            /* --profile: the step time split (gpt_profile) */
    gpt_recompute recompute;                /* --recompute (norm) */
    /* Hugging Face GPT-2 in and out (gpt_hf.h) */
    const char *init_from;                  /* --init-from DIR: the initial weights */
    const char *export_hf;                  /* --export-hf DIR: the final weights */
    gpt_shape shape_flags;                  /* --layers .. --context, --vocab as given (0:
                                               not), set by gpt_options_check, which
                                               --init-from's config must agree with */
    /* token models (gpt_shards.h, gpt_decode.h) */
    unsigned vocab;            /* --vocab V; gpt_options_resolve sets it: the tokenizer's or
                                  --init-from's for token shards, 256 for text */
    const char *tokenizer;     /* --tokenizer FILE: the decode table (NULL: tokenizer.bin
                                  beside the shards, if there) */
    const char *val_data;      /* --val-data PATH: the validation shards */
    const char *prompt_tokens; /* --prompt-tokens IDS: a token model's prompt */
    int tokens;                /* resolved: --data is token shards */
    char tokenizer_path[4096]; /* resolved: the decode table's path ("" without one) */
} gpt_options;

void gpt_options_default(gpt_options *g);

/* The task's flags (flags.h): parsed, listed in --help and stored in
 * checkpoints ("train.gpt.<key>": the shape) from this table. */
extern const flag_table gpt_flag_table;

/* The core's defaults of a gpt run (task.h, core_defaults): --data, --batch,
 * --micro-batch, --lr, --warmup, --steps. */
void gpt_core_defaults(train_options *o);

/* The preset's shape with --layers .. --context applied into g, checked
 * (gpt_shape_check); --sample's and --memory's combinations. 0, or -1 with
 * a message naming the flag. */
int gpt_options_check(gpt_options *g, const train_options *o, char *err, size_t errlen);

/* The shape g resolved to (after gpt_options_check). */
gpt_shape gpt_options_shape(const gpt_options *g);

const char *gpt_preset_name(gpt_preset p);

#endif /* TRAIN_GPT_OPTIONS_H */

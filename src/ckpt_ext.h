/* ckpt_ext.h - tensors that a model's checkpoints carry for objects other
 * than the model (a clg_contrastive's memory banks: clg_contrastive_attach).
 * Each attached part is one checkpoint entry: the layout
 * (checkpoint_layout.c) adds it from the fields below alone, so that the
 * device-free parser and the fuzz harness need no code of the owner; the
 * save reads it, and the load checks all of them before it changes
 * anything, then writes them, through the owner's callbacks. */
#ifndef CLGRAD_CKPT_EXT_H
#define CLGRAD_CKPT_EXT_H

#include "internal.h"

#define CLG_CKPT_EXT_KEY_MAX 256

typedef struct clg_model clg_model;
typedef struct clg_ckpt_ext clg_ckpt_ext;

struct clg_ckpt_ext {
    clg_ckpt_ext *next;             /* the model's list (model->ckpt_ext) */
    char key[CLG_CKPT_EXT_KEY_MAX]; /* the entry's key */
    int dtype;                      /* a clg_ckpt_dtype (checkpoint_format.h) */
    uint64_t count;                 /* elements */
    size_t ndim;
    uint64_t dims[2];
    void *owner;
    int part; /* which of the owner's parts */
    /* Blocking copies of the entry's bytes (its dtype, count elements). */
    clg_status (*read)(void *owner, int part, void *host);
    clg_status (*write)(void *owner, int part, const void *host);
    /* Whether the bytes of a file can be loaded (NULL: any can); false
     * with the reason in why. Called before the load touches anything. */
    bool (*check)(const void *owner, int part, const void *host, char *why, size_t whylen);
    /* The model is being destroyed: the owner forgets it. */
    void (*detached)(void *owner);
};

/* Adds e at the end of m's list / removes it (if there). */
void clg__ckpt_ext_add(clg_model *m, clg_ckpt_ext *e);
void clg__ckpt_ext_remove(clg_model *m, clg_ckpt_ext *e);
/* The index-th part of m's list (the checkpoint entry's `tensor`), or NULL. */
clg_ckpt_ext *clg__ckpt_ext_at(const clg_model *m, int index);
/* Model teardown: empties the list, calling each owner's detached() once. */
void clg__ckpt_ext_detach_all(clg_model *m);

#endif /* CLGRAD_CKPT_EXT_H */

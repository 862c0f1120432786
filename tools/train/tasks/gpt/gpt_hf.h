/* gpt_hf.h - Hugging Face GPT-2 directories in and out: config.json and
 * model.safetensors as transformers' GPT2LMHeadModel.save_pretrained
 * writes them, read into the GPT task's parameters (gpt_model.h: one
 * float array in gpt_tensor order, linear weights [out x in]) and written
 * back from them.
 *
 * What is read: config.json's n_layer, n_head, n_embd, n_positions and
 * vocab_size; its other keys only to refuse another architecture
 * (model_type other than gpt2, activation_function other than the tanh
 * GELU, n_inner other than null or 4 n_embd, layer_norm_epsilon other
 * than the kernels' 1e-5, scale_attn_by_inverse_layer_idx,
 * reorder_and_upcast_attn or add_cross_attention true, scale_attn_weights
 * or tie_word_embeddings false). model.safetensors: every tensor of the
 * shape once, named with or without "transformer.", F32, or F16 or BF16
 * converted exactly to float; Conv1D weights ([in, out]) transposed. The
 * attention's buffers (h.<l>.attn.bias, h.<l>.attn.masked_bias) are
 * skipped; lm_head.weight is accepted only equal to wte, bit for bit (the
 * head is tied). A missing, extra, duplicated or misshapen tensor, a
 * damaged header or a truncated file is an error naming the file and the
 * tensor, and nothing is returned.
 *
 * The vocabulary is a parameter of its own (gpt_hf_config.vocab: wte's
 * rows, whatever shape.vocab holds), so that any vocab_size reads and
 * writes here; the trainer checks it against its data
 * (gpt_options_resolve). */
#ifndef TRAIN_GPT_HF_H
#define TRAIN_GPT_HF_H

#include "gpt_model.h"
#include "gpt_options.h"
#include "run.h"

#include <stddef.h>
#include <stdint.h>

typedef struct gpt_hf_config {
    gpt_shape shape; /* n_layer, n_head, n_embd, n_positions */
    unsigned vocab;  /* vocab_size: the rows of wte */
} gpt_hf_config;

/* Tensor i of the model in gpt_tensor order, with wte's rows the
 * vocabulary's. */
void gpt_hf_tensor(const gpt_hf_config *c, int i, gpt_tensor_info *out);
/* The floats of all of them. */
uint64_t gpt_hf_param_count(const gpt_hf_config *c);

/* dir/config.json into *out. 0, or -1 with a message naming the file and
 * the key (or the reason another architecture is refused). */
int gpt_hf_read_config(const char *dir, gpt_hf_config *out, char *err, size_t errlen);

/* dir's config into *cfg and, unless params is NULL, its weights into a
 * new array of gpt_hf_param_count(cfg) floats in gpt_tensor order (the
 * caller frees it). params NULL: the config and model.safetensors' header
 * checked (every name, dtype, shape and offset, the file's length), no
 * data read. 0, or -1 with a message; *params is then NULL. */
int gpt_hf_load(const char *dir, gpt_hf_config *cfg, float **params, char *err, size_t errlen);

/* Writes dir/model.safetensors (F32, GPT2LMHeadModel's keys:
 * "transformer." + the HF name, Conv1D weights [in, out], no lm_head.weight,
 * which transformers ties to wte) and dir/config.json (GPT2LMHeadModel's,
 * dropout 0 as clgrad trains), each all or nothing (atomic_file.h). dir
 * is created (with its parents, as mkdir -p) when it does not exist. 0, or -1
 * with a message naming the file. */
int gpt_hf_export(const char *dir, const gpt_hf_config *c, const float *params, char *err,
                  size_t errlen);

/* The trainer (--init-from DIR, --export-hf DIR; gpt_hf_run.c), each 0 or
 * -1 with a message naming the flag.
 * gpt_hf_apply_options, before any work: with --init-from, the shape from
 * DIR's config (and its safetensors header checked) into g, vocab_size
 * into g->vocab; a flag of --layers, --heads, --width, --context or
 * --vocab given (g->shape_flags) that disagrees is an error naming both
 * values (gpt_hf_load refused a vocabulary the model does not take; the
 * data's kind decides the rest: gpt_options_resolve).
 * gpt_hf_check_export, before any work: --export-hf's directory, or its
 * parent when it does not exist yet, can take the two files
 * (output_file.h), neither of which is a file of the corpus at data_path
 * (--data; NULL: the caller's own data).
 * gpt_hf_init_params: DIR's weights as the run's initial parameters (in
 * place of gpt_init_params; the model built with shape s).
 * gpt_hf_export_run: the run's parameters into DIR (gpt_hf_export). */
int gpt_hf_apply_options(gpt_options *g, char *err, size_t errlen);
int gpt_hf_check_export(const char *dir, const char *data_path, char *err, size_t errlen);
int gpt_hf_init_params(run_state *r, const char *dir, const gpt_shape *s);
int gpt_hf_export_run(run_state *r, const char *dir, const gpt_shape *s);

#endif /* TRAIN_GPT_HF_H */

/* gpt_model_testutil.h - what the programs that run the GPT task's model on
 * the device share (tests/gpt_grads.c, tests/gpt_hf_logits.c): clgrad's
 * model holding the GPT's tensors. */
#ifndef CLGRAD_TESTS_GPT_MODEL_TESTUTIL_H
#define CLGRAD_TESTS_GPT_MODEL_TESTUTIL_H

#include "gpt_model.h"

/* A finalized clgrad model on tu_ctx (AdamW, lr 1e-3, one micro-step a
 * cycle) with the tensors of gpt_tensor for s, in order, each with its
 * shape; a failure fails the test. */
clg_model *gmt_model(const gpt_shape *s);

#endif /* CLGRAD_TESTS_GPT_MODEL_TESTUTIL_H */

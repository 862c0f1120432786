/* oclgrind_gpt.h - the GPT kernels of oclgrind_kernels. */
#ifndef CLGRAD_OCLGRIND_GPT_H
#define CLGRAD_OCLGRIND_GPT_H

#include "clgrad.h"

/* Runs every kernel of gpt.cl and gpt_flash.cl; returns the number of
 * failed calls. */
int oclgrind_gpt(clg_context *ctx);

#endif /* CLGRAD_OCLGRIND_GPT_H */

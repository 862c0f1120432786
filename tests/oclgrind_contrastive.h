/* oclgrind_contrastive.h - the contrastive scenarios of oclgrind_kernels. */
#ifndef CLGRAD_OCLGRIND_CONTRASTIVE_H
#define CLGRAD_OCLGRIND_CONTRASTIVE_H

#include "clgrad.h"

/* Runs every kernel of cl/contrastive.cl; returns the number of failed calls. */
int oclgrind_contrastive(clg_context *ctx);

#endif /* CLGRAD_OCLGRIND_CONTRASTIVE_H */

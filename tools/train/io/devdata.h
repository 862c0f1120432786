/* devdata.h - a data set uploaded to the device (images and labels as
 * bytes, plus an index buffer giving the order samples are read in), its
 * bytes charged to clgrad's budget. */
#ifndef TRAIN_DEVDATA_H
#define TRAIN_DEVDATA_H

#include "clgrad.h"
#include "dataset.h"

typedef struct devdata {
    clg_context *ctx;
    cl_mem images, labels, idx;
    size_t n;
    uint64_t bytes; /* reserved */
} devdata;

/* Uploads the first n samples of d; idx starts as the identity. */
clg_status devdata_upload(clg_context *ctx, const dataset *d, size_t n, devdata *out);
/* Writes a new order (n indices), blocking. */
cl_int devdata_set_order(devdata *dd, const int32_t *idx);
void devdata_release(devdata *dd);
/* Bytes devdata_upload would take. */
uint64_t devdata_bytes(size_t n, size_t dim);

#endif /* TRAIN_DEVDATA_H */

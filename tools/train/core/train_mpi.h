/* train_mpi.h - clgrad-train's MPI side (train_mpi.c): fills in the
 * --dist hooks (dist_hooks.h) over a duplicate of MPI_COMM_WORLD. Only in
 * builds with libclgrad-mpi; MPI_Init comes first, MPI_Finalize after
 * train_mpi_close. */
#ifndef TRAIN_MPI_H
#define TRAIN_MPI_H

#include "dist_hooks.h"

int train_mpi_open(train_dist_hooks *d, char *err, size_t errlen);
void train_mpi_close(train_dist_hooks *d);

#endif /* TRAIN_MPI_H */

/* kernels.c - not yet written */

/* dist_none.c - --dist when clgrad-bench is built without libclgrad-mpi
 * (Open MPI not found at setup, or -Dmpi=disabled): refused, saying why,
 * rather than measuring something else. */
#include "bench_main.h"

#include <stdio.h>

int bench_dist_main(const bench_options *o)
{
    (void)o;
    fprintf(stderr, "clgrad-bench: --dist needs libclgrad-mpi, and this clgrad-bench was built "
                    "without it (Open MPI was not found at setup, or -Dmpi=disabled): install "
                    "libopenmpi-dev and openmpi-bin, reconfigure, and run it under mpirun -np R\n");
    return 2;
}

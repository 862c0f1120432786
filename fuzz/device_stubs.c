/* device_stubs.c - stand-ins for the model's device transfers, so that the
 * checkpoint harness links the checkpoint sources alone (instrumented, fast
 * to build) without the rest of the library. The parser never calls them. */
#include "model.h"

#include <stdlib.h>

clg_status clg__arena_read(clg_model *model, int arena_id, int tensor, void *host)
{
    (void)model, (void)arena_id, (void)tensor, (void)host;
    abort();
}

clg_status clg__arena_write(clg_model *model, int arena_id, int tensor, const void *host)
{
    (void)model, (void)arena_id, (void)tensor, (void)host;
    abort();
}

clg_status clg__cycle_state_get(clg_model *model, clg_cycle_state *state)
{
    (void)model, (void)state;
    abort();
}

clg_status clg__cycle_state_set(clg_model *model, const clg_cycle_state *state)
{
    (void)model, (void)state;
    abort();
}

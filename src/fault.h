/* fault.h - test-only extras of the fault injection hook (fault.c), beyond
 * clg__fault_arm / clg__fault_hit declared in internal.h. */
#ifndef CLGRAD_FAULT_H
#define CLGRAD_FAULT_H

#include "internal.h"

/* Like clg__fault_arm, but the n-th operation raises SIGKILL instead of
 * failing (simulated crash; tests only). */
void clg__fault_arm_kill(clg_fault_kind kind, uint64_t n);
/* Operations of a kind counted since it was last armed (or since start). */
uint64_t clg__fault_count(clg_fault_kind kind);
/* True once the armed operation has been reached and made to fail. */
bool clg__fault_fired(clg_fault_kind kind);

#endif /* CLGRAD_FAULT_H */

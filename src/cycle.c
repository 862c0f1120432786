/* cycle.c - not yet written */

/* fault.c - not yet written */

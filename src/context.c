/* context.c - not yet written */

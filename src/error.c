/* error.c - not yet written */

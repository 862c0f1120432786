/* program.c - not yet written */

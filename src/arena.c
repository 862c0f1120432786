/* arena.c - not yet written */

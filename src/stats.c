/* stats.c - not yet written */

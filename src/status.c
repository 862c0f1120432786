/* status.c - not yet written */

/* checkpoint_read.c - not yet written */

/* buffer.c - not yet written */

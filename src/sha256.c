/* sha256.c - not yet written */

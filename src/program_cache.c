/* program_cache.c - not yet written */

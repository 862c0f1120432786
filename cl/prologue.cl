/* prologue.cl - not yet written */

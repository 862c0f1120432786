/* accumulate.cl - not yet written */

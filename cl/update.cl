/* update.cl - not yet written */

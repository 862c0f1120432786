/* common.cl - not yet written */

/* stats.cl - not yet written */

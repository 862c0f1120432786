/* mlp.cl - not yet written */

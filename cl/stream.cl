/* stream.cl - not yet written */

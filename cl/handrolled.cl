/* handrolled.cl - not yet written */

/* crc32.c - not yet written */

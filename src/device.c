/* device.c - not yet written */

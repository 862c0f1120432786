/* version.c - the version of the library actually loaded, which a program
 * compares with the header it was built against (CLGRAD_VERSION_NUMBER). */
#include "internal.h"

const char *clg_version(void) { return CLGRAD_VERSION_STRING; }

unsigned clg_version_number(void) { return CLGRAD_VERSION_NUMBER; }

unsigned clg_abi_version(void) { return CLGRAD_ABI_VERSION; }

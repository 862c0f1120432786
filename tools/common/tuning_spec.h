/* tuning_spec.h - what a --tuning value names (clgrad-train, clgrad-bench
 * and tools/gemm's tuning_setup read it the same way): NULL, "" or "auto"
 * (the device's file), "off" (CLBlast's defaults), any case, else a file. */
#ifndef CLGRAD_TOOLS_TUNING_SPEC_H
#define CLGRAD_TOOLS_TUNING_SPEC_H

#include <stddef.h>
#include <strings.h>

static inline int tuning_spec_is_off(const char *spec)
{
    return spec && strcasecmp(spec, "off") == 0;
}

/* The file spec names, or NULL for auto and off. */
static inline const char *tuning_spec_file(const char *spec)
{
    if (!spec || !*spec || strcasecmp(spec, "auto") == 0 || tuning_spec_is_off(spec))
        return NULL;
    return spec;
}

#endif /* CLGRAD_TOOLS_TUNING_SPEC_H */

/* report_text.c - the short texts the table, the --dist rows and the plot
 * print for a parameter count and a summary (see report.h). */
#include "report.h"

#include <stdio.h>

const char *bench_size_text(uint64_t n, char *buf, size_t len)
{
    if (n && (n & (n - 1)) == 0) {
        int e = 0;
        while ((1ull << e) < n)
            e++;
        snprintf(buf, len, "2^%d", e);
    } else {
        snprintf(buf, len, "%llu", (unsigned long long)n);
    }
    return buf;
}

const char *bench_stat_text(bench_stat s, char *buf, size_t len)
{
    snprintf(buf, len, "%.4g [%.4g-%.4g]", s.median, s.min, s.max);
    return buf;
}

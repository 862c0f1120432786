/* e2e_none.c - --e2e when clgrad-bench is built without clgrad-train's
 * code: the report says so instead of measuring. */
#include "bench_main.h"

int bench_e2e_section(bench_report *r, clg_context *ctx, const bench_options *o)
{
    (void)ctx;
    (void)o;
    bench_report_note(r, "--e2e: not available, clgrad-bench was built without "
                         "clgrad-train's training code (train_core)");
    return 0;
}

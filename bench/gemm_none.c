/* gemm_none.c - the GEMM section when clgrad-bench is built without
 * tools/gemm (no zlib): said in the notes, nothing measured. */
#include "bench_main.h"

int bench_gemm_section(bench_report *r, clg_context *ctx, const bench_options *o)
{
    (void)ctx;
    (void)o;
    return bench_report_note(r, "GEMM section: clgrad-bench was built without tools/gemm");
}

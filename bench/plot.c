/* plot.c - the --plot output: a PNG drawn by gnuplot with one panel per
 * parameter count (whole-cycle GB/s of each case against the same run's
 * STREAM triad and copy), one panel of device bytes per parameter per
 * configuration, and one of clgrad-train's GEMM shapes (GFLOP/s with
 * CLBlast's defaults and tuned, beside what the triad would allow), drawn
 * through gnuplot.h. */
#include "gnuplot.h"
#include "report.h"

#include <stdio.h>

static double case_gbs(const bench_report *r, const char *opt, bench_variant v, char path,
                       char feed, uint64_t n)
{
    const bench_case *c = bench_report_find(r, opt, v, path, feed, n);
    return c ? c->gbs : 0.0;
}

/* Distinct parameter counts, in order of first appearance. */
static size_t sizes_of(const bench_report *r, uint64_t *sizes, size_t max)
{
    size_t n = 0;
    for (size_t i = 0; i < r->n_cases; i++) {
        size_t j = 0;
        while (j < n && sizes[j] != r->cases[i].n)
            j++;
        if (j == n && n < max)
            sizes[n++] = r->cases[i].n;
    }
    return n;
}

/* gnuplot's data file dir/name, its first line a comment naming the
 * columns; NULL if it cannot be created. */
static FILE *data_file(const char *dir, const char *name, const char *columns)
{
    char path[600];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    FILE *f = fopen(path, "w");
    if (f)
        fprintf(f, "# %s\n", columns);
    return f;
}

/* Panel s: the cases of parameter count n. */
static int write_case_data(const bench_report *r, uint64_t n, const char *dir, size_t s)
{
    char name[32];
    snprintf(name, sizeof name, "cases%zu.dat", s);
    FILE *f = data_file(dir, name, "label fused unfused per_tensor (GB/s)");
    if (!f)
        return -1;
    for (size_t i = 0; i < r->n_cases; i++) {
        const bench_case *c = &r->cases[i];
        if (c->variant != BENCH_FUSED || c->n != n)
            continue;
        int fed_like = c->path != 'C'; /* C: the partners are A's, drawn there */
        fprintf(f, "\"%s %c\" %.4f %.4f %.4f\n", c->optimizer, c->path, c->gbs,
                fed_like ? case_gbs(r, c->optimizer, BENCH_UNFUSED, '-', c->feed, n) : 0.0,
                fed_like ? case_gbs(r, c->optimizer, BENCH_PER_TENSOR, '-', c->feed, n) : 0.0);
    }
    return fclose(f);
}

static int write_gemm_data(const bench_report *r, const char *dir)
{
    FILE *f = data_file(dir, "gemm.dat", "label default tuned triad_bound (GFLOP/s)");
    if (!f)
        return -1;
    for (size_t i = 0; i < r->n_gemm; i++) {
        const bench_gemm *g = &r->gemm[i];
        fprintf(f, "\"%s %ux%ux%u\" %.4f %.4f %.4f\n", g->role, g->m, g->n, g->k,
                g->gflops_default, g->gflops_tuned, g->gflops_triad_bound);
    }
    return fclose(f);
}

static int write_memory_data(const bench_report *r, const char *dir)
{
    FILE *f = data_file(dir, "memory.dat", "config pathB pathAC (bytes/param)");
    if (!f)
        return -1;
    for (size_t i = 0; i + 1 < r->n_memory; i += 2) {
        const bench_memory *b = &r->memory[i], *ac = &r->memory[i + 1];
        fprintf(f, "\"%s\" %.4f %.4f\n", b->config, b->bytes_per_param, ac->bytes_per_param);
    }
    return fclose(f);
}

/* The tallest thing a bandwidth panel draws (for headroom above it). */
static double max_gbs(const bench_report *r, uint64_t n)
{
    double m = r->triad_gbs.median > r->copy_gbs.median ? r->triad_gbs.median
                                                        : r->copy_gbs.median;
    for (size_t i = 0; i < r->n_cases; i++)
        if (r->cases[i].n == n && r->cases[i].gbs > m)
            m = r->cases[i].gbs;
    return m > 0.0 ? m : 1.0;
}

static double max_bytes(const bench_report *r)
{
    double m = 1.0;
    for (size_t i = 0; i < r->n_memory; i++)
        if (r->memory[i].bytes_per_param > m)
            m = r->memory[i].bytes_per_param;
    return m;
}

static int write_script(const bench_report *r, const char *dir, const uint64_t *sizes,
                        size_t n_sizes, const char *png, const char *terminal,
                        const char *script)
{
    FILE *f = fopen(script, "w");
    if (!f)
        return -1;
    size_t panels = n_sizes + 1 + (r->n_gemm ? 1 : 0);
    fprintf(f, "set terminal %s size 1500,%zu font 'sans,10'\n", terminal, 480 * panels);
    fprintf(f, "set termoption noenhanced\n");
    /* in gnuplot's single quotes, '' is a quote */
    fputs("set output '", f);
    for (const char *p = png; *p; p++) {
        if (*p == '\'')
            fputc('\'', f);
        fputc(*p, f);
    }
    fputs("'\n", f);
    fprintf(f, "set multiplot layout %zu,1\n", panels);
    fprintf(f, "set style data histograms\nset style histogram clustered gap 1\n");
    fprintf(f, "set style fill solid 0.8 border -1\nset boxwidth 0.9\n");
    fprintf(f, "set grid ytics\nset key inside top left horizontal box opaque\n");
    fprintf(f, "set xtics rotate by -30 left\nset bmargin 7\n");
    for (size_t s = 0; s < n_sizes; s++) {
        char nb[32];
        fprintf(f,
                "set title 'Whole-cycle effective bandwidth, N = %s parameters, k = %u, %u "
                "tensors (bars: fused path / hand-rolled unfused / clgrad per tensor, fed "
                "the same way)'\n",
                bench_size_text(sizes[s], nb, sizeof nb), r->k, r->tensors);
        fprintf(f, "set xlabel 'optimizer config and path'\n");
        fprintf(f, "set ylabel 'GB/s (bytes model / median cycle time)'\n");
        fprintf(f, "set yrange [0:%.4f]\n", 1.5 * max_gbs(r, sizes[s]));
        fprintf(f,
                "plot '%s/cases%zu.dat' using 2:xtic(1) title 'clgrad fused', "
                "'' using 3 title 'hand-rolled (CLBlast, per tensor)', "
                "'' using 4 title 'clgrad, one model per tensor', "
                "%.4f with lines lw 2 dt 1 lc rgb 'black' title 'STREAM triad (%s) %.1f GB/s', "
                "%.4f with lines lw 2 dt 3 lc rgb 'gray20' title 'classic triad %.1f GB/s', "
                "%.4f with lines lw 2 dt 2 lc rgb 'gray40' title 'STREAM copy %.1f GB/s'\n",
                dir, s, r->triad_gbs.median, r->triad_form, r->triad_gbs.median,
                r->triad_classic_gbs.median, r->triad_classic_gbs.median, r->copy_gbs.median,
                r->copy_gbs.median);
    }
    fprintf(f, "set title 'Device memory per parameter before activations (budget %.3g GiB)'\n",
            r->budget_bytes / 1073741824.0);
    fprintf(f, "set xlabel 'optimizer config'\nset ylabel 'bytes per parameter'\n");
    fprintf(f, "set yrange [0:%.4f]\n", 1.4 * max_bytes(r));
    fprintf(f,
            "plot '%s/memory.dat' using 2:xtic(1) title 'path B (backward writes the "
            "accumulator)', '' using 3 title 'paths A/C (+ gradient buffers)'\n",
            dir);
    if (r->n_gemm) {
        fprintf(f, "set title \"clgrad-train's GEMMs, micro-batch %u: CLBlast's defaults and "
                "tuned (%s); triad-bound = operands moved once at the triad's %.1f GB/s\"\n",
                r->gemm_micro_batch, r->gemm_tuned ? "clgrad-tune" : "no tuning: defaults twice",
                r->triad_gbs.median);
        fprintf(f, "set xlabel 'GEMM (row-major m x n x k)'\nset ylabel 'GFLOP/s (log)'\n");
        fprintf(f, "set logscale y\nset yrange [0.5:*]\n");
        fprintf(f, "plot '%s/gemm.dat' using 2:xtic(1) title 'CLBlast defaults', '' using 3 "
                "title 'tuned', '' using 4 title 'triad-bound'\nunset logscale y\n", dir);
    }
    fprintf(f, "unset multiplot\n");
    return fclose(f);
}

/* What the writers below read: the report and its parameter counts. */
typedef struct plot_input {
    const bench_report *r;
    uint64_t sizes[16];
    size_t n_sizes;
} plot_input;

static int write_data(const void *what, const char *dir)
{
    const plot_input *in = what;
    int rc = 0;
    for (size_t s = 0; s < in->n_sizes && !rc; s++)
        rc = write_case_data(in->r, in->sizes[s], dir, s);
    if (!rc)
        rc = write_memory_data(in->r, dir);
    if (!rc && in->r->n_gemm)
        rc = write_gemm_data(in->r, dir);
    return rc;
}

static int write_report_script(const void *what, const char *dir, const char *png,
                               const char *terminal, const char *script)
{
    const plot_input *in = what;
    return write_script(in->r, dir, in->sizes, in->n_sizes, png, terminal, script);
}

int bench_write_plot(const bench_report *r, const char *png_path)
{
    plot_input in = {.r = r};
    in.n_sizes = sizes_of(r, in.sizes, 16);
    bench_gnuplot_job job = {png_path, "clgrad-bench-plot", &in, write_data,
                             write_report_script};
    return bench_gnuplot_draw(&job);
}

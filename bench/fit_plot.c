/* fit_plot.c - the planner's picture: billions of parameters that fit per
 * configuration (one bar each, most bytes per parameter on the left),
 * drawn by gnuplot as the bench's other plots are (plot.c). */
#define _POSIX_C_SOURCE 200809L
#include "fit.h"
#include "report.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int write_data(const bench_fit *f, const char *path)
{
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fprintf(out, "# configuration billions_of_params bytes_per_param\n");
    for (size_t i = 0; i < f->n; i++)
        fprintf(out, "\"%s\" %.4f %.3f\n", f->rows[i].config,
                (double)f->rows[i].max_params / 1e9, f->rows[i].bytes_per_param);
    return fclose(out);
}

static int write_script(const bench_fit *f, const char *data, const char *png,
                        const char *terminal, const char *script)
{
    FILE *out = fopen(script, "w");
    if (!out)
        return -1;
    fprintf(out, "set terminal %s size 1800,1000\n", terminal);
    fprintf(out, "set output '%s'\n", png);
    char cards[64] = "";
    if (f->shards > 1)
        snprintf(cards, sizeof cards, " per card, ZeRO-1 over %u cards", f->shards);
    fprintf(out,
            "set title 'clgrad: the largest AdamW model whose training state fits %.2f GiB%s "
            "(%.2f GiB reserved for activations)'\n",
            f->memory / 1073741824.0, cards, f->reserve / 1073741824.0);
    fprintf(out, "set ylabel 'billions of parameters'\n");
    fprintf(out, "set style fill solid 0.8\nset boxwidth 0.7\nset grid ytics\n");
    fprintf(out, "set xtics rotate by 90 right font ',8'\nset bmargin 24\nset yrange [0:*]\n");
    fprintf(out, "set key off\n");
    fprintf(out, "plot '%s' using 0:2:xtic(1) with boxes lc rgb '#3060a0', \\\n", data);
    fprintf(out, "     '' using 0:2:(sprintf('%%.2f', $2)) with labels offset 0,0.6 font ',7'\n");
    return fclose(out);
}

int bench_fit_write_plot(const bench_fit *f, const char *png)
{
    if (bench_check_png_path(png) != 0)
        return -1;
    const char *tmp = getenv("TMPDIR");
    char dir[512];
    snprintf(dir, sizeof dir, "%s/clgrad-fit-plot-XXXXXX", tmp && *tmp ? tmp : "/tmp");
    if (!mkdtemp(dir)) {
        fprintf(stderr, "clgrad-bench: --plot: cannot create a temporary directory %s: %s\n", dir,
                strerror(errno));
        return -1;
    }
    char data[600], script[600], why[700] = "";
    snprintf(data, sizeof data, "%s/fit.dat", dir);
    snprintf(script, sizeof script, "%s/fit.gp", dir);
    int rc = write_data(f, data);
    if (rc)
        snprintf(why, sizeof why, "writing gnuplot's data in %s failed", dir);
    /* pngcairo draws better; libgd's png is the fallback */
    if (!rc) {
        rc = write_script(f, data, png, "pngcairo", script);
        if (!rc && bench_run_gnuplot(script, why, sizeof why) != 0) {
            rc = write_script(f, data, png, "png", script);
            if (!rc)
                rc = bench_run_gnuplot(script, why, sizeof why);
        }
        if (rc && !why[0])
            snprintf(why, sizeof why, "writing the gnuplot script %s failed", script);
    }
    if (rc)
        fprintf(stderr, "clgrad-bench: --plot %s: %s\n", png, why);
    remove(data);
    remove(script);
    rmdir(dir);
    return rc;
}

/* fit_plot.c - the planner's picture: billions of parameters that fit per
 * configuration (one bar each, most bytes per parameter on the left),
 * drawn by gnuplot as the bench's other plots are (gnuplot.h). */
#include "fit.h"
#include "gnuplot.h"

#include <stdio.h>

static int write_data(const void *what, const char *dir)
{
    const bench_fit *f = what;
    char path[600];
    snprintf(path, sizeof path, "%s/fit.dat", dir);
    FILE *out = fopen(path, "w");
    if (!out)
        return -1;
    fprintf(out, "# configuration billions_of_params bytes_per_param\n");
    for (size_t i = 0; i < f->n; i++)
        fprintf(out, "\"%s\" %.4f %.3f\n", f->rows[i].config,
                (double)f->rows[i].max_params / 1e9, f->rows[i].bytes_per_param);
    return fclose(out);
}

static int write_script(const void *what, const char *dir, const char *png,
                        const char *terminal, const char *script)
{
    const bench_fit *f = what;
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
    fprintf(out, "plot '%s/fit.dat' using 0:2:xtic(1) with boxes lc rgb '#3060a0', \\\n", dir);
    fprintf(out, "     '' using 0:2:(sprintf('%%.2f', $2)) with labels offset 0,0.6 font ',7'\n");
    return fclose(out);
}

int bench_fit_write_plot(const bench_fit *f, const char *png)
{
    bench_gnuplot_job job = {png, "clgrad-fit-plot", f, write_data, write_script};
    return bench_gnuplot_draw(&job);
}

/* gnuplot.h - drawing a PNG with gnuplot, for --plot (plot.c: the report;
 * fit_plot.c: the --fit planner). The caller writes gnuplot's data and
 * script; this runs gnuplot and keeps the files out of the way: they go
 * to a fresh temporary directory, removed whatever happens, and the PNG's
 * directory is checked before gnuplot runs, so that a bad path is not
 * blamed on gnuplot. */
#ifndef BENCH_GNUPLOT_H
#define BENCH_GNUPLOT_H

typedef struct bench_gnuplot_job {
    const char *png;      /* the picture to write */
    const char *tmp_name; /* the temporary directory's name, before -XXXXXX */
    const void *what;     /* handed to the writers */
    /* Writes the data files into dir; 0, else -1. */
    int (*write_data)(const void *what, const char *dir);
    /* Writes the script (data from dir, picture to png, gnuplot terminal
     * `terminal`) to the file script; 0, else -1. */
    int (*write_script)(const void *what, const char *dir, const char *png,
                        const char *terminal, const char *script);
} bench_gnuplot_job;

/* Checks the PNG's path, writes the data and the script for gnuplot's
 * pngcairo terminal and runs gnuplot, again with its png terminal (libgd)
 * if that fails. Returns 0, or -1 with the reason on stderr. */
int bench_gnuplot_draw(const bench_gnuplot_job *job);

#endif /* BENCH_GNUPLOT_H */

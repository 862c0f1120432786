/* summary.c - the --json line and the lines with paths (see summary.h). */
#include "summary.h"
#include "errmsg.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

void json_print(const json_field *f, size_t n)
{
    cJSON *j = cJSON_CreateObject();
    for (size_t i = 0; i < n; i++) {
        if (f[i].omit)
            continue;
        if (f[i].text)
            cJSON_AddStringToObject(j, f[i].name, f[i].text);
        else
            cJSON_AddNumberToObject(j, f[i].name, f[i].number);
    }
    char *s = cJSON_PrintUnformatted(j);
    if (s)
        printf("%s\n", s);
    free(s);
    cJSON_Delete(j);
}

int train_print_json(int json, const json_field *f, size_t n)
{
    if (json)
        json_print(f, n);
    return fflush(stdout) == 0 ? 0 : 1;
}

void train_print_error(const char *err)
{
    static char safe[ERRMSG_ESCAPED_SIZE(4096)];
    fprintf(stderr, "clgrad-train: %s\n", errmsg_escape(err, safe, sizeof safe));
}

void train_print_resumed(const char *path, const char *overridden)
{
    char safe[ERRMSG_ESCAPED_SIZE(1024)];
    if (overridden[0])
        printf("resumed from %s with settings overridden: %s\n",
               errmsg_escape(path, safe, sizeof safe), overridden);
}

void train_print_outputs(const char *resume, const run_result *r)
{
    train_print_resumed(resume, r->overridden);
    train_print_written();
}

enum { MAX_WRITTEN = 8 };
static struct {
    const char *flag;
    char path[4096];
} written[MAX_WRITTEN];
static int n_written;

void train_note_written(const char *flag, const char *path)
{
    int i = 0;
    while (i < n_written && strcmp(written[i].flag, flag) != 0)
        i++;
    if (i == MAX_WRITTEN)
        return;
    n_written += i == n_written;
    written[i].flag = flag;
    snprintf(written[i].path, sizeof written[i].path, "%s", path);
}

void train_forget_written(void)
{
    n_written = 0;
}

void train_print_written(void)
{
    char safe[ERRMSG_ESCAPED_SIZE(4096)];
    for (int i = 0; i < n_written; i++)
        printf("%s %s %s", i ? "," : "wrote", written[i].flag,
               errmsg_escape(written[i].path, safe, sizeof safe));
    if (n_written)
        printf("\n");
}

/* summary.c - the --json line and the lines with paths (see summary.h). */
#include "summary.h"
#include "errmsg.h"

#include <cjson/cJSON.h>
#include <stdio.h>
#include <stdlib.h>

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

/* summary.c - the --json line (see summary.h). */
#include "summary.h"

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

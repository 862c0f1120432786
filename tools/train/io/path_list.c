/* path_list.c - a list of file paths (see path_list.h). */
#include "path_list.h"

#include <stdlib.h>
#include <string.h>

int path_list_add(path_list *l, const char *path, uint64_t bytes)
{
    char **p = realloc(l->path, (l->n + 1) * sizeof *p);
    if (p)
        l->path = p;
    uint64_t *b = realloc(l->bytes, (l->n + 1) * sizeof *b);
    if (b)
        l->bytes = b;
    char *copy = p && b ? strdup(path) : NULL;
    if (!copy)
        return -1;
    l->path[l->n] = copy;
    l->bytes[l->n++] = bytes;
    return 0;
}

uint64_t path_list_bytes(const path_list *l)
{
    uint64_t sum = 0;
    for (size_t i = 0; i < l->n; i++)
        sum += l->bytes[i];
    return sum;
}

void path_list_free(path_list *l)
{
    for (size_t i = 0; i < l->n; i++)
        free(l->path[i]);
    free(l->path);
    free(l->bytes);
    memset(l, 0, sizeof *l);
}

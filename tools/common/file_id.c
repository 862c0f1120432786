/* file_id.c - whether two paths name one file (see file_id.h). */
#define _DEFAULT_SOURCE /* realpath */
#include "file_id.h"
#include "dirpath.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

void file_id_of(const char *path, file_id *id)
{
    memset(id, 0, sizeof *id);
    struct stat sb;
    if (stat(path, &sb) == 0) {
        id->exists = 1;
        id->known = 1;
        id->dev = sb.st_dev;
        id->ino = sb.st_ino;
        return;
    }
    char dir[PATH_MAX], real[PATH_MAX];
    const char *base = dirpath_split(path, dir, sizeof dir);
    if (!realpath(dir, real))
        return;
    snprintf(id->resolved, sizeof id->resolved, "%s/%s", strcmp(real, "/") ? real : "", base);
    id->known = 1;
}

int file_id_same(const file_id *a, const file_id *b)
{
    if (!a->known || !b->known)
        return -1;
    if (a->exists != b->exists)
        return 0;
    if (a->exists)
        return a->dev == b->dev && a->ino == b->ino;
    return strcmp(a->resolved, b->resolved) == 0;
}

int file_same(const char *a, const char *b)
{
    file_id ia, ib;
    file_id_of(a, &ia);
    file_id_of(b, &ib);
    return file_id_same(&ia, &ib);
}

/* file_id.h - whether two paths name one file, so that no output of a tool
 * overwrites one of its inputs or another of its outputs: the same device
 * and inode (a hard link or a symbolic link is the same file), or, for a
 * file that does not exist yet, the same resolved directory and name. */
#ifndef CLGRAD_TOOLS_FILE_ID_H
#define CLGRAD_TOOLS_FILE_ID_H

#include <limits.h>
#include <sys/types.h>

typedef struct file_id {
    int exists;
    dev_t dev;
    ino_t ino;
    char resolved[PATH_MAX + NAME_MAX + 2]; /* when it does not exist */
    int known;                              /* 0: the directory could not be resolved */
} file_id;

/* What path names now. */
void file_id_of(const char *path, file_id *id);
/* 1 when a and b are one file, 0 when not, -1 when that cannot be told (a
 * directory that cannot be resolved). */
int file_id_same(const file_id *a, const file_id *b);
/* file_id_same of what a and b name. */
int file_same(const char *a, const char *b);

#endif /* CLGRAD_TOOLS_FILE_ID_H */

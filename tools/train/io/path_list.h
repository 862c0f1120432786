/* path_list.h - a list of file paths with the size each had when it was
 * listed: the files a run reads from --data (dataset_files, a task's
 * data_files hook), which outpaths_check keeps every output off, and from
 * whose sizes a plan is made before any is read. */
#ifndef TRAIN_PATH_LIST_H
#define TRAIN_PATH_LIST_H

#include <stddef.h>
#include <stdint.h>

typedef struct path_list {
    char **path;
    uint64_t *bytes; /* 0 for a file that does not exist (yet) */
    size_t n;
} path_list;

/* Appends a copy of path. 0, or -1 when out of host memory. */
int path_list_add(path_list *l, const char *path, uint64_t bytes);
/* The sum of the sizes. */
uint64_t path_list_bytes(const path_list *l);
void path_list_free(path_list *l);

#endif /* TRAIN_PATH_LIST_H */

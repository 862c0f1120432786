/* dirpath.h - the directory of a file's path, and mkdir -p, for the
 * tools' output files: clgrad-bench checks where --json, --csv and --plot
 * will go, clgrad-tune creates clgrad's cache directory for its file.
 * (libclgrad has its own mkdir -p for its program cache: the library does
 * not link the tools' code.) */
#ifndef CLGRAD_TOOLS_DIRPATH_H
#define CLGRAD_TOOLS_DIRPATH_H

#include <stddef.h>

/* Writes the directory of path into dir (at most len bytes): "." for a
 * bare name, "/" for a name at the root. Returns path's last component
 * (what follows the last '/'; "" when path ends in '/'). */
const char *dirpath_split(const char *path, char *dir, size_t len);

/* Creates dir and its missing parents with mode 0755, as mkdir -p (an
 * existing directory is not an error). Returns 0, or -1 with errno set and,
 * when failed is not NULL, the directory that could not be made written
 * into failed (at most len bytes). */
int dirpath_make(const char *dir, char *failed, size_t len);

#endif /* CLGRAD_TOOLS_DIRPATH_H */

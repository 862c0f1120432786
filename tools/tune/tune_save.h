/* tune_save.h - writes a tuning file all or nothing: the text goes to a
 * temporary file next to the target, which is fsynced and renamed over it,
 * and the directory is fsynced (clgrad-train's atomic_file), so that a
 * reader sees the old file or the new one, never part of one. The
 * directory is created when missing (it is clgrad's cache directory). */
#ifndef TUNE_TUNE_SAVE_H
#define TUNE_TUNE_SAVE_H

#include "tuning_file.h"

/* 0, or -1 with why (naming the path). */
int tune_save(const char *path, const tuning *t, char *err, size_t errlen);

#endif /* TUNE_TUNE_SAVE_H */

/* test_checkpoint_paths.c - the library writes only regular files (issue
 * 37): clg_checkpoint_save, clg_checkpoint_save_gathered and the kernel
 * cache's store refuse a path that holds a FIFO, a character or block
 * device, a socket or a directory, or a symbolic link to one of those.
 * Each refusal is checked for its status and exact message, for the node
 * being what it was (kind, inode, device numbers; a link and its target
 * both) and for no temporary file left beside it. A symbolic link to a
 * regular file, or to nothing, is replaced by the new file, its target
 * left as it was (src/write_target.h).
 *
 * The devices are made here, with mknod, under this run's scratch
 * directory (never /dev's own): the test runs as root, as CI does, and
 * fails if it cannot make them. The character device has /dev/null's
 * numbers, so that even a write through it would go nowhere. */
#define _GNU_SOURCE
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "program_cache.h"
#include "testutil.h"

#include <dirent.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/un.h>
#include <unistd.h>

/* ------------------------------------------------------------ nodes */

typedef enum node_kind { NODE_FIFO, NODE_CHAR, NODE_BLOCK, NODE_SOCKET, NODE_DIR } node_kind;

/* What a node is, to tell that it is still the same one. */
typedef struct node_id {
    mode_t mode;
    ino_t ino;
    dev_t rdev;
} node_id;

static node_id identify(const char *path)
{
    struct stat st;
    if (lstat(path, &st) != 0)
        fail_msg("lstat '%s': %s", path, strerror(errno));
    return (node_id){st.st_mode, st.st_ino, st.st_rdev};
}

static void assert_same_node(const char *path, node_id was)
{
    node_id now = identify(path);
    if (now.mode != was.mode || now.ino != was.ino || now.rdev != was.rdev)
        fail_msg("'%s' changed: mode %o inode %llu rdev %llx, was mode %o inode %llu rdev %llx",
                 path, (unsigned)now.mode, (unsigned long long)now.ino,
                 (unsigned long long)now.rdev, (unsigned)was.mode, (unsigned long long)was.ino,
                 (unsigned long long)was.rdev);
}

/* A unix socket bound at path (its descriptor closed: the node stays). */
static void make_socket(const char *path)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    if (strlen(path) >= sizeof a.sun_path)
        fail_msg("socket path '%s' is too long", path);
    strcpy(a.sun_path, path);
    int fd = socket(AF_UNIX, SOCK_STREAM, 0);
    if (fd < 0 || bind(fd, (struct sockaddr *)&a, sizeof a) != 0)
        fail_msg("binding a socket at '%s': %s", path, strerror(errno));
    close(fd);
}

/* Makes a node of kind at path; fails the test (never skips) when it
 * cannot, e.g. mknod without root. */
static void make_node(node_kind kind, const char *path)
{
    int rc = 0;
    switch (kind) {
    case NODE_FIFO: rc = mkfifo(path, 0600); break;
    case NODE_CHAR: rc = mknod(path, S_IFCHR | 0600, makedev(1, 3)); break;
    case NODE_BLOCK: rc = mknod(path, S_IFBLK | 0600, makedev(7, 250)); break;
    case NODE_SOCKET: make_socket(path); break;
    case NODE_DIR: rc = mkdir(path, 0700); break;
    }
    if (rc != 0)
        fail_msg("making node %d at '%s': %s (this test runs as root, as CI does)", (int)kind, path,
                 strerror(errno));
}

/* Entries of dir other than "." and "..". */
static int entry_count(const char *dir)
{
    DIR *d = opendir(dir);
    if (!d)
        fail_msg("opendir '%s': %s", dir, strerror(errno));
    int n = 0;
    struct dirent *e;
    while ((e = readdir(d)) != NULL)
        n += strcmp(e->d_name, ".") != 0 && strcmp(e->d_name, "..") != 0;
    closedir(d);
    return n;
}

/* "<dir>/<name>" into out. */
static void join(char out[PATH_MAX], const char *dir, const char *name)
{
    if (snprintf(out, PATH_MAX, "%s/%s", dir, name) >= PATH_MAX)
        fail_msg("'%s/%s' is too long", dir, name);
}

/* A fresh directory <tu_tmpdir>/<name>, its path in out. */
static void case_dir(char out[PATH_MAX], const char *name)
{
    join(out, tu_tmpdir, name);
    if (mkdir(out, 0700) != 0)
        fail_msg("mkdir '%s': %s", out, strerror(errno));
}

/* ------------------------------------------------------------ checkpoints */

static clg_model *small_model(void)
{
    clg_config cfg = clg_config_init(CLG_ADAMW);
    clg_model *m = NULL;
    int t;
    OK(clg_model_create(tu_ctx, &cfg, &m));
    OK(clg_model_add_tensor(m, "w", 64, 0, &t));
    OK(clg_model_finalize(m));
    return m;
}

/* Which writer a case calls. */
typedef enum writer { SAVE, SAVE_GATHERED } writer;

static clg_status save_with(clg_model *m, writer w, const char *path)
{
    if (w == SAVE)
        return clg_checkpoint_save(m, path, NULL, NULL, 0);
    /* two state images, larger than the model's layout space: the refusal
     * comes before they are read, and a writer without it reads them */
    static float images[2][1 << 14];
    const void *states[2] = {images[0], images[1]};
    return clg_checkpoint_save_gathered(m, path, NULL, NULL, 0, states, 2);
}

typedef struct refusal {
    const char *name; /* the case, and its directory */
    node_kind kind;   /* the node made */
    int linked;       /* path is a symbolic link to the node */
    writer writer;
    const char *what; /* what the message says is at path */
    const char *tail; /* how the message ends */
} refusal;

#define REPLACED "it would be replaced"

static const refusal refusals[] = {
    {"fifo", NODE_FIFO, 0, SAVE, "is a FIFO, not a regular file", REPLACED},
    {"char", NODE_CHAR, 0, SAVE, "is a character device, not a regular file", REPLACED},
    {"block", NODE_BLOCK, 0, SAVE, "is a block device, not a regular file", REPLACED},
    {"socket", NODE_SOCKET, 0, SAVE, "is a socket, not a regular file", REPLACED},
    {"dir", NODE_DIR, 0, SAVE, "is a directory, not a regular file", "expected a file name"},
    {"link_fifo", NODE_FIFO, 1, SAVE, "is a symbolic link to a FIFO, not to a regular file",
     REPLACED},
    {"link_char", NODE_CHAR, 1, SAVE,
     "is a symbolic link to a character device, not to a regular file", REPLACED},
    {"link_dir", NODE_DIR, 1, SAVE, "is a symbolic link to a directory, not to a regular file",
     REPLACED},
    {"gathered_fifo", NODE_FIFO, 0, SAVE_GATHERED, "is a FIFO, not a regular file", REPLACED},
    {"gathered_link_char", NODE_CHAR, 1, SAVE_GATHERED,
     "is a symbolic link to a character device, not to a regular file", REPLACED},
};

static void check_refusal(clg_model *m, const refusal *r)
{
    print_message("%s\n", r->name);
    char dir[PATH_MAX], node[PATH_MAX], link[PATH_MAX];
    case_dir(dir, r->name);
    join(node, dir, "node");
    join(link, dir, "x.ckpt");
    const char *path = r->linked ? link : node;
    make_node(r->kind, node);
    if (r->linked && symlink("node", link) != 0)
        fail_msg("symlink '%s': %s", link, strerror(errno));
    node_id node_was = identify(node), path_was = identify(path);
    int entries = entry_count(dir);

    assert_int_equal(save_with(m, r->writer, path), CLG_ERR_IO);
    char want[2 * PATH_MAX];
    snprintf(want, sizeof want, "%s: '%s' %s; %s",
             r->writer == SAVE ? "clg_checkpoint_save" : "clg_checkpoint_save_gathered", path,
             r->what, r->tail);
    assert_string_equal(clg_last_error(tu_ctx), want);
    assert_same_node(node, node_was);
    assert_same_node(path, path_was);
    if (r->linked) {
        char target[64];
        ssize_t n = readlink(link, target, sizeof target - 1);
        assert_true(n > 0);
        target[n] = '\0';
        assert_string_equal(target, "node");
    }
    assert_int_equal(entry_count(dir), entries); /* no temporary file beside it */
    if (r->kind == NODE_DIR)
        assert_int_equal(entry_count(node), 0); /* and none inside */
}

static void test_save_refuses_what_is_no_regular_file(void **state)
{
    (void)state;
    clg_model *m = small_model();
    for (size_t i = 0; i < sizeof refusals / sizeof *refusals; i++)
        check_refusal(m, &refusals[i]);
    /* the model still saves to a plain path */
    char dir[PATH_MAX], path[PATH_MAX];
    case_dir(dir, "plain");
    join(path, dir, "x.ckpt");
    OK(clg_checkpoint_save(m, path, NULL, NULL, 0));
    assert_true(S_ISREG(identify(path).mode));
    clg_model_destroy(m);
}

/* A symbolic link to a regular file, or one that leads nowhere, is
 * replaced by the checkpoint itself: the link goes, its target (if any)
 * stays as it was, and nothing is made where a dangling link pointed. */
static void test_save_replaces_a_link_not_its_target(void **state)
{
    (void)state;
    clg_model *m = small_model();
    char dir[PATH_MAX], target[PATH_MAX], to_file[PATH_MAX], dangling[PATH_MAX];
    char nowhere[PATH_MAX];
    case_dir(dir, "links");
    join(target, dir, "target");
    join(to_file, dir, "to_file.ckpt");
    join(dangling, dir, "dangling.ckpt");
    join(nowhere, dir, "nowhere");
    tu_write_file(target, "kept", 4);
    assert_int_equal(symlink("target", to_file), 0);
    assert_int_equal(symlink("nowhere", dangling), 0);

    OK(clg_checkpoint_save(m, to_file, NULL, NULL, 0));
    OK(clg_checkpoint_save(m, dangling, NULL, NULL, 0));
    assert_true(S_ISREG(identify(to_file).mode));
    assert_true(S_ISREG(identify(dangling).mode));
    size_t n;
    uint8_t *kept = tu_read_file(target, &n);
    assert_int_equal(n, 4);
    assert_memory_equal(kept, "kept", 4);
    free(kept);
    struct stat st;
    assert_int_equal(lstat(nowhere, &st), -1);
    assert_int_equal(errno, ENOENT);
    assert_int_equal(entry_count(dir), 3); /* target and the two checkpoints */
    OK(clg_checkpoint_load(m, to_file, NULL, NULL));
    clg_model_destroy(m);
}

/* ------------------------------------------------------------ kernel cache */

/* The store leaves a FIFO or a device at an entry's name (program_cache.c:
 * "<dir>/<64 hex digits of the key>.bin") alone and stores nothing; over a
 * regular file it writes the entry. */
static void test_cache_store_refuses_what_is_no_regular_file(void **state)
{
    (void)state;
    char dir[PATH_MAX], entry[PATH_MAX];
    case_dir(dir, "cache");
    setenv("CLGRAD_CACHE_DIR", dir, 1);
    uint8_t key[CLG_CACHE_KEY_SIZE];
    char hex[2 * CLG_CACHE_KEY_SIZE + 5];
    for (int i = 0; i < CLG_CACHE_KEY_SIZE; i++) {
        key[i] = (uint8_t)(0xa0 + i);
        snprintf(hex + 2 * i, 3, "%02x", key[i]);
    }
    strcat(hex, ".bin");
    join(entry, dir, hex);
    const unsigned char binary[16] = "not a real one";

    const node_kind kinds[] = {NODE_FIFO, NODE_CHAR, NODE_DIR};
    for (size_t k = 0; k < sizeof kinds / sizeof *kinds; k++) {
        make_node(kinds[k], entry);
        node_id was = identify(entry);
        assert_false(clg__cache_store(key, binary, sizeof binary));
        assert_same_node(entry, was);
        assert_int_equal(entry_count(dir), 1); /* no temporary file beside it */
        assert_int_equal(remove(entry), 0);
    }
    /* a regular file there is replaced by the entry */
    tu_write_file(entry, "old", 3);
    assert_true(clg__cache_store(key, binary, sizeof binary));
    unsigned char *got = NULL;
    size_t size = 0;
    assert_int_equal(clg__cache_load(key, &got, &size), CLG_CACHE_HIT);
    assert_int_equal(size, sizeof binary);
    assert_memory_equal(got, binary, sizeof binary);
    free(got);
    assert_int_equal(entry_count(dir), 1);
}

/* The cache test points CLGRAD_CACHE_DIR at its own directory; the
 * run's (tests/meson.build sets it) comes back after it, passed or not. */
static char run_cache_dir[PATH_MAX];
static int run_cache_dir_set;

static int keep_cache_dir(void **state)
{
    (void)state;
    const char *dir = getenv("CLGRAD_CACHE_DIR");
    run_cache_dir_set = dir != NULL;
    snprintf(run_cache_dir, sizeof run_cache_dir, "%s", dir ? dir : "");
    return 0;
}

static int restore_cache_dir(void **state)
{
    (void)state;
    return run_cache_dir_set ? setenv("CLGRAD_CACHE_DIR", run_cache_dir, 1)
                             : unsetenv("CLGRAD_CACHE_DIR");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_save_refuses_what_is_no_regular_file),
        cmocka_unit_test(test_save_replaces_a_link_not_its_target),
        cmocka_unit_test_setup_teardown(test_cache_store_refuses_what_is_no_regular_file,
                                        keep_cache_dir, restore_cache_dir),
    };
    return cmocka_run_group_tests(tests, tu_group_setup_tmpdir, tu_group_teardown);
}

// powercut: an LD_PRELOAD library that records what a process does to the files under one
// folder, so that scripts/suites/power-loss.py can take back what a power loss would, and that
// cuts the power (SIGKILL, at once) at a chosen operation.
//
// Environment:
//   POWERCUT_DIR  the folder whose files are watched (an absolute path, no trailing /)
//   POWERCUT_LOG  the log it appends to (outside POWERCUT_DIR)
//   POWERCUT_AT   the operation to cut before (1 = the first); 0 or unset: never cut
//   POWERCUT_UNSYNCED  when 1, syncs are done but not logged, as if the program never synced: the
//                 suite's check that a program that does not sync is caught
//
// The operations counted, on files under POWERCUT_DIR: a write (write, pwrite, pwrite64), a
// truncation (ftruncate), a sync (fsync, fdatasync), a rename and an unlink. Each is logged before
// it is done, a write with the bytes it replaces and the file's size before it, so the data
// written since a file's last sync can be taken back. Renames and unlinks are logged so the
// pending writes follow their file; the model takes them as durable at once (a file system that
// journals its folders synchronously), which is stated in docs/RELIABILITY.md.
//
// Log records, each a header "<kind> <fields...> <path length>\n", then the path, then the data:
//   W offset old_size length n    path, old bytes (min(length, old_size - offset) if positive), new bytes
//   T old_size new_size n          path, old bytes from new_size to old_size when shrinking
//   S n                            path
//   R n m                          old path, new path
//   U n                            path
//   X operation                    the cut
// One lock serialises the watched operations, so a write's old bytes are those it replaced.
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/uio.h>
#include <unistd.h>

#define MAX_FDS 65536

static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;
static char *paths[MAX_FDS];
static const char *dir;
static size_t dir_length;
static int log_fd = -1;
static long cut_at;
static long operations;
static int unsynced;

static int (*real_open)(const char *, int, ...);
static int (*real_open64)(const char *, int, ...);
static int (*real_openat)(int, const char *, int, ...);
static int (*real_openat64)(int, const char *, int, ...);
static int (*real_close)(int);
static ssize_t (*real_write)(int, const void *, size_t);
static ssize_t (*real_pwrite)(int, const void *, size_t, off_t);
static ssize_t (*real_pwrite64)(int, const void *, size_t, off_t);
static ssize_t (*real_writev)(int, const struct iovec *, int);
static int (*real_ftruncate)(int, off_t);
static int (*real_ftruncate64)(int, off_t);
static int (*real_fsync)(int);
static int (*real_fdatasync)(int);
static int (*real_rename)(const char *, const char *);
static int (*real_renameat)(int, const char *, int, const char *);
static int (*real_unlink)(const char *);
static int (*real_unlinkat)(int, const char *, int);

__attribute__((constructor)) static void start(void) {
    real_open = dlsym(RTLD_NEXT, "open");
    real_open64 = dlsym(RTLD_NEXT, "open64");
    real_openat = dlsym(RTLD_NEXT, "openat");
    real_openat64 = dlsym(RTLD_NEXT, "openat64");
    real_close = dlsym(RTLD_NEXT, "close");
    real_write = dlsym(RTLD_NEXT, "write");
    real_pwrite = dlsym(RTLD_NEXT, "pwrite");
    real_pwrite64 = dlsym(RTLD_NEXT, "pwrite64");
    real_writev = dlsym(RTLD_NEXT, "writev");
    real_ftruncate = dlsym(RTLD_NEXT, "ftruncate");
    real_ftruncate64 = dlsym(RTLD_NEXT, "ftruncate64");
    real_fsync = dlsym(RTLD_NEXT, "fsync");
    real_fdatasync = dlsym(RTLD_NEXT, "fdatasync");
    real_rename = dlsym(RTLD_NEXT, "rename");
    real_renameat = dlsym(RTLD_NEXT, "renameat");
    real_unlink = dlsym(RTLD_NEXT, "unlink");
    real_unlinkat = dlsym(RTLD_NEXT, "unlinkat");
    dir = getenv("POWERCUT_DIR");
    const char *log = getenv("POWERCUT_LOG");
    const char *at = getenv("POWERCUT_AT");
    cut_at = at ? atol(at) : 0;
    const char *ignore = getenv("POWERCUT_UNSYNCED");
    unsynced = ignore && strcmp(ignore, "1") == 0;
    if (dir && log) {
        dir_length = strlen(dir);
        log_fd = real_open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    } else {
        dir = NULL;
    }
}

static void put(const void *bytes, size_t length) {
    const char *p = bytes;
    while (length > 0) {
        ssize_t n = real_write(log_fd, p, length);
        if (n < 0) {
            if (errno == EINTR) continue;
            abort();  // a log that misses an operation would make every later check wrong
        }
        p += n;
        length -= (size_t)n;
    }
}

static void header(const char *format, ...) {
    char text[256];
    va_list arguments;
    va_start(arguments, format);
    int length = vsnprintf(text, sizeof text, format, arguments);
    va_end(arguments);
    put(text, (size_t)length);
}

// The absolute form of `path` (relative to the working directory or to the folder `at`).
static char *absolute(int at, const char *path) {
    if (path[0] == '/') return strdup(path);
    char base[PATH_MAX];
    if (at == AT_FDCWD) {
        if (!getcwd(base, sizeof base)) return NULL;
    } else {
        char link[64];
        snprintf(link, sizeof link, "/proc/self/fd/%d", at);
        ssize_t n = readlink(link, base, sizeof base - 1);
        if (n < 0) return NULL;
        base[n] = 0;
    }
    char *full = malloc(strlen(base) + strlen(path) + 2);
    sprintf(full, "%s/%s", base, path);
    return full;
}

static int watched(const char *path) {
    return dir && path && strncmp(path, dir, dir_length) == 0 && (path[dir_length] == '/' || path[dir_length] == 0);
}

// Counts an operation; at the chosen one, logs the cut and ends the process before it happens.
static void count(void) {
    operations++;
    if (cut_at > 0 && operations == cut_at) {
        header("X %ld 0\n", operations);
        kill(getpid(), SIGKILL);
        for (;;) pause();
    }
}

static void remember(int fd, int at, const char *path) {
    if (fd < 0 || fd >= MAX_FDS || !dir) return;
    char *full = absolute(at, path);
    pthread_mutex_lock(&lock);
    free(paths[fd]);
    paths[fd] = NULL;
    if (watched(full)) {
        paths[fd] = full;
        full = NULL;
    }
    pthread_mutex_unlock(&lock);
    free(full);
}

static const char *path_of(int fd) { return fd >= 0 && fd < MAX_FDS ? paths[fd] : NULL; }

// Logs a write of `length` bytes at `offset` of the file behind `fd`, with what it replaces.
static void log_write(int fd, const char *path, const void *bytes, size_t length, off_t offset) {
    struct stat status;
    off_t size = fstat(fd, &status) == 0 ? status.st_size : 0;
    size_t path_length = strlen(path);
    header("W %lld %lld %zu %zu\n", (long long)offset, (long long)size, length, path_length);
    put(path, path_length);
    if (offset < size) {
        size_t old = (size_t)(size - offset) < length ? (size_t)(size - offset) : length;
        char *before = malloc(old);
        ssize_t n = pread(fd, before, old, offset);
        if (n != (ssize_t)old) abort();
        put(before, old);
        free(before);
    }
    put(bytes, length);
}

#define OPEN_BODY(real, at, path)                    \
    mode_t mode = 0;                                 \
    if (flags & (O_CREAT | O_TMPFILE)) {             \
        va_list arguments;                           \
        va_start(arguments, flags);                  \
        mode = va_arg(arguments, mode_t);            \
        va_end(arguments);                           \
    }                                                \
    int fd = real;                                   \
    if (fd >= 0) remember(fd, at, path);             \
    return fd;

int open(const char *path, int flags, ...) { OPEN_BODY(real_open(path, flags, mode), AT_FDCWD, path) }
int open64(const char *path, int flags, ...) { OPEN_BODY(real_open64(path, flags, mode), AT_FDCWD, path) }
int openat(int at, const char *path, int flags, ...) { OPEN_BODY(real_openat(at, path, flags, mode), at, path) }
int openat64(int at, const char *path, int flags, ...) { OPEN_BODY(real_openat64(at, path, flags, mode), at, path) }

int close(int fd) {
    if (fd >= 0 && fd < MAX_FDS && paths[fd]) {
        pthread_mutex_lock(&lock);
        free(paths[fd]);
        paths[fd] = NULL;
        pthread_mutex_unlock(&lock);
    }
    return real_close(fd);
}

static ssize_t watched_write(int fd, const void *bytes, size_t length, off_t offset, int positioned) {
    pthread_mutex_lock(&lock);
    const char *path = path_of(fd);
    if (!path || log_fd < 0) {
        pthread_mutex_unlock(&lock);
        return positioned ? real_pwrite64(fd, bytes, length, offset) : real_write(fd, bytes, length);
    }
    count();
    off_t at = positioned ? offset : lseek(fd, 0, SEEK_CUR);
    log_write(fd, path, bytes, length, at);
    ssize_t n = positioned ? real_pwrite64(fd, bytes, length, offset) : real_write(fd, bytes, length);
    pthread_mutex_unlock(&lock);
    return n;
}

ssize_t write(int fd, const void *bytes, size_t length) { return watched_write(fd, bytes, length, 0, 0); }
ssize_t pwrite(int fd, const void *bytes, size_t length, off_t offset) {
    return watched_write(fd, bytes, length, offset, 1);
}
ssize_t pwrite64(int fd, const void *bytes, size_t length, off_t offset) {
    return watched_write(fd, bytes, length, offset, 1);
}

ssize_t writev(int fd, const struct iovec *vectors, int count_) {
    if (!path_of(fd)) return real_writev(fd, vectors, count_);
    ssize_t total = 0;
    for (int i = 0; i < count_; i++) {
        ssize_t n = write(fd, vectors[i].iov_base, vectors[i].iov_len);
        if (n < 0) return total > 0 ? total : n;
        total += n;
        if ((size_t)n < vectors[i].iov_len) break;
    }
    return total;
}

static int watched_truncate(int fd, off_t length, int (*real)(int, off_t)) {
    pthread_mutex_lock(&lock);
    const char *path = path_of(fd);
    if (!path || log_fd < 0) {
        pthread_mutex_unlock(&lock);
        return real(fd, length);
    }
    count();
    struct stat status;
    off_t size = fstat(fd, &status) == 0 ? status.st_size : 0;
    size_t path_length = strlen(path);
    header("T %lld %lld %zu\n", (long long)size, (long long)length, path_length);
    put(path, path_length);
    if (length < size) {
        size_t old = (size_t)(size - length);
        char *before = malloc(old);
        if (pread(fd, before, old, length) != (ssize_t)old) abort();
        put(before, old);
        free(before);
    }
    int result = real(fd, length);
    pthread_mutex_unlock(&lock);
    return result;
}

int ftruncate(int fd, off_t length) { return watched_truncate(fd, length, real_ftruncate); }
int ftruncate64(int fd, off_t length) { return watched_truncate(fd, length, real_ftruncate64); }

static int watched_sync(int fd, int (*real)(int)) {
    pthread_mutex_lock(&lock);
    const char *path = path_of(fd);
    if (path && log_fd >= 0 && !unsynced) {
        count();
        size_t path_length = strlen(path);
        header("S %zu\n", path_length);
        put(path, path_length);
    }
    int result = real(fd);
    pthread_mutex_unlock(&lock);
    return result;
}

int fsync(int fd) { return watched_sync(fd, real_fsync); }
int fdatasync(int fd) { return watched_sync(fd, real_fdatasync); }

static int watched_rename(int from_at, const char *from, int to_at, const char *to) {
    char *old_path = absolute(from_at, from), *new_path = absolute(to_at, to);
    pthread_mutex_lock(&lock);
    if (log_fd >= 0 && (watched(old_path) || watched(new_path))) {
        count();
        header("R %zu %zu\n", strlen(old_path), strlen(new_path));
        put(old_path, strlen(old_path));
        put(new_path, strlen(new_path));
    }
    int result = real_renameat(from_at, from, to_at, to);
    pthread_mutex_unlock(&lock);
    free(old_path);
    free(new_path);
    return result;
}

int rename(const char *from, const char *to) { return watched_rename(AT_FDCWD, from, AT_FDCWD, to); }
int renameat(int from_at, const char *from, int to_at, const char *to) {
    return watched_rename(from_at, from, to_at, to);
}

static int watched_unlink(int at, const char *path, int flags) {
    char *full = absolute(at, path);
    pthread_mutex_lock(&lock);
    if (log_fd >= 0 && watched(full) && !(flags & AT_REMOVEDIR)) {
        count();
        header("U %zu\n", strlen(full));
        put(full, strlen(full));
    }
    int result = real_unlinkat(at, path, flags);
    pthread_mutex_unlock(&lock);
    free(full);
    return result;
}

int unlink(const char *path) { return watched_unlink(AT_FDCWD, path, 0); }
int unlinkat(int at, const char *path, int flags) { return watched_unlink(at, path, flags); }

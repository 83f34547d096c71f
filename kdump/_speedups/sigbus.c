/* SIGBUS on a truncated mapping: the C half of kdump/storage/mapped.py */

#include "speedups.h"

/*
 * kdump reads segments through read-only mappings. If another process truncates a file
 * while it is mapped (a broker truncating a follower's log after a leader change), a read
 * past the new end raises SIGBUS, and the process would die with "Bus error". The CLI asks
 * for catch_sigbus(): the handler finds the mapping the faulting address is in (files are
 * registered with watch_mapping while mapped), writes one located line to stderr and
 * exits with 3, "could not complete". Only async-signal-safe calls are made in it.
 */
#include <signal.h>
#if defined(SIGBUS) && (defined(__unix__) || defined(__APPLE__))
#  include <sys/stat.h>
#  include <unistd.h>
#  define KD_HAVE_SIGBUS 1
#else
#  define KD_HAVE_SIGBUS 0
#endif

#define WATCH_SLOTS 64
#define WATCH_PATH 4096

static struct {
    volatile sig_atomic_t used;
    const char *base;
    size_t len;
    char path[WATCH_PATH];
} watched[WATCH_SLOTS];

PyObject *
kd_watch_mapping(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    const char *path;
    Py_ssize_t path_len;
    if (!PyArg_ParseTuple(args, "y*y#:watch_mapping", &view, &path, &path_len))
        return NULL;
    const char *base = (const char *)view.buf;
    size_t len = (size_t)view.len;
    PyBuffer_Release(&view);        /* the mapping stays; its owner unwatches it before closing */
    for (int i = 0; i < WATCH_SLOTS; i++) {
        if (watched[i].used)
            continue;
        watched[i].base = base;
        watched[i].len = len;
        size_t n = (size_t)path_len < WATCH_PATH - 1 ? (size_t)path_len : WATCH_PATH - 1;
        memcpy(watched[i].path, path, n);
        watched[i].path[n] = '\0';
        watched[i].used = 1;
        return PyLong_FromLong(i);
    }
    Py_RETURN_NONE;                 /* all slots taken: the handler reports no file name */
}

PyObject *
kd_unwatch_mapping(PyObject *self, PyObject *arg)
{
    (void)self;
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred())
        return NULL;
    if (i >= 0 && i < WATCH_SLOTS)
        watched[i].used = 0;
    Py_RETURN_NONE;
}

#if KD_HAVE_SIGBUS
static size_t
put(char *out, size_t at, size_t cap, const char *s)
{
    while (*s && at < cap)
        out[at++] = *s++;
    return at;
}

static void
on_sigbus(int sig, siginfo_t *info, void *context)
{
    (void)sig, (void)context;
    char line[WATCH_PATH + 256];
    size_t at = put(line, 0, sizeof line, "kdump: error: ");
    const char *addr = (const char *)info->si_addr;
    int found = 0;
    for (int i = 0; i < WATCH_SLOTS && !found; i++) {
        if (!watched[i].used || addr < watched[i].base || addr >= watched[i].base + watched[i].len)
            continue;
        found = i + 1;
        char digits[24];
        size_t n = 0, position = (size_t)(addr - watched[i].base);
        do {
            digits[n++] = (char)('0' + position % 10);
            position /= 10;
        } while (position && n < sizeof digits);
        at = put(line, at, sizeof line, watched[i].path);
        at = put(line, at, sizeof line, ":");
        while (n && at < sizeof line)
            line[at++] = digits[--n];
        at = put(line, at, sizeof line, ": ");
    }
    at = put(line, at, sizeof line, found ? "the file was truncated by another process while kdump read it"
                                          : "a file was truncated by another process while kdump read it (SIGBUS)");
    struct stat st;
    if (found && stat(watched[found - 1].path, &st) == 0 && st.st_size >= 0) {
        char digits[24];
        size_t n = 0, size = (size_t)st.st_size;
        do {
            digits[n++] = (char)('0' + size % 10);
            size /= 10;
        } while (size && n < sizeof digits);
        at = put(line, at, sizeof line, " (it now has ");
        while (n && at < sizeof line)
            line[at++] = digits[--n];
        at = put(line, at, sizeof line, " bytes)");
    }
    at = put(line, at, sizeof line, "; run again once it is stable\n");
    ssize_t ignored = write(2, line, at);
    (void)ignored;
    _exit(3);
}
#endif

PyObject *
kd_catch_sigbus(PyObject *self, PyObject *unused)
{
    (void)self, (void)unused;
#if KD_HAVE_SIGBUS
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, NULL) != 0)
        return PyErr_SetFromErrno(PyExc_OSError);
    Py_RETURN_TRUE;
#else
    Py_RETURN_FALSE;
#endif
}


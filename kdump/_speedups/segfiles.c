/* clean_segment_files: a small segment and its .index / .timeindex read, the segment scanned
 * as one run of plain batches (scan.c's kd_plain_walk) and both index files proved clean
 * against it (indexcheck.c's kd_indexes_clean), in one call; the twin of
 * kdump/check/clean_segment.py, which says what the Python path would make of the same
 * files. Anything else (a file that cannot be read or is not regular, one above its bound or
 * cut while read, a batch the plain run does not take, an index entry that is not the usual
 * one) is None: Python reads the files again and decides. */

#include "speedups.h"

#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#define INT32_MAX_OFFSET ((int64_t)0x7fffffff)   /* a segment's offsets stay within an int32 of its base */

static unsigned char empty_file[1];     /* an empty file's bytes: there, unlike NULL (absent) */

/* A regular file's bytes, read whole when its size is at most ``max`` (and above 0 unless
 * ``empty_ok``): 1 with *data (PyMem_RawMalloc'd, or empty_file) and *len set; 0 otherwise,
 * the reason left to Python. Called without the GIL. */
static int
read_whole(const char *path, Py_ssize_t max, int empty_ok, unsigned char **data, Py_ssize_t *len)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    struct stat st;
    int ok = 0;
    unsigned char *buf = NULL;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size > (off_t)max || (st.st_size == 0 && !empty_ok))
        goto done;
    Py_ssize_t size = (Py_ssize_t)st.st_size, got = 0;
    if (size == 0) {
        buf = empty_file;
        ok = 1;
        goto done;
    }
    buf = PyMem_RawMalloc((size_t)size);
    if (buf == NULL)
        goto done;
    while (got < size) {
        ssize_t n = pread(fd, buf + got, (size_t)(size - got), (off_t)got);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            break;      /* an error, or cut while read: Python's located error */
        got += n;
    }
    ok = got == size;
done:
    close(fd);
    if (!ok && buf != empty_file)
        PyMem_RawFree(buf);
    if (ok) {
        *data = buf;
        *len = (Py_ssize_t)st.st_size;
    }
    return ok;
}

static void
free_whole(unsigned char *data)
{
    if (data != NULL && data != empty_file)
        PyMem_RawFree(data);
}

/* A path argument as the file system's bytes (NULL in *out for None): 0, or -1 when Python's
 * reading must decide (a name that does not encode). */
static int
path_of(PyObject *o, PyObject **out)
{
    *out = NULL;
    if (o == Py_None)
        return 0;
    if (!PyUnicode_FSConverter(o, out)) {
        PyErr_Clear();
        return -1;
    }
    return 0;
}

PyObject *
kd_clean_segment_files(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *log_o, *ix_o, *tx_o, *base_o, *max_size_o, *interval_o;
    Py_ssize_t max_log, max_side;
    if (kd_args(args, nargs, "clean_segment_files(log, index, timeindex, base, max_size, interval, max_log, max_side)",
                "OOOOOOnn", &log_o, &ix_o, &tx_o, &base_o, &max_size_o, &interval_o, &max_log, &max_side) < 0)
        return NULL;
    int64_t base, max_size, interval;
    if (log_o == Py_None || as_int64(base_o, &base) || base < 0 || as_int64(max_size_o, &max_size) ||
        as_int64(interval_o, &interval))
        Py_RETURN_NONE;
    PyObject *paths[3] = {NULL, NULL, NULL};
    PyObject *result = NULL, *epochs = NULL;
    unsigned char *data[3] = {NULL, NULL, NULL};
    Py_ssize_t len[3] = {0, 0, 0};
    if (path_of(log_o, &paths[0]) || path_of(ix_o, &paths[1]) || path_of(tx_o, &paths[2]))
        goto none;

    int read_log;
    Py_BEGIN_ALLOW_THREADS
    read_log = read_whole(PyBytes_AS_STRING(paths[0]), max_log, 0, &data[0], &len[0]);
    Py_END_ALLOW_THREADS
    if (!read_log)
        goto none;

    /* The scan: plain_start's run from byte 0, lo below the base, hi an int32 above it. */
    struct kd_plain_state st;
    kd_plain_state_init(&st, base - 1, base > INT64_MAX - INT32_MAX_OFFSET ? INT64_MAX : base + INT32_MAX_OFFSET,
                        max_size, interval);
    epochs = PyList_New(0);
    if (epochs == NULL)
        goto error;
    Py_ssize_t at = 0;
    if (kd_plain_walk(data[0], &at, len[0], PY_SSIZE_T_MAX, &st, epochs) < 0)
        goto error;
    if (at != len[0])
        goto none;

    /* The index files, each read only once the segment proved plain. */
    int read_sides = 1;
    Py_BEGIN_ALLOW_THREADS
    for (int i = 1; i < 3 && read_sides; i++)
        if (paths[i] != NULL)
            read_sides = read_whole(PyBytes_AS_STRING(paths[i]), max_side, 1, &data[i], &len[i]);
    Py_END_ALLOW_THREADS
    if (!read_sides || !kd_indexes_clean(data[0], len[0], base, data[1], len[1], data[2], len[2]))
        goto none;

    PyObject *state = kd_plain_state_tuple(&st, NULL);
    if (state == NULL)
        goto error;
    PyObject *sizes[2];
    for (int i = 0; i < 2; i++)
        sizes[i] = paths[i + 1] != NULL ? PyLong_FromSsize_t(len[i + 1]) : Py_NewRef(Py_None);
    if (sizes[0] == NULL || sizes[1] == NULL) {
        Py_XDECREF(sizes[0]);
        Py_XDECREF(sizes[1]);
        Py_DECREF(state);
        goto error;
    }
    result = Py_BuildValue("(nNNLNO)", len[0], sizes[0], sizes[1], (long long)(int64_t)be64(data[0]), state, epochs);
    goto done;
none:
    result = Py_NewRef(Py_None);
    goto done;
error:
    result = NULL;
done:
    for (int i = 0; i < 3; i++) {
        free_whole(data[i]);
        Py_XDECREF(paths[i]);
    }
    Py_XDECREF(epochs);
    return result;
}

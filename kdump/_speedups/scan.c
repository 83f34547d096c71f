/* scan_plain_run and find_candidate: the twins of _Scan.walk's fast path (kdump/check/scan.py)
 * with the broker's rules it calls (kdump/check/broker_rule.py), and of next_candidate
 * (kdump/check/resync.py) */

#include "speedups.h"

/*
 * The recovery scanner's fast path (kdump/check/scan.py, _Scan.walk) over a run of "plain" v2
 * batches, straight from the buffer: no Batch object per batch. The conditions are the Python
 * fast path's; the state moves as broker_rule.py's rules move it: IndexStep.would_throw and
 * IndexStep.take (the index step of LogSegment.recover), assign_epoch (the leader epoch
 * cache). The run stops, without consuming, at the first entry that is not plain or whose
 * index step would throw, and Python (Walker + the fast or slow path) takes over there.
 * Anything that does not fit in an int64 makes it consume nothing at all. The state tuple is
 * _Scan.plain_state's.
 */

#define PLAIN_STATE_FIELDS 10

/* An int64 from a Python int: 0 if it fits, +1 / -1 if it is above / below the int64
 * range, -2 if not an int. No exception is left set. */
static int
int64_or_overflow(PyObject *o, int64_t *out)
{
    if (!PyLong_Check(o))
        return -2;
    int overflow = 0;
    long long v = PyLong_AsLongLongAndOverflow(o, &overflow);
    if (v == -1 && PyErr_Occurred()) {
        PyErr_Clear();
        return -2;
    }
    if (overflow) {
        *out = overflow > 0 ? INT64_MAX : INT64_MIN;
        return overflow;
    }
    *out = (int64_t)v;
    return 0;
}

/* A bound only ever compared with int64 values: clamping it keeps every comparison exact. */
static int
int64_clamped(PyObject *o, int64_t *out)
{
    return int64_or_overflow(o, out) == -2 ? -1 : 0;
}

PyObject *
kd_scan_plain_run(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *buf_obj, *hi_obj, *max_size_obj, *interval_obj, *epochs, *state;
    Py_ssize_t pos, end, max_batches;
    if (kd_args(args, nargs, "scan_plain_run(buf, pos, end, max_batches, hi, max_size, interval, epochs, state)",
                "OnnnOOOOO", &buf_obj, &pos, &end, &max_batches, &hi_obj, &max_size_obj, &interval_obj, &epochs,
                &state) < 0)
        return NULL;
    if (!PyList_Check(epochs) || !PyTuple_Check(state) || PyTuple_GET_SIZE(state) != PLAIN_STATE_FIELDS) {
        PyErr_SetString(PyExc_TypeError, "scan_plain_run: epochs must be a list and state a tuple of 10");
        return NULL;
    }

    /* The state; any value outside int64 leaves everything to Python. */
    int64_t hi, max_size, interval, valid, last_entry_at, lo, prev_epoch, max_ts, max_ts_off, nb, records;
    int64_t index_last = 0, time_ts = 0, time_off = 0, last_epoch = 0;
    int has_index = 0, has_time = 0, has_epoch = 0, time_changed = 0;
    PyObject *const *s = &PyTuple_GET_ITEM(state, 0);
    int hi_state = int64_or_overflow(hi_obj, &hi);
    if (hi_state == -2 || hi_state == -1)      /* above int64 clamps exactly; below: no batch fits */
        Py_RETURN_NONE;
    if (int64_clamped(max_size_obj, &max_size) < 0 || int64_clamped(interval_obj, &interval) < 0)
        Py_RETURN_NONE;
    if (int64_or_overflow(s[0], &valid) || int64_or_overflow(s[1], &last_entry_at) ||
        int64_or_overflow(s[2], &lo) || int64_or_overflow(s[3], &prev_epoch) ||
        int64_or_overflow(s[4], &max_ts) || int64_or_overflow(s[5], &max_ts_off) ||
        int64_or_overflow(s[6], &nb) || int64_or_overflow(s[7], &records))
        Py_RETURN_NONE;
    if (s[8] != Py_None) {
        if (int64_or_overflow(s[8], &index_last))
            Py_RETURN_NONE;
        has_index = 1;
    }
    if (s[9] != Py_None) {
        if (!PyTuple_Check(s[9]) || PyTuple_GET_SIZE(s[9]) != 2 ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 0), &time_ts) ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 1), &time_off))
            Py_RETURN_NONE;
        has_time = 1;
    }
    Py_ssize_t n_epochs = PyList_GET_SIZE(epochs);
    if (n_epochs > 0) {
        PyObject *e = PyList_GET_ITEM(epochs, n_epochs - 1);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 1 || int64_or_overflow(PyTuple_GET_ITEM(e, 0), &last_epoch))
            Py_RETURN_NONE;
        has_epoch = 1;
    }

    Py_buffer view;
    if (kd_buffer(buf_obj, &view) != 0)
        Py_RETURN_NONE;
    const unsigned char *buf = (const unsigned char *)view.buf;
    end = kd_end(&view, end);
    const Py_ssize_t start = pos;

    /* Once the run is long, the GIL is let go for the rest of it (the loop touches no
     * Python object but the epochs list, for which it is taken back): the mapping's
     * trimmer thread (kdump/storage/mapped.py) keeps running meanwhile. The buffer export keeps
     * the memory valid. Short runs keep it, as most calls in a transactional segment stop
     * at once. */
    PyThreadState *released = NULL;
    Py_ssize_t done = 0;
    int64_t v[BATCH_FIELDS];
    while (done < max_batches) {
        if (released == NULL && pos - start >= KD_NOGIL_BYTES)
            released = PyEval_SaveThread();
        if (!kd_v2_at(buf, pos, end, v))
            break;
        /* Plain: lo < first <= last <= hi, size <= max, neither transactional nor control,
         * a known codec, 0 <= count <= last - first + 1, epoch not going down. */
        int64_t first = v[BF_BASE_OFFSET], last = v[BF_LAST_OFFSET], size = v[BF_SIZE], count = v[BF_COUNT];
        if (!(lo < first && first <= last && last <= hi) || size > max_size)
            break;
        int64_t attributes = v[BF_ATTRIBUTES];
        if ((attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG)) || (attributes & COMPRESSION_MASK) > 4)
            break;
        if (count < 0 || count > last - first + 1)
            break;
        int32_t epoch = (int32_t)v[BF_PARTITION_LEADER_EPOCH];
        if (epoch < prev_epoch)
            break;
        /* IndexStep.would_throw: those batches are Python's. */
        int64_t mts = v[BF_MAX_TIMESTAMP];
        int64_t m_ts = max_ts, m_off = max_ts_off, gap, new_valid, new_records;
        if (mts > max_ts) {
            m_ts = mts;
            m_off = last;
        }
        if (sub_overflows(valid, last_entry_at, &gap) || add_overflows(valid, size, &new_valid) ||
            add_overflows(records, count, &new_records) || nb == INT64_MAX)
            break;
        int due = gap > interval;
        if (due && ((has_index && last <= index_last) || (has_time && m_off < time_off)))
            break;
        /* The CRC last: it is the one expensive check. */
        if (!kd_v2_crc_valid(buf, v, released == NULL))
            break;
        /* Taken: IndexStep.take, then assign_epoch. */
        max_ts = m_ts;
        max_ts_off = m_off;
        if (due) {
            has_index = 1;
            index_last = last;
            if (max_ts > (has_time ? time_ts : -1)) {
                has_time = time_changed = 1;
                time_ts = max_ts;
                time_off = max_ts_off;
            }
            last_entry_at = valid;
        }
        if (epoch > prev_epoch) {
            if (!has_epoch || epoch > last_epoch) {
                if (released != NULL)
                    PyEval_RestoreThread(released);
                released = NULL;
                PyObject *pair = Py_BuildValue("(iL)", (int)epoch, (long long)first);
                if (pair == NULL || PyList_Append(epochs, pair) < 0) {
                    Py_XDECREF(pair);
                    PyBuffer_Release(&view);
                    return NULL;
                }
                Py_DECREF(pair);
                has_epoch = 1;
                last_epoch = epoch;
            }
            prev_epoch = epoch;
        }
        valid = new_valid;
        nb += 1;
        records = new_records;
        lo = last;
        pos += (Py_ssize_t)size;
        done++;
    }
    if (released != NULL)
        PyEval_RestoreThread(released);
    PyBuffer_Release(&view);
    if (pos == start)
        Py_RETURN_NONE;

    PyObject *time_last;
    if (!has_time)
        time_last = Py_NewRef(Py_None);
    else if (!time_changed)
        time_last = Py_NewRef(s[9]);
    else
        time_last = Py_BuildValue("(LL)", (long long)time_ts, (long long)time_off);
    if (time_last == NULL)
        return NULL;
    PyObject *index_obj = has_index ? PyLong_FromLongLong(index_last) : Py_NewRef(Py_None);
    if (index_obj == NULL) {
        Py_DECREF(time_last);
        return NULL;
    }
    return Py_BuildValue("n(LLLLLLLLNN)", pos, (long long)valid, (long long)last_entry_at, (long long)lo,
                         (long long)prev_epoch, (long long)max_ts, (long long)max_ts_off, (long long)nb,
                         (long long)records, index_obj, time_last);
}

/* ------------------------------------------------------------------------------------ */
/* find_candidate                                                                        */
/* ------------------------------------------------------------------------------------ */

/*
 * The resync's search (kdump/check/scan.py next_candidate): the first position p >= pos with
 * p + 8 < end where buf[p] <= top (the high byte of a plausible length) and buf[p + 8] <= 2
 * (a magic), the match of the regular expression [\x00-top].{7}[\x00-\x02] that Python
 * uses without the accelerator; -1 if there is none. Random bytes are read at memchr
 * speed when top is 0 (a maximum size below 16 MiB), byte by byte otherwise.
 */
PyObject *
kd_find_candidate(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer view;
    Py_ssize_t pos, end, top;
    if (kd_args(args, nargs, "find_candidate(buf, pos, end, top)", "Ynnn", &view, &pos, &end, &top) < 0)
        return NULL;
    const unsigned char *b = (const unsigned char *)view.buf;
    end = kd_end(&view, end);
    if (pos < 0)
        pos = 0;
    Py_ssize_t found = -1;
    if (top >= 0 && end - pos > 8) {
        const Py_ssize_t last = end - 9;       /* the last p with p + 8 < end */
        unsigned char hi = top > 255 ? 255 : (unsigned char)top;
        Py_BEGIN_ALLOW_THREADS
        Py_ssize_t p = pos;
        while (p <= last) {
            if (hi == 0) {
                const unsigned char *z = memchr(b + p, 0, (size_t)(last - p + 1));
                if (z == NULL)
                    break;
                p = z - b;
            } else if (b[p] > hi) {
                p++;
                continue;
            }
            if (b[p + 8] <= 2) {
                found = p;
                break;
            }
            p++;
        }
        Py_END_ALLOW_THREADS
    }
    PyBuffer_Release(&view);
    return PyLong_FromSsize_t(found);
}


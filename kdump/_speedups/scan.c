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

/* The run of plain batches from *at, the state moved as it goes (kd_plain_state, speedups.h)
 * and *at to where it stopped (unmoved: nothing taken): 0, or -1 with an exception set (the
 * epochs list could not grow). At most max_batches batches; the GIL is held on entry and on
 * return. */
int
kd_plain_walk(const unsigned char *buf, Py_ssize_t *at, Py_ssize_t end, Py_ssize_t max_batches,
              struct kd_plain_state *st, PyObject *epochs)
{
    Py_ssize_t pos = *at;
    const Py_ssize_t start = pos;
    /* Once the run is long, the GIL is let go for the rest of it (the loop touches no
     * Python object but the epochs list, for which it is taken back): the mapping's
     * trimmer thread (kdump/storage/mapped.py) keeps running meanwhile. The caller's buffer
     * export keeps the memory valid. Short runs keep it, as most calls in a transactional
     * segment stop at once. */
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
        if (!(st->lo < first && first <= last && last <= st->hi) || size > st->max_size)
            break;
        int64_t attributes = v[BF_ATTRIBUTES];
        if ((attributes & (TRANSACTIONAL_FLAG | CONTROL_FLAG)) || (attributes & COMPRESSION_MASK) > 4)
            break;
        if (count < 0 || count > last - first + 1)
            break;
        int32_t epoch = (int32_t)v[BF_PARTITION_LEADER_EPOCH];
        if (epoch < st->prev_epoch)
            break;
        /* IndexStep.would_throw: those batches are Python's. */
        int64_t mts = v[BF_MAX_TIMESTAMP];
        int64_t m_ts = st->max_ts, m_off = st->max_ts_off, gap, new_valid, new_records;
        if (mts > st->max_ts) {
            m_ts = mts;
            m_off = last;
        }
        if (sub_overflows(st->valid, st->last_entry_at, &gap) || add_overflows(st->valid, size, &new_valid) ||
            add_overflows(st->records, count, &new_records) || st->batches == INT64_MAX)
            break;
        int due = gap > st->interval;
        if (due && ((st->has_index && last <= st->index_last) || (st->has_time && m_off < st->time_off)))
            break;
        /* The CRC last: it is the one expensive check. */
        if (!kd_v2_crc_valid(buf, v, released == NULL))
            break;
        /* Taken: IndexStep.take, then assign_epoch. */
        st->max_ts = m_ts;
        st->max_ts_off = m_off;
        if (due) {
            st->has_index = 1;
            st->index_last = last;
            if (st->max_ts > (st->has_time ? st->time_ts : -1)) {
                st->has_time = st->time_changed = 1;
                st->time_ts = st->max_ts;
                st->time_off = st->max_ts_off;
            }
            st->last_entry_at = st->valid;
        }
        if (epoch > st->prev_epoch) {
            if (!st->has_epoch || epoch > st->last_epoch) {
                if (released != NULL)
                    PyEval_RestoreThread(released);
                released = NULL;
                PyObject *pair = Py_BuildValue("(iL)", (int)epoch, (long long)first);
                if (pair == NULL || PyList_Append(epochs, pair) < 0) {
                    Py_XDECREF(pair);
                    *at = pos;
                    return -1;
                }
                Py_DECREF(pair);
                st->has_epoch = 1;
                st->last_epoch = epoch;
            }
            st->prev_epoch = epoch;
        }
        st->valid = new_valid;
        st->batches += 1;
        st->records = new_records;
        st->lo = last;
        pos += (Py_ssize_t)size;
        done++;
    }
    if (released != NULL)
        PyEval_RestoreThread(released);
    *at = pos;
    return 0;
}

PyObject *
kd_plain_state_tuple(const struct kd_plain_state *st, PyObject *time_before)
{
    PyObject *time_last;
    if (!st->has_time)
        time_last = Py_NewRef(Py_None);
    else if (!st->time_changed && time_before != NULL)
        time_last = Py_NewRef(time_before);
    else
        time_last = Py_BuildValue("(LL)", (long long)st->time_ts, (long long)st->time_off);
    if (time_last == NULL)
        return NULL;
    PyObject *index_obj = st->has_index ? PyLong_FromLongLong(st->index_last) : Py_NewRef(Py_None);
    if (index_obj == NULL) {
        Py_DECREF(time_last);
        return NULL;
    }
    return Py_BuildValue("(LLLLLLLLNN)", (long long)st->valid, (long long)st->last_entry_at, (long long)st->lo,
                         (long long)st->prev_epoch, (long long)st->max_ts, (long long)st->max_ts_off,
                         (long long)st->batches, (long long)st->records, index_obj, time_last);
}

void
kd_plain_state_init(struct kd_plain_state *st, int64_t lo, int64_t hi, int64_t max_size, int64_t interval)
{
    memset(st, 0, sizeof *st);
    st->lo = lo;
    st->hi = hi;
    st->max_size = max_size;
    st->interval = interval;
    st->prev_epoch = -1;
    st->max_ts = st->max_ts_off = -1;      /* IndexStep's NO_TIMESTAMP, and no offset */
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
    struct kd_plain_state st;
    int64_t hi, max_size, interval;
    PyObject *const *s = &PyTuple_GET_ITEM(state, 0);
    int hi_state = int64_or_overflow(hi_obj, &hi);
    if (hi_state == -2 || hi_state == -1)      /* above int64 clamps exactly; below: no batch fits */
        Py_RETURN_NONE;
    if (int64_clamped(max_size_obj, &max_size) < 0 || int64_clamped(interval_obj, &interval) < 0)
        Py_RETURN_NONE;
    kd_plain_state_init(&st, 0, hi, max_size, interval);
    if (int64_or_overflow(s[0], &st.valid) || int64_or_overflow(s[1], &st.last_entry_at) ||
        int64_or_overflow(s[2], &st.lo) || int64_or_overflow(s[3], &st.prev_epoch) ||
        int64_or_overflow(s[4], &st.max_ts) || int64_or_overflow(s[5], &st.max_ts_off) ||
        int64_or_overflow(s[6], &st.batches) || int64_or_overflow(s[7], &st.records))
        Py_RETURN_NONE;
    if (s[8] != Py_None) {
        if (int64_or_overflow(s[8], &st.index_last))
            Py_RETURN_NONE;
        st.has_index = 1;
    }
    if (s[9] != Py_None) {
        if (!PyTuple_Check(s[9]) || PyTuple_GET_SIZE(s[9]) != 2 ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 0), &st.time_ts) ||
            int64_or_overflow(PyTuple_GET_ITEM(s[9], 1), &st.time_off))
            Py_RETURN_NONE;
        st.has_time = 1;
    }
    Py_ssize_t n_epochs = PyList_GET_SIZE(epochs);
    if (n_epochs > 0) {
        PyObject *e = PyList_GET_ITEM(epochs, n_epochs - 1);
        if (!PyTuple_Check(e) || PyTuple_GET_SIZE(e) < 1 ||
            int64_or_overflow(PyTuple_GET_ITEM(e, 0), &st.last_epoch))
            Py_RETURN_NONE;
        st.has_epoch = 1;
    }

    Py_buffer view;
    if (kd_buffer(buf_obj, &view) != 0)
        Py_RETURN_NONE;
    end = kd_end(&view, end);
    Py_ssize_t at = pos;
    int failed = kd_plain_walk((const unsigned char *)view.buf, &at, end, max_batches, &st, epochs);
    PyBuffer_Release(&view);
    if (failed)
        return NULL;
    if (at == pos)
        Py_RETURN_NONE;
    PyObject *out_state = kd_plain_state_tuple(&st, s[9]);
    return out_state == NULL ? NULL : Py_BuildValue("nN", at, out_state);
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


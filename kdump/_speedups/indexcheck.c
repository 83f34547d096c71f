/* index_clean: the proof, straight from the bytes, that a segment's .index and .timeindex
 * give no finding; the twin of the usual-entry paths of OffsetIndexCheck.run and
 * TimeIndexCheck.run (kdump/check/indexes/offset_index.py, time_index.py) with what their
 * constructors and close() ask of the files (index_file.py: file_findings, live_entries). */

#include "speedups.h"

#define INDEX_SLOT 8
#define TIME_SLOT 12
#define NO_TIMESTAMP (-1)     /* format/batch.py: a batch without timestamps */

static int
slot_is_zero(const unsigned char *p, Py_ssize_t size)
{
    for (Py_ssize_t i = 0; i < size; i++)
        if (p[i])
            return 0;
    return 1;
}

/* The entries of a slot file as index.slot_layout and index_file.live_entries count them:
 * the slots before the first all-zero slot past slot 0, none when the file is one zero slot
 * and zeros. -1 when the file alone is a finding (a torn last slot, a non-zero slot after
 * the zero tail). ``trimmed``: no zero tail (the time index's roll/close entry is due). */
static Py_ssize_t
live_slots(const unsigned char *p, Py_ssize_t len, Py_ssize_t size, int *trimmed)
{
    if (len % size)
        return -1;
    Py_ssize_t n = len / size, tail = 1;
    while (tail < n && !slot_is_zero(p + tail * size, size))
        tail++;
    *trimmed = tail >= n;
    if (*trimmed)
        return n;
    for (Py_ssize_t j = tail + 1; j < n; j++)
        if (!slot_is_zero(p + j * size, size))
            return -1;
    return tail == 1 && slot_is_zero(p, size) ? 0 : tail;
}

/* One side file's buffer, or none for None (not there: nothing to check). 1 when held, 0
 * for None, -1 when it is not a flat buffer (Python checks it). */
static int
side_buffer(PyObject *o, Py_buffer *view)
{
    if (o == Py_None)
        return 0;
    return kd_buffer(o, view) == 0 ? 1 : -1;
}

/*
 * True when neither index file has a finding against the v2 batches framed in buf[0:end]:
 * every .index entry at the start of its own batch holding that batch's last offset, every
 * .timeindex entry at its own batch's last offset with that batch's max timestamp, the
 * running max; entries strictly rising, none past the end, the roll/close entry of a
 * trimmed time index there. False for anything else (another framing, a legacy batch, an
 * entry of another convention): Python's check decides, and may find nothing either.
 */
int
kd_indexes_clean(const unsigned char *log, Py_ssize_t end, int64_t base, const unsigned char *ix, Py_ssize_t ix_len,
              const unsigned char *tx, Py_ssize_t tx_len)
{
    int ix_trimmed = 0, tx_trimmed = 0;
    Py_ssize_t n_ix = ix == NULL ? 0 : live_slots(ix, ix_len, INDEX_SLOT, &ix_trimmed);
    Py_ssize_t n_tx = tx == NULL ? 0 : live_slots(tx, tx_len, TIME_SLOT, &tx_trimmed);
    if (n_ix < 0 || n_tx < 0)
        return 0;
    /* What the constructors find alone: an entry below the base, out of order, going back. */
    for (Py_ssize_t i = 0; i < n_ix; i++) {
        int32_t rel = (int32_t)be32(ix + i * INDEX_SLOT), at = (int32_t)be32(ix + i * INDEX_SLOT + 4);
        if (rel < 0 || at < 0)
            return 0;
        if (i > 0 && (rel <= (int32_t)be32(ix + (i - 1) * INDEX_SLOT) || at <= (int32_t)be32(ix + (i - 1) * INDEX_SLOT + 4)))
            return 0;
    }
    for (Py_ssize_t i = 0; i < n_tx; i++) {
        int32_t rel = (int32_t)be32(tx + i * TIME_SLOT + 8);
        if (rel < 0)
            return 0;
        if (i > 0 && (rel <= (int32_t)be32(tx + (i - 1) * TIME_SLOT + 8) ||
                      (int64_t)be64(tx + i * TIME_SLOT) < (int64_t)be64(tx + (i - 1) * TIME_SLOT)))
            return 0;
    }
    /* The walk: each batch takes at most one entry of each file, the usual one. */
    Py_ssize_t pos = 0, k = 0, t = 0;
    int64_t max_ts = NO_TIMESTAMP, v[BATCH_FIELDS];
    while (pos < end) {
        if (!kd_v2_at(log, pos, end, v))
            return 0;
        int64_t first = v[BF_BASE_OFFSET], last = v[BF_LAST_OFFSET], mt = v[BF_MAX_TIMESTAMP], rel_last;
        Py_ssize_t batch_end = pos + (Py_ssize_t)v[BF_SIZE];
        if (sub_overflows(last, base, &rel_last))
            return 0;
        if (k < n_ix && (int32_t)be32(ix + k * INDEX_SLOT + 4) < batch_end) {
            if ((int32_t)be32(ix + k * INDEX_SLOT + 4) != pos || (int32_t)be32(ix + k * INDEX_SLOT) != rel_last ||
                first > last)
                return 0;
            k++;
            if (k < n_ix && (int32_t)be32(ix + k * INDEX_SLOT + 4) < batch_end)
                return 0;
        }
        if (mt > max_ts)
            max_ts = mt;
        if (t < n_tx && (int32_t)be32(tx + t * TIME_SLOT + 8) <= rel_last) {
            if ((int32_t)be32(tx + t * TIME_SLOT + 8) != rel_last || first > last ||
                (int64_t)be64(tx + t * TIME_SLOT) != mt || mt != max_ts)
                return 0;
            t++;
            if (t < n_tx && (int32_t)be32(tx + t * TIME_SLOT + 8) <= rel_last)
                return 0;
        }
        pos = batch_end;
    }
    if (k < n_ix || t < n_tx)
        return 0;       /* entries past the end */
    /* A trimmed time index ends with the log's largest timestamp (its entries rise to it). */
    if (tx != NULL && tx_trimmed && max_ts > NO_TIMESTAMP &&
        (n_tx == 0 || (int64_t)be64(tx + (n_tx - 1) * TIME_SLOT) < max_ts))
        return 0;
    return 1;
}

PyObject *
kd_index_clean(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    Py_buffer log, ix = {0}, tx = {0};
    Py_ssize_t end;
    int64_t base;
    PyObject *base_obj, *ix_obj, *tx_obj;
    int got = kd_args(args, nargs, "index_clean(log, end, base, index, timeindex)", "ynOOO", &log, &end, &base_obj,
                      &ix_obj, &tx_obj);
    if (got < 0)
        return NULL;
    int clean = 0;
    /* (a base outside int64 is Python's) */
    int has_ix = got == 0 && as_int64(base_obj, &base) == 0 ? side_buffer(ix_obj, &ix) : -1;
    int has_tx = has_ix >= 0 ? side_buffer(tx_obj, &tx) : -1;
    if (has_ix >= 0 && has_tx >= 0 && end >= 0)
        clean = kd_indexes_clean((const unsigned char *)log.buf, kd_end(&log, end), base,
                              has_ix ? (const unsigned char *)ix.buf : NULL, has_ix ? ix.len : 0,
                              has_tx ? (const unsigned char *)tx.buf : NULL, has_tx ? tx.len : 0);
    if (has_ix > 0)
        PyBuffer_Release(&ix);
    if (has_tx > 0)
        PyBuffer_Release(&tx);
    PyBuffer_Release(&log);
    return PyBool_FromLong(clean);
}

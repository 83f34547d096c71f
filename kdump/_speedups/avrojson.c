/* avro_json: kdump/schemas/avro_text.py's compiled reader in C: an Avro datum straight into
 * the JSON text json.dumps(avro.to_json(fastavro's value)) gives, from a program that
 * avro_text.native_program() builds from the writer schema (nested lists, op code first).
 * Anything unusual (bytes that do not match, values Python would make big ints or reject,
 * a UUID not in canonical form, dates outside 1..9999) returns None: Python reruns it. */

#include "speedups.h"

#include <math.h>

enum { OP_NULL, OP_BOOL, OP_INT, OP_LONG, OP_FLOAT, OP_DOUBLE, OP_BYTES, OP_STRING, OP_FIXED, OP_ENUM,
       OP_RECORD, OP_ARRAY, OP_UNION, OP_TS_MILLIS, OP_TS_MICROS, OP_DATE, OP_DEC_BYTES, OP_DEC_FIXED, OP_UUID };

#define BAIL 1          /* hand the record back to Python */
#define FAIL (-1)       /* a Python exception is set */
#define MAX_DEPTH 200

typedef struct { char *buf; Py_ssize_t len, cap, limit; } Out;     /* limit: the output budget */
typedef struct { const unsigned char *d; Py_ssize_t n, p; } In;

static int
put(Out *o, const char *s, Py_ssize_t n)
{
    if (n > o->limit - o->len)
        return BAIL;                          /* past the output budget: Python says where */
    if (o->len + n > o->cap) {
        Py_ssize_t cap = o->cap ? o->cap : 256;
        while (cap < o->len + n)
            cap *= 2;
        char *b = PyMem_Realloc(o->buf, (size_t)cap);
        if (b == NULL) {
            PyErr_NoMemory();
            return FAIL;
        }
        o->buf = b;
        o->cap = cap;
    }
    memcpy(o->buf + o->len, s, (size_t)n);
    o->len += n;
    return 0;
}

#define PUT(o, s, n) do { int _p = put((o), (s), (n)); if (_p) return _p; } while (0)   /* BAIL or FAIL */
#define PUTS(o, s) PUT(o, s, (Py_ssize_t)strlen(s))
#define TRY(x) do { int _r = (x); if (_r) return _r; } while (0)

static int
rd_long(In *in, int64_t *v)
{
    uint64_t u = 0;
    int shift = 0;
    for (;;) {
        if (in->p >= in->n)
            return BAIL;
        unsigned b = in->d[in->p++];
        if (shift == 63 && (b & 0x7e))
            return BAIL;                      /* past 64 bits: Python would make a big int */
        u |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            break;
        shift += 7;
        if (shift > 63)
            return BAIL;
    }
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return 0;
}

/* Strict UTF-8 (as bytes.decode() checks it), written as json.dumps(ensure_ascii=False) writes a str. */
static int
put_string(Out *o, const unsigned char *s, Py_ssize_t n)
{
    static const char hex[] = "0123456789abcdef";
    PUT(o, "\"", 1);
    Py_ssize_t i = 0, run = 0;
    while (i < n) {
        unsigned c = s[i];
        if (c >= 0x20 && c < 0x80 && c != '"' && c != '\\') {
            i++;
            continue;
        }
        if (c >= 0x80) {
            int k;
            if (c >= 0xc2 && c <= 0xdf)
                k = 1;
            else if (c >= 0xe0 && c <= 0xef)
                k = 2;
            else if (c >= 0xf0 && c <= 0xf4)
                k = 3;
            else
                return BAIL;
            if (i + k >= n)
                return BAIL;
            for (int j = 1; j <= k; j++)
                if ((s[i + j] & 0xc0) != 0x80)
                    return BAIL;
            unsigned c1 = s[i + 1];
            if ((c == 0xe0 && c1 < 0xa0) || (c == 0xed && c1 > 0x9f) || (c == 0xf0 && c1 < 0x90) ||
                (c == 0xf4 && c1 > 0x8f))
                return BAIL;
            i += k + 1;
            continue;
        }
        PUT(o, (const char *)s + run, i - run);
        char esc[7];
        switch (c) {
        case '"': PUT(o, "\\\"", 2); break;
        case '\\': PUT(o, "\\\\", 2); break;
        case '\n': PUT(o, "\\n", 2); break;
        case '\r': PUT(o, "\\r", 2); break;
        case '\t': PUT(o, "\\t", 2); break;
        case '\b': PUT(o, "\\b", 2); break;
        case '\f': PUT(o, "\\f", 2); break;
        default:
            esc[0] = '\\'; esc[1] = 'u'; esc[2] = '0'; esc[3] = '0';
            esc[4] = hex[c >> 4]; esc[5] = hex[c & 15];
            PUT(o, esc, 6);
        }
        i++;
        run = i;
    }
    PUT(o, (const char *)s + run, n - run);
    PUT(o, "\"", 1);
    return 0;
}

/* Base64 in pieces through put (speedups.h kd_put_base64). */
static int
put_base64(Out *o, const unsigned char *s, Py_ssize_t n)
{
    char piece[1024];
    PUT(o, "\"", 1);
    for (Py_ssize_t i = 0; i < n; i += 768)
        PUT(o, piece, kd_put_base64(piece, s + i, n - i < 768 ? n - i : 768) - piece);
    PUT(o, "\"", 1);
    return 0;
}

static int
put_double(Out *o, double x)
{
    if (isnan(x)) {
        PUTS(o, "\"NaN\"");
        return 0;
    }
    if (isinf(x)) {
        PUTS(o, x > 0 ? "\"Infinity\"" : "\"-Infinity\"");
        return 0;
    }
    char *s = PyOS_double_to_string(x, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (s == NULL)
        return FAIL;
    int r = put(o, s, (Py_ssize_t)strlen(s));
    PyMem_Free(s);
    return r;
}

/* Days since 1970-01-01 to a civil date (proleptic Gregorian). */
static void
civil(int64_t z, int *y, int *m, int *d)
{
    z += 719468;
    int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    int64_t doe = z - era * 146097;
    int64_t yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    int64_t doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    int64_t mp = (5 * doy + 2) / 153;
    *d = (int)(doy - (153 * mp + 2) / 5 + 1);
    *m = (int)(mp < 10 ? mp + 3 : mp - 9);
    *y = (int)(yoe + era * 400 + (*m <= 2));
}

#define DAY_US INT64_C(86400000000)
#define MIN_US (-INT64_C(62135596800000000))          /* 0001-01-01T00:00:00 */
#define MAX_US INT64_C(253402300799999999)            /* 9999-12-31T23:59:59.999999 */

static int
put_timestamp(Out *o, int64_t us)
{
    if (us < MIN_US || us > MAX_US)
        return BAIL;
    int64_t days = us / DAY_US, rem = us % DAY_US;
    if (rem < 0) {
        rem += DAY_US;
        days--;
    }
    int y, m, d;
    civil(days, &y, &m, &d);
    int64_t secs = rem / 1000000, frac = rem % 1000000;
    char b[48];
    int n = snprintf(b, sizeof b, "\"%04d-%02d-%02dT%02d:%02d:%02d", y, m, d, (int)(secs / 3600),
                     (int)(secs / 60 % 60), (int)(secs % 60));
    if (frac)
        n += snprintf(b + n, sizeof b - (size_t)n, ".%06d", (int)frac);
    b[n++] = 'Z';
    b[n++] = '"';
    PUT(o, b, n);
    return 0;
}

static int
put_decimal(Out *o, const unsigned char *s, Py_ssize_t n, long precision, long scale)
{
    if (n < 1 || n > 16 || precision < 1 || scale < 0 || scale > 38)
        return BAIL;
    __int128 v = (s[0] & 0x80) ? -1 : 0;
    for (Py_ssize_t i = 0; i < n; i++)
        v = (__int128)(((unsigned __int128)v << 8) | s[i]);
    int neg = v < 0;
    unsigned __int128 u = neg ? (unsigned __int128)(-(v + 1)) + 1 : (unsigned __int128)v;
    char digits[48];
    int nd = 0;
    do {
        digits[nd++] = (char)('0' + (int)(u % 10));
        u /= 10;
    } while (u);
    if (nd > precision || nd > 28)
        return BAIL;                 /* the decimal context would round it: Python's way */
    char b[96];
    int k = 0;
    b[k++] = '"';
    if (neg)
        b[k++] = '-';
    int total = nd > scale ? nd : (int)scale + 1;     /* digits written, zero-padded on the left */
    for (int i = total - 1; i >= 0; i--) {
        b[k++] = i < nd ? digits[i] : '0';
        if (i == scale && scale > 0)
            b[k++] = '.';
    }
    b[k++] = '"';
    PUT(o, b, k);
    return 0;
}

static long
item_long(PyObject *node, Py_ssize_t i)
{
    return PyLong_AsLong(PyList_GET_ITEM(node, i));
}

static int
walk(PyObject *node, In *in, Out *o, int depth)
{
    if (depth > MAX_DEPTH || !PyList_Check(node) || PyList_GET_SIZE(node) < 1)
        return BAIL;
    int64_t v;
    switch ((int)item_long(node, 0)) {
    case OP_NULL:
        PUTS(o, "null");
        return 0;
    case OP_BOOL:
        if (in->p >= in->n || in->d[in->p] > 1)
            return BAIL;
        if (in->d[in->p++])
            PUTS(o, "true");
        else
            PUTS(o, "false");
        return 0;
    case OP_INT:
    case OP_LONG: {
        TRY(rd_long(in, &v));
        if ((int)item_long(node, 0) == OP_INT && (v < INT32_MIN || v > INT32_MAX))
            return BAIL;
        char b[24];
        int n = snprintf(b, sizeof b, "%lld", (long long)v);
        PUT(o, b, n);
        return 0;
    }
    case OP_FLOAT: {
        if (in->n - in->p < 4)
            return BAIL;
        const unsigned char *b = in->d + in->p;
        uint32_t bits = (uint32_t)b[0] | ((uint32_t)b[1] << 8) | ((uint32_t)b[2] << 16) | ((uint32_t)b[3] << 24);
        float f;
        memcpy(&f, &bits, 4);                   /* Avro floats are little-endian IEEE 754 */
        in->p += 4;
        return put_double(o, (double)f);
    }
    case OP_DOUBLE: {
        if (in->n - in->p < 8)
            return BAIL;
        const unsigned char *b = in->d + in->p;
        uint64_t bits = 0;
        for (int i = 7; i >= 0; i--)
            bits = (bits << 8) | b[i];
        double x;
        memcpy(&x, &bits, 8);
        in->p += 8;
        return put_double(o, x);
    }
    case OP_BYTES:
    case OP_STRING:
    case OP_DEC_BYTES:
    case OP_UUID: {
        TRY(rd_long(in, &v));
        if (v < 0 || v > in->n - in->p)
            return BAIL;
        const unsigned char *s = in->d + in->p;
        in->p += (Py_ssize_t)v;
        int op = (int)item_long(node, 0);
        if (op == OP_STRING)
            return put_string(o, s, (Py_ssize_t)v);
        if (op == OP_BYTES)
            return put_base64(o, s, (Py_ssize_t)v);
        if (op == OP_DEC_BYTES)
            return put_decimal(o, s, (Py_ssize_t)v, item_long(node, 1), item_long(node, 2));
        if (v != 36)
            return BAIL;                       /* a UUID not in canonical form: Python's UUID() */
        for (int i = 0; i < 36; i++) {
            unsigned c = s[i];
            int dash = i == 8 || i == 13 || i == 18 || i == 23;
            if (dash ? c != '-' : !((c >= '0' && c <= '9') || (c >= 'a' && c <= 'f')))
                return BAIL;
        }
        PUT(o, "\"", 1);
        PUT(o, (const char *)s, 36);
        PUT(o, "\"", 1);
        return 0;
    }
    case OP_FIXED:
    case OP_DEC_FIXED: {
        long size = item_long(node, 1);
        if (size < 0 || size > in->n - in->p)
            return BAIL;
        const unsigned char *s = in->d + in->p;
        in->p += size;
        if ((int)item_long(node, 0) == OP_FIXED)
            return put_base64(o, s, size);
        return put_decimal(o, s, size, item_long(node, 2), item_long(node, 3));
    }
    case OP_ENUM: {
        PyObject *syms = PyList_GET_ITEM(node, 1);
        TRY(rd_long(in, &v));
        if (v < 0 || v >= PyTuple_GET_SIZE(syms))
            return BAIL;
        PyObject *t = PyTuple_GET_ITEM(syms, (Py_ssize_t)v);
        PUT(o, PyBytes_AS_STRING(t), PyBytes_GET_SIZE(t));
        return 0;
    }
    case OP_RECORD: {
        PyObject *prefixes = PyList_GET_ITEM(node, 1), *fields = PyList_GET_ITEM(node, 2);
        for (Py_ssize_t i = 0; i < PyTuple_GET_SIZE(fields); i++) {
            PyObject *p = PyTuple_GET_ITEM(prefixes, i);
            PUT(o, PyBytes_AS_STRING(p), PyBytes_GET_SIZE(p));
            TRY(walk(PyTuple_GET_ITEM(fields, i), in, o, depth + 1));
        }
        PyObject *close = PyList_GET_ITEM(node, 3);
        PUT(o, PyBytes_AS_STRING(close), PyBytes_GET_SIZE(close));
        return 0;
    }
    case OP_ARRAY: {
        PyObject *item = PyList_GET_ITEM(node, 1);
        int first = 1;
        PUT(o, "[", 1);
        for (;;) {
            int64_t count;
            TRY(rd_long(in, &count));
            if (count == 0)
                break;
            if (count < 0) {
                if (count == INT64_MIN)
                    return BAIL;
                count = -count;
                TRY(rd_long(in, &v));
            }
            if (count > 1000000 && count > in->n - in->p)
                return BAIL;
            for (int64_t i = 0; i < count; i++) {
                if (!first)
                    PUT(o, ",", 1);
                first = 0;
                TRY(walk(item, in, o, depth + 1));
            }
        }
        PUT(o, "]", 1);
        return 0;
    }
    case OP_UNION: {
        PyObject *branches = PyList_GET_ITEM(node, 1);
        TRY(rd_long(in, &v));
        if (v < 0 || v >= PyTuple_GET_SIZE(branches))
            return BAIL;
        return walk(PyTuple_GET_ITEM(branches, (Py_ssize_t)v), in, o, depth + 1);
    }
    case OP_TS_MILLIS:
    case OP_TS_MICROS: {
        TRY(rd_long(in, &v));
        int64_t us = v;
        if ((int)item_long(node, 0) == OP_TS_MILLIS && __builtin_mul_overflow(v, 1000, &us))
            return BAIL;
        return put_timestamp(o, us);
    }
    case OP_DATE: {
        TRY(rd_long(in, &v));
        if (v < INT32_MIN || v > INT32_MAX || v < -719162 || v > 2932896)
            return BAIL;
        int y, m, d;
        civil(v, &y, &m, &d);
        char b[16];
        int n = snprintf(b, sizeof b, "\"%04d-%02d-%02d\"", y, m, d);
        PUT(o, b, n);
        return 0;
    }
    }
    return BAIL;
}

PyObject *
kd_avro_json(PyObject *self, PyObject *const *args, Py_ssize_t nargs)
{
    (void)self;
    PyObject *program, *data;
    Py_ssize_t pos, limit;
    static const char usage[] = "avro_json(program, data: bytes, pos, limit)";
    if (kd_args(args, nargs, usage, "OOnn", &program, &data, &pos, &limit) < 0)
        return NULL;
    if (!PyBytes_Check(data)) {
        PyErr_SetString(PyExc_TypeError, usage);
        return NULL;
    }
    In in = {(const unsigned char *)PyBytes_AS_STRING(data), PyBytes_GET_SIZE(data), pos};
    if (pos < 0 || pos > in.n)
        Py_RETURN_NONE;
    Out o = {NULL, 0, 0, limit < 0 ? 0 : limit};
    int r = walk(program, &in, &o, 0);
    if (r == FAIL || PyErr_Occurred()) {
        PyMem_Free(o.buf);
        return NULL;
    }
    if (r == BAIL) {
        PyMem_Free(o.buf);
        Py_RETURN_NONE;
    }
    PyObject *text = PyUnicode_DecodeUTF8(o.buf ? o.buf : "", o.len, "strict");
    PyMem_Free(o.buf);
    if (text == NULL)
        return NULL;
    return Py_BuildValue("(Nn)", text, in.p);
}

/* CRC-32C and CRC-32: the twin of kdump/format/crc.py */

#include "speedups.h"

/* SSE4.2 CRC-32C on x86-64 with GCC or clang (checked at run time); -DKDUMP_NO_HW_CRC
 * builds the portable table-driven code only, as on every other platform. */
#if (defined(__GNUC__) || defined(__clang__)) && defined(__x86_64__) && !defined(KDUMP_NO_HW_CRC)
#  define KD_HAVE_SSE42 1
#  include <nmmintrin.h>
#else
#  define KD_HAVE_SSE42 0
#endif

/* ------------------------------------------------------------------------------------ */
/* CRC-32C (Castagnoli, reflected polynomial 0x82F63B78)                                 */
/*                                                                                       */
/* All the internal functions work on the raw register: callers invert on entry and     */
/* exit. Software: slicing-by-8 tables. SSE4.2: three independent streams over adjacent   */
/* blocks (the crc32 instruction has a latency of ~3 cycles but a throughput of 1), then  */
/* the first two are moved past the following blocks with a "append N zero bytes"         */
/* operator, which is linear and so tabulated per byte of the register.                   */
/* ------------------------------------------------------------------------------------ */

#define CRC32C_POLY 0x82F63B78u
#define CRC32_POLY 0xEDB88320u     /* IEEE CRC-32 (zlib's), for legacy v0/v1 messages */

typedef uint32_t crc_table[8][256];

static crc_table crc_tab;          /* CRC-32C */
static crc_table crc32_tab;        /* CRC-32 */

static void
crc_tables_fill(crc_table tab, uint32_t poly)
{
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = n;
        for (int k = 0; k < 8; k++)
            c = (c & 1) ? (c >> 1) ^ poly : c >> 1;
        tab[0][n] = c;
    }
    for (uint32_t n = 0; n < 256; n++) {
        uint32_t c = tab[0][n];
        for (int t = 1; t < 8; t++) {
            c = tab[0][c & 0xFF] ^ (c >> 8);
            tab[t][n] = c;
        }
    }
}

static void
crc_tables_init(void)
{
    crc_tables_fill(crc_tab, CRC32C_POLY);
    crc_tables_fill(crc32_tab, CRC32_POLY);
}

/* Slicing-by-8 over either table (raw register in and out). */
static inline uint32_t
crc_slice8(const crc_table tab, uint32_t crc, const unsigned char *p, size_t n)
{
    while (n && ((uintptr_t)p & 7)) {
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
        n--;
    }
    while (n >= 8) {
        uint64_t w = le64(p) ^ (uint64_t)crc;
        uint32_t lo = (uint32_t)w, hi = (uint32_t)(w >> 32);
        crc = tab[7][lo & 0xFF] ^ tab[6][(lo >> 8) & 0xFF] ^
              tab[5][(lo >> 16) & 0xFF] ^ tab[4][lo >> 24] ^
              tab[3][hi & 0xFF] ^ tab[2][(hi >> 8) & 0xFF] ^
              tab[1][(hi >> 16) & 0xFF] ^ tab[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--)
        crc = tab[0][(crc ^ *p++) & 0xFF] ^ (crc >> 8);
    return crc;
}

static uint32_t
crc_sw(uint32_t crc, const unsigned char *p, size_t n)
{
    return crc_slice8(crc_tab, crc, p, n);
}

/* The IEEE CRC-32 of p[0:n], finished (what zlib.crc32(data) returns). */
uint32_t
crc32_ieee(const unsigned char *p, size_t n)
{
    return ~crc_slice8(crc32_tab, 0xFFFFFFFFu, p, n);
}

#if KD_HAVE_SSE42

#define CRC_LONG 8192      /* block of the three-stream loop for big buffers */
#define CRC_SHORT 256      /* ... and for medium ones */

/* shift_long[k][b]: the register b << 8k after CRC_LONG zero bytes; same for short. */
static uint32_t shift_long[4][256];
static uint32_t shift_short[4][256];

/* A GF(2)-linear map on 32-bit registers, as the images of the 32 unit vectors. */
typedef struct { uint32_t col[32]; } gf2mat;

static uint32_t
gf2_apply(const gf2mat *m, uint32_t v)
{
    uint32_t r = 0;
    for (int i = 0; v; i++, v >>= 1)
        if (v & 1)
            r ^= m->col[i];
    return r;
}

/* out = a after b (apply b first). out may not alias a or b. */
static void
gf2_compose(gf2mat *out, const gf2mat *a, const gf2mat *b)
{
    for (int i = 0; i < 32; i++)
        out->col[i] = gf2_apply(a, b->col[i]);
}

static void
zeros_table(uint32_t tab[4][256], size_t nbytes)
{
    gf2mat power, result, tmp;
    /* one zero byte: register -> table[reg & 0xff] ^ (reg >> 8) */
    for (int i = 0; i < 32; i++) {
        uint32_t v = (uint32_t)1 << i;
        power.col[i] = crc_tab[0][v & 0xFF] ^ (v >> 8);
        result.col[i] = v;      /* identity */
    }
    while (nbytes) {
        if (nbytes & 1) {
            gf2_compose(&tmp, &power, &result);
            result = tmp;
        }
        nbytes >>= 1;
        if (nbytes) {
            gf2_compose(&tmp, &power, &power);
            power = tmp;
        }
    }
    for (int k = 0; k < 4; k++)
        for (uint32_t b = 0; b < 256; b++)
            tab[k][b] = gf2_apply(&result, b << (8 * k));
}

static inline uint32_t
shift_by(const uint32_t tab[4][256], uint32_t crc)
{
    return tab[0][crc & 0xFF] ^ tab[1][(crc >> 8) & 0xFF] ^ tab[2][(crc >> 16) & 0xFF] ^ tab[3][crc >> 24];
}

/* While three blocks of ``block`` bytes remain: one stream each, then the first two moved
 * past the blocks after them (``shift``) and combined. Advances *pp and *np. */
__attribute__((target("sse4.2"), always_inline))
static inline uint64_t
crc_three_streams(uint64_t c0, const unsigned char **pp, size_t *np, size_t block, const uint32_t shift[4][256])
{
    const unsigned char *p = *pp;
    size_t n = *np;
    while (n >= 3 * block) {
        uint64_t c1 = 0, c2 = 0;
        const unsigned char *stop = p + block;
        do {
            uint64_t w0, w1, w2;
            memcpy(&w0, p, 8);
            memcpy(&w1, p + block, 8);
            memcpy(&w2, p + 2 * block, 8);
            c0 = _mm_crc32_u64(c0, w0);
            c1 = _mm_crc32_u64(c1, w1);
            c2 = _mm_crc32_u64(c2, w2);
            p += 8;
        } while (p < stop);
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c1;
        c0 = shift_by(shift, (uint32_t)c0) ^ (uint32_t)c2;
        p += 2 * block;
        n -= 3 * block;
    }
    *pp = p;
    *np = n;
    return c0;
}

__attribute__((target("sse4.2")))
static uint32_t
crc_hw(uint32_t crc, const unsigned char *p, size_t n)
{
    uint64_t c0 = crc;
    while (n && ((uintptr_t)p & 7)) {
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
        n--;
    }
    c0 = crc_three_streams(c0, &p, &n, CRC_LONG, shift_long);
    c0 = crc_three_streams(c0, &p, &n, CRC_SHORT, shift_short);
    while (n >= 8) {
        uint64_t w;
        memcpy(&w, p, 8);
        c0 = _mm_crc32_u64(c0, w);
        p += 8;
        n -= 8;
    }
    while (n--)
        c0 = _mm_crc32_u8((uint32_t)c0, *p++);
    return (uint32_t)c0;
}

#endif /* KD_HAVE_SSE42 */

uint32_t (*crc_raw)(uint32_t, const unsigned char *, size_t) = crc_sw;
const char *crc_impl_name = "software";

void
crc_init(void)
{
    crc_tables_init();
#if KD_HAVE_SSE42
    __builtin_cpu_init();
    if (__builtin_cpu_supports("sse4.2")) {
        zeros_table(shift_long, CRC_LONG);
        zeros_table(shift_short, CRC_SHORT);
        crc_raw = crc_hw;
        crc_impl_name = "sse4.2";
    }
#endif
}

/* ------------------------------------------------------------------------------------ */
/* crc32c                                                                                */
/* ------------------------------------------------------------------------------------ */

PyObject *
kd_crc32c(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    PyObject *value_obj = NULL;
    if (!PyArg_ParseTuple(args, "y*|O:crc32c", &view, &value_obj))
        return NULL;
    uint32_t value = 0;
    if (value_obj != NULL) {
        if (!PyLong_Check(value_obj)) {
            PyBuffer_Release(&view);
            PyErr_SetString(PyExc_TypeError, "crc32c() value must be an int");
            return NULL;
        }
        value = (uint32_t)(PyLong_AsUnsignedLongLongMask(value_obj) & 0xFFFFFFFFu);
        if (PyErr_Occurred()) {
            PyBuffer_Release(&view);
            return NULL;
        }
    }
    uint32_t crc;
    if (view.len >= KD_NOGIL_BYTES) {
        Py_BEGIN_ALLOW_THREADS
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
        Py_END_ALLOW_THREADS
    } else {
        crc = crc32c_value(value, (const unsigned char *)view.buf, (size_t)view.len);
    }
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}

/* The table-driven implementation whatever the CPU, so tests can compare both. */
PyObject *
kd_crc32c_sw(PyObject *self, PyObject *args)
{
    (void)self;
    Py_buffer view;
    unsigned int value = 0;
    if (!PyArg_ParseTuple(args, "y*|I:_crc32c_sw", &view, &value))
        return NULL;
    uint32_t crc = ~crc_sw(~(uint32_t)value, (const unsigned char *)view.buf, (size_t)view.len);
    PyBuffer_Release(&view);
    return PyLong_FromUnsignedLong(crc);
}


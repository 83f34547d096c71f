/* Java's UTF-8 decoding for the text renderer (text.c): the twin of kdump/format/javautf8.py
 * java_utf8 (Kafka's StringDecoder is ``new String(bytes, UTF_8)``), written back as UTF-8 with
 * the text view's escapes of kdump/decoders/views.py (escape_controls) or without. */

#include "speedups.h"

static const char hexd[] = "0123456789abcdef";

/*
 * Per byte, what it becomes when it stands alone: printable ASCII itself, a control its
 * escape (decoders/views.py's _CONTROL_ESCAPES) or itself (not escaping), anything else U+FFFD (a
 * byte that never starts a sequence, 80..C1 and F5..FF, or a lead C2..F4 whose sequence
 * fails at once); and for a lead, the second bytes that continue its sequence. One table
 * per escaping, filled when the module loads. The escaped characters above ASCII (the C1
 * controls, led by C2; U+061C, led by D8; the separators, bidi controls and zero-width
 * characters, led by E2 and EF) take the slow path when escaping.
 */
typedef struct {
    uint32_t out;             /* up to 4 bytes, in memory order */
    uint8_t len;              /* bytes of ``out`` */
    uint8_t slow;             /* lead_take judges its sequence: a 3- or 4-byte one, or one escaped */
    uint16_t lo, span;        /* its valid second bytes: lo..lo+span (none for a byte that is no lead) */
} bytecls;

static bytecls cls_tab[2][256];

void
java_utf8_init(void)
{
    for (int e = 0; e < 2; e++) {
        for (int c = 0; c < 256; c++) {
            bytecls *t = &cls_tab[e][c];
            unsigned char out[4] = {0, 0, 0, 0};
            memset(t, 0, sizeof *t);
            t->lo = 0x1FF;      /* no byte is a valid second byte */
            t->span = 0;
            if (c < 0x80) {
                const char *s = c == '\n' ? "\\n" : c == '\r' ? "\\r" : c == '\t' ? "\\t" : NULL;
                if (!e || (c >= 0x20 && c != 0x7F)) {
                    out[0] = (unsigned char)c;
                    t->len = 1;
                } else if (s != NULL) {
                    memcpy(out, s, 2);
                    t->len = 2;
                } else {
                    out[0] = '\\';
                    out[1] = 'x';
                    out[2] = (unsigned char)hexd[c >> 4];
                    out[3] = (unsigned char)hexd[c & 15];
                    t->len = 4;
                }
            } else {
                /* U+FFFD: a byte that never starts a sequence, or a lead whose sequence fails */
                memcpy(out, "\xEF\xBF\xBD", 3);
                t->len = 3;
                if (c >= 0xC2 && c <= 0xF4) {
                    t->slow = c >= 0xE0 || (e && (c == 0xC2 || c == 0xD8));
                    unsigned lo, hi;
                    kd_utf8_lead((unsigned)c, &lo, &hi);
                    /* ED: 80..9F starts a character, A0..BF Java's surrogate rule: both
                     * take the slow path */
                    if (c == 0xED)
                        hi = 0xBF;
                    t->lo = (uint16_t)lo;
                    t->span = (uint16_t)(hi - lo);
                }
            }
            memcpy(&t->out, out, 4);
        }
    }
}

/* 8 ASCII bytes none of which the escaping changes (none below 0x20, no DEL). */
static inline int
plain8(const unsigned char *s, int escape)
{
    uint64_t x;
    memcpy(&x, s, 8);
    const uint64_t hi = 0x8080808080808080ull;
    if (x & hi)
        return 0;
    if (!escape)
        return 1;
    /* b < 0x20: b + 0x60 has its top bit clear; b == 0x7F: b + 1 has it set */
    return ((~(x + 0x6060606060606060ull) | (x + 0x0101010101010101ull)) & hi) == 0;
}

/* The bytes of the sequence led by s[i] (E0..F4, its second byte valid) that Java's decoder
 * takes together, and whether they form a character: *valid = 1 (copy them), else one
 * U+FFFD for them. */
static int
lead_take(const unsigned char *s, Py_ssize_t i, Py_ssize_t n, int *valid)
{
    unsigned c = s[i];
    Py_ssize_t left = n - i;
    int take = 1;
    unsigned lo2, hi2;
    int need = kd_utf8_lead(c, &lo2, &hi2);
    /* Java takes ED A0..BF (an encoded surrogate) as one malformed sequence with the
     * continuation byte after it; at the end of the data it stops. */
    if (c == 0xED && left >= 2 && s[i + 1] >= 0xA0 && s[i + 1] <= 0xBF) {
        *valid = 0;
        if (left == 2)
            return 2;
        return (s[i + 2] & 0xC0) == 0x80 ? 3 : 2;
    }
    while (take < need && take < left) {
        unsigned b = s[i + take];
        if (take == 1 ? (b < lo2 || b > hi2) : (b & 0xC0) != 0x80)
            break;
        take++;
    }
    *valid = take == need;     /* else the maximal invalid subpart: one U+FFFD */
    return take;
}

/* The code point of the valid 2- or 3-byte character at s when the escaping shows it as
 * \uNNNN (words.py CONTROL_ESCAPES: U+2028/U+2029, the bidi controls, the zero-width
 * characters), else 0. */
static inline unsigned
u_escaped(const unsigned char *s, int take)
{
    unsigned cp;
    if (take == 2)
        cp = ((s[0] & 0x1Fu) << 6) | (s[1] & 0x3Fu);
    else if (take == 3)
        cp = ((s[0] & 0x0Fu) << 12) | ((s[1] & 0x3Fu) << 6) | (s[2] & 0x3Fu);
    else
        return 0;
    if (cp == 0x061C || (cp >= 0x200B && cp <= 0x200F) || (cp >= 0x2028 && cp <= 0x202E) || cp == 0x2060
        || (cp >= 0x2066 && cp <= 0x2069) || cp == 0xFEFF)
        return cp;
    return 0;
}

/* Worst case: 4 output bytes per input byte (an escape \xNN; U+FFFD takes 3), plus 4
 * bytes of slack: each step stores a whole 4-byte word. */
char *
put_java_utf8(char *w, const unsigned char *s, Py_ssize_t n, int escape)
{
    const bytecls *tab = cls_tab[escape != 0];
    Py_ssize_t i = 0;
    while (i < n) {
        while (i + 8 <= n && plain8(s + i, escape)) {
            memcpy(w, s + i, 8);
            w += 8;
            i += 8;
        }
        /* then at least 8 bytes (or the rest) a byte at a time. Random bytes defeat the
         * branch predictor: the one branch is on the rare case, a lead byte followed by a
         * valid second byte (about 1 byte in 20 of random data), and each step of the
         * common case does not wait for the one before. */
        Py_ssize_t stop = i + 8 < n ? i + 8 : n;
        while (i < stop) {
            unsigned b0 = s[i];
            unsigned b1 = s[i + (i + 1 < n)];      /* at the end b0 again: never a second byte */
            const bytecls *t = &tab[b0];
            if ((uint32_t)(b1 - t->lo) <= t->span) {
                if (!t->slow) {                      /* a 2-byte character */
                    w[0] = (char)b0;
                    w[1] = (char)b1;
                    w += 2;
                    i += 2;
                    continue;
                }
                int valid;
                int take = lead_take(s, i, n, &valid);
                unsigned cp;
                if (valid && escape && b0 == 0xC2 && b1 < 0xA0) {     /* a C1 control: \xNN */
                    w[0] = '\\';
                    w[1] = 'x';
                    w[2] = hexd[b1 >> 4];
                    w[3] = hexd[b1 & 15];
                    w += 4;
                } else if (valid && escape && (cp = u_escaped(s + i, take)) != 0) {
                    w[0] = '\\';                        /* a separator, bidi or zero-width: \uNNNN */
                    w[1] = 'u';
                    w[2] = hexd[cp >> 12];
                    w[3] = hexd[(cp >> 8) & 15];
                    w[4] = hexd[(cp >> 4) & 15];
                    w[5] = hexd[cp & 15];
                    w += 6;
                } else {
                    if (valid)
                        memcpy(w, s + i, (size_t)take);
                    else
                        memcpy(w, "\xEF\xBF\xBD", 3);
                    w += valid ? take : 3;
                }
                i += take;
                continue;
            }
            /* what the byte is alone: itself, its escape, U+FFFD (a failed lead included) */
            memcpy(w, &t->out, 4);
            w += t->len;
            i++;
        }
    }
    return w;
}

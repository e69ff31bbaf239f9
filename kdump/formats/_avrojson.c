/* Avro binary values straight to JSON text: the compiled path of payload decoding.
 *
 * kdump/formats/payloads/avro.py is the reference: fastavro decodes a value to Python objects and
 * orjson writes them. This module gives the same bytes for the values it is sure of, and declines
 * (returns None) at anything else: a schema part it does not take (bytes, fixed, logical types are
 * never compiled), a float whose shortest text has an exponent (orjson and Python write those
 * differently), a non-finite float, invalid UTF-8, a boolean byte other than 0 or 1, an index out
 * of range, a length past the end, bytes left over. The caller then runs the reference, which also
 * reports what is wrong. tests/formats/test_avro_json.py holds the two byte-identical.
 *
 * The schema comes as a tree of tuples built by avro.py (`_program`): (code,) for primitives,
 * (ENUM, (json_symbol, ...)), (RECORD, ((b'{"name":', node), (b',"next":', node), ...)),
 * (ARRAY, node), (MAP, node), (UNION, (node, ...)).
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <math.h>
#include <stdint.h>
#include <string.h>

enum { A_NULL, A_BOOLEAN, A_INT, A_LONG, A_FLOAT, A_DOUBLE, A_STRING, A_ENUM, A_RECORD, A_ARRAY, A_MAP, A_UNION };

typedef struct {
    char *data;
    Py_ssize_t len, cap;
} Out;

typedef struct {
    const unsigned char *p, *end;
} In;

static int out_reserve(Out *o, Py_ssize_t n) {
    if (o->len + n <= o->cap) return 0;
    if (n > PY_SSIZE_T_MAX - o->len) return -1;
    Py_ssize_t cap = o->cap ? o->cap : 256;
    while (cap < o->len + n) {
        if (cap > PY_SSIZE_T_MAX / 2) return -1;
        cap *= 2;
    }
    char *d = PyMem_Realloc(o->data, cap);
    if (!d) return -1;
    o->data = d;
    o->cap = cap;
    return 0;
}

static int out_put(Out *o, const char *s, Py_ssize_t n) {
    if (n <= 0) return 0; /* memcpy to a buffer not yet allocated is undefined, even of 0 bytes */
    if (out_reserve(o, n)) return -1;
    memcpy(o->data + o->len, s, n);
    o->len += n;
    return 0;
}

/* A zigzag varint of up to 10 bytes. 0 on success, 1 to decline. */
static int read_long(In *in, int64_t *v) {
    uint64_t acc = 0;
    int shift = 0;
    while (in->p < in->end) {
        unsigned char b = *in->p++;
        acc |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80)) {
            *v = (int64_t)(acc >> 1) ^ -(int64_t)(acc & 1);
            return 0;
        }
        shift += 7;
        if (shift > 63) return 1;
    }
    return 1;
}

/* Whether s[0..n) is valid UTF-8 (no overlongs, no surrogates, at most U+10FFFF). */
static int utf8_ok(const unsigned char *s, Py_ssize_t n) {
    Py_ssize_t i = 0;
    while (i < n) {
        unsigned char c = s[i];
        if (c < 0x80) { i++; continue; }
        int k;
        uint32_t cp;
        if ((c & 0xe0) == 0xc0) { k = 1; cp = c & 0x1f; }
        else if ((c & 0xf0) == 0xe0) { k = 2; cp = c & 0x0f; }
        else if ((c & 0xf8) == 0xf0) { k = 3; cp = c & 0x07; }
        else return 0;
        if (i + k >= n) return 0; /* the sequence runs past the end */
        for (int j = 1; j <= k; j++) {
            unsigned char d = s[i + j];
            if ((d & 0xc0) != 0x80) return 0;
            cp = (cp << 6) | (d & 0x3f);
        }
        if ((k == 1 && cp < 0x80) || (k == 2 && cp < 0x800) || (k == 3 && cp < 0x10000)) return 0;
        if (cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff)) return 0;
        i += k + 1;
    }
    return 1;
}

/* A JSON string as orjson writes it: " and \ escaped, \b \t \n \f \r short, other controls as
 * \u00xx, everything else (non-ASCII included) as is. */
static int put_string(Out *o, const unsigned char *s, Py_ssize_t n) {
    static const char hex[] = "0123456789abcdef";
    if (out_reserve(o, n * 6 + 2)) return -1;
    char *w = o->data + o->len;
    *w++ = '"';
    for (Py_ssize_t i = 0; i < n; i++) {
        unsigned char c = s[i];
        if (c == '"' || c == '\\') { *w++ = '\\'; *w++ = (char)c; }
        else if (c >= 0x20) *w++ = (char)c;
        else if (c == '\n') { *w++ = '\\'; *w++ = 'n'; }
        else if (c == '\t') { *w++ = '\\'; *w++ = 't'; }
        else if (c == '\r') { *w++ = '\\'; *w++ = 'r'; }
        else if (c == '\b') { *w++ = '\\'; *w++ = 'b'; }
        else if (c == '\f') { *w++ = '\\'; *w++ = 'f'; }
        else { *w++ = '\\'; *w++ = 'u'; *w++ = '0'; *w++ = '0'; *w++ = hex[c >> 4]; *w++ = hex[c & 15]; }
    }
    *w++ = '"';
    o->len = w - o->data;
    return 0;
}

/* A double as Python's repr writes it, when that has no exponent (orjson agrees then). */
static int put_double(Out *o, double v) {
    if (!isfinite(v)) return 1;
    char *s = PyOS_double_to_string(v, 'r', 0, Py_DTSF_ADD_DOT_0, NULL);
    if (!s) return -1;
    int rc = strchr(s, 'e') ? 1 : out_put(o, s, (Py_ssize_t)strlen(s));
    PyMem_Free(s);
    return rc;
}

/* 0 done, 1 decline, -1 error (exception set). */
static int value(In *in, Out *o, PyObject *node, int depth) {
    if (depth > 64) return 1;
    long code = PyLong_AsLong(PyTuple_GET_ITEM(node, 0));
    int64_t n;
    switch (code) {
    case A_NULL:
        return out_put(o, "null", 4);
    case A_BOOLEAN:
        if (in->p >= in->end || *in->p > 1) return 1;
        return *in->p++ ? out_put(o, "true", 4) : out_put(o, "false", 5);
    case A_INT:
    case A_LONG: {
        if (read_long(in, &n)) return 1;
        char buf[24];
        int k = snprintf(buf, sizeof buf, "%lld", (long long)n);
        return out_put(o, buf, k);
    }
    case A_FLOAT: {
        if (in->end - in->p < 4) return 1;
        float f;
        uint32_t u = (uint32_t)in->p[0] | (uint32_t)in->p[1] << 8 | (uint32_t)in->p[2] << 16 | (uint32_t)in->p[3] << 24;
        memcpy(&f, &u, 4);
        in->p += 4;
        return put_double(o, (double)f);
    }
    case A_DOUBLE: {
        if (in->end - in->p < 8) return 1;
        uint64_t u = 0;
        for (int i = 7; i >= 0; i--) u = (u << 8) | in->p[i];
        double d;
        memcpy(&d, &u, 8);
        in->p += 8;
        return put_double(o, d);
    }
    case A_STRING:
        if (read_long(in, &n) || n < 0 || n > in->end - in->p) return 1;
        if (!utf8_ok(in->p, (Py_ssize_t)n)) return 1;
        if (put_string(o, in->p, (Py_ssize_t)n)) return -1;
        in->p += n;
        return 0;
    case A_ENUM: {
        PyObject *symbols = PyTuple_GET_ITEM(node, 1);
        if (read_long(in, &n) || n < 0 || n >= PyTuple_GET_SIZE(symbols)) return 1;
        PyObject *s = PyTuple_GET_ITEM(symbols, n);
        return out_put(o, PyBytes_AS_STRING(s), PyBytes_GET_SIZE(s));
    }
    case A_RECORD: {
        PyObject *fields = PyTuple_GET_ITEM(node, 1);
        Py_ssize_t nf = PyTuple_GET_SIZE(fields);
        if (nf == 0) return out_put(o, "{}", 2);
        for (Py_ssize_t i = 0; i < nf; i++) {
            PyObject *f = PyTuple_GET_ITEM(fields, i);
            PyObject *prefix = PyTuple_GET_ITEM(f, 0);
            if (out_put(o, PyBytes_AS_STRING(prefix), PyBytes_GET_SIZE(prefix))) return -1;
            int rc = value(in, o, PyTuple_GET_ITEM(f, 1), depth + 1);
            if (rc) return rc;
        }
        return out_put(o, "}", 1);
    }
    case A_ARRAY:
    case A_MAP: {
        PyObject *item = PyTuple_GET_ITEM(node, 1);
        int first = 1;
        if (out_put(o, code == A_ARRAY ? "[" : "{", 1)) return -1;
        for (;;) {
            if (read_long(in, &n)) return 1;
            if (n == 0) break;
            if (n < 0) {
                int64_t size;
                if (n == INT64_MIN || read_long(in, &size)) return 1;
                n = -n;
            }
            if (n > in->end - in->p) return 1;  /* every item takes a byte at least */
            for (int64_t i = 0; i < n; i++) {
                if (!first && out_put(o, ",", 1)) return -1;
                first = 0;
                if (code == A_MAP) {
                    int64_t k;
                    if (read_long(in, &k) || k < 0 || k > in->end - in->p || !utf8_ok(in->p, (Py_ssize_t)k)) return 1;
                    if (put_string(o, in->p, (Py_ssize_t)k) || out_put(o, ":", 1)) return -1;
                    in->p += k;
                }
                int rc = value(in, o, item, depth + 1);
                if (rc) return rc;
            }
        }
        return out_put(o, code == A_ARRAY ? "]" : "}", 1);
    }
    case A_UNION: {
        PyObject *branches = PyTuple_GET_ITEM(node, 1);
        if (read_long(in, &n) || n < 0 || n >= PyTuple_GET_SIZE(branches)) return 1;
        return value(in, o, PyTuple_GET_ITEM(branches, n), depth + 1);
    }
    default:
        return 1;
    }
}

static PyObject *to_json(PyObject *Py_UNUSED(self), PyObject *args) {
    Py_buffer data;
    PyObject *program;
    Py_ssize_t skip;
    if (!PyArg_ParseTuple(args, "Ony*", &program, &skip, &data)) return NULL;
    if (skip < 0 || skip > data.len) {
        PyBuffer_Release(&data);
        Py_RETURN_NONE;
    }
    In in = {(const unsigned char *)data.buf + skip, (const unsigned char *)data.buf + data.len};
    Out o = {NULL, 0, 0};
    int rc = value(&in, &o, program, 0);
    PyObject *result = NULL;
    if (rc == 0 && in.p == in.end) result = PyBytes_FromStringAndSize(o.data, o.len);
    else if (rc >= 0) result = Py_NewRef(Py_None);
    PyMem_Free(o.data);
    PyBuffer_Release(&data);
    return result;
}

static PyMethodDef methods[] = {
    {"to_json", to_json, METH_VARARGS,
     "to_json(program, skip, data) -> bytes | None: the Avro value after `skip` bytes as JSON, or None."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_avrojson", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__avrojson(void) { return PyModule_Create(&module); }

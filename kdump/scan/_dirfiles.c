/*
 * One directory's entries, and the bytes of its small regular files, in one call.
 *
 * A broker's partition directory holds five small files (a segment's log and indexes, the
 * leader-epoch-checkpoint, partition.metadata), and a log dir holds up to 100,000 such directories.
 * Looked at from Python, each file cost a stat, an access, an open, an fstat, a read or two and a
 * close, and some 60 Python calls: more than reading its bytes. Here the directory is read once and
 * each regular file (by the readdir's own type, so no symlink is followed and nothing but a regular
 * file is opened) is opened relative to the directory, non-blocking, checked to be a regular file on
 * its descriptor, and read whole when it is small enough, with one read of one byte more than its
 * size (a short read of a regular file is its end: seen in the same call).
 *
 * Anything else is left to the caller's own look, which says what it is in its words: a symlink,
 * an entry the readdir cannot type, a FIFO or device put where a file was, a file that cannot be
 * opened or read, one that changed size under the read, an empty one that reads bytes (a file of
 * /proc or /sys). Nothing here decides what a file means: kdump/scan/held.py hands the bytes to the
 * readers, which check them as they would check what they read themselves.
 *
 * read_dir(path, file_limit, budget) -> list of (name, kind, size, data) | None
 *   kind 0: not looked at (data None); 1: a directory (no symlink); 2: a regular file read whole
 *   (data: its bytes); 3: a regular file that opened for reading but was not read (larger than
 *   file_limit, or past the budget of bytes read for the directory; data None).
 *   None: the directory could not be opened or read (the caller lists it itself and says why).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <unistd.h>

enum { KIND_OTHER = 0, KIND_DIR = 1, KIND_READ = 2, KIND_FILE = 3 };

/* A regular file's bytes, read with one byte more asked than its size says: NULL (and no error
 * set) when it cannot be read whole, or its size changed between the fstat and the read. */
static PyObject *read_whole(int fd, Py_ssize_t size) {
    PyObject *data = PyBytes_FromStringAndSize(NULL, size + 1);
    if (data == NULL) return NULL;
    char *p = PyBytes_AS_STRING(data);
    Py_ssize_t want = size + 1, got = 0;
    while (got < want) {
        Py_ssize_t asked = want - got;
        ssize_t n = read(fd, p + got, (size_t)asked);
        if (n < 0 && errno == EINTR) continue;
        if (n <= 0) {
            if (n < 0) got = -1;
            break;
        }
        got += n;
        if (n < asked) break; /* short: a regular file's end (no further read of nothing) */
    }
    if (got != size) {
        Py_DECREF(data);
        return Py_None; /* borrowed marker: the caller looks at the file itself */
    }
    if (_PyBytes_Resize(&data, size) < 0) return NULL;
    return data;
}

/* One entry's (kind, size, data): data a new reference, or NULL with an error set. */
static int look(int dirfd, const char *name, unsigned char type, Py_ssize_t file_limit, Py_ssize_t *budget,
                int *kind, long long *size, PyObject **data) {
    *kind = KIND_OTHER;
    *size = 0;
    *data = Py_None;
    Py_INCREF(Py_None);
    if (type == DT_UNKNOWN) {
        struct stat lst;
        if (fstatat(dirfd, name, &lst, AT_SYMLINK_NOFOLLOW) != 0) return 0;
        if (S_ISDIR(lst.st_mode)) type = DT_DIR;
        else if (S_ISREG(lst.st_mode)) type = DT_REG;
        else return 0;
    }
    if (type == DT_DIR) {
        *kind = KIND_DIR;
        return 0;
    }
    if (type != DT_REG) return 0;
    int fd = openat(dirfd, name, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOFOLLOW | O_NOCTTY);
    if (fd < 0) return 0;
    struct stat st;
    if (fstat(fd, &st) != 0 || !S_ISREG(st.st_mode) || st.st_size < 0) {
        close(fd);
        return 0;
    }
    Py_ssize_t n = (Py_ssize_t)st.st_size;
    if ((long long)n != (long long)st.st_size || n > file_limit || n > *budget) {
        close(fd);
        *kind = KIND_FILE;
        *size = (long long)st.st_size;
        return 0;
    }
    PyObject *bytes = read_whole(fd, n);
    close(fd);
    if (bytes == NULL) return -1;
    if (bytes == Py_None) return 0; /* changed under the read, or unreadable: the caller looks */
    Py_DECREF(*data);
    *data = bytes;
    *kind = KIND_READ;
    *size = (long long)n;
    *budget -= n;
    return 0;
}

static PyObject *py_read_dir(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *path;
    Py_ssize_t file_limit, budget;
    if (!PyArg_ParseTuple(args, "O&nn", PyUnicode_FSConverter, &path, &file_limit, &budget)) return NULL;
    if (file_limit < 0 || budget < 0) {
        Py_DECREF(path);
        PyErr_SetString(PyExc_ValueError, "file_limit and budget must not be negative");
        return NULL;
    }
    DIR *dir = opendir(PyBytes_AS_STRING(path));
    Py_DECREF(path);
    if (dir == NULL) Py_RETURN_NONE;
    int dirfd_ = dirfd(dir);
    PyObject *out = PyList_New(0);
    if (out == NULL) {
        closedir(dir);
        return NULL;
    }
    for (;;) {
        errno = 0;
        struct dirent *e = readdir(dir);
        if (e == NULL) {
            if (errno != 0) { /* the listing failed part way: the caller lists it and says why */
                Py_DECREF(out);
                closedir(dir);
                Py_RETURN_NONE;
            }
            break;
        }
        const char *name = e->d_name;
        if (name[0] == '.' && (name[1] == '\0' || (name[1] == '.' && name[2] == '\0'))) continue;
        int kind;
        long long size;
        PyObject *data;
        if (look(dirfd_, name, e->d_type, file_limit, &budget, &kind, &size, &data) < 0) {
            Py_DECREF(data);
            Py_DECREF(out);
            closedir(dir);
            return NULL;
        }
        PyObject *pyname = PyUnicode_DecodeFSDefault(name);
        PyObject *item = pyname == NULL ? NULL : Py_BuildValue("(NiLN)", pyname, kind, size, data);
        if (item == NULL) {
            if (pyname == NULL) Py_DECREF(data);
            Py_DECREF(out);
            closedir(dir);
            return NULL;
        }
        int failed = PyList_Append(out, item);
        Py_DECREF(item);
        if (failed) {
            Py_DECREF(out);
            closedir(dir);
            return NULL;
        }
    }
    closedir(dir);
    return out;
}

static PyMethodDef methods[] = {
    {"read_dir", py_read_dir, METH_VARARGS,
     "read_dir(path, file_limit, budget): a directory's entries as (name, kind, size, data), the small "
     "regular files read whole; None when the directory cannot be read."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "_dirfiles", NULL, -1, methods, NULL, NULL, NULL, NULL};

PyMODINIT_FUNC PyInit__dirfiles(void) { return PyModule_Create(&module); }

/*
 * A file that shrinks while kdump has it mapped (a live broker truncating a follower's log, trimming
 * an index at a roll) makes every read of a page past its new end raise SIGBUS, in the compiled walk
 * and in CPython's own memcpy of a memoryview alike: the process dies.
 *
 * This module takes SIGBUS for the mappings kdump registers (kdump/scan/source.py, open_buffer):
 * the handler maps anonymous zero pages over the mapping from the faulting page to its end and
 * notes the first such offset, and the read that faulted runs again and finds zeros. The scan goes
 * on over zeros (which it reads as the end of the data) and, when it is done, the caller asks where
 * the file gave way (`faulted`) and reports the change as a finding. Nothing costs anything until a
 * fault: no check per read, no copy.
 *
 * A SIGBUS at any other address is not ours: the previous disposition is put back and the fault,
 * re-raised by the instruction running again, goes where it went before (faulthandler, a core).
 *
 * Functions: register(buffer) -> slot; faulted(slot) -> offset | -1; unregister(slot).
 */

#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <signal.h>
#include <stdint.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#define SLOTS 1024

typedef struct {
    volatile uintptr_t start; /* 0: free */
    volatile size_t len;
    volatile intptr_t first_fault; /* -1: none */
} Slot;

static Slot slots[SLOTS];
static struct sigaction previous;
static int installed = 0;
static size_t page_size = 4096;

static void on_sigbus(int sig, siginfo_t *info, void *context) {
    uintptr_t addr = (uintptr_t)info->si_addr;
    for (int i = 0; i < SLOTS; i++) {
        uintptr_t start = slots[i].start;
        size_t len = slots[i].len;
        if (start == 0 || addr < start || addr - start >= len) continue;
        uintptr_t page = addr & ~(uintptr_t)(page_size - 1);
        uintptr_t end = start + len;
        end = (end + page_size - 1) & ~(uintptr_t)(page_size - 1);
        /* mmap is a plain system call on Linux, safe in a handler. */
        if (mmap((void *)page, end - page, PROT_READ, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED, -1, 0) == MAP_FAILED)
            break;
        intptr_t offset = (intptr_t)(page > start ? page - start : 0);
        if (slots[i].first_fault < 0 || offset < slots[i].first_fault) slots[i].first_fault = offset;
        return;
    }
    /* Not a registered mapping: the disposition before ours takes the fault when it happens again. */
    (void)sig;
    (void)context;
    sigaction(SIGBUS, &previous, NULL);
}

static int install(void) {
    if (installed) return 0;
    long ps = sysconf(_SC_PAGESIZE);
    if (ps > 0) page_size = (size_t)ps;
    struct sigaction sa;
    memset(&sa, 0, sizeof sa);
    sa.sa_sigaction = on_sigbus;
    sa.sa_flags = SA_SIGINFO | SA_NODEFER;
    sigemptyset(&sa.sa_mask);
    if (sigaction(SIGBUS, &sa, &previous) != 0) return -1;
    installed = 1;
    return 0;
}

static PyObject *py_register(PyObject *self, PyObject *arg) {
    (void)self;
    Py_buffer view;
    if (PyObject_GetBuffer(arg, &view, PyBUF_SIMPLE) < 0) return NULL;
    uintptr_t start = (uintptr_t)view.buf;
    size_t len = (size_t)view.len;
    PyBuffer_Release(&view); /* the caller keeps the mapping alive until it unregisters */
    if (len == 0 || start % page_size) {
        PyErr_SetString(PyExc_ValueError, "register takes a whole mapping");
        return NULL;
    }
    /* Faulthandler (pytest, -X faulthandler) may have taken SIGBUS after an earlier install. */
    struct sigaction now;
    if (sigaction(SIGBUS, NULL, &now) == 0 && now.sa_sigaction != on_sigbus) installed = 0;
    if (install() < 0) return PyErr_SetFromErrno(PyExc_OSError);
    for (int i = 0; i < SLOTS; i++) {
        if (slots[i].start != 0) continue;
        slots[i].first_fault = -1;
        slots[i].len = len;
        slots[i].start = start; /* last: the handler looks at start first */
        return PyLong_FromLong(i);
    }
    return PyLong_FromLong(-1); /* all slots taken: this mapping goes unguarded */
}

static int slot_arg(PyObject *arg) {
    long i = PyLong_AsLong(arg);
    if (i == -1 && PyErr_Occurred()) return -2;
    if (i < -1 || i >= SLOTS) {
        PyErr_SetString(PyExc_ValueError, "no such slot");
        return -2;
    }
    return (int)i;
}

static PyObject *py_faulted(PyObject *self, PyObject *arg) {
    (void)self;
    int i = slot_arg(arg);
    if (i == -2) return NULL;
    return PyLong_FromSsize_t(i < 0 ? -1 : (Py_ssize_t)slots[i].first_fault);
}

static PyObject *py_unregister(PyObject *self, PyObject *arg) {
    (void)self;
    int i = slot_arg(arg);
    if (i == -2) return NULL;
    if (i >= 0) {
        slots[i].start = 0;
        slots[i].len = 0;
        slots[i].first_fault = -1;
    }
    Py_RETURN_NONE;
}

static PyMethodDef methods[] = {
    {"register", py_register, METH_O, "Guard a read-only file mapping against SIGBUS; its slot."},
    {"faulted", py_faulted, METH_O, "The first offset of the mapping that read past the file's end, or -1."},
    {"unregister", py_unregister, METH_O, "Stop guarding a slot (before the mapping is closed)."},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "kdump.scan._mapguard", "SIGBUS guard of kdump's file mappings.", -1, methods,
    NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__mapguard(void) { return PyModule_Create(&module); }

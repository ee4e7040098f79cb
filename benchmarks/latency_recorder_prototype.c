/* Prototype of a C-level latency recorder, built and measured by
 * bench_latency_overhead.py --c-recorder (not part of the package).
 *
 * Why: in pure Python one mark costs a perf_counter_ns() call (a Python int allocated
 * per operation and kept alive until the phase ends) plus a list.append. Recorder.mark()
 * is one C call that reads CLOCK_MONOTONIC (the clock perf_counter_ns reads on Linux)
 * and stores the nanoseconds in a growing int64 buffer: no Python object per operation,
 * 8 bytes per operation, and the buffer is handed to numpy without a copy
 * (numpy.frombuffer(recorder, dtype=numpy.int64)).
 *
 * Engine loop:  mark = recorder.mark; mark(); for op in ops: do(op); mark()
 */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <time.h>

typedef struct {
    PyObject_HEAD
    int64_t *buf;
    Py_ssize_t n, cap, exports;
} Recorder;

static PyObject *recorder_mark(Recorder *self, PyObject *Py_UNUSED(unused)) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    if (self->n == self->cap) {
        if (self->exports > 0) {
            PyErr_SetString(PyExc_BufferError, "Recorder is exported; cannot grow");
            return NULL;
        }
        Py_ssize_t cap = self->cap ? self->cap * 2 : 1024;
        int64_t *b = PyMem_Realloc(self->buf, (size_t)cap * sizeof(int64_t));
        if (b == NULL) return PyErr_NoMemory();
        self->buf = b;
        self->cap = cap;
    }
    self->buf[self->n++] = (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
    Py_RETURN_NONE;
}

static int recorder_getbuffer(Recorder *self, Py_buffer *view, int flags) {
    if (PyBuffer_FillInfo(view, (PyObject *)self, self->buf, self->n * (Py_ssize_t)sizeof(int64_t), 1, flags) < 0)
        return -1;
    self->exports++;
    return 0;
}

static void recorder_releasebuffer(Recorder *self, Py_buffer *Py_UNUSED(view)) { self->exports--; }

static void recorder_dealloc(Recorder *self) {
    PyMem_Free(self->buf);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static Py_ssize_t recorder_len(Recorder *self) { return self->n; }

static PyMethodDef recorder_methods[] = {
    {"mark", (PyCFunction)recorder_mark, METH_NOARGS, "Append the current CLOCK_MONOTONIC time in ns."},
    {NULL, NULL, 0, NULL},
};
static PyBufferProcs recorder_as_buffer = {(getbufferproc)recorder_getbuffer, (releasebufferproc)recorder_releasebuffer};
static PySequenceMethods recorder_as_sequence = {.sq_length = (lenfunc)recorder_len};

static PyTypeObject RecorderType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "latency_recorder_prototype.Recorder",
    .tp_basicsize = sizeof(Recorder),
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_new = PyType_GenericNew,
    .tp_dealloc = (destructor)recorder_dealloc,
    .tp_methods = recorder_methods,
    .tp_as_buffer = &recorder_as_buffer,
    .tp_as_sequence = &recorder_as_sequence,
};

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "latency_recorder_prototype", NULL, -1, NULL};

PyMODINIT_FUNC PyInit_latency_recorder_prototype(void) {
    if (PyType_Ready(&RecorderType) < 0) return NULL;
    PyObject *m = PyModule_Create(&module);
    if (m == NULL) return NULL;
    Py_INCREF(&RecorderType);
    if (PyModule_AddObject(m, "Recorder", (PyObject *)&RecorderType) < 0) {
        Py_DECREF(&RecorderType);
        Py_DECREF(m);
        return NULL;
    }
    return m;
}

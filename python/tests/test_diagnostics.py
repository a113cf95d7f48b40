"""Diagnostics as Python objects and CompileError's text."""

from __future__ import annotations

import pytest

import cdpc

UNKNOWN = "__global__ void k() {\n    undefined();\n}\n"

MISSING_RETURN = """\
__device__ int sign(int x) {
    if (x > 0) return 1;
    if (x < 0) return -1;
}
__global__ void k(int *p) { p[0] = sign(p[1]); }
"""

LOCAL_POINTER = """\
extern "C" __global__ void child(int *p) { *p = 1; }
extern "C" __global__ void parent() {
    int local = 0;
    int *alias = &local;
    child<<<1, 1>>>(alias);
}
"""


def test_error_is_an_exception_with_rendered_text_and_objects() -> None:
    with pytest.raises(cdpc.CompileError) as info:
        cdpc.compile(UNKNOWN, filename="app.cdp", build_cubin=False)
    e = info.value
    assert e.kind == "diagnostics"
    text = str(e)
    assert text.startswith("error[E0100]: cannot find function `undefined`")
    assert "┌─ app.cdp:2:5" in text
    assert text.endswith("error: could not compile `app.cdp` due to 1 previous error")
    [d] = e.diagnostics
    assert (d.code, d.severity, d.file, d.is_error) == ("E0100", "error", "app.cdp", True)
    label = d.primary_label
    assert label is not None
    # `undefined` is bytes 26..35 of the source: line 2, columns 5..14
    assert UNKNOWN[label.byte_start:label.byte_end] == "undefined"
    assert (label.file, label.byte_start, label.line_start, label.column_start, label.line_end, label.column_end) == ("app.cdp", 26, 2, 5, 2, 14)
    assert e.errors == [d]


def test_secondary_labels_and_notes() -> None:
    with pytest.raises(cdpc.CompileError) as info:
        cdpc.compile(LOCAL_POINTER, build_cubin=False)
    [d] = info.value.diagnostics
    assert d.code == "E0307"
    spans = {LOCAL_POINTER[l.byte_start:l.byte_end]: l.primary for l in d.labels}
    assert spans == {"alias": True, "local": False}
    assert any("local or shared memory" in n for n in d.notes)


def test_warnings_come_back_with_the_output() -> None:
    c = cdpc.compile(MISSING_RETURN, build_cubin=False)
    [w] = c.warnings
    assert (w.code, w.severity) == ("W0209", "warning")
    assert w.primary_label is not None and w.primary_label.line_start == 4
    assert "warning[W0209]" in c.rendered_warnings


def test_warning_policy() -> None:
    for options in ({"warnings_as_errors": True}, {"deny": ["W0209"]}):
        with pytest.raises(cdpc.CompileError) as info:
            cdpc.compile(MISSING_RETURN, build_cubin=False, **options)  # type: ignore[arg-type]
        assert [(d.code, d.severity) for d in info.value.diagnostics] == [("W0209", "error")]
    assert cdpc.compile(MISSING_RETURN, build_cubin=False, allow=["W0209"]).warnings == ()


def test_many_errors_at_once() -> None:
    source = "__global__ void k() { a(); b(); c(); }"
    with pytest.raises(cdpc.CompileError) as info:
        cdpc.compile(source, build_cubin=False)
    assert [d.code for d in info.value.diagnostics] == ["E0100"] * 3
    assert str(info.value).endswith("due to 3 previous errors")
